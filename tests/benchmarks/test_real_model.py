"""benchmarks/real_model.py: SmolLM2's means and per-task tables of every readout at several
fractions against uniform and layer-shaped random sets, written per (suite, fraction) as it
lands and reused while its key holds (tested on a zoo model with two zoo19 tasks and
RegBench: SmolLM2 itself takes hours)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def real_model(load_benchmark):
    return load_benchmark("real_model")


ZOO = ROOT / "induction" / "zoo" / "models" / "dense8-s0"


def test_tables_per_readout_and_fraction_and_reuse(real_model, tmp_path, capsys):
    doc = tmp_path / "README.md"
    doc.write_text(f"intro\n{real_model.START}\nold\n{real_model.END}\nafter\n")
    details = tmp_path / "results.md"
    details.write_text(f"{real_model.DETAILS_START}\nold\n{real_model.DETAILS_END}\n")
    argv = [
        "--model", str(ZOO), "--suites", "zoo19:prim_math_depth0,copy", "zoo:regbench",
        "--fracs", "0.1", "0.2", "--controls", "2", "--n-items", "3",
        "--out-dir", str(tmp_path / "out"), "--readme", str(doc), "--details", str(details),
    ]  # fmt: skip
    assert real_model.main(argv) == 0
    first = capsys.readouterr()
    out = tmp_path / "out"
    assert (out / "real_model.csv").is_file()
    for frac in ("0.1", "0.2"):  # a suite with picked tasks: its name carries their hash
        assert len(list(out.glob(f"zoo19-*-frac{frac}.json"))) == 1
    assert len(list(out.glob("zoo-*-frac0.*.json"))) == 2 and len(list(out.iterdir())) == 5
    csv = (tmp_path / "out" / "real_model.csv").read_text()
    text = doc.read_text()
    assert text.startswith("intro\n") and text.endswith("after\n") and "\nold\n" not in text
    head = "top 10%: drop (uniform random; layer-shaped random)"
    assert head in text and "top 20%" in text
    # the means of the task metric and of both teacher-forced readouts, and each run's verdict
    assert "| zoo19 | cand_acc |" in text and "| zoo19 | logprob |" in text
    assert "- zoo19, top 20%: " in text and "- zoo, top 10%: " in text
    per_task = details.read_text()
    assert "| zoo19 | prim_math_depth0 |" in per_task and "| zoo | regbench |" in per_task
    assert "**cand_acc**" in per_task and "shaped " in per_task and "\nold\n" not in per_task
    meta = json.loads(next((tmp_path / "out").glob("zoo19-*-frac0.2.json")).read_text())["meta"]
    assert len(meta["controls"]) == 2 and meta["key"] and meta["verdict"] and meta["gate_lines"]

    assert real_model.main(argv) == 0  # every report reused, the same tables
    again = capsys.readouterr()
    assert again.err.count("reused") == 4 and again.out == first.out
    assert (tmp_path / "out" / "real_model.csv").read_text() == csv

    assert real_model.main([*argv[:-6], "--n-items", "4", *argv[-6:]]) == 0
    assert "reused" not in capsys.readouterr().err  # other settings: measured again


def test_cells_leave_out_what_one_or_no_control_cannot_give(real_model):
    nan = float("nan")
    row = {"drop": 0.25, "ctrl_mean": 0.1, "ctrl_std": None, "p_ctrl": 0.5}
    assert real_model._cell(row) == "+0.25 (+0.10, p 0.50)"
    assert real_model._cell({**row, "ctrl_mean": nan}) == "+0.25"
    shaped = {**row, "shaped_mean": 0.2, "shaped_std": 0.05, "p_shaped": 0.3}
    assert real_model._cell(shaped) == "+0.25 (+0.10, p 0.50; shaped +0.20 ± 0.05, p 0.30)"
    assert real_model._readout_of("antonyms:cand_acc") == ("antonyms", "cand_acc")
    assert real_model._readout_of("MEAN[logprob]") == ("MEAN", "logprob")
    assert real_model._readout_of("MEAN:primitives") == ("MEAN:primitives", "metric")
    assert real_model.Run("/data/my suite.jsonl", None, 0.1).name == "my_suite-frac0.1"


def test_markerless_readme_is_refused_before_measuring(real_model, tmp_path, capsys):
    doc = tmp_path / "results.md"
    doc.write_text("no block here\n")
    out = tmp_path / "out"
    argv = ["--model", str(ZOO), "--out-dir", str(out), "--readme", str(doc)]
    assert real_model.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "real-model:start" in err[0]
    assert not out.exists() and doc.read_text() == "no block here\n"
