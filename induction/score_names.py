"""The scores a scan can compute, their conventions, and validation of the names.

Definitions of the attention scores are in :meth:`induction.prompts.PromptLayout.pairs`;
``copying`` is in :mod:`induction.copying`. Import-light (no torch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, cast, get_args

from induction.errors import InputError

#: A head whose induction score is at or above this is conventionally called an induction head
#: (the one definition; ``induction.INDUCTION_THRESHOLD``, the scan, the CLI and the figures
#: read it from here).
INDUCTION_THRESHOLD = 0.4
#: A detector score's name.
ScoreName = Literal["induction", "prefix_matching", "duplicate_token", "previous_token", "copying"]
SCORES: tuple[ScoreName, ...] = get_args(ScoreName)
#: Scores read from attention patterns (the rest come from the weights).
ATTENTION_SCORES = SCORES[:4]
#: How attention scores are read: the workbench's stripe means, or TransformerLens's way.
Convention = Literal["stripe", "tl_mul"]
CONVENTIONS: tuple[Convention, ...] = get_args(Convention)
#: Scores that ``convention="tl_mul"`` computes TransformerLens's way.
TL_SCORES = ("induction", "duplicate_token", "previous_token")
DEFAULT_SEEDS = (0, 1, 2)
#: How the scan reads attention: ``eager`` holds each layer's whole pattern, ``chunked`` scores
#: blocks of queries (:mod:`induction.query_chunks`), ``auto`` picks by prompt length.
PATTERN_MODES = ("auto", "eager", "chunked")
#: The function-vector score (:mod:`induction.circuits.fv`): a head's mean causal indirect
#: effect on the answer's probability. Not a scan score: it needs pair tasks, not repeated
#: tokens; lineage, sweeps and timelines follow it beside the scan's.
FV_SCORE = "fv"
DEFAULT_COPYING_TOKENS = 512


def check_scores(scores: str | Sequence[str]) -> tuple[str, ...]:
    """Validated, de-duplicated score names in canonical order."""
    names = [s.strip() for s in scores.split(",")] if isinstance(scores, str) else list(scores)
    names = [n for n in names if n]
    unknown = [n for n in names if n not in SCORES]
    if unknown:
        raise InputError(f"unknown score {unknown[0]!r}; choose from {', '.join(SCORES)}")
    if not names:
        raise InputError(f"no scores requested; choose from {', '.join(SCORES)}")
    return tuple(s for s in SCORES if s in names)


def check_convention(convention: str) -> Convention:
    if convention not in CONVENTIONS:
        raise InputError(f"unknown convention {convention!r}; choose stripe or tl_mul")
    return cast(Convention, convention)


def check_rank_by(rank_by: str | None, names: Sequence[str]) -> str:
    """The score the ``rank`` column follows: ``rank_by`` (one of ``names``), else
    ``induction`` when computed, else the first of ``names``."""
    if rank_by is None:
        return "induction" if "induction" in names else names[0]
    rank_by = rank_by.strip()
    if rank_by not in SCORES:
        raise InputError(f"cannot rank by {rank_by!r}; choose from {', '.join(names)}")
    if rank_by not in names:
        raise InputError(
            f"cannot rank by {rank_by!r}: it is not among the computed scores ({', '.join(names)})"
        )
    return rank_by


def default_threshold(score: str) -> float | None:
    """The score at which a head conventionally counts as one: :data:`INDUCTION_THRESHOLD` for
    the detector's scores; ``None`` for FV scores, which have no convention (they are changes
    in an answer's probability, a few hundredths for the strongest heads of a 135M model)."""
    return None if score == FV_SCORE else INDUCTION_THRESHOLD


def head_kind(score: str) -> str:
    """What a head strong in ``score`` is called: "induction head", "FV head", ..."""
    return {"induction": "induction head", FV_SCORE: "FV head"}.get(score, f"{score} head")


def check_sweep_scores(scores: str | Sequence[str]) -> tuple[str, ...]:
    """:func:`check_scores` that also takes :data:`FV_SCORE` (sweeps compute it beside the
    scan); ``fv`` comes last."""
    names = [s.strip() for s in scores.split(",")] if isinstance(scores, str) else list(scores)
    fv = FV_SCORE in names
    rest = [n for n in names if n and n != FV_SCORE]
    if fv and not rest:
        return (FV_SCORE,)
    try:
        scan = check_scores(rest)
    except InputError as exc:
        raise InputError(f"{exc}, or {FV_SCORE}") from None
    return (*scan, FV_SCORE) if fv else scan


def _by_path(target: str) -> Callable[[Any], Any]:
    """A provider named by ``"module:function"``, imported when the score is first asked for
    (as an entry point): the registry stays on the ground floor and names a unit above it
    without importing it (docs/design.md, floors)."""

    def provider(loaded: Any) -> Any:
        import importlib

        module, _, function = target.partition(":")
        return getattr(importlib.import_module(module), function)(loaded)

    provider.__qualname__ = provider.__name__ = f"provider of {target}"
    return provider


#: The ``fv`` score with :func:`induction.circuits.fv.fv_scores`' defaults.
_fv_provider = _by_path("induction.circuits.fv:fv_table")


#: Head scores beyond the detector's (:data:`SCORES`), by name: a function of the loaded model
#: returning a table with ``layer``, ``head`` and the score column. Every documented score is
#: listed here, where the registry lives, so ablation, lineage and sweeps rank heads by it in
#: every command without importing the unit first (docs/design.md); plugins may add theirs.
HEAD_SCORE_PROVIDERS: dict[str, Callable[[Any], Any]] = {FV_SCORE: _fv_provider}


def register_head_score(name: str, provider: Callable[[Any], Any]) -> None:
    HEAD_SCORE_PROVIDERS[name] = provider


def head_score_provider(name: str) -> Callable[[Any], Any]:
    """The registered provider of ``name``; a one-line error that says how to register it."""
    if name not in HEAD_SCORE_PROVIDERS:
        known = ", ".join([*SCORES, *HEAD_SCORE_PROVIDERS])
        raise InputError(f"no provider of the {name!r} head score; available: {known}")
    return HEAD_SCORE_PROVIDERS[name]
