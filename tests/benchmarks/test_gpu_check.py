"""benchmarks/gpu_check.py: the CPU fallback (``--device cpu --quick``) runs every section
(multi-seed training and batched head sets are skipped with a reason where this build lacks
them), writes one JSON whose ratios are measured, and refuses bad arguments in one line."""

from __future__ import annotations

import json


def test_cpu_fallback_writes_one_json_with_every_section(load_benchmark, tmp_path, capsys):
    gpu_check = load_benchmark("gpu_check")
    out = tmp_path / "gpu_check.json"
    assert gpu_check.main(["--device", "cpu", "--quick", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    sections = report["sections"]
    assert list(sections) == list(gpu_check.SECTIONS)
    for name, sec in sections.items():
        assert sec["status"] in ("ok", "skipped"), (name, sec)
        if sec["status"] == "skipped":
            assert sec["reason"].endswith(gpu_check.NOT_AVAILABLE), sec  # not the budget
            assert name in ("head_sets", "multiseed")
        else:
            assert sec["ratio"] > 0, (name, sec)
    # each fast path agrees with its baseline
    assert sections["scan"]["zoo"]["max_abs_diff"] < 1e-5  # ours vs TransformerLens detect_head
    assert sections["scan_memory"]["max_abs_diff"] < 1e-5  # chunked vs eager
    items = sections["engine"]["items"]
    assert sections["engine"]["same_answers"] == f"{items}/{items}"
    assert sections["effects"]["max_abs_loss_diff"] < 1e-4
    assert sections["fv"]["max_abs_cie_diff"] < 1e-5
    assert report["device"] == "cpu" and report["quick"] is True
    assert not list(tmp_path.glob("*.tmp*"))  # written atomically: no leftovers
    assert "wrote" in capsys.readouterr().out


def test_bad_arguments_are_one_line_errors(load_benchmark, tmp_path, capsys):
    gpu_check = load_benchmark("gpu_check")
    assert gpu_check.main(["--only", "scan,warp", "--out", str(tmp_path / "x.json")]) == 2
    assert gpu_check.main(["--device", "cpu", "--out", str(tmp_path / "x.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)
    assert "warp" not in err[0] or "choose from scan" in err[0]
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "x.txt").exists()
