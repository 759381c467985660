"""benchmarks/zoo_throughput.py and benchmarks/zoo_pilot.py: ratios against a baseline of the
same run; the pilot's summary reads the logged probes."""

from __future__ import annotations

import json


def test_throughput_prints_ratios_and_writes_json(load_benchmark, tmp_path, capsys):
    bench = load_benchmark("zoo_throughput")
    out = tmp_path / "t.json"
    assert bench.main(["--steps", "1", "--batches", "4", "8", "--threads", "1", "--out",
                       str(out)]) == 0  # fmt: skip
    rows = json.loads(out.read_text())["rows"]
    assert [r["batch"] for r in rows] == [4, 8] and rows[0]["vs_first"] == 1.0
    assert all(0 < r["of_peak"] and r["tokens_per_s"] > 0 for r in rows)
    assert "of peak" in capsys.readouterr().out


def test_pilot_summary_finds_when_gates_pass(load_benchmark, tmp_path):
    pilot = load_benchmark("zoo_pilot")
    run = tmp_path / "d4-base"
    run.mkdir()
    rows = [
        {"step": 250, "loss": 3.0, "max_induction": 0.1, "lookup": 0.2, "varassign": 0.2,
         "position_gap": 0.1},
        {"step": 500, "loss": 2.0, "max_induction": 0.5, "lookup": 0.7, "varassign": 0.3,
         "position_gap": 0.1},
    ]  # fmt: skip
    (run / "train_log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = pilot.summary(tmp_path)["d4-base"]
    assert found["heads_at"] == 500 and found["lookup_at"] == 500
    assert found["varassign_at"] is None and not found["finished"]
