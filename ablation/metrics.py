"""Scores for generated answers and for next-symbol distributions.

- :func:`normalize_answer` is SQuAD v1.1/v2 ``normalize_answer``: lowercase, drop ASCII
  punctuation (``string.punctuation``), drop the articles ``a an the`` as whole words, collapse
  white space.
- :func:`token_f1` is the SQuAD token F1 of the bags of normalised tokens, maximised over the
  gold answers; two empty answers score 1, one empty answer scores 0 (SQuAD v2 convention).
- :func:`exact_match` compares normalised strings, maximised over the gold answers.
- :func:`digits_match` is exact match of a number spelled as space-separated digit tokens
  (the zoo's ``1 2`` for 12), which :func:`number_match` would read as two numbers.
- :func:`tvd` is the total variation distance ½Σ|p − q| (RegBench's reference code sums
  |p − q|, twice this value); :func:`distribution_scores` scores a next-symbol distribution
  against the uniform distribution over the valid next symbols (RegBench, Akyürek et al. 2024).

Tasks name their metric; the engine looks it up in :data:`METRICS` (:func:`get_metric`).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from induction.errors import InputError

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower, remove punctuation, remove articles, fix white space."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _as_golds(golds: str | Iterable[str]) -> list[str]:
    return [golds] if isinstance(golds, str) else list(golds)


def _f1_one(prediction: str, gold: str) -> float:
    pred_toks = normalize_answer(prediction).split()
    gold_toks = normalize_answer(gold).split()
    if not pred_toks or not gold_toks:
        return float(pred_toks == gold_toks)
    common = Counter(pred_toks) & Counter(gold_toks)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_toks)
    recall = same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: str | Iterable[str]) -> float:
    """SQuAD token F1, maximum over the gold answers (0 when there are none)."""
    return max((_f1_one(prediction, g) for g in _as_golds(golds)), default=0.0)


def exact_match(prediction: str, golds: str | Iterable[str]) -> float:
    """1.0 if the normalised prediction equals a normalised gold answer, else 0.0."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _as_golds(golds)))


def final_number(text: str) -> str | None:
    """The last number in ``text`` with thousands separators removed (GSM8K/ASDiv style),
    ``'3.0'`` written as ``'3'``; ``None`` when there is no number."""
    found = _NUMBER.findall(text)
    if not found:
        return None
    num = found[-1].replace(",", "").rstrip(".")
    try:
        value = float(num)
    except ValueError:
        return num
    return str(int(value)) if value == int(value) else repr(value)


def number_match(prediction: str, golds: str | Iterable[str]) -> float:
    """Exact match of the final number of the prediction against any gold number."""
    pred = final_number(prediction)
    if pred is None:
        return 0.0
    return float(any(pred == final_number(g) for g in _as_golds(golds)))


def spelled_number(text: str) -> str | None:
    """The first run of single-digit tokens in ``text`` read as one number (``"1 2 |"`` ->
    ``"12"``, ``"0 7"`` -> ``"7"``); ``None`` when ``text`` has no digit token."""
    run: list[str] = []
    for tok in text.split():
        if len(tok) == 1 and tok.isdigit():
            run.append(tok)
        elif run:
            break
    return str(int("".join(run))) if run else None


def digits_match(prediction: str, golds: str | Iterable[str]) -> float:
    """Exact match of the number spelled by the prediction's first run of digit tokens
    against any gold spelled the same way (the zoo suite's math word problems)."""
    pred = spelled_number(prediction)
    if pred is None:
        return 0.0
    return float(any(pred == spelled_number(g) for g in _as_golds(golds)))


def tvd(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray) -> float:
    """Total variation distance ½Σ|p − q| between two distributions over the same support."""
    if len(p) != len(q):
        raise InputError(f"distributions of different sizes: {len(p)} vs {len(q)}")
    return 0.5 * sum(abs(a - b) for a, b in zip(p, q, strict=True))


def distribution_scores(
    q: np.ndarray, valid: Sequence[Sequence[int]], support: Sequence[int]
) -> tuple[float, float]:
    """(mean TVD, greedy accuracy) of next-symbol distributions. ``q[j]`` is the model's
    distribution over ``support`` at the j-th scored position (renormalised here; uniform if
    it sums to 0) and ``valid[j]`` the symbols that keep the string valid there; the target is
    uniform over ``valid[j]``. NaN for no positions."""
    support_arr = np.asarray(support)
    tvds, hits = [], []
    for row, ok in zip(np.asarray(q, dtype=np.float64), valid, strict=True):
        row = row / row.sum() if row.sum() > 0 else np.full(len(row), 1 / len(row))
        p = np.isin(support_arr, ok).astype(np.float64)
        p /= p.sum()
        tvds.append(tvd(p, row))
        hits.append(float(support_arr[int(np.argmax(row))] in ok))
    if not tvds:
        return float("nan"), float("nan")
    return float(np.mean(tvds)), float(np.mean(hits))


@dataclass(frozen=True)
class Metric:
    """A task metric: ``kind`` "text" scores a decoded answer against gold answers with
    ``score(prediction, golds)``; "dist" metrics come from :func:`distribution_scores`."""

    name: str
    higher_is_better: bool
    kind: str  # "text" | "dist"
    score: Callable[[str, Sequence[str]], float] | None = None
    description: str = ""

    def text_score(self) -> Callable[[str, Sequence[str]], float]:
        """``score`` of a "text" metric; a "dist" metric has none and is refused."""
        if self.score is None:
            raise InputError(f"metric {self.name!r} scores distributions, not generated answers")
        return self.score


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("f1", True, "text", token_f1, "SQuAD token F1, max over golds"),
        Metric("em", True, "text", exact_match, "normalised exact match, max over golds"),
        Metric("number", True, "text", number_match, "exact match of the final number"),
        Metric("digits", True, "text", digits_match, "exact match of a spelled number (1 2)"),
        Metric("tvd", False, "dist", None, "total variation distance to the valid symbols"),
        Metric("acc", True, "dist", None, "greedy next-symbol accuracy"),
    )
}


def get_metric(name: str) -> Metric:
    """The registered metric ``name``; a one-line error lists the others."""
    try:
        return METRICS[name]
    except KeyError:
        raise InputError(f"unknown metric {name!r}; available: {', '.join(METRICS)}") from None
