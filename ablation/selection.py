"""Which heads to ablate: the top fraction by a detector score, an explicit list, or random
controls of the same size.

Rounding rule: ``top_frac`` ablates ``k = ceil(frac * n_heads_total)`` heads (at least one), so
``--frac 0.2`` on 8 layers x 4 heads ablates ceil(6.4) = 7 heads. Ties in the score are broken
by (layer, head) order so the choice is deterministic.

Random controls draw heads uniformly without replacement from the heads *not* selected
(falling back to all heads when too few remain), seeded by ``seed + i`` for control ``i``;
with ``match_layers=True`` each control takes as many heads from each layer as the target set
does, only from that layer's non-target heads: a layer with fewer non-target heads than
targets raises :class:`InputError` (a control that re-ablates targets would measure the
targets, not random heads).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Sequence

import pandas as pd

from induction.errors import InputError
from induction.heads import heads_label
from induction.heads import parse_heads as read_heads


def n_selected(frac: float, n_total: int) -> int:
    """``ceil(frac * n_total)``, at least 1; ``frac`` must be in (0, 1]."""
    if not (0 < frac <= 1):
        raise InputError(f"--frac must be in (0, 1], got {frac}; e.g. --frac 0.2")
    # round first so 0.2 * 35 = 7.000000000000001 counts as 7
    return max(1, math.ceil(round(frac * n_total, 9)))


def top_frac(scores: pd.DataFrame, frac: float, score: str = "induction") -> list[tuple[int, int]]:
    """The ``ceil(frac * len(scores))`` heads with the highest ``score`` (a detector DataFrame
    with columns ``layer``, ``head`` and the score column)."""
    if score not in scores.columns:
        cols = [c for c in scores.columns if c not in ("layer", "head", "rank")]
        raise InputError(f"unknown score column {score!r}; available: {', '.join(cols)}")
    return top_k(scores, n_selected(frac, len(scores)), score)


def top_k(scores: pd.DataFrame, k: int, score: str = "induction") -> list[tuple[int, int]]:
    """The ``k`` heads with the highest ``score``, ties by (layer, head); sorted. A score
    column without a single number ranks nothing and is refused."""
    if k > 0 and not scores[score].notna().any():
        raise InputError(f"the {score} scores hold no number (all NaN); nothing to rank by")
    ordered = scores.assign(_s=scores[score].fillna(-math.inf)).sort_values(
        ["_s", "layer", "head"], ascending=[False, True, True], kind="mergesort"
    )
    top = ordered.head(k)
    return sorted(zip(top["layer"].astype(int).tolist(), top["head"].astype(int).tolist()))


def parse_heads(spec: str, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """``--heads``: :func:`induction.heads.parse_heads` (one grammar and one set of refusals
    for every command), as a set in (layer, head) order."""
    return sorted(read_heads(spec, n_layers, n_heads))


def all_heads(n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    return [(layer, head) for layer in range(n_layers) for head in range(n_heads)]


def random_controls(
    target: Sequence[tuple[int, int]],
    n_layers: int,
    n_heads: int,
    n_controls: int,
    seed: int = 0,
    match_layers: bool = False,
    exclude_target: bool = True,
    pool: Sequence[tuple[int, int]] | None = None,
) -> list[list[tuple[int, int]]]:
    """``n_controls`` random head sets of ``len(target)`` heads each (see module docs).

    ``pool`` restricts the candidate heads (e.g. the first pass of a looped model when heads
    are tied across passes); it defaults to every head.
    """
    universe = list(pool) if pool is not None else all_heads(n_layers, n_heads)
    chosen = set(target)
    out: list[list[tuple[int, int]]] = []
    for i in range(n_controls):
        rng = random.Random(seed + i)
        if match_layers:
            picked: list[tuple[int, int]] = []
            for layer, k in sorted(Counter(layer for layer, _ in target).items()):
                in_layer = [h for h in universe if h[0] == layer]
                cand = [h for h in in_layer if h not in chosen] if exclude_target else in_layer
                if len(cand) < k:
                    raise InputError(
                        f"layer {layer} has {len(cand)} non-target head(s) for {k} target "
                        "head(s): layer-matched controls cannot avoid the targets there; "
                        "use unstratified controls (no --match-layers) or fewer targets"
                    )
                picked += rng.sample(cand, k)
        else:
            cand = [h for h in universe if h not in chosen] if exclude_target else universe
            if len(cand) < len(target):
                cand = universe
            picked = rng.sample(cand, len(target))
        out.append(sorted(picked))
    return out


def band_half_width(n_layers: int) -> int:
    """Default depth band of layer-shaped controls: ``max(1, round(n_layers / 8))`` layers
    either side (1 for the zoo's 8 layers, 4 for a 30-layer model)."""
    return max(1, round(n_layers / 8))


def shaped_controls(
    target: Sequence[tuple[int, int]],
    n_layers: int,
    n_heads: int,
    n_controls: int,
    seed: int = 0,
    band: int | None = None,
    pool: Sequence[tuple[int, int]] | None = None,
) -> list[list[tuple[int, int]]]:
    """Random head sets with the target's layer profile (docs/research.md, "controls shaped
    like the target"): for each target layer holding ``k`` target heads, ``k`` non-target heads
    of one layer drawn uniformly from the layers within ``band`` of it (the target layer
    included) that have ``k`` non-target heads, a different layer for each target layer. A top
    set piled into one late layer is compared with random sets piled into one late layer, so
    the difference no longer measures "removing most of a late layer".

    Where no layer of the band can host a profile entry, the band widens to the nearest
    layer that can; :class:`InputError` when none can (``k`` above every layer's non-target
    heads). Seeded by ``seed + i`` for control ``i`` (as :func:`random_controls`).
    """
    band = band_half_width(n_layers) if band is None else band
    if band < 0:
        raise InputError(f"--band must be >= 0, got {band}")
    universe = list(pool) if pool is not None else all_heads(n_layers, n_heads)
    chosen = set(target)
    free: dict[int, list[tuple[int, int]]] = {}
    for h in universe:
        if h not in chosen:
            free.setdefault(h[0], []).append(h)
    profile = sorted(Counter(layer for layer, _ in target).items(), key=lambda lk: -lk[1])
    out: list[list[tuple[int, int]]] = []
    for i in range(n_controls):
        rng = random.Random(seed + i)
        used: set[int] = set()
        picked: list[tuple[int, int]] = []
        for layer, k in profile:  # largest piles first: they have the fewest hosts
            hosts = [la for la, hs in free.items() if len(hs) >= k and la not in used]
            if not hosts:
                raise InputError(
                    f"no layer has {k} non-target heads for a layer-shaped control of layer "
                    f"{layer}; use uniform controls (--controls-shape uniform) or fewer targets"
                )
            near = [la for la in hosts if abs(la - layer) <= band]
            if not near:  # widen the band to the nearest hosts
                nearest = min(abs(la - layer) for la in hosts)
                near = [la for la in hosts if abs(la - layer) == nearest]
            host = rng.choice(sorted(near))
            used.add(host)
            picked += rng.sample(sorted(free[host]), k)
        out.append(sorted(picked))
    return out


def layer_profile(heads: Iterable[tuple[int, int]]) -> str:
    """``"L6x5,L7x1"``: heads per layer, for reports."""
    counts = Counter(layer for layer, _ in heads)
    return ",".join(f"L{la}x{k}" for la, k in sorted(counts.items()))


def tied_scores(scores: pd.DataFrame, unrolled_layers: Sequence[tuple[int, int]]) -> pd.DataFrame:
    """Aggregate per-unrolled-layer scores of a looped model to its block layers (max over
    passes), relabelled with the first unrolled layer that runs each block layer."""
    first = {}
    for i, (blk, _) in enumerate(unrolled_layers):
        first.setdefault(blk, i)
    layers = scores["layer"].astype(int).tolist()
    block = pd.Series([unrolled_layers[la][0] for la in layers], index=scores.index, dtype=int)
    num = scores.select_dtypes("number").drop(columns=["layer", "rank"], errors="ignore")
    agg = num.assign(layer=block.map(first)).groupby(["layer", "head"], as_index=False).max()
    return agg


def describe(heads: Iterable[tuple[int, int]]) -> str:
    return heads_label(heads)
