"""benchmarks/train_throughput.py: batched seeds against single-seed runs, ratios and peak
fractions from one run."""

from __future__ import annotations

import json


def test_train_throughput_prints_ratios_and_writes_json(load_benchmark, tmp_path, capsys):
    bench = load_benchmark("train_throughput")
    out = tmp_path / "t.json"
    args = ["--preset", "dense8", "--steps", "1", "--batch", "2", "--seeds", "1", "2"]
    assert bench.main([*args, "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["batch"] == 2 and data["matmul_peak_gflops"] > 0
    rows = data["rows"]
    assert [r["seeds_per_process"] for r in rows] == [1, 2]
    for r in rows:
        assert r["ratio"] == r["batched_tokens_per_s"] / r["separate_tokens_per_s"] > 0
        assert 0 < r["separate_of_peak"] and 0 < r["batched_of_peak"] and r["shape_gflops"] > 0
    assert "ratio" in capsys.readouterr().out
    assert bench.main(["--seeds", "0"]) == 2
    assert bench.main(["--preset", "dense9"]) == 2
    assert "not one of" in capsys.readouterr().err
