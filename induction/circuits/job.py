"""``induction_circuits``: the circuits job, from a model to its circuits and their lineage.

The finder (:func:`induction.circuits.finder.find_circuits`) measures the partners of every
induction head; for a grown model the history (:func:`induction.circuits.history.
circuit_lineage`) then traces each circuit to the initial network. The job composes the two,
so neither imports the other's caller (docs/design.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from induction.circuits.finder import CircuitResult, find_circuits
from induction.circuits.history import circuit_lineage

if TYPE_CHECKING:
    from induction.specs import ModelLike


def induction_circuits(
    model: ModelLike,
    *,
    threshold: float = 0.4,
    top: int | None = None,
    seq_len: int | None = None,
    batch: int = 8,
    seeds=1,
    mode: str = "zero",
    reference: str = "task",
    key_path: bool = True,
    max_rows: int = 256,
    lineage: bool = True,
    progress: bool = False,
) -> CircuitResult:
    """Find each induction head's partners among earlier heads, by weights and activations.

    Arguments as :func:`~induction.circuits.finder.find_circuits`, and ``lineage``: for a
    grown model, trace each circuit to its ancestors
    (:func:`~induction.circuits.history.circuit_lineage`), including the shipped initial
    network. Returns a :class:`~induction.circuits.finder.CircuitResult`.
    """
    if isinstance(model, str | Path):
        from induction.loading import load_model

        model = load_model(str(model))
    result = find_circuits(
        model,
        threshold=threshold,
        top=top,
        seq_len=seq_len,
        batch=batch,
        seeds=seeds,
        mode=mode,
        reference=reference,
        key_path=key_path,
        max_rows=max_rows,
        progress=progress,
    )
    has_log = getattr(model, "duplication_log_path", None) is not None
    if lineage and result.heads and has_log:  # (no induction head: nothing to trace)
        result.lineage = circuit_lineage(
            result,
            model,
            threshold=threshold,
            top=top,
            seq_len=result.settings["seq_len"],
            batch=batch,
            seeds=seeds,
            mode=mode,
            reference=reference,
            max_rows=max_rows,
            progress=progress,
        )
    return result
