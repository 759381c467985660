"""Scores for generated answers and for next-symbol distributions.

- :func:`normalize_answer` is SQuAD v1.1/v2 ``normalize_answer``: lowercase, drop ASCII
  punctuation (``string.punctuation``), drop the articles ``a an the`` as whole words, collapse
  white space.
- :func:`token_f1` is the SQuAD token F1 of the bags of normalised tokens, maximised over the
  gold answers; two empty answers score 1, one empty answer scores 0 (SQuAD v2 convention).
- :func:`exact_match` compares normalised strings, maximised over the gold answers.
- :func:`tvd` is the total variation distance ½Σ|p − q| (RegBench's reference code sums
  |p − q|, twice this value).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

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


def tvd(p: Sequence[float], q: Sequence[float]) -> float:
    """Total variation distance ½Σ|p − q| between two distributions over the same support."""
    if len(p) != len(q):
        raise ValueError(f"distributions of different sizes: {len(p)} vs {len(q)}")
    return 0.5 * sum(abs(a - b) for a, b in zip(p, q, strict=True))


METRICS = {"f1": token_f1, "em": exact_match, "number": number_match}
