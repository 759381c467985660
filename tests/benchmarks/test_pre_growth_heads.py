"""benchmarks/pre_growth_heads.py: the strongest head per distance before the first growth,
read from a shipped series; a model without one is refused in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pre(load_benchmark):
    return load_benchmark("pre_growth_heads")


def test_grown8rte_s0_had_a_short_range_head_its_distance_32_gate_misses(pre, tmp_path, capsys):
    """docs/replication.md, "What a dry run of the reading found": at the first growth (step
    800) layer 3 holds a head above 0.4 at distance 8 and none at distance 32."""
    args = ["grown8rte-s0", "--distances", "8", "32", "--prompt-seeds", "2", "--batch", "8"]
    assert pre.main([*args, "--out-dir", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "grown8rte-s0.csv")
    assert table["checkpoint"].iloc[-1] == "step-800-pre"  # nothing after the first growth
    assert set(table["checkpoint"]) == {f"step-{s}" for s in (0, 50, 100, 200, 400)} | {
        "step-800-pre"
    }
    last = table[table["checkpoint"] == "step-800-pre"]
    best = last.groupby(["distance", "layer"])["induction"].max()
    assert best.loc[(8, 3)] > 0.4 > best.xs(32).max()
    assert len(last) == 2 * 4 * 8  # every head of the 4-layer network at both distances
    assert (table["ci_lo"] <= table["induction"]).all()
    assert "step-800-pre d8   L3H" in capsys.readouterr().out


def test_a_model_without_a_pre_growth_checkpoint_is_one_line(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "pre_growth_heads.py"), str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.strip().count("\n") == 0 and "no step-N-pre checkpoint" in run.stderr
