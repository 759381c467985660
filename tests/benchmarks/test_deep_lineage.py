"""benchmarks/deep_lineage.py on a shipped grown model: counts agree with the lineage API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GROWN = ROOT / "induction" / "zoo" / "models" / "grown-s0"


@pytest.fixture(scope="module")
def deep_mod(load_benchmark):
    return load_benchmark("deep_lineage")


@pytest.mark.skipif(not GROWN.is_dir(), reason="zoo model grown-s0 not shipped")
def test_counts_table_and_json(deep_mod, tmp_path, capsys):
    import torch

    threads = torch.get_num_threads()
    out = tmp_path / "deep.json"
    try:
        args = [str(GROWN), "--top", "12,4", "--samples", "50", "--json", str(out)]
        assert deep_mod.main(args) == 0
    finally:
        torch.set_num_threads(threads)
    rows = json.loads(out.read_text())
    assert [r["top_n"] for r in rows] == [12, 4]
    for r in rows:
        # 4 -> 8 layers: every initial head has two descendants
        assert r["depths"] == "4 -> 8" and r["ancestor_pool"] == 16 and r["layer_pool"] == 4
        assert r["min_ancestors"] == -(-r["top_n"] // 2)
        assert r["min_ancestors"] <= r["top_ancestors"] <= min(r["top_n"], 16)
        assert r["headline_heads"] >= 0.8 * r["top_n"]
        assert len(r["headline_ancestors"]) <= r["top_ancestors"]
        assert 0 <= r["headline_were_induction"] <= len(r["headline_ancestors"])
        # heads >= 0.4: grown-s0 has some, each traced to one initial head
        assert len(r["strong_heads"]) >= 1
        assert 1 <= r["max_strong_per_ancestor"] <= 2
        assert len(r["strong_ancestors"]) <= len(r["strong_heads"])
        assert r["score_at_top_n"] < 0.4 or r["top_n"] <= len(r["strong_heads"])
    table = capsys.readouterr().out
    assert table.count("| grown-s0 | 4 -> 8 |") == 2


def test_no_models_is_a_one_line_error(deep_mod, tmp_path, monkeypatch):
    monkeypatch.setattr(deep_mod, "MODELS", tmp_path)
    with pytest.raises(SystemExit, match="no grown models found"):
        deep_mod.main([])
    with pytest.raises(SystemExit, match="--top takes integers"):
        deep_mod.main([str(GROWN), "--top", "x"])
