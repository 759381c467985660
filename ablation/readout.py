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
    """One teacher-forced sequence: ``ids`` (prompt, then all but the last continuation
    token); ``targets[j]`` are the token ids scored at position ``start + j``; ``cand`` the
    candidate index (``-1``: every single-token candidate at once, read at ``start``)."""

    item: int
    cand: int
    ids: tuple[int, ...]
    start: int
    targets: tuple[int, ...]


@dataclass
class ReadoutPlan:
    """Every sequence one task needs, built once per task (the clean run and every ablation
    share it)."""

    rows: list[ReadoutRow]
    n_items: int
    gold_index: list[int]  # per item: the gold's index among its candidates
    candidate_ids: list[list[tuple[int, ...]]]  # per item, per candidate: continuation ids


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


def _continuation(tok, prompt: str, answer: str, prompt_ids: list[int]) -> tuple[int, ...]:
    sep = "" if not prompt or prompt[-1].isspace() else " "
    full = tok(prompt + sep + answer)["input_ids"]
    if full[: len(prompt_ids)] == prompt_ids and len(full) > len(prompt_ids):
        return tuple(full[len(prompt_ids) :])
    return tuple(tok(sep + answer, add_special_tokens=False)["input_ids"])


def plan(task: GenTask, tok, max_len: int) -> ReadoutPlan:
    """The sequences that score ``task``'s items (prompts cut from the left to ``max_len``)."""
    rows: list[ReadoutRow] = []
    gold_index, cand_ids = [], []
    for i, (it, cands) in enumerate(zip(task.items, candidates(task), strict=True)):
        prompt_ids = tok(it.prompt)["input_ids"]
        conts = [_continuation(tok, it.prompt, c, prompt_ids) for c in cands]
        gold_index.append(cands.index(it.golds[0]) if it.golds else -1)
        cand_ids.append(conts)
        if len(cands) > MAX_CANDIDATES:
            conts_needed = [(gold_index[-1], conts[gold_index[-1]])]
        elif all(len(c) == 1 for c in conts):
            ids = tuple(prompt_ids[-max_len:])
            rows.append(ReadoutRow(i, -1, ids, len(ids) - 1, tuple(c[0] for c in conts)))
            continue
        else:
            conts_needed = list(enumerate(conts))
        for j, cont in conts_needed:
            ids = tuple(prompt_ids + list(cont[:-1]))
            cut = max(0, len(ids) - max_len)
            rows.append(ReadoutRow(i, j, ids[cut:], len(prompt_ids) - 1 - cut, cont))
    return ReadoutPlan(rows, len(task.items), gold_index, cand_ids)


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
            if r.cand == -1:  # every candidate is one token: read them all at ``start``
                row = logp[b, r.start]
                for j, t in enumerate(r.targets):
                    cand_lp[r.item][j] = float(row[t])
            else:
                pos = torch.arange(r.start, r.start + len(r.targets))
                cand_lp[r.item][r.cand] = float(logp[b, pos, list(r.targets)].sum())
    logprob, acc = [], []
    for i in range(n):
        gold = rplan.gold_index[i]
        scores = cand_lp[i]
        logprob.append(scores.get(gold, float("nan")))
        if len(scores) < len(rplan.candidate_ids[i]) or gold < 0:
            acc.append(float("nan"))
        else:
            best = max(scores, key=lambda j: (scores[j], j != gold))  # a tie is a miss
            acc.append(float(best == gold))
    return {"logprob": logprob, "cand_acc": acc}


def chance(task: GenTask) -> float:
    """``cand_acc`` of a blind uniform guess: the mean of ``1 / candidates`` over items."""
    return float(np.mean([1.0 / len(c) for c in candidates(task)]))
