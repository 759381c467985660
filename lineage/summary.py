"""Relate induction scores to ancestry: how many ancestors do the strongest heads come from?

:func:`summarize` takes the per-head ancestry (:func:`lineage.ancestry.head_ancestry`) and a
score table (``layer, head, induction, ...`` as written by ``induction scan``) and answers the
seed's question: of the top ``n`` heads by score, how many distinct ancestors in the initial
network they descend from, which ancestors account for most of them, each ancestor's
descendants with their scores, and (given the initial or a pre-growth model's scores) whether
the ancestor was itself an induction head.

Headline rule (documented choice): a head is counted under its *primary* ancestor (the
largest-weight one; for copy-only lineages the only one). Ancestors are ranked by how many of
the top heads they hold (ties: larger score sum, then lower layer/head), and the headline names
the fewest ancestors that hold at least ``cover`` (default 0.8, rounded up) of the top heads:
"10 of the 12 strongest heads descend from 2 ancestors (L1H3, L1H0)".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from induction.errors import InputError
from lineage.ancestry import head_label

#: A head at or above this induction score is conventionally called an induction head.
INDUCTION_THRESHOLD = 0.4


@dataclass
class LineageSummary:
    score: str
    n_top: int
    top: Any  # DataFrame: rank, layer, head, label, score, ancestor, ancestor_weight, ancestors
    ancestors: Any  # DataFrame, one row per ancestor holding at least one top head
    n_distinct: int  # distinct primary ancestors of the top heads
    n_distinct_any: int  # distinct ancestors with any weight (differs only for mixes)
    headline_ancestors: list[str]
    headline_heads: int
    coverage: list[int]  # coverage[m-1]: top heads held by the m most prolific ancestors
    sentence: str
    initial_heads: int  # heads in the ancestor stage (layers x heads)
    ancestor_stage: int
    threshold: float
    layer_counts: dict[int, int] = field(default_factory=dict)  # ancestor layer -> top heads
    n_top_above: int = 0  # top heads scoring at least ``threshold``
    detail: str = ""  # layer-level sentence and the threshold count
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        def records(df):
            out = []
            for rec in df.to_dict(orient="records"):
                out.append({k: _plain(v) for k, v in rec.items()})
            return out

        return {
            "score": self.score,
            "n_top": self.n_top,
            "sentence": self.sentence,
            "n_distinct_ancestors": self.n_distinct,
            "n_distinct_ancestors_any_weight": self.n_distinct_any,
            "headline_ancestors": self.headline_ancestors,
            "headline_heads": self.headline_heads,
            "coverage": self.coverage,
            "ancestor_stage": self.ancestor_stage,
            "ancestor_stage_heads": self.initial_heads,
            "threshold": self.threshold,
            "detail": self.detail,
            "ancestor_layers": {str(k): v for k, v in self.layer_counts.items()},
            "n_top_above_threshold": self.n_top_above,
            "top": records(self.top),
            "ancestors": records(self.ancestors),
            "notes": self.notes,
        }


def _plain(v):
    if v is None:
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    try:
        import pandas as pd

        if v is pd.NA:
            return None
    except ImportError:  # pragma: no cover
        pass
    return v


def check_scores(scores, n_layers: int, n_heads: int, score: str = "induction"):
    """Validate a score table against the model's shape; returns ``layer, head, <score>`` rows."""
    import pandas as pd

    if not isinstance(scores, pd.DataFrame):
        raise InputError("scores must be a pandas DataFrame with layer, head and score columns")
    missing = [c for c in ("layer", "head", score) if c not in scores.columns]
    if missing:
        raise InputError(
            f"score table lacks column(s) {', '.join(missing)}; expected layer, head, {score} "
            "(as written by `induction scan`)"
        )
    df = scores[["layer", "head", score]].dropna()
    if df.empty:
        raise InputError(f"score table has no {score} values")
    try:
        df = df.astype({"layer": int, "head": int, score: float})
    except (TypeError, ValueError):
        raise InputError(f"score table: layer/head must be integers and {score} numeric") from None
    if df["layer"].min() < 0 or df["layer"].max() >= n_layers:
        raise InputError(
            f"score table has layers {df['layer'].min()}..{df['layer'].max()} but the model has "
            f"{n_layers}; were the scores computed on another model?"
        )
    if df["head"].min() < 0 or df["head"].max() >= n_heads:
        raise InputError(
            f"score table has heads {df['head'].min()}..{df['head'].max()} but the model has "
            f"{n_heads} per layer; were the scores computed on another model?"
        )
    if df.duplicated(["layer", "head"]).any():
        raise InputError("score table lists a (layer, head) more than once")
    return df.reset_index(drop=True)


def summarize(
    ancestry,
    scores,
    *,
    top: int = 12,
    score: str = "induction",
    initial_scores=None,
    threshold: float = INDUCTION_THRESHOLD,
    cover: float = 0.8,
) -> LineageSummary:
    """Summarize the ancestry of the ``top`` heads by ``score``.

    Args:
        ancestry: DataFrame from :func:`lineage.ancestry.head_ancestry`.
        scores: the final model's score table (``layer``, ``head``, ``score``).
        top: number of strongest heads.
        initial_scores: optional scores of the ancestor stage's model (the initial network or a
            pre-growth checkpoint, matching ``ancestry.attrs["to_stage"]``): adds each
            ancestor's own score and whether it was an induction head (>= ``threshold``).
        cover: share of the top heads the headline ancestors must hold.
    """
    import pandas as pd

    if not isinstance(top, int) or top < 1:
        raise InputError(f"--top must be a positive integer, got {top!r}")
    if not 0 < cover <= 1:
        raise InputError(f"cover must be in (0, 1], got {cover!r}")
    n_layers = int(ancestry["layer"].max()) + 1
    n_heads = int(ancestry["head"].max()) + 1
    sc = check_scores(scores, n_layers, n_heads, score)
    to_stage = int(ancestry.attrs.get("to_stage", int(ancestry["ancestor_stage"].iloc[0])))
    notes: list[str] = []
    if len(sc) < top:
        notes.append(f"only {len(sc)} heads have scores; --top {top} reduced to {len(sc)}")
        top = len(sc)
    ranked = sc.sort_values([score, "layer", "head"], ascending=[False, True, True]).head(top)
    ranked = ranked.reset_index(drop=True)
    ranked.insert(0, "rank", range(1, len(ranked) + 1))

    anc_by_head = {k: g for k, g in ancestry.groupby(["layer", "head"], sort=False)}
    top_rows, pairs = [], []
    for r in ranked.itertuples(index=False):
        g = anc_by_head[(r.layer, r.head)]
        prim = g[g["primary"]].iloc[0]
        top_rows.append(
            {
                "rank": r.rank,
                "layer": r.layer,
                "head": r.head,
                "label": head_label(r.layer, r.head),
                score: getattr(r, score),
                "ancestor": prim["ancestor"],
                "ancestor_share": float(prim["share"]),
                "ancestors": ", ".join(
                    f"{a} ({s:.2f})" if len(g) > 1 else a for a, s in zip(g["ancestor"], g["share"])
                ),
                "path": prim["path"],
            }
        )
        for a in g.itertuples(index=False):
            pairs.append((a.ancestor_layer, a.ancestor_head, r.layer, r.head, a.share, a.primary))
    top_df = pd.DataFrame(top_rows)
    score_of = {(r.layer, r.head): getattr(r, score) for r in sc.itertuples(index=False)}

    init = None
    if initial_scores is not None:
        n_anc_layers = int(ancestry["ancestor_layer"].max()) + 1
        depths = ancestry.attrs.get("depths")
        if depths:
            n_anc_layers = depths[to_stage]
        init = check_scores(initial_scores, n_anc_layers, n_heads, score)
        init = {(r.layer, r.head): getattr(r, score) for r in init.itertuples(index=False)}

    # all descendants per ancestor (whole model), for context
    all_desc = ancestry.groupby(["ancestor_layer", "ancestor_head"]).size().to_dict()
    anc_rows = {}
    for al, ah, layer, head, share, primary in pairs:
        row = anc_rows.setdefault(
            (al, ah),
            {
                "ancestor_layer": al,
                "ancestor_head": ah,
                "ancestor": head_label(al, ah),
                "n_top": 0,
                "n_top_any": 0,
                "weight": 0.0,
                "_desc": [],
            },
        )
        row["n_top_any"] += 1
        row["weight"] += share
        if primary:
            row["n_top"] += 1
        row["_desc"].append((layer, head, share, score_of[(layer, head)]))
    rows = []
    for (al, ah), row in anc_rows.items():
        desc = sorted(row.pop("_desc"), key=lambda d: -d[3])
        vals = [d[3] for d in desc]
        row["descendants"] = "; ".join(
            f"{head_label(lay, h)} {s:.2f}" + (f" (x{w:.2f})" if w < 1 - 1e-9 else "")
            for lay, h, w, s in desc
        )
        row["score_sum"] = float(sum(vals))
        row["score_mean"] = float(sum(vals) / len(vals))
        row["score_max"] = float(max(vals))
        row["n_descendants"] = int(all_desc.get((al, ah), 0))
        if init is not None:
            own = init.get((al, ah))
            row["ancestor_score"] = own if own is not None else float("nan")
            row["was_induction_head"] = None if own is None else bool(own >= threshold)
        rows.append(row)
    anc_df = pd.DataFrame(rows)
    anc_df = anc_df.sort_values(
        ["n_top", "score_sum", "ancestor_layer", "ancestor_head"],
        ascending=[False, False, True, True],
    ).reset_index(drop=True)

    primaries = anc_df[anc_df["n_top"] > 0]
    coverage = list(primaries["n_top"].cumsum().astype(int))
    need = math.ceil(cover * top - 1e-9)
    m = next(i + 1 for i, c in enumerate(coverage) if c >= need)
    headline = list(primaries["ancestor"].head(m))
    held = coverage[m - 1]
    n_distinct = len(primaries)
    n_any = len(anc_df)
    stage_word = "initial network" if to_stage == 0 else f"stage-{to_stage} network"
    if ancestry.attrs.get("source") == "loop" and to_stage == 0:
        stage_word = "stored block"  # a looped model: the layers every pass runs
    depths = ancestry.attrs.get("depths")
    initial_heads = depths[to_stage] * n_heads if depths else n_distinct
    sentence = (
        f"{held} of the {top} strongest heads descend from {m} "
        f"{'ancestor' if m == 1 else 'ancestors'} ({', '.join(headline)})"
    )
    if held < top or n_distinct > m:
        sentence += (
            f"; all {top} descend from {n_distinct} of the {stage_word}'s {initial_heads} heads"
        )
    elif m == n_distinct:
        sentence += f" of the {stage_word}'s {initial_heads} heads"
    if n_any > n_distinct:
        notes.append(
            f"counting every weighted ancestor (mixes), the top heads have {n_any} ancestors"
        )
    if init is not None:
        was = [a for a, w in zip(primaries["ancestor"], primaries["was_induction_head"]) if w]
        verb = "was already an induction head" if len(was) == 1 else "were already induction heads"
        unknown = sum(w is None for w in primaries["was_induction_head"])
        extra = f"; {unknown} without a score" if unknown else ""
        sentence += f"; {len(was)} of these {n_distinct} ancestors {verb} (>= {threshold:g}{extra})"
    sentence += "."
    layer_counts: dict[int, int] = {}
    for al, n in zip(primaries["ancestor_layer"], primaries["n_top"]):
        layer_counts[int(al)] = layer_counts.get(int(al), 0) + int(n)
    layer_counts = dict(sorted(layer_counts.items(), key=lambda kv: (-kv[1], kv[0])))
    n_layers_stage = depths[to_stage] if depths else len(layer_counts)
    n_above = int((ranked[score] >= threshold).sum())
    detail = (
        f"By layer: the {top} descend from {len(layer_counts)} of the {stage_word}'s "
        f"{n_layers_stage} layers ("
        + ", ".join(f"L{lay}: {n}" for lay, n in layer_counts.items())
        + f"); {n_above} of the {top} score >= {threshold:g}."
    )
    return LineageSummary(
        score=score,
        n_top=top,
        top=top_df,
        ancestors=anc_df,
        n_distinct=n_distinct,
        n_distinct_any=n_any,
        headline_ancestors=headline,
        headline_heads=held,
        coverage=coverage,
        sentence=sentence,
        initial_heads=initial_heads,
        ancestor_stage=to_stage,
        threshold=threshold,
        layer_counts=layer_counts,
        n_top_above=n_above,
        detail=detail,
        notes=notes,
    )
