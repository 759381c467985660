"""The head scores the workbench knows, in one registry, their conventions, and validation.

:data:`HEAD_SCORES` lists every head score by name with where it comes from
(:class:`HeadScore`): the detector's attention-pattern scores (their (query, key) pairs are
defined in :meth:`induction.scores.prompts.PromptLayout.pairs`), its weights-only ``copying``
(:mod:`induction.scores.copying`), and scores computed by a provider named as an entry point
(``fv``, :mod:`induction.circuits.fv`). The scan, ablation's ranking, lineage, sweeps and
timelines all read it; a plugin adds a score with :func:`register_head_score`. Import-light
(no torch).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from induction.config_fields import (
    SEEDS_HELP,
    option,
    parse_seeds,
    prompt_batch_option,
    seq_len_option,
)
from induction.errors import InputError
from induction.heads import INDUCTION_THRESHOLD

#: A detector score's name (the scan's scores: :data:`HEAD_SCORES` entries that are not
#: provided; a test keeps the two equal).
ScoreName = Literal["induction", "prefix_matching", "duplicate_token", "previous_token", "copying"]
#: Where a head score comes from: attention patterns on the scan's prompts, the weights alone,
#: or a provider function of the loaded model.
ScoreSource = Literal["pattern", "weights", "provider"]


@dataclass(frozen=True)
class HeadScore:
    """One head score: where it comes from and how it reads.

    ``transformer_lens``: TransformerLens's ``detect_head`` has it (the ``tl_mul`` convention
    computes it their way). ``threshold``: the score at which a head conventionally counts as
    one (``None``: no convention). ``provider`` (source ``provider`` only): a function of the
    loaded model returning a table with ``layer``, ``head`` and the score column."""

    name: str
    source: ScoreSource
    about: str
    head_kind: str
    threshold: float | None = INDUCTION_THRESHOLD
    transformer_lens: bool = False
    provider: Callable[[Any], Any] | None = field(default=None, compare=False, repr=False)


#: How attention scores are read: the workbench's stripe means, or TransformerLens's way.
Convention = Literal["stripe", "tl_mul"]
CONVENTIONS: tuple[Convention, ...] = get_args(Convention)
DEFAULT_SEEDS = (0, 1, 2)
#: How the scan reads attention: ``eager`` holds each layer's whole pattern, ``chunked`` scores
#: blocks of queries (:mod:`induction.scores.query_chunks`), ``auto`` picks by prompt length.
PATTERN_MODES = ("auto", "eager", "chunked")
#: The function-vector score (:mod:`induction.circuits.fv`): a head's mean causal indirect
#: effect on the answer's probability. Not a scan score: it needs pair tasks, not repeated
#: tokens; lineage, sweeps and timelines follow it beside the scan's.
FV_SCORE = "fv"
DEFAULT_COPYING_TOKENS = 512


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


#: Every head score by name, the detector's first, in their canonical order.
HEAD_SCORES: dict[str, HeadScore] = {
    score.name: score
    for score in (
        HeadScore(
            "induction",
            "pattern",
            "attention from a repeated token to the token after its previous occurrence",
            "induction head",
            transformer_lens=True,
        ),
        HeadScore(
            "prefix_matching",
            "pattern",
            "attention to the token after every earlier occurrence (Olsson et al.)",
            "prefix-matching head",
        ),
        HeadScore(
            "duplicate_token",
            "pattern",
            "attention to every earlier occurrence of the current token",
            "duplicate-token head",
            transformer_lens=True,
        ),
        HeadScore(
            "previous_token",
            "pattern",
            "attention to the previous position",
            "previous-token head",
            transformer_lens=True,
        ),
        HeadScore(
            "copying",
            "weights",
            "how much the head's OV circuit copies a token to the output (weights only)",
            "copying head",
        ),
        HeadScore(
            FV_SCORE,
            "provider",
            "mean causal indirect effect on the answer of in-context pair tasks (Todd et al.)",
            "FV head",
            threshold=None,  # changes in an answer's probability: no convention
            provider=_fv_provider,
        ),
    )
}


def _names(source: str) -> tuple[str, ...]:
    return tuple(n for n, score in HEAD_SCORES.items() if score.source == source)


SCORES = cast(tuple[ScoreName, ...], _names("pattern") + _names("weights"))
#: Scores read from attention patterns (the rest come from the weights or a provider).
ATTENTION_SCORES = _names("pattern")
#: Scores that ``convention="tl_mul"`` computes TransformerLens's way.
TL_SCORES = tuple(n for n, score in HEAD_SCORES.items() if score.transformer_lens)


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
    known = HEAD_SCORES.get(score)
    return known.threshold if known is not None else INDUCTION_THRESHOLD


def head_kind(score: str) -> str:
    """What a head strong in ``score`` is called: "induction head", "FV head", ..."""
    known = HEAD_SCORES.get(score)
    return known.head_kind if known is not None else f"{score} head"


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


class _Providers(Mapping[str, Callable[[Any], Any]]):
    """The provided scores of :data:`HEAD_SCORES`, name -> provider (a live view)."""

    def __getitem__(self, name: str) -> Callable[[Any], Any]:
        score = HEAD_SCORES.get(name)
        if score is None or score.provider is None:
            raise KeyError(name)
        return score.provider

    def __iter__(self) -> Iterator[str]:
        return (n for n, score in HEAD_SCORES.items() if score.provider is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: Head scores beyond the detector's, by name: a function of the loaded model returning a table
#: with ``layer``, ``head`` and the score column (the ``provider`` entries of
#: :data:`HEAD_SCORES`), so ablation, lineage and sweeps rank heads by them in every command
#: without importing the unit first (docs/design.md).
HEAD_SCORE_PROVIDERS: Mapping[str, Callable[[Any], Any]] = _Providers()


def register_head_score(
    name: str, provider: Callable[[Any], Any], *, head_kind: str | None = None,
    threshold: float | None = None, about: str = "",
) -> None:  # fmt: skip
    """Add (or replace) a provided head score: ``provider(loaded)`` returns a table with
    ``layer``, ``head`` and a ``name`` column. The detector's own scores cannot be replaced."""
    if name in SCORES:
        raise InputError(f"{name!r} is one of the detector's scores; register under another name")
    HEAD_SCORES[name] = HeadScore(
        name, "provider", about or f"provided by {provider!r}",
        head_kind or f"{name} head", threshold, provider=provider,
    )  # fmt: skip


def head_score_provider(name: str) -> Callable[[Any], Any]:
    """The registered provider of ``name``; a one-line error that says how to register it."""
    if name not in HEAD_SCORE_PROVIDERS:
        known = ", ".join(HEAD_SCORES)
        raise InputError(
            f"no provider of the {name!r} head score; available: {known} "
            "(register one with induction.scores.score_names.register_head_score)"
        )
    return HEAD_SCORE_PROVIDERS[name]


def parse_token_range(text: str) -> tuple[int, int]:
    """``"100:20000"`` -> ``(100, 20000)`` (``--token-range``); one-line error otherwise."""
    try:
        lo, hi = (int(x) for x in text.split(":"))
    except ValueError:
        raise InputError(f"--token-range {text!r}: expected lo:hi, e.g. 100:20000") from None
    return lo, hi


@dataclass(frozen=True)
class ScanConfig:
    """Settings of a scan; every field is also a keyword of :func:`induction.scores.scan.scan`, and
    those with option metadata are ``induction scan``'s options (:func:`induction.config_fields.
    option`; the command line's defaults of ``seeds``, ``scores`` and ``loss`` are its own:
    ``--seeds 3``, every score, ``--loss``). Torch-free, so the command line can read it
    without importing torch; :mod:`induction.scores.scan` re-exports it.

    Attributes:
        seq_len: length ``T`` of the random block ``r``; None means the model's
            ``default_repeat_len`` (32 for zoo models, 50 otherwise).
        batch: prompts per seed.
        seeds: prompt seeds (a sequence) or a count ``n`` meaning seeds ``0..n-1``.
        scores: names from :data:`SCORES` (a list or a comma-separated string).
        convention: ``"stripe"`` or ``"tl_mul"`` (TransformerLens ``detect_head`` "mul").
        n_repeats: copies of ``r`` in each prompt (>= 2).
        layers: layers to score (default all); the forward pass stops after the last one.
        token_range: ``[lo, hi)`` id band to draw from instead of the model's ordinary range.
        loss: also measure the in-context loss drop (needs logits: the pass runs to the end).
        copying_tokens: at most this many ordinary tokens (a seeded sample) for ``copying``.
        device: run there (the model is moved if it is elsewhere); None: the model's device.
        chunk: prompts per forward pass; None sizes it to the device (about 512 tokens a pass
            on CPU).
        progress: report progress (:mod:`induction.progress`) when there is more than one
            forward pass.
        rank_by: the score the ``rank`` column follows; None: ``induction`` when computed,
            else the first requested score.
        patterns: how attention is read: ``"eager"`` holds each layer's whole ``L x L``
            pattern (hooks on ``hook_pattern``), ``"chunked"`` scores blocks of queries from
            the model's own queries and keys and never holds one (memory grows with
            ``batch x heads x L``; :mod:`induction.scores.query_chunks`), ``"auto"`` picks chunked
            from :data:`induction.scores.query_chunks.AUTO_CHUNKED_FROM` tokens on when the model
            supports it. Both give the same scores (within 1e-5).
    """

    seq_len: int | None = seq_len_option()
    batch: int = prompt_batch_option(32)
    seeds: int | Sequence[int] = option(DEFAULT_SEEDS, SEEDS_HELP, parse=parse_seeds, cli="3")
    scores: str | Sequence[str] = option(
        SCORES, "Comma-separated scores to compute.", parse=check_scores, cli=",".join(SCORES)
    )
    convention: Convention = option(
        "stripe", "stripe (second-copy queries only) or tl_mul (TransformerLens detect_head)."
    )
    n_repeats: int = option(2, "Copies of the random block per prompt.")
    layers: Sequence[int] | None = None  # `induction scan --layers 2:` needs the model's depth
    token_range: tuple[int, int] | None = option(
        None, "Draw token ids from lo:hi instead of the default.", parse=parse_token_range
    )
    loss: bool = option(
        False, "Also measure the in-context loss drop (logits).", "--loss/--no-loss", cli=True
    )
    copying_tokens: int = DEFAULT_COPYING_TOKENS
    device: Any = None  # str or torch.device
    chunk: int | None = option(None, "Prompts per forward pass (default: auto).")
    progress: bool = True
    rank_by: str | None = option(
        None,
        "Score the rank column, the table and the figures follow (one of --scores; default: "
        "induction, else the first score).",
    )
    patterns: str = option(
        "auto",
        "auto, eager (hold each layer's L x L pattern) or chunked (score blocks of queries, "
        "memory linear in L); auto: chunked from 1024 tokens when supported.",
    )
