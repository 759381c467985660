"""Formation timeline: formation steps on synthetic rows, growth, ancestry, the CLI."""

import pandas as pd
import pytest
from typer.testing import CliRunner

from induction.commands.main import app
from induction.dynamics.timeline import build_timeline, formation_step
from lineage.log import DuplicationLog


def test_formation_step_is_the_first_crossing_that_stays():
    assert formation_step([0, 1, 2, 3], [0.1, 0.5, 0.3, 0.6]) == 3
    assert formation_step([0, 1, 2], [0.5, 0.45, 0.4]) == 0
    assert formation_step([0, 1, 2], [0.5, 0.6, 0.2]) is None
    assert formation_step([0, 1], [0.5, float("nan")]) is None
    assert formation_step([], []) is None


def _rows(ckpts, heads):
    """ckpts: (checkpoint, step, growth, stage, depth); heads: {(ck, layer, head): value}."""
    out = []
    for ck, step, growth, stage, depth in ckpts:
        for (c, layer, head), v in heads.items():
            if c == ck:
                out.append((ck, step, growth, stage, depth, layer, head, "induction", v))
        out.append((ck, step, growth, stage, depth, None, None, "loss_repeat", 1.0 / (step + 1)))
    cols = ["checkpoint", "step", "growth", "stage", "depth", "layer", "head", "score", "value"]
    df = pd.DataFrame(out, columns=cols)
    df["model"], df["spec"], df["std"] = "m", "nowhere", None
    return df.astype({"step": "Int64", "stage": "Int64", "layer": "Int64", "head": "Int64"})


def test_dense_timeline():
    ck = [("step-0", 0, None, 0, 1), ("step-5", 5, None, 0, 1), ("final", 9, None, 0, 1)]
    vals = {("step-0", 0, 0): 0.1, ("step-5", 0, 0): 0.6, ("final", 0, 0): 0.7}
    vals |= {("step-0", 0, 1): 0.5, ("step-5", 0, 1): 0.2, ("final", 0, 1): 0.1}
    tl = build_timeline(_rows(ck, vals))
    f = tl.formed.set_index("head")
    assert f.loc[0, "formed_step"] == 5 and pd.isna(f.loc[1, "formed_step"])
    assert f.loc[0, "rank"] == 1 and tl.growth == [] and len(tl.loss) == 3
    assert "1 of 2 heads formed" in tl.sentence() and tl.figure().data
    # a dense model has no growth: its panel title says nothing about ancestors
    assert "ancestor" not in tl.figure().layout.annotations[0].text


def test_a_model_level_score_and_two_sweep_settings_are_refused_in_one_line():
    """TL16, SWS2: ``--score loss_first`` has no heads to follow; a dataset swept twice with
    different settings (as ``induction sweep`` makes it) needs ``--settings``."""
    from induction.errors import InputError

    ck = [("step-0", 0, None, 0, 1), ("final", 9, None, 0, 1)]
    rows = _rows(ck, {("step-0", 0, 0): 0.1, ("final", 0, 0): 0.7})
    with pytest.raises(InputError, match="loss_repeat is a model-level value.*induction"):
        build_timeline(rows, score="loss_repeat")
    twice = pd.concat(
        [rows.assign(settings_hash="aaaa1111"), rows.assign(settings_hash="bbbb2222")]
    )
    with pytest.raises(InputError, match="swept with 2 settings .*aaaa1111.*--settings"):
        build_timeline(twice)
    one = build_timeline(twice, settings="bbbb")
    assert len(one.series) == len(build_timeline(rows).series)
    with pytest.raises(InputError, match="--settings cccc matches 0"):
        build_timeline(twice, settings="cccc")


def test_one_checkpoint_in_the_singular_with_a_hint():
    one = build_timeline(_rows([("final", 9, None, 0, 1)], {("final", 0, 0): 0.7}))
    assert one.sentence().startswith("m: 1 checkpoint, 1 of 1 heads formed")
    assert one.hint.startswith("one checkpoint, so nothing to follow over training")
    assert "run folder" in one.hint  # "nowhere" ships no series: what a series is
    ck = [("step-0", 0, None, 0, 1), ("final", 9, None, 0, 1)]
    two = build_timeline(_rows(ck, {("step-0", 0, 0): 0.1, ("final", 0, 0): 0.7}))
    assert two.sentence().startswith("m: 2 checkpoints, ") and two.hint is None


def test_grown_timeline_follows_ancestors_across_growth():
    # 1 layer -> 2 layers (layer 1 a copy of layer 0) at step 10
    event = {"step": 10, "operator": "copy", "depth_before": 1, "depth_after": 2, "source": [0, 1]}
    event["insert_at"] = 1
    event["layer_map"] = [[[0, 1.0]], [[0, 1.0]]]
    fmt = {"format": "induction-workbench/duplication-log", "version": 1, "initial_depth": 1}
    log = DuplicationLog.from_json({**fmt, "events": [event]})
    ck = [
        ("step-0", 0, None, 0, 1),
        ("step-10-pre", 10, "before", 0, 1),
        ("step-10", 10, "after", 1, 2),
        ("final", 20, None, 1, 2),
    ]
    vals = {("step-0", 0, 0): 0.1, ("step-10-pre", 0, 0): 0.5}
    vals |= {("step-10", 0, 0): 0.45, ("step-10", 1, 0): 0.5}
    vals |= {("final", 0, 0): 0.2, ("final", 1, 0): 0.8}
    tl = build_timeline(_rows(ck, vals), duplication_log=log)
    assert tl.growth == [10]
    f = tl.formed.set_index("layer")
    assert f.loc[1, "ancestor"] == "L0H0" and f.loc[1, "formed_step"] == 10
    assert bool(f.loc[1, "ancestor_formed_before_growth"])
    assert f.loc[1, "score_pre_growth"] == 0.5 and f.loc[1, "score_post_growth"] == 0.5
    assert pd.isna(f.loc[0, "formed_step"])
    assert "1 of the 1 formed heads descend" in tl.sentence()
    assert "before growth: their ancestor" in tl.figure().layout.annotations[0].text


def test_count_of_formed_heads_from_formed_ancestors_and_the_legend():
    """The summary counts, out of the heads that formed, those whose ancestor had formed
    before growth (a dip just after growth does not undo that); the legend says "not
    formed" for a head that never formed (never "<NA>")."""
    event = {"step": 10, "operator": "copy", "depth_before": 1, "depth_after": 2, "source": [0, 1]}
    event["insert_at"] = 1
    event["layer_map"] = [[[0, 1.0]], [[0, 1.0]]]
    fmt = {"format": "induction-workbench/duplication-log", "version": 1, "initial_depth": 1}
    log = DuplicationLog.from_json({**fmt, "events": [event]})
    ck = [
        ("step-0", 0, None, 0, 1),
        ("step-10-pre", 10, "before", 0, 1),
        ("step-10", 10, "after", 1, 2),
        ("final", 20, None, 1, 2),
    ]
    before = {0: (0.1, 0.5), 1: (0.1, 0.6), 2: (0.1, 0.1), 3: (0.1, 0.1)}  # L0Hh ancestors
    after = {  # (layer, head): (step-10, final)
        (0, 0): (0.35, 0.7),  # ancestor formed; dips below 0.4 after growth, forms again
        (1, 0): (0.5, 0.8),
        (0, 1): (0.45, 0.5),
        (1, 1): (0.45, 0.65),
        (0, 2): (0.3, 0.5),  # forms after growth, from an ancestor that had not
        (0, 3): (0.3, 0.45),
        (1, 2): (0.2, 0.1),  # never forms
        (1, 3): (0.1, 0.1),
    }
    vals = {}
    for h, (v0, pre) in before.items():
        vals |= {("step-0", 0, h): v0, ("step-10-pre", 0, h): pre}
    for (layer, h), (post, end) in after.items():
        vals |= {("step-10", layer, h): post, ("final", layer, h): end}
    tl = build_timeline(_rows(ck, vals), duplication_log=log)
    f = tl.formed.set_index(["layer", "head"])
    assert f.loc[(0, 0), "formed_step"] == 20
    assert bool(f.loc[(0, 0), "ancestor_formed_before_growth"])
    assert not f.loc[[(0, 2), (0, 3), (1, 2)], "ancestor_formed_before_growth"].any()
    sentence = tl.sentence()
    assert "6 of 8 heads formed" in sentence
    assert "4 of the 6 formed heads descend from a head formed before it" in sentence
    names = [t.name for t in tl.figure(top=8).data]
    assert "L1H0, formed at 10" in names and "L0H0, formed at 20" in names
    assert "L1H2, not formed" in names and not any("<NA>" in n for n in names)


def test_timeline_cli(tiny_run, tmp_path):
    from induction.dynamics.sweep import SweepSettings, sweep

    ds = tmp_path / "ds"
    sweep([str(tiny_run)], ds, settings=SweepSettings(seeds=1, batch=4, loss=True), progress=False)
    runner = CliRunner()
    out, table = tmp_path / "t.html", tmp_path / "formed.csv"
    args = ["timeline", str(ds), "--out", str(out), "--table", str(table)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "growth at step 10" in result.stdout and out.is_file()
    assert "wrote" not in result.stdout  # diagnostics go to stderr, as for scan
    assert result.stderr.splitlines() == [f"wrote {out}", f"wrote {table}"]
    formed = pd.read_csv(table)
    assert len(formed) == 64 and "ancestor_formed_before_growth" in formed
    for bad, message in (
        (["timeline", str(tmp_path / "none"), "--out", str(out)], "no sweep dataset"),
        (["timeline", str(ds), "--model", "x", "--out", str(out)], "no model 'x'"),
        (["timeline", str(ds), "--out", str(tmp_path / "t.txt")], "unknown suffix"),
    ):
        result = runner.invoke(app, bad)
        assert result.exit_code == 2 and message in result.output, result.output


@pytest.mark.parametrize("value", ["nan", "1e309", "-1", "1.5"])
def test_threshold_out_of_range_is_refused_before_reading(tmp_path, value, one_line_error):
    from typer.testing import CliRunner

    from induction.commands.main import app

    out = tmp_path / "t.html"
    result = CliRunner().invoke(
        app, ["timeline", str(tmp_path), "--threshold", value, "--out", str(out)]
    )
    one_line_error(result, "--threshold must be in [0, 1]")
    assert not out.exists()


def test_fv_sweep_and_timeline(tiny_run, tmp_path):
    """--scores induction,fv: a head row per checkpoint for each; the FV timeline needs a
    threshold (FV scores have no conventional one) and follows heads like any head score."""
    from induction.dynamics.dataset import read_dataset
    from induction.dynamics.sweep import SweepSettings, sweep

    ds = tmp_path / "ds"
    settings = SweepSettings(scores=("induction", "fv"), seeds=1, batch=4)
    sweep([str(tiny_run)], ds, settings=settings, progress=False)
    rows = read_dataset(ds)
    fv = rows[rows["score"] == "fv"]
    assert len(fv) == len(rows[rows["score"] == "induction"]) > 0
    assert fv["value"].notna().all() and (fv["value"] != 0).any()
    runner = CliRunner()
    out = tmp_path / "fv.html"
    result = runner.invoke(app, ["timeline", str(ds), "--score", "fv", "--out", str(out)])
    assert result.exit_code == 2 and "no conventional formation threshold" in result.output
    assert not out.exists()
    args = ["timeline", str(ds), "--score", "fv", "--threshold", "0.001", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert out.is_file()


def test_fv_sweep_settings_are_checked_and_hashed_apart():
    from induction.dynamics.sweep import SweepSettings
    from induction.errors import InputError

    assert SweepSettings(scores=("fv",)).scan_scores == ()
    assert (
        SweepSettings(scores=("induction", "fv")).hash()
        != SweepSettings(scores=("induction",)).hash()
    )
    with pytest.raises(InputError, match="--loss needs a scan score beside fv"):
        SweepSettings(scores=("fv",), loss=True)
    with pytest.raises(InputError, match="unknown score 'bogus'.*, or fv"):
        SweepSettings(scores=("induction", "bogus", "fv"))
