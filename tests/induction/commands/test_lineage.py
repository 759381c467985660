"""``induction lineage`` and ``induction grow``: summaries, exports, one-line errors (exit 2)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import networkx as nx
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from induction.commands.main import app
from lineage.log import DuplicationLog

runner = CliRunner()


@pytest.fixture(scope="module")
def scores_csv(grown_dir, tmp_path_factory):
    strong = {(0, 1): 0.9, (1, 1): 0.85, (2, 1): 0.8, (3, 1): 0.75, (5, 3): 0.7, (6, 3): 0.65}
    rows = [
        (lay, h, strong.get((lay, h), 0.01 * (lay + h) / 10)) for lay in range(8) for h in range(4)
    ]
    path = tmp_path_factory.mktemp("scores") / "scores.csv"
    pd.DataFrame(rows, columns=["layer", "head", "induction"]).to_csv(path, index=False)
    return path


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result


def test_summary_and_exports(grown_dir, scores_csv, tmp_path):
    exports = [tmp_path / f"g.{ext}" for ext in ("graphml", "gexf", "json", "dot", "html")]
    args = ["lineage", grown_dir, "--scores", scores_csv, "--top", "6", "--out", tmp_path / "a.csv"]
    for p in exports:
        args += ["--export", p]
    result = run(*args)
    assert result.exit_code == 0, result.output
    assert "6 of the 6 strongest heads descend from 2 ancestors (L0H1, L1H3)" in result.stdout
    table = pd.read_csv(tmp_path / "a.csv")
    assert len(table) == 32 and {"ancestor_layer", "induction", "path"} <= set(table.columns)
    g = nx.read_graphml(exports[0])
    assert g.number_of_nodes() == (2 + 4 + 8) * 4
    assert g.nodes["s2:L0H1"]["induction"] == 0.9
    assert all(p.is_file() for p in exports)


def test_json_summary_and_initial_scores(grown_dir, scores_csv, tmp_path):
    init = tmp_path / "init.csv"
    pd.DataFrame({"layer": [0, 1], "head": [1, 3], "induction": [0.6, 0.1]}).to_csv(init)
    result = run(
        "lineage", grown_dir, "--scores", scores_csv, "--initial-scores", init, "--json", "--top", 6
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["headline_ancestors"] == ["L0H1", "L1H3"]
    assert data["depths"] == [2, 4, 8] and data["lineage_source"] == "log"
    by = {a["ancestor"]: a for a in data["ancestors"]}
    assert by["L0H1"]["was_induction_head"] is True
    assert by["L1H3"]["was_induction_head"] is False
    assert data["top"][0]["ancestor"] == "L0H1"


def test_fv_lineage_computes_fv_scores_now_and_marks_no_ancestor_without_a_threshold(grown_dir):
    """--score fv: FV scores computed now on the zoo's pair tasks, for the model and its
    initial network; FV scores have no conventional threshold, so no ancestor is marked and a
    note says how to ask; with --threshold they are marked as FV heads."""
    initial = grown_dir.parent / "initial"
    result = run("lineage", grown_dir, "--score", "fv", "--initial", initial, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["scores_source"].startswith("FV scores computed now (zoofacts suite")
    assert data["score"] == "fv" and data["threshold"] is None
    assert data["n_top_above_threshold"] is None
    assert all(a["was_induction_head"] is None for a in data["ancestors"])
    assert any("no conventional threshold" in n for n in data["notes"])
    assert "already" not in data["sentence"]
    marked = run("lineage", grown_dir, "--score", "fv", "--initial", initial, "--threshold",
                 "-1", "--json")  # fmt: skip
    data = json.loads(marked.stdout)
    assert all(a["was_induction_head"] is True for a in data["ancestors"])
    assert "were already FV heads (>= -1)" in data["sentence"]


def test_scan_now_and_initial_model(grown_dir):
    """No --scores: the model is scanned now; --initial scans the 2-layer initial network."""
    initial = grown_dir.parent / "initial"
    result = run(
        "lineage", grown_dir, "--seeds", "1", "--batch", "4", "--initial", initial, "--json"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["scores_source"].startswith("scanned now")
    assert data["n_top"] == 12 and len(data["top"]) == 12
    assert all(a["ancestor_score"] is not None for a in data["ancestors"])


def test_infer_without_log_and_agreement(grown_dir, scores_csv, tmp_path, one_line_error):
    bare = tmp_path / "bare"
    shutil.copytree(grown_dir, bare)
    (bare / "duplication_log.json").unlink()
    error = one_line_error(run("lineage", bare, "--scores", scores_csv))
    assert "--infer" in error
    result = run("lineage", bare, "--scores", scores_csv, "--infer", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["inferred"]["families"] == [0, 0, 0, 0, 1, 1, 1, 1]
    result = run("lineage", grown_dir, "--scores", scores_csv, "--infer")
    assert result.exit_code == 0, result.output
    assert "agreement with the duplication log: partition equal" in result.stdout


def test_external_log_option(grown_dir, scores_csv, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(grown_dir, bare)
    (bare / "duplication_log.json").rename(tmp_path / "kept.json")
    result = run("lineage", bare, "--log", tmp_path / "kept.json", "--scores", scores_csv)
    assert result.exit_code == 0, result.output


def _log_json(grown_dir):
    return json.loads((grown_dir / "duplication_log.json").read_text())


def _bad_logs(grown_dir):
    def mutate(f):
        data = _log_json(grown_dir)
        f(data)
        return data

    def cycle(d):  # layer 5 of the final stage names itself / a later layer as its parent
        d["events"][1]["layer_map"][5] = [[5, 1.0]]

    def self_loop_first(d):
        d["events"][0]["layer_map"][3] = [[3, 1.0]]

    return [
        (mutate(cycle), "outside the previous stage"),
        (mutate(self_loop_first), "outside the previous stage"),
        (mutate(lambda d: d["events"][0]["layer_map"].__setitem__(0, [[9, 1.0]])), "parent 9"),
        (mutate(lambda d: d["events"][1].update(operator="ligo")), "unknown operator 'ligo'"),
        (mutate(lambda d: d.update(version=2)), "version 2 is not supported"),
        (mutate(lambda d: d["events"].pop()), "ends at 4 layers but the model has 8"),
        (mutate(lambda d: d.update(format="x")), "not a duplication log"),
        ("{not json", "not valid JSON"),
    ]


def test_bad_logs_exit_2_with_one_line(grown_dir, scores_csv, tmp_path, one_line_error):
    for k, (data, message) in enumerate(_bad_logs(grown_dir)):
        path = tmp_path / f"bad{k}.json"
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        error = one_line_error(run("lineage", grown_dir, "--log", path, "--scores", scores_csv))
        assert message in error, (k, error)


def test_bad_inputs_exit_2(grown_dir, scores_csv, tmp_path, one_line_error):
    cases = [
        (["--export", tmp_path / "g.svg"], "unknown suffix '.svg'"),
        (["--out", scores_csv], "refusing to write"),
        (["--export", grown_dir / "g.graphml"], "refusing to write"),
        (["--top", "0"], "--top must be a positive integer"),
        (["--stage", "5"], "outside the lineage's stages 0..2"),
        (["--stage", "2"], "is the final model"),
        (["--initial-scores", scores_csv], "were the scores computed on another model"),
    ]
    for extra, message in cases:
        error = one_line_error(run("lineage", grown_dir, "--scores", scores_csv, *extra))
        assert message in error, (extra, error)
    error = one_line_error(run("lineage", grown_dir, "--scores", tmp_path / "none.csv"))
    assert "not found" in error
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"layer": [0], "head": [0]}).to_csv(bad)
    assert "lacks column" in one_line_error(run("lineage", grown_dir, "--scores", bad))


def test_grow_preset_and_mergekit(grown_dir, tmp_path):
    result = run("grow", grown_dir, "--preset", "midas", "--block", "4", "--out", tmp_path / "g")
    assert result.exit_code == 0, result.output
    assert "(12 layers)" in result.stdout
    assert DuplicationLog.load(tmp_path / "g").depths() == [2, 4, 8, 12]
    config = tmp_path / "solar.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "merge_method": "passthrough",
                "slices": [
                    {"sources": [{"model": "m", "layer_range": [0, 6]}]},
                    {"sources": [{"model": "m", "layer_range": [2, 8]}]},
                ],
            }
        )
    )
    result = run("grow", grown_dir, "--mergekit", config, "--out", tmp_path / "s")
    assert result.exit_code == 0, result.output
    log = DuplicationLog.load(tmp_path / "s")
    assert log.depths() == [2, 4, 8, 12] and log.events[-1].operator == "mergekit"
    # the grown model is traced like any other
    result = run("lineage", tmp_path / "s", "--seeds", "1", "--batch", "2", "--top", "3")
    assert result.exit_code == 0, result.output


def test_grow_errors_exit_2(grown_dir, tmp_path, one_line_error):
    config = tmp_path / "bad.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "merge_method": "passthrough",
                "slices": [
                    {
                        "sources": [
                            {"model": "m", "layer_range": [0, 4]},
                            {"model": "m", "layer_range": [0, 2]},
                        ]
                    }
                ],
            }
        )
    )
    cases = [
        (["--mergekit", config, "--out", tmp_path / "o"], "unequal layer counts"),
        (["--out", grown_dir], "refusing to write"),
        (["--preset", "ligo", "--out", tmp_path / "o"], "unknown growth preset"),
        (["--preset", "lidas", "--block", "3", "--out", tmp_path / "o"], "even block"),
        (["--preset", "lidas", "--mergekit", config, "--out", tmp_path / "o"], "not both"),
    ]
    for extra, message in cases:
        error = one_line_error(run("grow", grown_dir, *extra))
        assert message in error, (extra, error)
    assert "no such checkpoint" in one_line_error(run("grow", tmp_path / "nope", "--out", "x"))
    assert not (tmp_path / "o").exists()


def test_console_script_bad_log_one_line(grown_dir, scores_csv, tmp_path):
    """A real process: exit 2, one stderr line, no traceback."""
    bad = tmp_path / "bad.json"
    data = _log_json(grown_dir)
    data["events"][1]["operator"] = "ligo"
    bad.write_text(json.dumps(data))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from induction.commands.main import main; main()",
            "lineage",
            str(grown_dir),
        ]
        + ["--log", str(bad), "--scores", str(scores_csv)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: duplication log event 1: unknown operator 'ligo' "
        "(known: copy, midas, lidas, top, mix, mergekit, inferred, llama-pro)"
    ]


def test_looped_checkpoint_passes_map_to_the_block(tiny_llama_factory, tmp_path, one_line_error):
    from induction.models.looped import LoopPlan

    folder = tiny_llama_factory(tmp_path / "looped", n_layers=2)
    LoopPlan(block=2, loops=3).save(folder)
    result = run("lineage", folder, "--seeds", "1", "--batch", "2", "--top", "4", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["lineage_source"] == "loop" and data["depths"] == [2, 6]
    for head in data["top"]:
        assert head["ancestor"] == f"L{head['layer'] % 2}H{head['head']}"
    assert "looped" in one_line_error(run("lineage", folder, "--infer"))


def zoo_grown() -> list[str]:
    from induction.models import registry

    return [n for n in registry.zoo_models() if n.startswith("grown-")]


@pytest.mark.skipif(not zoo_grown(), reason="no grown zoo models shipped yet")
@pytest.mark.parametrize("name", zoo_grown() or ["none"])
def test_zoo_grown_top12_summary_printed_and_exported(name, tmp_path):
    """Done-when: the top-12 summary of each grown zoo model is printed and exported, and the
    ancestors are those of an independent replay of its log."""
    from induction.models import registry

    html, graphml = tmp_path / "g.html", tmp_path / "g.graphml"
    result = run(
        "lineage", name, "--top", 12, "--seeds", 1, "--batch", 8, "--export", html,
        "--export", graphml, "--out", tmp_path / "a.csv",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "of the 12 strongest heads descend from" in result.stdout
    log = DuplicationLog.load(registry.zoo_path(name))
    labels = list(range(log.initial_depth))
    for e in log.events:
        a, b = e.source
        labels = labels[: e.insert_at] + labels[a:b] + labels[e.insert_at :]
    table = pd.read_csv(tmp_path / "a.csv")
    assert (table["ancestor_layer"] == [labels[x] for x in table["layer"]]).all()
    assert (table["ancestor_head"] == table["head"]).all()
    g = nx.read_graphml(graphml)
    assert sum(1 for _, d in g.nodes(data=True) if d["final"]) == len(table)
    assert html.stat().st_size > 1_000_000
