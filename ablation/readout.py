"""Readouts that can move: the teacher-forced log-probability of the gold answer and the
accuracy over the task's answer candidates, beside the generated answer's F1/EM.

Greedy F1/EM floors and saturates quickly on small models: zeroing a fifth of the heads can
take a tiny model's score to zero, after which no difference between families can appear
(docs/research.md, "Designing an experiment that can fail"). Both readouts here are
teacher-forced:

- ``logprob``: ``log p(gold | prompt)``, summed over the gold's tokens (the first gold);
- ``cand_acc``: 1 when the gold has the highest summed log-probability among the item's
  candidates (lm-evaluation-harness's multiple-choice ``acc``), else 0.

An item's candidates are :attr:`GenItem.candidates` when the task gives them (e.g. the values
in an open-book passage, the digits of a program), else the task's answer set: the distinct
first golds of its items. The continuation is tokenised as lm-eval does: the prompt plus a
space (none when the prompt already ends in white space) plus the answer, encoded whole, and
split after the prompt's tokens (encoded apart when the prefix does not match).

The prompt is read once per item and shared (docs/design.md, "Readouts on the prompt's
cache"): its last-position logits score every candidate's first token, and they are the
logits of the generation's first decoding step, so the engine reads them from its prefill
(the readouts see the prompt the generation sees); only candidates of several tokens run
further, one row per distinct prefix on a copy of the prompt's KV cache (:func:`read_batch`).
A plain forward of prompt + answer gives the same numbers (tested).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from ablation.tasks.base import GenTask

READOUTS = ("logprob", "cand_acc")
#: Above this many candidates an item's ``cand_acc`` is not computed (NaN): the answer set
#: is then no multiple choice (e.g. free-form text).
MAX_CANDIDATES = 64


@dataclass(frozen=True)
class ReadoutRow:
    """One continuation row of an item: the prompt, then ``prefix`` (a candidate's tokens but
    its last); each ``(candidate, tokens)`` of ``scored`` reads ``tokens[t]`` (t >= 1) at the
    row's prefix position ``t - 1``. Candidates that share a prefix share a row: two-digit
    numbers one row per first digit, the one-digit numbers needing none."""

    item: int
    prefix: tuple[int, ...]
    scored: tuple[tuple[int, tuple[int, ...]], ...]


@dataclass
class ReadoutPlan:
    """What one task's readouts need, built once per task (the clean run and every ablation
    share it): per item its candidates' continuations and continuation rows."""

    conts: list[dict[int, tuple[int, ...]]]  # per item: candidate index -> continuation ids
    rows: list[list[ReadoutRow]]  # per item: rows with a non-empty prefix
    gold_index: list[int]  # per item: the gold's index among its candidates
    n_candidates: list[int]  # per item: candidates scored (0: cand_acc not computed)

    @property
    def n_items(self) -> int:
        return len(self.conts)


def candidates(task: GenTask) -> list[list[str]]:
    """Per item, the answer candidates (the gold first answer always among them)."""
    answer_set = sorted({it.golds[0] for it in task.items if it.golds})
    out = []
    for it in task.items:
        cands = list(getattr(it, "candidates", None) or answer_set)
        if it.golds and it.golds[0] not in cands:
            cands.append(it.golds[0])
        out.append(cands)
    return out


def continuation(tok, prompt: str, answer: str, prompt_ids: list[int]) -> tuple[int, ...]:
    """``answer``'s token ids after ``prompt`` (lm-eval's split; see the module docs)."""
    sep = "" if not prompt or prompt[-1].isspace() else " "
    full = tok(prompt + sep + answer)["input_ids"]
    if full[: len(prompt_ids)] == prompt_ids and len(full) > len(prompt_ids):
        return tuple(full[len(prompt_ids) :])
    return tuple(tok(sep + answer, add_special_tokens=False)["input_ids"])


def _rows_for(item: int, conts: dict[int, tuple[int, ...]]) -> list[ReadoutRow]:
    """Rows scoring the tokens after the first of ``conts``: one per maximal prefix
    ``cont[:-1]``, every candidate read on the first row whose prefix extends its own."""
    prefixes = sorted({c[:-1] for c in conts.values() if len(c) > 1}, key=len, reverse=True)
    maximal: list[tuple[int, ...]] = []
    for p in prefixes:
        if not any(m[: len(p)] == p for m in maximal):
            maximal.append(p)
    claimed: set[int] = set()
    rows = []
    for prefix in maximal:
        scored = tuple(
            (j, c)
            for j, c in conts.items()
            if len(c) > 1 and j not in claimed and prefix[: len(c) - 1] == c[:-1]
        )
        claimed |= {j for j, _ in scored}
        rows.append(ReadoutRow(item, prefix, scored))
    return rows


def plan(task: GenTask, tok) -> ReadoutPlan:
    """The continuations and rows that score ``task``'s items."""
    conts, rows, gold_index, n_cands = [], [], [], []
    for i, (it, cands) in enumerate(zip(task.items, candidates(task), strict=True)):
        prompt_ids = tok(it.prompt)["input_ids"]
        gold = cands.index(it.golds[0]) if it.golds else -1
        gold_index.append(gold)
        if len(cands) > MAX_CANDIDATES:  # no multiple choice: only the gold's log-prob
            item_conts = (
                {gold: continuation(tok, it.prompt, cands[gold], prompt_ids)} if gold >= 0 else {}
            )
            n_cands.append(0)
        else:
            item_conts = {
                j: continuation(tok, it.prompt, c, prompt_ids) for j, c in enumerate(cands)
            }
            n_cands.append(len(cands))
        conts.append(item_conts)
        rows.append(_rows_for(i, item_conts))
    return ReadoutPlan(conts, rows, gold_index, n_cands)


#: ``continue_rows(source, prefix_ids, prefix_mask)``: logits ``[rows, prefix, vocab]`` of
#: right-padded ``prefix_ids`` run after the prompts of batch rows ``source``.
ContinueRows = Callable[[Tensor, Tensor, Tensor], Tensor]


def read_batch(
    rplan: ReadoutPlan,
    items: Sequence[int],
    first_logp: Float[Tensor, "batch vocab"],
    continue_rows: ContinueRows,
    pad_id: int,
    max_rows: int = 128,
) -> dict[int, dict[int, float]]:
    """Summed log-probability of every candidate of ``items`` (batch row ``b`` holds item
    ``items[b]``), from ``first_logp`` (``[batch, vocab]``, log-softmax of each prompt's
    last-position logits) and, for tokens after the first, ``continue_rows`` calls of at most
    ``max_rows`` rows each. A candidate that tokenises to nothing (an empty answer after a
    prompt ending in white space) has log-probability 0, the empty sum."""
    rows = read_rows(rplan, items, first_logp, continue_rows, pad_id, max_rows)
    return dict(zip(items, rows, strict=True))


def read_rows(
    rplan: ReadoutPlan,
    items: Sequence[int],
    first_logp: Float[Tensor, "batch vocab"],
    continue_rows: ContinueRows,
    pad_id: int,
    max_rows: int = 128,
) -> list[dict[int, float]]:
    """:func:`read_batch` per batch row: row ``b``'s candidates' summed log-probabilities,
    so an item may sit on several rows (one per head set, ``Engine.evaluate_sets``)."""
    first = first_logp.float().cpu()
    out: list[dict[int, float]] = []
    for b, i in enumerate(items):
        out.append({j: float(first[b, c[0]]) if c else 0.0 for j, c in rplan.conts[i].items()})
    rows = [(b, r) for b, i in enumerate(items) for r in rplan.rows[i]]
    for start in range(0, len(rows), max_rows):
        chunk = rows[start : start + max_rows]
        width = max(len(r.prefix) for _, r in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for k, (_, r) in enumerate(chunk):
            ids[k, : len(r.prefix)] = torch.tensor(r.prefix)
            mask[k, : len(r.prefix)] = 1
        source = torch.tensor([b for b, _ in chunk])
        logp = torch.log_softmax(continue_rows(source, ids, mask).float(), -1).cpu()
        for k, (b, r) in enumerate(chunk):
            for j, tokens in r.scored:
                steps = torch.arange(len(tokens) - 1)
                out[b][j] += float(logp[k, steps, list(tokens[1:])].sum())
    return out


def finish(rplan: ReadoutPlan, cand_lp: dict[int, dict[int, float]]) -> dict[str, list]:
    """Per-item ``logprob`` and ``cand_acc`` from every candidate's summed log-probability
    (a tie with the gold is a miss)."""
    logprob, acc = [], []
    for i in range(rplan.n_items):
        gold = rplan.gold_index[i]
        scores = cand_lp.get(i, {})
        logprob.append(scores.get(gold, float("nan")))
        if rplan.n_candidates[i] == 0 or gold < 0 or len(scores) < rplan.n_candidates[i]:
            acc.append(float("nan"))
        else:
            best = max(scores, key=lambda j: (scores[j], j != gold))  # a tie is a miss
            acc.append(float(best == gold))
    return {"logprob": logprob, "cand_acc": acc}


def chance(task: GenTask) -> float:
    """``cand_acc`` of a blind uniform guess: the mean of ``1 / candidates`` over items."""
    return float(np.mean([1.0 / len(c) for c in candidates(task)]))
