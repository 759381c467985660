"""Head output norms and silent heads: LLaMA-Pro zero-output copies of a zoo model attend like
induction heads (high scores) but write nothing, and the lineage and ablation reports say so."""

from __future__ import annotations

import pandas as pd
import pytest

import induction
from induction.errors import InputError
from induction.scores.output_norm import (
    add_output_norm,
    output_norms,
    silent_heads,
    silent_note,
    silent_threshold,
)


@pytest.fixture(scope="module")
def pro(tmp_path_factory):
    """``grown`` (8 layers) with a zero-output copy after every layer (16 layers): the copies
    of layer 4 keep induction scores of about 0.45-0.55 (measured, seq_len 32)."""
    from lineage.checkpoint import grow_checkpoint

    folder = tmp_path_factory.mktemp("pro") / "grown-pro"
    grow_checkpoint("grown", folder, preset="llama-pro", every=1)
    return folder, induction.load_model(str(folder), device="cpu")


def test_threshold_and_note():
    table = pd.DataFrame(
        {"layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "output_norm": [1.0, 2.0, 0.0, 1e-9]}
    )
    assert silent_threshold(table.output_norm) == pytest.approx(1e-3 * 0.5000000005)
    assert silent_heads(table) == [(1, 0), (1, 1)]
    note = silent_note([(0, 1), (1, 0), (1, 1)], table)
    assert note.startswith(
        "2 of the top 3 heads write nothing (output norm <= 1.0e-09): L1H0, L1H1"
    )
    assert note.endswith("(llama-pro?)")
    assert silent_note([(0, 0)], table) is None
    assert silent_note([(1, 0)], table.drop(columns="output_norm")) is None
    assert silent_threshold([0.0, 0.0]) == 1e-6  # the floor
    with pytest.raises(InputError):
        silent_heads(table.drop(columns="output_norm"))


def test_copies_score_high_and_are_silent(pro):
    _, loaded = pro
    scores = induction.induction_scores(
        loaded, scores="induction", seq_len=32, seeds=1, batch=8, progress=False
    )
    df = add_output_norm(scores, loaded, batch=4)
    assert df.attrs["seq_len"] == 32 and list(df.columns[:2]) == ["layer", "head"]
    copies = df[df.layer % 2 == 1]
    assert (copies.output_norm == 0).all()
    assert (df[df.layer % 2 == 0].output_norm > 1e-3).all()
    assert sorted(silent_heads(df)) == [(lay, h) for lay in range(1, 16, 2) for h in range(4)]
    top = df.sort_values("induction", ascending=False).head(12)
    top_heads = list(zip(top["layer"], top["head"]))
    copies_top = [(a, b) for a, b in top_heads if a % 2 == 1]
    assert len(copies_top) >= 2  # the copies of layer 4 rank among the strongest heads
    note = silent_note(top_heads, df)
    assert note.startswith(f"{len(copies_top)} of the top 12 heads write nothing (output norm 0)")
    for a, b in copies_top:
        assert f"L{a}H{b}" in note


def test_output_norms_layers_and_errors(pro):
    _, loaded = pro
    df = output_norms(loaded, batch=2, layers=[3, 4])
    assert list(df.layer.unique()) == [3, 4] and df.attrs["batch"] == 2
    assert (df[df.layer == 3].output_norm == 0).all() and (df[df.layer == 4].output_norm > 0).all()
    with pytest.raises(InputError, match="layers"):
        output_norms(loaded, layers=[16])
    with pytest.raises(InputError, match="LoadedModel"):
        output_norms(object())


def test_lineage_report_flags_silent_top_heads(pro):
    from lineage.api import trace

    folder, loaded = pro
    result = trace(loaded, top=12, seeds=1, batch=8)
    notes = [n for n in result.summary.notes if "write nothing" in n]
    assert len(notes) == 1 and "llama-pro growth (duplication log)" in notes[0]
    top = result.summary.top
    assert top.silent.any() and (top[top.silent].layer % 2 == 1).all()
    assert "output_norm" in result.to_frame().columns
    from rich.console import Console

    console = Console(record=True, width=200)
    result.print(console)
    text = console.export_text()
    assert "(silent)" in text and "note: " in text and "write nothing" in text


def test_ablation_meta_and_log_flag_silent_heads(pro):
    from ablation.pipeline import ablate

    _, loaded = pro
    lines = []
    result = ablate(
        loaded,
        heads="9.2,9.3,8.3",
        suite="zoo",
        tasks=("copy",),
        n_items=4,
        controls=0,
        cache=False,
        progress=False,
        log=lines.append,
    )
    meta = result.meta["output_norm"]
    assert meta["silent_ablated"] == ["L9H2", "L9H3"]
    assert "L9H2" in meta["silent_heads"] and "L8H3" not in meta["silent_heads"]
    flagged = [line for line in lines if line.startswith("note: ")]
    assert flagged == [
        "note: 2 of the 3 ablated heads write nothing (output norm 0): L9H2, L9H3 — "
        "zero-initialised copies (llama-pro?)"
    ]
    assert result.meta["notes"] == [flagged[0][len("note: ") :]]
