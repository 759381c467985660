"""benchmarks/copied_heads.py: the copied-head table of a grown zoo series, its figure and
the generated block; bad input in one line."""

from __future__ import annotations

import pandas as pd
import pytest


@pytest.fixture(scope="module")
def copied(load_benchmark):
    return load_benchmark("copied_heads")


def test_every_shipped_grown_series_is_found(copied):
    assert {"grown8c-s0", "grown8ce-s0"} <= set(copied.grown_series())


def test_bad_input_is_one_line(copied, tmp_path, capsys):
    assert copied.main(["grown8c-s0", "--details", str(tmp_path / "none.md")]) == 2
    assert "no such file" in capsys.readouterr().err
    doc = tmp_path / "doc.md"
    doc.write_text("no markers\n")
    with pytest.raises(Exception, match="copied-heads:start"):
        copied.replace_block(doc, "x")


@pytest.mark.slow
def test_grown8c_s0_copies_keep_their_previous_token_role(copied, tmp_path):
    doc = tmp_path / "results.md"
    doc.write_text("a\n<!-- copied-heads:start -->\nold\n<!-- copied-heads:end -->\nb\n")
    assert copied.main(["grown8c-s0", "--out-dir", str(tmp_path), "--details", str(doc)]) == 0
    table = pd.read_csv(tmp_path / "grown8c-s0.csv")
    kept = table[table["class"] == "keeps its role"]
    assert (kept["role_at_end"] == "previous-token").sum() >= 1
    assert "grown8c-s0: 4 growth events" in doc.read_text() and "old" not in doc.read_text()


def test_a_series_without_checkpoints_reads_its_stored_sweep(copied, tmp_path, monkeypatch):
    """Round 4 keeps the checkpoint series of seed 0 only (R8): a later seed is read from the
    sweep build_zoo stored before dropping its checkpoints; with neither, one line names both."""
    import shutil

    from induction.models import registry

    shipped = registry.zoo_path("grown8c-s0")
    bare = tmp_path / "grown8c-s0"  # the model as a later seed ships: no checkpoints
    bare.mkdir()
    for f in shipped.iterdir():
        if f.name != "checkpoints":
            (bare / f.name).symlink_to(f)
    monkeypatch.setattr(registry, "zoo_path", lambda name: bare if name == "grown8c-s0" else
                        shipped.parent / name)  # fmt: skip
    sweeps = tmp_path / "sweeps"
    assert "grown8c-s0" not in copied.grown_series(sweeps)
    with pytest.raises(Exception, match="ships no checkpoint series"):
        copied.measure("grown8c-s0", sweeps, tmp_path)
    shutil.copytree(copied.OUT / "sweeps" / "grown8c-s0", sweeps / "grown8c-s0")
    assert "grown8c-s0" in copied.grown_series(sweeps)
    result, _ = copied.measure("grown8c-s0", sweeps, tmp_path)
    expected = pd.read_csv(copied.OUT / "grown8c-s0.csv")
    assert list(result.table["class"]) == list(expected["class"])
