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
from induction.scores.score_names import FV_SCORE, INDUCTION_THRESHOLD, head_kind
from lineage.ancestry import head_label


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
    threshold: float | None  # None: the score has no conventional threshold (FV scores)
    layer_counts: dict[int, int] = field(default_factory=dict)  # ancestor layer -> top heads
    n_top_above: int | None = 0  # top heads scoring at least ``threshold``
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
            f"(as written by `induction {'fv' if score == FV_SCORE else 'scan'} --out`)"
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
    threshold: float | None = INDUCTION_THRESHOLD,
    cover: float = 0.8,
    silent_hint: str | None = None,
) -> LineageSummary:
    """Summarize the ancestry of the ``top`` heads by ``score``.

    Args:
        ancestry: DataFrame from :func:`lineage.ancestry.head_ancestry`.
        scores: the final model's score table (``layer``, ``head``, ``score``).
        top: number of strongest heads.
        initial_scores: optional scores of the ancestor stage's model (the initial network or a
            pre-growth checkpoint, matching ``ancestry.attrs["to_stage"]``): adds each
            ancestor's own score and whether it already was a head of the kind (>=
            ``threshold``; the column is ``was_induction_head`` whatever the score).
        threshold: ``None`` for a score with no conventional threshold (FV scores): nothing
            is marked and no count is given, a note says how to ask for them.
        cover: share of the top heads the headline ancestors must hold.
        silent_hint: closing guess of the note on silent top heads (when ``scores`` has an
            ``output_norm`` column, :mod:`induction.scores.output_norm`); default "zero-initialised
            copies (llama-pro?)".
    """
    if not isinstance(top, int) or top < 1:
        raise InputError(f"--top must be a positive integer, got {top!r}")
    if not 0 < cover <= 1:
        raise InputError(f"cover must be in (0, 1], got {cover!r}")
    n_layers = int(ancestry["layer"].max()) + 1
    n_heads = int(ancestry["head"].max()) + 1
    sc = check_scores(scores, n_layers, n_heads, score)
    to_stage = int(ancestry.attrs.get("to_stage", int(ancestry["ancestor_stage"].iloc[0])))
    depths = ancestry.attrs.get("depths")
    notes: list[str] = []
    if len(sc) < top:
        notes.append(f"only {len(sc)} heads have scores; --top {top} reduced to {len(sc)}")
        top = len(sc)

    ranked = rank_heads(sc, score, top)
    top_df, links = primary_ancestors(ranked, ancestry, score)
    silent = silent_top(ranked, scores, silent_hint)
    if silent is not None:
        top_df["silent"], note = silent
        if note:
            notes.append(note)
    init = None
    if initial_scores is not None:
        n_anc_layers = depths[to_stage] if depths else int(ancestry["ancestor_layer"].max()) + 1
        init = score_map(check_scores(initial_scores, n_anc_layers, n_heads, score), score)
    digits = 4 if score == FV_SCORE else 2  # FV scores are probability changes of ~1e-3
    anc_df = ancestor_table(links, ancestry, score_map(sc, score), init, threshold, digits)
    primaries = anc_df[anc_df["n_top"] > 0]
    coverage, headline = headline_ancestors(primaries, top, cover)
    counts = ancestor_layer_counts(primaries)
    stage_word = _stage_word(ancestry, to_stage)
    n_distinct = len(primaries)
    initial_heads = depths[to_stage] * n_heads if depths else n_distinct
    n_above = None if threshold is None else int((ranked[score] >= threshold).sum())
    if threshold is None:
        notes.append(
            f"{score} scores have no conventional threshold: pass --threshold to count the top "
            f"heads and mark the ancestors that already were {head_kind(score)}s"
        )
    if len(anc_df) > n_distinct:
        notes.append(
            f"counting every weighted ancestor (mixes), the top heads have {len(anc_df)} ancestors"
        )
    return LineageSummary(
        score=score,
        n_top=top,
        top=top_df,
        ancestors=anc_df,
        n_distinct=n_distinct,
        n_distinct_any=len(anc_df),
        headline_ancestors=headline,
        headline_heads=coverage[len(headline) - 1],
        coverage=coverage,
        sentence=headline_sentence(
            primaries, coverage, headline, top, stage_word, initial_heads, init, threshold, score
        ),
        initial_heads=initial_heads,
        ancestor_stage=to_stage,
        threshold=threshold,
        layer_counts=counts,
        n_top_above=n_above,
        detail=layer_sentence(
            counts, top, stage_word, depths[to_stage] if depths else len(counts), n_above, threshold
        ),
        notes=notes,
    )


# --------------------------------------------------------------------------- steps


def rank_heads(sc, score: str, top: int):
    """The ``top`` heads by ``score`` (ties: lower layer, then head), with a 1-based rank."""
    ranked = sc.sort_values([score, "layer", "head"], ascending=[False, True, True]).head(top)
    ranked = ranked.reset_index(drop=True)
    ranked.insert(0, "rank", range(1, len(ranked) + 1))
    return ranked


def silent_top(ranked, scores, hint: str | None = None):
    """``(silent flag per top head, note or None)`` when ``scores`` has output norms, else
    None: a top head that attends like an induction head but writes nothing
    (:func:`induction.scores.output_norm.silent_heads`; LLaMA-Pro zero-output copies)."""
    from induction.scores.output_norm import COLUMN, silent_heads, silent_note

    if COLUMN not in scores.columns:
        return None
    table = scores[["layer", "head", COLUMN]].dropna()
    if table.empty:
        return None
    quiet = set(silent_heads(table))
    heads = [(int(a), int(b)) for a, b in zip(ranked["layer"], ranked["head"])]
    return [h in quiet for h in heads], silent_note(heads, table, hint=hint)


def score_map(sc, score: str) -> dict[tuple[int, int], float]:
    """``(layer, head) -> score`` of a checked score table."""
    return {(r.layer, r.head): getattr(r, score) for r in sc.itertuples(index=False)}


def primary_ancestors(ranked, ancestry, score: str):
    """One row per top head under its primary (largest-weight) ancestor, and the links
    ``(ancestor_layer, ancestor_head, layer, head, share, primary)`` to all its ancestors."""
    import pandas as pd

    anc_by_head = {k: g for k, g in ancestry.groupby(["layer", "head"], sort=False)}
    rows, links = [], []
    for r in ranked.itertuples(index=False):
        g = anc_by_head[(r.layer, r.head)]
        prim = g[g["primary"]].iloc[0]
        rows.append(
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
            links.append((a.ancestor_layer, a.ancestor_head, r.layer, r.head, a.share, a.primary))
    return pd.DataFrame(rows), links


def ancestor_table(
    links, ancestry, score_of: dict, init: dict | None, threshold: float | None, digits: int = 2
):
    """One row per ancestor of the top heads: how many it holds (as primary, with any
    weight), its top descendants with their scores, its descendants in the whole model and,
    given ``init`` scores, its own score. Sorted by the headline rule: top heads held, then
    score sum, then lower layer/head."""
    import pandas as pd

    all_desc = ancestry.groupby(["ancestor_layer", "ancestor_head"]).size().to_dict()
    grouped: dict[tuple[int, int], list] = {}
    for al, ah, layer, head, share, primary in links:
        grouped.setdefault((al, ah), []).append((layer, head, share, primary))
    rows = [
        _ancestor_row(al, ah, desc, score_of, all_desc.get((al, ah), 0), init, threshold, digits)
        for (al, ah), desc in grouped.items()
    ]
    return (
        pd.DataFrame(rows)
        .sort_values(
            ["n_top", "score_sum", "ancestor_layer", "ancestor_head"],
            ascending=[False, False, True, True],
        )
        .reset_index(drop=True)
    )


def _ancestor_row(al, ah, links, score_of, n_descendants, init, threshold, digits=2) -> dict:
    desc = sorted(((lay, h, w, score_of[(lay, h)]) for lay, h, w, _ in links), key=lambda d: -d[3])
    vals = [d[3] for d in desc]
    row = {
        "ancestor_layer": al,
        "ancestor_head": ah,
        "ancestor": head_label(al, ah),
        "n_top": sum(1 for *_, primary in links if primary),
        "n_top_any": len(links),
        "weight": sum(w for _, _, w, _ in links),
        "descendants": "; ".join(
            f"{head_label(lay, h)} {s:.{digits}f}" + (f" (x{w:.2f})" if w < 1 - 1e-9 else "")
            for lay, h, w, s in desc
        ),
        "score_sum": float(sum(vals)),
        "score_mean": float(sum(vals) / len(vals)),
        "score_max": float(max(vals)),
        "n_descendants": int(n_descendants),
    }
    if init is not None:
        own = init.get((al, ah))
        row["ancestor_score"] = own if own is not None else float("nan")
        known = own is not None and threshold is not None
        row["was_induction_head"] = bool(own >= threshold) if known and own is not None else None
    return row


def headline_ancestors(primaries, top: int, cover: float) -> tuple[list[int], list[str]]:
    """The headline cover rule: ``coverage[m-1]`` is the top heads held by the ``m`` most
    prolific primary ancestors; the headline names the fewest that hold at least ``cover`` of
    the ``top`` heads (rounded up)."""
    coverage = list(primaries["n_top"].cumsum().astype(int))
    need = math.ceil(cover * top - 1e-9)
    m = next(i + 1 for i, c in enumerate(coverage) if c >= need)
    return coverage, list(primaries["ancestor"].head(m))


def ancestor_layer_counts(primaries) -> dict[int, int]:
    """Ancestor layer -> top heads it holds, most first (ties: lower layer)."""
    counts: dict[int, int] = {}
    for al, n in zip(primaries["ancestor_layer"], primaries["n_top"]):
        counts[int(al)] = counts.get(int(al), 0) + int(n)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _stage_word(ancestry, to_stage: int) -> str:
    if ancestry.attrs.get("source") == "loop" and to_stage == 0:
        return "stored block"  # a looped model: the layers every pass runs
    return "initial network" if to_stage == 0 else f"stage-{to_stage} network"


def headline_sentence(
    primaries, coverage, headline, top, stage_word, initial_heads, init, threshold,
    score: str = "induction",
) -> str:  # fmt: skip
    """ "10 of the 12 strongest heads descend from 2 ancestors (L1H3, L1H0); ..."."""
    m, held, n_distinct = len(headline), coverage[len(headline) - 1], len(primaries)
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
    if init is not None and threshold is not None:
        flags = list(primaries["was_induction_head"])
        was = sum(1 for w in flags if w)
        kind = head_kind(score)
        article = "an" if kind.startswith(("induction", "FV")) else "a"
        verb = f"was already {article} {kind}" if was == 1 else f"were already {kind}s"
        unknown = sum(w is None for w in flags)
        extra = f"; {unknown} without a score" if unknown else ""
        sentence += f"; {was} of these {n_distinct} ancestors {verb} (>= {threshold:g}{extra})"
    return sentence + "."


def layer_sentence(counts, top, stage_word, n_layers_stage, n_above, threshold) -> str:
    """The layer-level detail line and the count of top heads at or above ``threshold``."""
    line = (
        f"By layer: the {top} descend from {len(counts)} of the {stage_word}'s "
        f"{n_layers_stage} layers (" + ", ".join(f"L{lay}: {n}" for lay, n in counts.items()) + ")"
    )
    if threshold is None:
        return line + "."
    return line + f"; {n_above} of the {top} score >= {threshold:g}."
