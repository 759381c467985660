"""Readouts that can move: the teacher-forced log-probability of the gold answer and the
accuracy over the task's answer candidates, beside the generated answer's F1/EM.

Greedy F1/EM floors and saturates quickly on small models: zeroing a fifth of the heads can
take a tiny model's score to zero, after which no difference between families can appear
(docs/research.md, "Designing an experiment that can fail"). Both readouts here come from one
teacher-forced forward pass per item (per candidate when candidates span several tokens):

- ``logprob``: ``log p(gold | prompt)``, summed over the gold's tokens (the first gold);
- ``cand_acc``: 1 when the gold has the highest summed log-probability among the item's
  candidates (lm-evaluation-harness's multiple-choice ``acc``), else 0.

An item's candidates are :attr:`GenItem.candidates` when the task gives them (e.g. the values
in an open-book passage, the digits of a program), else the task's answer set: the distinct
first golds of its items. The continuation is tokenised as lm-eval does: the prompt plus a
space (none when the prompt already ends in white space) plus the answer, encoded whole, and
split after the prompt's tokens (encoded apart when the prefix does not match).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ablation.tasks.base import GenTask

READOUTS = ("logprob", "cand_acc")
#: Above this many candidates an item's ``cand_acc`` is not computed (NaN): the answer set
#: is then no multiple choice (e.g. free-form text).
MAX_CANDIDATES = 64


@dataclass(frozen=True)
class ReadoutRow:
    """One teacher-forced sequence: ``ids`` (the prompt, then a candidate prefix); each
    ``(candidate, tokens)`` of ``scored`` is read along the row from position ``start`` (the
    prompt's last token predicts ``tokens[0]``). Candidates that share a prefix share a row:
    single-token candidates all read one row, two-digit numbers one row per first digit."""

    item: int
    ids: tuple[int, ...]
    start: int
    scored: tuple[tuple[int, tuple[int, ...]], ...]


@dataclass
class ReadoutPlan:
    """Every sequence one task needs, built once per task (the clean run and every ablation
    share it)."""

    rows: list[ReadoutRow]
    n_items: int
    gold_index: list[int]  # per item: the gold's index among its candidates
    n_candidates: list[int]  # per item: candidates scored (0: cand_acc not computed)


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


def _rows_for(item: int, prompt_ids: list[int], conts: dict[int, tuple[int, ...]], max_len: int):
    """Rows scoring ``conts`` (candidate index -> continuation ids): one per maximal prefix
    ``cont[:-1]``, every candidate read on a row whose prefix extends its own."""
    prefixes = sorted({c[:-1] for c in conts.values()}, key=len, reverse=True)
    maximal: list[tuple[int, ...]] = []
    for p in prefixes:
        if not any(m[: len(p)] == p for m in maximal):
            maximal.append(p)
    rows = []
    for prefix in maximal:
        scored = tuple(
            (j, c)
            for j, c in conts.items()
            if prefix[: len(c) - 1] == c[:-1]
            and not any(m[: len(c) - 1] == c[:-1] for m in maximal[: maximal.index(prefix)])
        )
        if not scored:
            continue
        ids = tuple(prompt_ids) + prefix
        cut = max(0, len(ids) - max_len)
        rows.append(ReadoutRow(item, ids[cut:], len(prompt_ids) - 1 - cut, scored))
    return rows


def plan(task: GenTask, tok, max_len: int) -> ReadoutPlan:
    """The sequences that score ``task``'s items (prompts cut from the left to ``max_len``)."""
    rows: list[ReadoutRow] = []
    gold_index, n_cands = [], []
    for i, (it, cands) in enumerate(zip(task.items, candidates(task), strict=True)):
        prompt_ids = tok(it.prompt)["input_ids"]
        gold = cands.index(it.golds[0]) if it.golds else -1
        gold_index.append(gold)
        if len(cands) > MAX_CANDIDATES:  # no multiple choice: only the gold's log-prob
            conts = {gold: continuation(tok, it.prompt, cands[gold], prompt_ids)}
            n_cands.append(0)
        else:
            conts = {j: continuation(tok, it.prompt, c, prompt_ids) for j, c in enumerate(cands)}
            n_cands.append(len(cands))
        rows += _rows_for(i, prompt_ids, conts, max_len)
    return ReadoutPlan(rows, len(task.items), gold_index, n_cands)


@torch.inference_mode()
def run(forward, rplan: ReadoutPlan, pad_id: int, batch_size: int, device) -> dict[str, list]:
    """Per-item ``logprob`` and ``cand_acc`` from ``forward(input_ids=, attention_mask=)``
    (right-padded batches; the caller holds any ablation hooks)."""
    n = rplan.n_items
    cand_lp: list[dict[int, float]] = [{} for _ in range(n)]
    order = sorted(range(len(rplan.rows)), key=lambda k: len(rplan.rows[k].ids))
    for s in range(0, len(order), batch_size):
        chunk = [rplan.rows[k] for k in order[s : s + batch_size]]
        width = max(len(r.ids) for r in chunk)
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for b, r in enumerate(chunk):
            ids[b, : len(r.ids)] = torch.tensor(r.ids)
            mask[b, : len(r.ids)] = 1
        logits = forward(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
        logp = torch.log_softmax(logits.float(), -1).cpu()
        for b, r in enumerate(chunk):
            for j, tokens in r.scored:
                pos = torch.arange(r.start, r.start + len(tokens))
                cand_lp[r.item][j] = float(logp[b, pos, list(tokens)].sum())
    logprob, acc = [], []
    for i in range(n):
        gold = rplan.gold_index[i]
        scores = cand_lp[i]
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
