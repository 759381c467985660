"""The source's lineage claim and the zoo's growth-timing question, read from intervals
(docs/replication.md, "Amendment: every row from an interval").

The source: 10 of the 12 strongest induction heads of a 3B LIDAS model descend from 2 heads
of its initial network. The zoo's figure per seed is ``m``, the fewest ancestors holding 10
of its 12 strongest heads (:func:`induction.replication.measure.source_headline`). What a
grown model's ``m`` would be with no concentration at all depends on its growth schedule: a
layer copied four times gives each of its heads 5 descendants, so 12 heads drawn at random
already share ancestors. That level, :func:`chance_ancestors`, is the null; the source's 2
is the effect. Per seed the gap ``m - chance`` is read by the one-sample sign-flip interval
(:func:`induction.replication.intervals.read_gap`): *agree* when it lies below 0 (more
concentrated than chance), *disagree* when it excludes the source's ``2 - chance``,
*inconclusive* when it holds both.

The growth-timing question (heads first against growth first, on ``m``) is no published
claim; its declared effect of interest is the source's concentration in the heads-first arm
against chance in the other, ``2 - chance``, read on the two-sample interval.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from .config import SOURCE
from .intervals import difference_cells, fmt_ci, read_gap, read_shift

CHANCE_SAMPLES = 20_000  # Monte Carlo draws of random head sets (seeded)


def fewest_holding(counts: np.ndarray, k: int) -> np.ndarray:
    """Per row of ``counts`` (heads drawn per ancestor), the fewest ancestors that hold ``k``
    of them: the largest counts first."""
    ordered = -np.sort(-counts, axis=1)
    return (np.cumsum(ordered, axis=1) < k).sum(axis=1) + 1


def chance_ancestors(
    descendants: Sequence[int],
    top: int = SOURCE["lineage"]["top"],
    heads: int = SOURCE["lineage"]["heads"],
    samples: int = CHANCE_SAMPLES,
    seed: int = 0,
) -> float:
    """The mean ``m`` (fewest ancestors holding ``heads`` of ``top`` heads) when the ``top``
    heads are drawn at random without replacement from a model whose initial heads have
    ``descendants`` final heads each; NaN when the model has fewer than ``top`` heads."""
    per = np.sort(np.asarray(descendants, dtype=int))[::-1]  # one draw for one structure
    owner = np.repeat(np.arange(len(per)), per)
    if len(owner) < top or top < heads:
        return math.nan
    rng = np.random.default_rng(seed)
    drawn = np.argsort(rng.random((samples, len(owner))), axis=1)[:, :top]
    counts = np.zeros((samples, len(per)), dtype=int)
    np.add.at(counts, (np.arange(samples)[:, None], owner[drawn]), 1)
    return float(fewest_holding(counts, heads).mean())


def descendants_per_head(folder: Path | None) -> list[int] | None:
    """Final heads descending from each initial head of a grown model in ``folder`` (its
    duplication log and config), or None where there is no log or a layer has several
    parents (a mix, not a copy)."""
    from induction.errors import LineageError
    from lineage.log import LOG_FILE, DuplicationLog

    if folder is None or not (folder / LOG_FILE).is_file():
        return None
    log = DuplicationLog.load(folder / LOG_FILE)
    n_heads = int(json.loads((folder / "config.json").read_text())["num_attention_heads"])
    try:
        parents = [log.ancestor_of(layer) for layer in range(log.final_depth)]
    except LineageError:
        return None
    per_layer = np.bincount(parents, minlength=log.initial_depth)
    return [int(c) for c in per_layer for _ in range(n_heads)]


class Reading(NamedTuple):
    """One verdict row's reading: its word, what decided it, its interval cells
    (:func:`~induction.replication.intervals.difference_cells`) and, for the lineage claim, its
    ``zoo`` figure."""

    word: str
    why: str
    cells: dict[str, str]
    zoo: str = ""


NO_LOG = "no duplication log to draw the chance level from"


def read_lineage(
    ms: pd.Series, chance: pd.Series, fewest: float | None = None, seeds: str = "seeds"
) -> Reading:
    """The source's lineage claim on one grown family: ``ms``, each seed's ``m`` (indexed by
    model), against ``chance``, each seed's chance level (NaN: no log, untestable)."""
    src = SOURCE["lineage"]["ancestors"]
    ms = ms.astype(float)
    listed = ", ".join(f"{v:.0f}" for v in ms)
    counted = seeds.removesuffix("s") if len(ms) == 1 else seeds
    zoo = f"m = {ms.mean():.1f} over {len(ms)} {counted} ({listed})"
    if chance.isna().any():
        return Reading("untestable here", NO_LOG, {}, zoo)
    c = float(chance.mean())
    zoo += f"; chance {c:.1f}" + ("" if fewest is None else f", fewest possible {fewest:.0f}")
    reading = read_gap(ms.to_numpy() - chance.to_numpy(dtype=float), source=src - c)
    if not reading.testable:
        why = f"{len(ms)} {seeds} allow no sign-flip p below {reading.floor:.2g}"
    else:
        why = (
            f"m - chance over {len(ms)} {seeds}, sign-flip interval "
            f"{fmt_ci(reading.ci_adj, digits=2)} against the source's {src - c:+.2f}"
        )
    return Reading(reading.word, why, difference_cells(reading, digits=2), zoo)


def read_timing(ma: pd.Series, mb: pd.Series, chance_b: pd.Series, seeds: str = "seeds") -> Reading:
    """The growth-timing question: ``m`` of the heads-first arm (``ma``) minus the
    growth-first arm's (``mb``), against the declared effect of interest, the source's 2
    against the growth-first arm's chance level (``chance_b``, per seed)."""
    src = SOURCE["lineage"]["ancestors"]
    if chance_b.isna().any():
        return Reading("untestable here", NO_LOG, {})
    effect = src - float(chance_b.mean())
    reading = read_shift(mb.astype(float), ma.astype(float), source=effect)
    if not reading.testable:
        why = f"{len(ma)} and {len(mb)} {seeds} allow no permutation p below {reading.floor:.2g}"
    else:
        why = (
            f"difference {reading.diff:+.1f} ancestors over {len(ma)} and {len(mb)} {seeds}, "
            f"interval {fmt_ci(reading.ci_adj, digits=2)} against the effect of interest "
            f"{effect:+.2f} (the source's 2 against chance)"
        )
    return Reading(reading.word, why, difference_cells(reading, digits=2))


__all__ = [
    "CHANCE_SAMPLES",
    "Reading",
    "chance_ancestors",
    "descendants_per_head",
    "fewest_holding",
    "read_lineage",
    "read_timing",
]
