"""induction sweep: the dataset, reruns, crashes, workers, Ray, hub revisions, CLI errors."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from induction.commands.main import app
from induction.dynamics.dataset import COLUMNS, read_dataset
from induction.dynamics.series import series_hint
from induction.dynamics.sweep import SweepSettings, discover, sweep

FAST = SweepSettings(seeds=1, batch=4, loss=True, device="cpu")
ROOT = Path(__file__).resolve().parents[3]
KEY = ["model", "checkpoint", "score", "layer", "head"]


def rows(path):
    return read_dataset(path).sort_values(KEY).reset_index(drop=True)


def same_rows(a, b):
    import pandas as pd

    pd.testing.assert_frame_equal(rows(a), rows(b), check_exact=True)


@pytest.fixture(scope="module")
def reference(tiny_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "ds"
    report = sweep([str(tiny_run)], out, settings=FAST, progress=False)
    assert report.computed == 5 and not report.failed
    return out


def test_discover_orders_a_run_and_parses_revisions(tiny_run):
    items = discover([str(tiny_run)])
    assert [i.checkpoint for i in items] == ["step-0", "step-10-pre", "step-10", "step-20", "final"]
    assert [i.step for i in items] == [0, 10, 10, 20, 30]
    revs = discover(["EleutherAI/pythia-14m"], ["step1000", "main"])
    assert [(i.revision, i.step) for i in revs] == [("step1000", 1000), ("main", None)]


def test_sweep_writes_the_dataset_and_a_rerun_does_no_work(
    tiny_run, reference, monkeypatch, tmp_path
):
    df = rows(reference)
    assert list(read_dataset(reference).columns) == [c for c, _, _ in COLUMNS]
    assert len(list(reference.glob("*.parquet"))) == 5
    ck = df.drop_duplicates("checkpoint").set_index("checkpoint")
    assert ck.loc["step-10-pre", "growth"] == "before" and ck.loc["step-10", "growth"] == "after"
    assert ck.loc["step-10-pre", "depth"] == 4 and ck.loc["final", "depth"] == 8
    assert ck.loc["step-0", "stage"] == 0 and ck.loc["final", "stage"] == 1
    ind = df[(df.checkpoint == "final") & (df.score == "induction")]
    assert len(ind) == 8 * 8 and ind["layer"].notna().all()
    assert df[df.score == "loss_drop"]["layer"].isna().all()

    import induction.scores.scan

    calls = []
    real = induction.scores.scan.scan
    monkeypatch.setattr(
        induction.scores.scan, "scan", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    report = sweep([str(tiny_run)], reference, settings=FAST, progress=False)
    assert (report.done, report.computed, calls) == (5, 0, [])
    # the same content under another label is copied, not recomputed
    copy = shutil.copytree(reference, tmp_path / "ds")
    report = sweep([str(tiny_run / "checkpoints" / "step-0")], copy, settings=FAST)
    assert (report.reused, report.computed, calls) == (1, 0, [])


def test_a_killed_sweep_resumes_with_identical_rows(tiny_run, reference, tmp_path):
    out = tmp_path / "ds"
    cmd = [
        sys.executable,
        "-m",
        "induction.commands.main",
        "sweep",
        str(tiny_run),
        "--out",
        str(out),
    ]
    cmd += ["--seeds", "1", "--batch", "4", "--loss", "--device", "cpu"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "INDUCTION_PROGRESS": "off"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(list(out.glob("*.parquet"))) < 2 and proc.poll() is None:
        assert time.monotonic() < deadline, "the sweep wrote nothing"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    written = len(list(out.glob("*.parquet")))
    assert 2 <= written < 5, f"not killed midway ({written} files)"
    report = sweep([str(tiny_run)], out, settings=FAST, progress=False)  # the lock died too
    assert report.done == written and report.computed == 5 - written
    same_rows(out, reference)


def test_failed_model_is_reported_and_the_sweep_goes_on(tiny_run, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_run / "checkpoints" / "step-20", broken)
    (broken / "model.safetensors").write_bytes(b"not weights")
    out = tmp_path / "ds"
    args = ["sweep", str(tiny_run / "checkpoints" / "step-0"), str(broken), "dense-s0"]
    args += ["--out", str(out), "--seeds", "1", "--batch", "4", "--device", "cpu"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "failed: broken final" in result.output and "2 scored" in result.output
    assert len(list(out.glob("*.parquet"))) == 2


def test_two_workers_give_identical_rows(tiny_run, reference, tmp_path):
    out = tmp_path / "ds"
    report = sweep([str(tiny_run)], out, settings=FAST, workers=2, progress=False)
    assert report.computed == 5 and not report.failed
    same_rows(out, reference)


def test_ray_local_gives_identical_rows(tiny_run, reference, tmp_path, monkeypatch):
    pytest.importorskip("ray")
    monkeypatch.setenv("INDUCTION_RAY_CPUS", "1")
    out = tmp_path / "ds"
    report = sweep([str(tiny_run)], out, settings=FAST, ray="local", progress=False)
    assert report.computed == 5 and not report.failed, report.failed
    same_rows(out, reference)


def _fake_hub(cache: Path, tiny_run: Path) -> None:
    repo = cache / "models--org--tiny"
    for i, (rev, ck) in enumerate((("step10", "step-10"), ("step20", "step-20"))):
        commit = f"{i:040x}"
        shutil.copytree(tiny_run / "checkpoints" / ck, repo / "snapshots" / commit)
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / rev).write_text(commit)


def test_hub_revisions_from_the_local_cache_and_offline(tiny_run, tmp_path, monkeypatch):
    import huggingface_hub.constants

    cache = tmp_path / "hub"
    _fake_hub(cache, tiny_run)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "ds"
    report = sweep(["org/tiny"], out, revisions=["step10", "step20", "step99"], settings=FAST)
    assert report.computed == 2 and len(report.failed) == 1
    item, msg = report.failed[0]
    assert item.revision == "step99" and "unreachable (offline)" in msg and "\n" not in msg
    df = rows(out)
    assert set(df["revision"]) == {"step10", "step20"} and set(df["step"]) == {10, 20}
    assert set(df["checkpoint"]) == {"step10", "step20"}


def test_summary_counts_models_in_the_singular_and_plural(tmp_path):
    from induction.dynamics.sweep import SweepReport

    one = SweepReport(out=tmp_path, items=1, computed=1).summary()
    assert one.startswith(f"sweep: 1 model into {tmp_path}: 1 scored, 0 already done")
    assert SweepReport(out=tmp_path, items=2).summary().startswith("sweep: 2 models into")
    assert SweepReport(out=tmp_path).summary().startswith("sweep: 0 models into")


def test_a_zoo_name_that_ships_a_series_says_how_to_sweep_the_series(tmp_path):
    """``induction sweep lidas8-s0`` scores the final model only (a name is one model) and
    says in one line on stderr how to sweep the series the model ships; the command it gives
    names the run folder, which the sweep takes as the whole series. The timeline of such a
    dataset says "1 checkpoint" and gives the same command."""
    import re

    ds, fig = tmp_path / "ds", tmp_path / "t.html"
    args = ["sweep", "lidas8-s0", "--scores", "induction", "--batch", "1", "--seeds", "1"]
    result = CliRunner().invoke(app, [*args, "--device", "cpu", "--out", str(ds)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"sweep: 1 model into {ds}: 1 scored")
    notes = [ln for ln in result.stderr.splitlines() if ln.startswith("note: ")]
    assert len(notes) == 1, result.stderr
    m = re.search(r"series of (\d+) checkpoints.*: induction sweep (\S+) --out DIR$", notes[0])
    assert m and notes[0].startswith("note: lidas8-s0 ships a series of"), notes[0]
    series = discover([m.group(2)])
    assert len(series) == int(m.group(1)) + 1 and series[-1].checkpoint == "final"
    assert series[0].model == "lidas8-s0" and series[0].checkpoint.startswith("step-")
    result = CliRunner().invoke(app, ["timeline", str(ds), "--out", str(fig)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("lidas8-s0: 1 checkpoint, "), result.stdout
    hint = [ln for ln in result.stderr.splitlines() if ln.startswith("note: ")]
    assert len(hint) == 1 and "one checkpoint" in hint[0], result.stderr
    assert f"induction sweep {m.group(2)} --out DIR" in hint[0]
    for name in ("dense", "grown-s0", str(series[0].spec), "org/tiny"):
        assert series_hint(name) is None  # no series, or a checkpoint folder itself


@pytest.mark.parametrize(
    "args, message",
    [
        (["a", "b", "--revisions", "step1"], "applies to one hub model"),
        (["grown", "--workers", "0"], "--workers must be"),
        (["grown", "--workers", "2", "--ray", "local"], "either --workers or --ray"),
        (["grown", "--revisions", ","], "--revisions is empty"),
        (["grown", "--scores", "inductoin"], "inductoin"),
    ],
)
def test_cli_one_line_errors(args, message, tmp_path):
    result = CliRunner().invoke(app, ["sweep", *args, "--out", str(tmp_path / "d")])
    assert result.exit_code == 2, result.output
    assert message in result.output and result.output.count("\n") == 1


def test_cli_ray_missing_and_out_a_file(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    result = CliRunner().invoke(
        app, ["sweep", "grown", "--ray", "local", "--out", str(tmp_path / "d")]
    )
    assert result.exit_code == 2 and "--ray needs Ray" in result.output, result.output
    (tmp_path / "f").write_text("x")
    result = CliRunner().invoke(app, ["sweep", "grown", "--out", str(tmp_path / "f")])
    assert result.exit_code == 2 and "is a file" in result.output


def test_ray_cpus_must_be_a_count(monkeypatch):
    from induction.dynamics.sweep import _ray_cpus
    from induction.errors import InputError

    monkeypatch.setenv("INDUCTION_RAY_CPUS", "two")
    with pytest.raises(InputError, match="INDUCTION_RAY_CPUS must be a whole number"):
        _ray_cpus()
    monkeypatch.setenv("INDUCTION_RAY_CPUS", "3")
    assert _ray_cpus() == 3
    monkeypatch.delenv("INDUCTION_RAY_CPUS")
    assert _ray_cpus() is None


def test_discover_refuses_ambiguous_or_impossible_steps_and_merges_dir_and_dir_slash(tmp_path):
    """SW19, SW24, SW25c, SW26: DIR and DIR/ are one series; step-100 beside step-0100, a
    step beyond any run and a card whose steps end before the checkpoints are refused."""
    from induction.dynamics.sweep import discover
    from induction.errors import InputError

    def run(name, steps, card_steps=None):
        folder = tmp_path / name
        for s in steps:
            (folder / "checkpoints" / s).mkdir(parents=True)
            (folder / "checkpoints" / s / "config.json").write_text("{}")
        if card_steps is not None:
            (folder / "config.json").write_text("{}")
            (folder / "card.json").write_text(json.dumps({"steps": card_steps}))
        return str(folder)

    ok = run("ok", ["step-0", "step-100"], card_steps=200)
    items = discover([ok, ok + "/"])
    assert [it.checkpoint for it in items] == ["step-0", "step-100", "final"]
    for folder, message in [
        (run("dup", ["step-100", "step-0100"]), "are both step 100"),
        (run("huge", [f"step-{10**23}"]), "beyond any run"),
        (run("card", ["step-0", "step-100"], card_steps=-5), "took -5 steps"),
    ]:
        with pytest.raises(InputError, match=message):
            discover([folder])


def test_a_sweep_report_is_a_job_result(tiny_run, reference, tmp_path):
    """#43 item 4: ``sweep(sources, out, config, /, **overrides)`` like every job, and its
    report meets the result protocol (to_frame / save / plot) through the output guard."""
    from induction.errors import InputError
    from induction.jobs import Result
    from induction.scores.scan import ScanConfig

    # the config positionally, overrides as keywords: the same settings as FAST, so no work
    config = SweepSettings(ScanConfig(scores=FAST.scan.scores, seeds=1, batch=4), device="cpu")
    report = sweep([str(tiny_run)], reference, config, loss=True, progress=False)
    assert config.scan.loss is False and report.computed == 0 and report.done == 5
    assert isinstance(report, Result) and report.settings_hash == FAST.hash()
    frame = report.to_frame()
    assert len(frame) == len(read_dataset(reference)) and set(frame.settings_hash) == {FAST.hash()}
    saved = report.save(tmp_path / "rows.parquet")
    assert len(read_dataset(saved)) == len(frame)
    with pytest.raises(InputError, match="input"):
        report.save(reference / "rows.csv")  # inside the dataset it reads
    fig = report.plot(tmp_path / "timeline.html")
    assert len(fig.data) > 0 and (tmp_path / "timeline.html").stat().st_size > 0
    with pytest.raises(InputError, match="unknown sweep setting 'seed'"):
        sweep([str(tiny_run)], tmp_path / "x", seed=1)
    assert not (tmp_path / "x").exists()


def test_a_sweep_under_new_settings_drops_the_old_parts(tiny_run, reference, tmp_path):
    """copied_heads.py re-sweeps a series after the scoring code changed: the folder keeps the
    new settings' parts only, so it reads as one record, not a mix."""
    from induction.dynamics.dataset import drop_other_settings

    ds = shutil.copytree(reference, tmp_path / "ds")
    seals = len(list(ds.glob(".*.sha256")))
    report = sweep([str(tiny_run)], ds, settings=SweepSettings(seeds=1, batch=4, device="cpu"))
    assert read_dataset(ds)["settings_hash"].nunique() == 2
    gone = drop_other_settings(ds, str(report.settings_hash))
    assert len(gone) == 5 and not any(p.exists() for p in gone)
    assert len(list(ds.glob(".*.sha256"))) == seals  # the old parts' hash files went too
    assert set(read_dataset(ds)["settings_hash"]) == {report.settings_hash}
    assert drop_other_settings(ds, str(report.settings_hash)) == []
    with pytest.raises(ValueError):
        drop_other_settings(ds, "")
