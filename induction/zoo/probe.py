"""Does a zoo model learn in context? A probe on fresh content in the training formats.

In-context learning means using content that is absent from the weights (docs/research.md,
"Designing an experiment that can fail"): a fresh key -> value map, fresh variable bindings.
The format may be a trained one. This probe draws such content from a stream no training run
uses (``numpy.random.default_rng([PROBE_STREAM, seed])``; training batches come from
``default_rng([data_seed, step])`` with a small ``data_seed``) and reads the model's greedy
answer (the argmax of the next-token distribution) at every answer position, in one batched
forward pass per task:

- **lookup**: sequences of ``k > v , k > v , ... .`` segments (``corpus.lookup_segment``);
  every value whose key was already shown in the segment is scored. Chance is the rule "some
  value shown so far in the segment": ``1 / (distinct values shown)`` per position.
- **varassign**: ``a = 3 , b = 7 , c = a ; c ? 3 .`` programs (``corpus.varassign_segment``) at
  depth 0 and 1; the answer digit is scored. Chance is ``1 / (digit assignments)``. The rank of
  the queried statement among the digit assignments is kept, so an answer-by-position rule
  shows up as a gap between the first-assigned variable and the others.

:func:`gates` applies the zoo's admission thresholds (issue 22): lookup >= 0.6 and >= 3x chance;
variable assignment >= 0.5 with at most 0.2 between the first-assigned variable and the others.
Each figure carries a 95% interval, a percentile bootstrap over the probe's sequences (the
scored positions of one sequence share its content, so sequences are the unit), and a gate
whose interval holds its threshold says "within noise": a gate decided on a point estimate
near its threshold can flip between two readings of the same model (issue #41: grown8ce-s0's
gap read 0.171 in training and 0.289 measured). The decision stays the point estimate's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from induction.zoo import corpus as C
from induction.zoo import vocab as V

#: Seed stream of the probe (training streams use ``[data_seed, step]`` with small seeds).
PROBE_STREAM = 7_770_001
LOOKUP_MIN, LOOKUP_RATIO = 0.6, 3.0
VARASSIGN_MIN, POSITION_GAP_MAX = 0.5, 0.2
BOOTSTRAP = 1000  # resamples of the probe's sequences for each interval
_NO_CI = (float("nan"), float("nan"))


@dataclass(frozen=True)
class ProbeResult:
    """Accuracies of one model on fresh in-context content (see module docs)."""

    lookup: float
    lookup_chance: float
    lookup_n: int
    varassign: float  # depth 0 and 1 pooled
    varassign_d0: float
    varassign_d1: float
    varassign_chance: float
    varassign_first: float  # queried statement assigned first
    varassign_others: float
    varassign_n: int
    # 95% intervals (bootstrap over sequences; module docs)
    lookup_ci: tuple[float, float] = _NO_CI
    varassign_ci: tuple[float, float] = _NO_CI
    position_gap_ci: tuple[float, float] = _NO_CI

    @property
    def position_gap(self) -> float:
        return abs(self.varassign_first - self.varassign_others)

    def to_dict(self) -> dict:
        return {**asdict(self), "position_gap": self.position_gap}


@dataclass(frozen=True)
class Gate:
    name: str
    passed: bool
    detail: str


def _logits(model, ids: np.ndarray) -> torch.Tensor:
    """``[batch, seq, vocab]`` logits of an HF causal LM (or a LoadedModel's wrapped one)."""
    hf = getattr(model, "hf_model", model)
    device = next(hf.parameters()).device
    was_training = hf.training
    hf.eval()
    try:
        with torch.no_grad():
            return hf(torch.from_numpy(ids).to(device)).logits.float().cpu()
    finally:
        hf.train(was_training)


def _lookup_batch(rng: np.random.Generator, n_seq: int, seq_len: int):
    """Token rows and, per row, (position predicting a value, value, chance) triples."""
    rows, scored = [], []
    for _ in range(n_seq):
        seq, marks = [V.BOS_ID], []
        while len(seq) < seq_len:
            seg = C.lookup_segment(rng, int(rng.integers(6, 13)), int(rng.integers(12, 30)))
            seen_keys, seen_values = set(), set()
            for i in range(0, len(seg), 4):  # k > v ,
                key, value = seg[i], seg[i + 2]
                at = len(seq) + i + 1  # the ">" token predicts the value
                if key in seen_keys and at + 1 < seq_len:
                    marks.append((at, value, 1.0 / len(seen_values)))
                seen_keys.add(key)
                seen_values.add(value)
            seq += seg
        rows.append(seq[:seq_len])
        scored.append(marks)
    return np.array(rows, dtype=np.int64), scored


def _varassign_batch(rng: np.random.Generator, n_seq: int, seq_len: int):
    """Rows of back-to-back programs; per row (position, answer, chance, depth, first) tuples,
    ``first`` when the queried value comes from the first digit assignment."""
    rows, scored = [], []
    for _ in range(n_seq):
        seq, marks = [V.BOS_ID], []
        while True:
            depth = int(rng.integers(2))
            seg = C.varassign_segment(rng, depth=depth)
            if len(seq) + len(seg) > seq_len:
                break
            semi = seg.index(C._SEMI)
            stmts = [seg[i : i + 3] for i in range(0, semi, 4)]  # name = value
            digit_names = [s[0] for s in stmts if s[2] in V.DIGIT_IDS]
            source = {s[0]: s[2] for s in stmts}
            query, answer = seg[semi + 1], seg[semi + 3]
            root = query if source[query] in V.DIGIT_IDS else source[query]
            at = len(seq) + semi + 2  # the "?" token predicts the answer
            marks.append((at, answer, 1.0 / len(digit_names), depth, root == digit_names[0]))
            seq += seg
        rows.append(seq + [V.PAD_ID] * (seq_len - len(seq)))
        scored.append(marks)
    return np.array(rows, dtype=np.int64), scored


def _bootstrap_ci(
    rng: np.random.Generator, n_seq: int, stat, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of ``stat(sequence indices)`` over resampled sequences."""
    draws = np.array([stat(rng.integers(0, n_seq, n_seq)) for _ in range(BOOTSTRAP)])
    draws = draws[np.isfinite(draws)]
    if not len(draws):
        return _NO_CI
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(draws, [tail, 100 - tail])
    return float(lo), float(hi)


def probe(
    model, n_seq: int = 64, seq_len: int = 96, seed: int = 0, intervals: bool = True
) -> ProbeResult:
    """In-context lookup and variable assignment accuracy of ``model`` (an HF causal LM or a
    :class:`~induction.models.loading.LoadedModel` of the zoo vocabulary) on fresh content;
    ``intervals=False`` skips the bootstrap (the trainer's in-loop probe keeps points only)."""
    rng = np.random.default_rng([PROBE_STREAM, seed])
    ids, marks = _lookup_batch(rng, n_seq, seq_len)
    pred = _logits(model, ids).argmax(-1).numpy()
    hits = [pred[r, at] == v for r, ms in enumerate(marks) for at, v, _ in ms]
    chance = [c for ms in marks for *_, c in ms]
    lookup_row = np.array([r for r, ms in enumerate(marks) for _ in ms])

    ids, vmarks = _varassign_batch(rng, n_seq, seq_len)
    pred = _logits(model, ids).argmax(-1).numpy()
    flat = [(pred[r, at] == a, c, d, f) for r, ms in enumerate(vmarks) for at, a, c, d, f in ms]
    vh = np.array([x[0] for x in flat], dtype=float)
    depth = np.array([x[2] for x in flat])
    first = np.array([x[3] for x in flat], dtype=bool)
    va_row = np.array([r for r, ms in enumerate(vmarks) for _ in ms])

    def mean(x) -> float:
        return float(np.mean(x)) if len(x) else float("nan")

    hit_arr = np.array(hits, dtype=float)
    # each statistic over a resample of sequences: a sequence drawn twice counts twice
    lookup_by_seq = [hit_arr[lookup_row == r] for r in range(n_seq)]
    va_by_seq = [(vh[va_row == r], first[va_row == r]) for r in range(n_seq)]

    def lookup_stat(idx) -> float:
        return mean(np.concatenate([lookup_by_seq[i] for i in idx]))

    def va_stat(idx) -> float:
        return mean(np.concatenate([va_by_seq[i][0] for i in idx]))

    def gap_stat(idx) -> float:
        h = np.concatenate([va_by_seq[i][0] for i in idx])
        f = np.concatenate([va_by_seq[i][1] for i in idx])
        return abs(mean(h[f]) - mean(h[~f]))

    ci_rng = np.random.default_rng([PROBE_STREAM, seed, 1])

    def ci(stat) -> tuple[float, float]:
        return _bootstrap_ci(ci_rng, n_seq, stat) if intervals else _NO_CI

    return ProbeResult(
        lookup=mean(hits),
        lookup_chance=mean(chance),
        lookup_n=len(hits),
        varassign=mean(vh),
        varassign_d0=mean(vh[depth == 0]),
        varassign_d1=mean(vh[depth == 1]),
        varassign_chance=mean([x[1] for x in flat]),
        varassign_first=mean(vh[first]),
        varassign_others=mean(vh[~first]),
        varassign_n=len(flat),
        lookup_ci=ci(lookup_stat),
        varassign_ci=ci(va_stat),
        position_gap_ci=ci(gap_stat),
    )


def _ci_text(ci: tuple[float, float], threshold: float) -> str:
    """``, 95% CI [lo, hi]``, and ``, within noise`` where the interval holds the threshold."""
    lo, hi = ci
    if not (lo == lo and hi == hi):
        return ""
    noise = ", within noise" if lo <= threshold <= hi else ""
    return f", 95% CI [{lo:.2f}, {hi:.2f}]{noise}"


def gates(result: ProbeResult) -> list[Gate]:
    """The zoo's in-context admission gates (module docs), each with its numbers."""
    r = result
    ratio = r.lookup / r.lookup_chance if r.lookup_chance else float("nan")
    return [
        Gate(
            "in-context lookup",
            r.lookup >= LOOKUP_MIN and ratio >= LOOKUP_RATIO,
            f"{r.lookup:.2f} (chance {r.lookup_chance:.2f}, {ratio:.1f}x; needs "
            f">= {LOOKUP_MIN} and >= {LOOKUP_RATIO:g}x{_ci_text(r.lookup_ci, LOOKUP_MIN)})",
        ),
        Gate(
            "variable assignment",
            r.varassign >= VARASSIGN_MIN,
            f"{r.varassign:.2f} (depth 0 {r.varassign_d0:.2f}, depth 1 {r.varassign_d1:.2f}; "
            f"chance {r.varassign_chance:.2f}; needs >= {VARASSIGN_MIN}"
            f"{_ci_text(r.varassign_ci, VARASSIGN_MIN)})",
        ),
        Gate(
            "no answer by position",
            r.position_gap <= POSITION_GAP_MAX,
            f"first-assigned {r.varassign_first:.2f} vs others {r.varassign_others:.2f} "
            f"(gap {r.position_gap:.2f}; needs <= {POSITION_GAP_MAX}"
            f"{_ci_text(r.position_gap_ci, POSITION_GAP_MAX)})",
        ),
    ]
