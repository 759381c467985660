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

import numpy as np

from .config import SOURCE

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


__all__ = ["CHANCE_SAMPLES", "chance_ancestors", "descendants_per_head", "fewest_holding"]
