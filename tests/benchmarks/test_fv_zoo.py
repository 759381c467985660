"""benchmarks/fv_zoo.py: FV and induction formation over a checkpoint series, and the lineage
of a grown model's top heads of each kind, gated on fv_comparison's pair-task gate."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def fvz(load_benchmark):
    return load_benchmark("fv_zoo")


@pytest.fixture(scope="module")
def tiny_grown_run(tmp_path_factory):
    """A tiny lidas8 run (4 -> 8 layers at step 10) with its checkpoint series."""
    from induction.training.protocol import preset_config, train_fixed

    phases = [
        {"at": 0.0, "mix": {"copy": 0.8, "bigram": 0.2}, "seq_len": 24, "max_span": 6},
        {"at": 0.5, "mix": {"copy": 0.5, "pairs": 0.5}, "seq_len": 24, "max_span": 8},
    ]
    cfg = preset_config("lidas8", d_model=16, d_mlp=32, batch=2, steps=30, warmup=3,
                        eval_every=10, phases=phases, first_checkpoint=10, eval_distance=6,
                        repeat_len=6)  # fmt: skip
    out = tmp_path_factory.mktemp("runs") / "lidas8-s0"
    train_fixed(cfg, out=out, progress=False)
    return out


def test_formation_and_lineage_of_a_grown_run(fvz, tiny_grown_run, tmp_path, monkeypatch):
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))
    md = tmp_path / "fvz.md"
    args = ["--out-dir", str(tmp_path), "--dataset", str(tmp_path / "sweeps"), "--top", "3"]
    fvz.main([str(tiny_grown_run), *args, "--samples", "200", "--markdown", str(md)])
    found = json.loads((tmp_path / "lidas8-s0-formation.json").read_text())
    # no fv_comparison gate for this run: untestable, and the table says why
    assert found["testable"] is False and "fv_comparison" in found["gate"]
    assert "| lidas8-s0 | untestable: no gate measured" in md.read_text()
    assert found["growth_steps"] == [10] and found["checkpoints"] >= 4

    # the FV threshold is the stated share of the final strongest FV score, and each top FV
    # head's formation step is the first checkpoint from which it stays at or above it
    from induction.dynamics.dataset import read_dataset
    from induction.dynamics.timeline import build_timeline

    rows = read_dataset(tmp_path / "sweeps" / "lidas8-s0")
    fv = build_timeline(rows, score="fv", threshold=found["fv_threshold"])
    assert found["fv_threshold"] == pytest.approx(0.5 * fv.formed["final"].max())
    for h in found["top_fv_heads"]:
        layer, head = (int(x) for x in h["head"][1:].split("H"))
        s = fv.series[(fv.series["layer"] == layer) & (fv.series["head"] == head)]
        values, steps = list(s["value"]), list(s["step"])
        stays = [all(v >= found["fv_threshold"] for v in values[i:]) for i in range(len(values))]
        expect = next((steps[i] for i, ok in enumerate(stays) if ok), None)
        assert h["fv_formed_step"] == expect
        assert h["max_induction_until_fv_formed"] >= 0

    lin = found["lineage"]
    for kind in ("fv", "induction"):
        c = lin[kind]
        assert c["top_n"] == 3 and c["min_ancestors"] <= c["top_ancestors"] <= 3
        assert 0 <= c["p_random"] <= 1
    for score in ("fv", "induction"):
        assert (tmp_path / f"lidas8-s0-timeline-{score}.png").stat().st_size > 0

    # the tables re-render from the stored JSON alone
    again = tmp_path / "again.md"
    fvz.main(["lidas8-s0", *args, "--from-results", "--markdown", str(again)])
    assert again.read_text() == md.read_text()


def test_a_model_without_a_series_is_refused(fvz, tmp_path):
    with pytest.raises(SystemExit, match="no checkpoint series"):
        fvz.main(["dense8c-s1", "--out-dir", str(tmp_path), "--dataset", str(tmp_path / "s")])


def test_the_gate_must_be_measured_with_the_same_corruption(fvz, tmp_path):
    record = {"testable": True, "gate": "4 of 4 pair tasks above chance",
              "rankings": {"corruption": "foreign"}}  # fmt: skip
    (tmp_path / "m-s0.json").write_text(json.dumps(record))
    assert fvz.gate_of("m-s0", tmp_path, "foreign") == (True, record["gate"])
    ok, why = fvz.gate_of("m-s0", tmp_path, "shuffled")
    assert not ok and "measured with foreign labels" in why and "--corruption shuffled" in why


def test_formation_steps_read_as_the_checkpoint_interval(fvz):
    assert fvz._step(1600, [50, 800, 1600, 3200]) == "800-1600"
    assert fvz._step(50, [50, 800]) == "50" and fvz._step(None, [50]) == "never"
