"""Batched evaluation of tasks under head ablations.

One :class:`Engine` holds a model (a TransformerLens bridge) and evaluates prepared tasks
with or without a :class:`~ablation.hooks.HeadAblation`:

- prompts are tokenised once per task (:meth:`Engine.prepare`), sorted by length and
  batched, so the clean run and every ablation/control see identical inputs;
- generation tasks: batched prefill with left padding (attention mask and position ids from
  the mask), then batched greedy decoding with the HF KV cache, calling the bridge's wrapped
  HF module directly so the bridge's hooks (the ablation) fire on every step; a row stops at
  EOS, at a stop string (checked on decoded text only when a token that can start one appears)
  or after ``max_new_tokens``; the batch stops when every row has; the teacher-forced
  readouts (:mod:`ablation.readout`) read the prefill's last-position logits and run only
  multi-token candidates further, on a copy of its KV cache;
- distribution tasks (RegBench): one forward per batch (no decoding); the next-token
  distribution at each scored position is restricted to the item's support;
- many head sets, one pass (:meth:`Engine.evaluate_sets`): ``K`` head sets (the target and
  its controls, the clean run too) share each forward, the batch's prompts repeated once per
  set and each row carrying its set's head mask (:class:`~ablation.hooks.HeadSetsAblation`);
  ``K`` comes from free memory (:meth:`Engine.sets_per_pass`) or ``head_sets_per_pass``.

Finished (task, head set) results are appended to a JSONL cache (:class:`ResultCache`), one
sealed, flushed and fsynced line per result, so an interrupted run resumes where it stopped
and a damaged line is recomputed, never served.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ablation import metrics
from ablation import readout as R
from ablation.hooks import HeadAblation, HeadMeans, HeadSetsAblation, head_means
from ablation.results import EvalResult
from ablation.tasks.base import DistTask, GenTask, Task
from induction.errors import InputError
from induction.models.kv_cache import cache_argument, enable_kv_cache, selected

ENGINE_VERSION = 2  # 2: typed results (ablation.results), items per metric
#: What a pass hooks: one head set, or several sets side by side in the batch's rows.
Ablation = HeadAblation | HeadSetsAblation


@dataclass
class Prepared:
    task: Task
    batches: list[tuple[list[int], torch.Tensor, torch.Tensor]]  # (item idx, ids, mask)
    fingerprint: str
    means: dict[str, HeadMeans] = field(default_factory=dict)
    readout: R.ReadoutPlan | None = None  # teacher-forced readouts (ablation.readout)


@dataclass
class Timer:
    forward_s: float = 0.0
    total_s: float = 0.0
    forwards: int = 0


class Engine:
    """Evaluate tasks on ``bridge`` (a TransformerLens ``TransformerBridge``)."""

    def __init__(
        self,
        bridge,
        tokenizer=None,
        batch_size: int = 32,
        max_len: int | None = None,
        dist_budget: float = 2e8,
        readouts: bool = False,
        head_sets_per_pass: int | None = None,
    ):
        if head_sets_per_pass is not None and (
            not isinstance(head_sets_per_pass, int) or head_sets_per_pass < 1
        ):
            raise InputError(
                f"--head-sets-per-pass must be an integer >= 1, got {head_sets_per_pass!r}"
            )
        self.bridge = bridge
        self.head_sets_per_pass = head_sets_per_pass  # None: from free memory
        enable_kv_cache(bridge)
        self.hf = bridge.original_model
        self.tok = tokenizer if tokenizer is not None else bridge.tokenizer
        self.batch_size = batch_size
        self.device = torch.device(bridge.cfg.device)
        self.max_len = max_len or int(getattr(bridge.cfg, "n_ctx", 2048) or 2048)
        self.dist_budget = dist_budget  # max batch * seq * vocab floats of logits
        self.readouts = readouts  # generation tasks: also logprob and cand_acc
        self.pad_id = next(
            i for i in (self.tok.pad_token_id, self.tok.eos_token_id, 0) if i is not None
        )
        eos = getattr(self.hf.generation_config, "eos_token_id", None) or self.tok.eos_token_id
        self.eos_ids = set([eos] if isinstance(eos, int) else (eos or []))
        self._vocab_text: list[str] | None = None
        self._suspect_cache: dict[tuple, torch.Tensor] = {}
        self.timer = Timer()
        self._cache_arg = cache_argument(self.hf)

    # ------------------------------------------------------------------ preparation
    def _token_texts(self) -> list[str]:
        if self._vocab_text is None:
            n = len(self.tok)
            texts: list[str] = self.tok.batch_decode([[i] for i in range(n)])
            self._vocab_text = texts
            return texts
        return self._vocab_text

    def _suspects(self, stops: Sequence[str]) -> torch.Tensor:
        """Boolean mask over the vocabulary: tokens whose text holds a stop string's first
        character (only after such a token is the decoded text checked)."""
        key = tuple(sorted(stops))
        if key in self._suspect_cache:
            return self._suspect_cache[key]
        firsts = {s[0] for s in stops if s}
        n = max(len(self.tok), int(self.bridge.cfg.d_vocab))
        mask = torch.zeros(n, dtype=torch.bool)
        for i, text in enumerate(self._token_texts()):
            if any(c in text for c in firsts):
                mask[i] = True
        for e in self.eos_ids:
            if e < n:
                mask[e] = True
        self._suspect_cache[key] = mask.to(self.device)
        return self._suspect_cache[key]

    def prepare(self, task: Task) -> Prepared:
        """Tokenise and batch a task's items (left-padded for generation)."""
        readout = R.plan(task, self.tok) if self.readouts and isinstance(task, GenTask) else None
        if isinstance(task, GenTask):
            budget = self.max_len - task.max_new_tokens
            seqs = []
            for it in task.items:
                ids = self.tok(it.prompt)["input_ids"]
                if len(ids) > budget:  # keep the end of over-long prompts
                    ids = ids[len(ids) - budget :]
                seqs.append(ids)
            payload = [
                task.name,
                task.metric,
                task.max_new_tokens,
                task.stop,
                [(it.prompt, it.golds) for it in task.items],
            ]
            if self.readouts:
                payload.append(["readouts", R.candidates(task)])
            bs = self.batch_size
        else:
            seqs = [it.ids[: self.max_len] for it in task.items]
            payload = [
                task.name,
                [(it.ids, it.positions, it.valid, it.support) for it in task.items],
            ]
            longest = max(len(s) for s in seqs)
            bs = max(1, min(self.batch_size, int(self.dist_budget // (longest * len(self.tok)))))
        order = sorted(range(len(seqs)), key=lambda i: (len(seqs[i]), i))
        batches = []
        for start in range(0, len(order), bs):
            idx = order[start : start + bs]
            width = max(len(seqs[i]) for i in idx)
            ids = torch.full((len(idx), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for row, i in enumerate(idx):
                s = seqs[i]
                if isinstance(task, GenTask):  # left padding
                    ids[row, width - len(s) :] = torch.tensor(s)
                    mask[row, width - len(s) :] = 1
                else:  # right padding keeps scored positions at their index
                    ids[row, : len(s)] = torch.tensor(s)
                    mask[row, : len(s)] = 1
            batches.append((idx, ids, mask))
        fp = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
        return Prepared(task=task, batches=batches, fingerprint=fp, readout=readout)

    def means_for(self, prep: Prepared, layers: Sequence[int], mean_over: str) -> HeadMeans:
        """Head means over the task's own prompts (the reference batch), computed once."""
        key = mean_over
        if key not in prep.means:
            batches = [(ids, mask) for _, ids, mask in prep.batches]
            prep.means[key] = head_means(
                self.bridge,
                batches,
                range(self.bridge.cfg.n_layers),
                per_position=mean_over == "position",
            )
        return prep.means[key]

    # ------------------------------------------------------------------ evaluation
    @torch.inference_mode()
    def evaluate(
        self, prep: Prepared, ablation: HeadAblation | None = None, on_batch=None
    ) -> EvalResult:
        """Scores of one task under ``ablation`` (None: clean), per item and averaged."""
        return self._evaluate(prep, ablation, 1, on_batch)[0]

    @torch.inference_mode()
    def evaluate_sets(
        self,
        prep: Prepared,
        ablations: Sequence[HeadAblation | None],
        on_batch=None,
        on_result=None,
    ) -> list[EvalResult]:
        """:meth:`evaluate` of each of ``ablations`` (None: clean), up to
        :meth:`sets_per_pass` of them sharing each forward: the batch's prompts are repeated
        once per set and each row block carries its set's head mask
        (:class:`~ablation.hooks.HeadSetsAblation`), so every set gets the numbers it gets
        alone (tested within 1e-5). The sets share one mode and one table of means.
        ``on_result(i, result)`` is called as each pass's results are ready (the resume
        cache); ``on_batch`` once per set and batch."""
        k = self.sets_per_pass(prep, len(ablations))
        results: list[EvalResult] = []
        for start in range(0, len(ablations), k):
            chunk = list(ablations[start : start + k])
            if len(chunk) == 1:  # one set per pass: exactly evaluate's path
                got = self._evaluate(prep, chunk[0], 1, on_batch)
            else:
                got = self._evaluate(prep, self._sets_ablation(chunk), len(chunk), on_batch)
            for i, res in enumerate(got):
                if on_result is not None:
                    on_result(start + i, res)
            results.extend(got)
        return results

    def _sets_ablation(self, chunk: Sequence[HeadAblation | None]) -> HeadSetsAblation:
        given = [a for a in chunk if a is not None and a.heads]
        kinds = {(a.mode, a.mean_over, id(a.means) if a.mode == "mean" else None) for a in given}
        if len(kinds) > 1:
            raise ValueError("head sets evaluated together share one mode and means")
        first = given[0] if given else None
        return HeadSetsAblation(
            [a.heads if a is not None else [] for a in chunk],
            int(self.bridge.cfg.n_heads),
            mode=first.mode if first else "zero",
            means=first.means if first else None,
            mean_over=first.mean_over if first else "all",
        )

    def sets_per_pass(self, prep: Prepared, n_sets: int) -> int:
        """How many head sets share a forward for ``prep``: ``head_sets_per_pass`` when
        given, else as many as fit :data:`MEMORY_SHARE` of the free memory (the GPU's on
        CUDA, the machine's available RAM on the CPU) by :meth:`bytes_per_set`; distribution
        tasks also keep their logits within ``dist_budget``, and on the CPU a pass holds at
        most :data:`CPU_PASS_TOKENS` prompt tokens and :data:`CPU_PASS_FLOPS` of prefill.
        At least 1, at most ``n_sets``."""
        if n_sets <= 1 or not prep.batches:
            return 1
        if self.head_sets_per_pass is not None:
            return min(self.head_sets_per_pass, n_sets)
        k = int(MEMORY_SHARE * free_bytes(self.device) // self.bytes_per_set(prep))
        rows = max(len(idx) for idx, _, _ in prep.batches)
        width = max(ids.shape[1] for _, ids, _ in prep.batches)
        if not isinstance(prep.task, GenTask):
            k = min(k, int(self.dist_budget // (rows * width * self._vocab())))
        if self.device.type == "cpu":  # compute-bound: batching saves only per-pass overhead
            flops = 2 * rows * width * sum(p.numel() for p in self.hf.parameters())
            k = min(k, CPU_PASS_TOKENS // (rows * width), int(CPU_PASS_FLOPS // flops))
        return max(1, min(n_sets, k))

    def _vocab(self) -> int:
        return max(len(self.tok), int(self.bridge.cfg.d_vocab))

    def bytes_per_set(self, prep: Prepared) -> int:
        """An upper estimate of the memory one more head set adds to a pass over ``prep``'s
        largest batch: per row its KV cache, one layer's activations and attention scores,
        the logits, and for the readouts the continuation rows' cache copies and logits."""
        cfg, info = self.bridge.cfg, _shape(self.bridge)
        elem = next(self.hf.parameters()).element_size()
        rows = max(len(idx) for idx, _, _ in prep.batches)
        width = max(ids.shape[1] for _, ids, _ in prep.batches)
        vocab = self._vocab()
        gen = isinstance(prep.task, GenTask)
        t = width + (prep.task.max_new_tokens if isinstance(prep.task, GenTask) else 0)
        kv = 2 * int(cfg.n_layers) * info["kv_heads"] * info["d_head"] * t * elem
        attn = 3 * int(cfg.n_heads) * t * t * 4  # scores, softmax, probabilities (float32)
        act = 2 * t * (4 * info["d_model"] + 3 * info["d_mlp"]) * elem
        logits = 2 * vocab * 4 * (1 if gen else t)
        per_row = kv + attn + act + logits
        if gen and prep.readout is not None:  # up to 4 continuation rows per prompt row
            per_row += 4 * (kv + 2 * vocab * 4 * 4)
        return max(1, rows * per_row)

    def _evaluate(
        self, prep: Prepared, ablation: Ablation | None, n_sets: int, on_batch
    ) -> list[EvalResult]:
        t0 = time.perf_counter()
        hooks = ablation.fwd_hooks() if ablation is not None and ablation.heads else []
        with self.bridge.hooks(fwd_hooks=hooks):
            if isinstance(prep.task, GenTask):
                out = self._eval_gen(prep, ablation, n_sets, on_batch)
            else:
                out = self._eval_dist(prep, ablation, n_sets, on_batch)
        self.timer.total_s += time.perf_counter() - t0
        return out

    def _rows_of_sets(self, ablation: Ablation | None, n_sets: int, rows: int) -> None:
        """Tell a :class:`HeadSetsAblation` that the batch is ``n_sets`` blocks of ``rows``."""
        if isinstance(ablation, HeadSetsAblation):
            sets = torch.arange(n_sets, device=self.device)
            ablation.row_sets = sets.repeat_interleave(rows)

    def _forward(self, **kw):
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        out = self.hf(**kw)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        self.timer.forward_s += time.perf_counter() - t
        self.timer.forwards += 1
        return out

    def _eval_gen(
        self, prep: Prepared, ablation: Ablation | None, n_sets: int, on_batch
    ) -> list[EvalResult]:
        task = prep.task
        assert isinstance(task, GenTask), "_evaluate sends only generation tasks here"
        suspects = self._suspects(task.stop)
        preds: list[list[str]] = [[""] * len(task.items) for _ in range(n_sets)]
        cand_lp: list[dict[int, dict[int, float]]] = [{} for _ in range(n_sets)]
        for idx, ids, mask in prep.batches:
            b = len(idx)
            self._rows_of_sets(ablation, n_sets, b)
            if n_sets > 1:  # set k reads rows k*b .. k*b + b - 1
                ids, mask = ids.repeat(n_sets, 1), mask.repeat(n_sets, 1)
            on_prefill = None
            if prep.readout is not None:

                def store(r, scores, idx=idx, b=b):
                    cand_lp[r // b][idx[r % b]] = scores

                rows = list(idx) * n_sets
                on_prefill = self._readout_reader(prep.readout, rows, ablation, store, n_sets)
            gen = self.generate(
                ids, mask, task.max_new_tokens, task.stop, suspects, ablation, on_prefill=on_prefill
            )
            for r, text in enumerate(gen):
                preds[r // b][idx[r % b]] = text
            if on_batch:
                for _ in range(n_sets):
                    on_batch()
        return [self._gen_result(prep, preds[k], cand_lp[k]) for k in range(n_sets)]

    def _gen_result(self, prep: Prepared, preds: list[str], cand_lp: dict) -> EvalResult:
        task = prep.task
        assert isinstance(task, GenTask), "_eval_gen's tasks are generation tasks"
        metric_names = [task.metric] + (["em"] if task.metric == "f1" else [])
        items = {}
        for name in metric_names:
            score = metrics.get_metric(name).text_score()
            items[name] = [score(p, it.golds) for p, it in zip(preds, task.items, strict=True)]
        if prep.readout is not None:
            items |= R.finish(prep.readout, cand_lp)
        scores = {name: _mean(values) for name, values in items.items()}
        return EvalResult(scores=scores, items=items, predictions=preds)

    def _readout_reader(
        self, rplan: R.ReadoutPlan, items, ablation: Ablation | None, store, n_sets: int = 1
    ):
        """A prefill callback for :meth:`generate` that scores the batch's readouts (batch row
        ``r`` holds item ``items[r]``) from the prompt's last-position logits and KV cache,
        handing each row's candidate log-probabilities to ``store(r, scores)``."""

        def read(last_logits, cache, ids, pos, mask):
            sets = ablation if isinstance(ablation, HeadSetsAblation) else None
            row_sets = sets.row_sets if sets is not None else None

            def continue_rows(source, prefix_ids, prefix_mask):
                source = source.to(self.device)
                if sets is not None and row_sets is not None:
                    sets.row_sets = row_sets[source]
                width = prefix_ids.shape[1]
                if int(pos[source, -1].max()) + 1 + width > self.max_len:
                    if ablation is not None:  # right-padded full rows: positions 0..T-1
                        ablation.positions = None
                    return self._rows_in_full(ids[source], mask[source], prefix_ids, prefix_mask)
                step_pos = pos[source, -1:] + 1 + torch.arange(width, device=self.device)
                if ablation is not None:
                    ablation.positions = step_pos
                out = self._forward(
                    input_ids=prefix_ids.to(self.device),
                    attention_mask=torch.cat([mask[source], prefix_mask.to(self.device)], 1),
                    position_ids=step_pos,
                    use_cache=True,
                    **{self._cache_arg: selected(cache, source)},
                )
                return out.logits

            first = torch.log_softmax(last_logits.float(), -1)
            rows = 4 * self.batch_size * n_sets
            scored = R.read_rows(rplan, items, first, continue_rows, self.pad_id, rows)
            for r, scores in enumerate(scored):
                store(r, scores)
            if ablation is not None:
                ablation.positions = None
            if sets is not None and row_sets is not None:
                sets.row_sets = row_sets

        return read

    def _rows_in_full(self, prompt_ids, prompt_mask, prefix_ids, prefix_mask):
        """Continuation logits ``[rows, prefix, vocab]`` by full forwards of prompt + prefix
        cut from the left to the context (rows that would run past it on the prompt's cache);
        right-padded, so positions are ``0..T-1``."""
        seqs, starts = [], []
        for p_ids, p_mask, x_ids, x_mask in zip(
            prompt_ids.tolist(), prompt_mask.tolist(), prefix_ids.tolist(), prefix_mask.tolist()
        ):
            prompt = [t for t, m in zip(p_ids, p_mask) if m]
            seq = prompt + [t for t, m in zip(x_ids, x_mask) if m]
            cut = max(0, len(seq) - self.max_len)
            if cut >= len(prompt):
                raise InputError(
                    f"a readout candidate of {len(seq) - len(prompt) + 1} tokens does not fit "
                    f"the model's context of {self.max_len} tokens after its prompt; shorten "
                    "the task's candidates or run without the readouts (--no-readouts)"
                )
            seqs.append(seq[cut:])
            starts.append(len(prompt) - cut)
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for k, seq in enumerate(seqs):
            ids[k, : len(seq)] = torch.tensor(seq)
            mask[k, : len(seq)] = 1
        logits = self._forward(
            input_ids=ids.to(self.device), attention_mask=mask.to(self.device), use_cache=False
        ).logits
        steps = torch.arange(prefix_ids.shape[1])
        at = (torch.tensor(starts)[:, None] + steps[None]).clamp(max=width - 1).to(self.device)
        return torch.gather(logits, 1, at[..., None].expand(-1, -1, logits.shape[-1]))

    def generate(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        max_new_tokens: int,
        stop: Sequence[str] = ("\n",),
        suspects: torch.Tensor | None = None,
        ablation: Ablation | None = None,
        raw: bool = False,
        on_prefill=None,
    ) -> list[str]:
        """Greedy-decode a left-padded batch; returns each row's answer text (cut before the
        first stop string, stripped), or with ``raw`` the whole decoded continuation (EOS
        dropped, neither cut nor stripped: the lm-eval adapter applies the harness's rules).

        ``on_prefill(last_logits, cache, ids, positions, mask)`` is called once after the
        prompt's forward, before decoding extends the cache (the readouts share the prompt's
        pass); with ``max_new_tokens`` 0 the prompt still runs for it, and nothing is decoded."""
        ids, mask = ids.to(self.device), mask.to(self.device)
        if suspects is None:
            suspects = self._suspects(stop)
        b = ids.shape[0]
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        done = torch.zeros(b, dtype=torch.bool, device=self.device)
        out_tokens: list[torch.Tensor] = []
        cache = None
        step_ids, step_pos = ids, pos
        eos = torch.tensor(sorted(self.eos_ids) or [-1], device=self.device)
        # with on_prefill and max_new_tokens 0 the prompt's pass still runs, then stops
        for step in range(max(max_new_tokens, int(on_prefill is not None))):
            if ablation is not None:
                ablation.positions = step_pos
            out = self._forward(
                input_ids=step_ids,
                attention_mask=mask,
                position_ids=step_pos,
                use_cache=True,
                logits_to_keep=1,
                **{self._cache_arg: cache},
            )
            cache = getattr(out, "cache", None)
            if cache is None:
                cache = getattr(out, "past_key_values", None)
            if on_prefill is not None and step == 0:
                on_prefill(out.logits[:, -1], cache, ids, step_pos, mask)
            if step == max_new_tokens:
                break
            nxt = out.logits[:, -1].argmax(-1)
            nxt = torch.where(done, torch.full_like(nxt, self.pad_id), nxt)
            out_tokens.append(nxt)
            done |= torch.isin(nxt, eos)
            check = (~done) & suspects[nxt] if stop else torch.zeros_like(done)
            if bool(check.any()):
                gen = torch.stack(out_tokens, 1)
                for r in torch.nonzero(check).flatten().tolist():
                    text = self.tok.decode(gen[r].tolist(), skip_special_tokens=True)
                    if any(s in text for s in stop):
                        done[r] = True
            if bool(done.all()):
                break
            step_ids = nxt[:, None]
            step_pos = step_pos[:, -1:] + 1
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        if ablation is not None:
            ablation.positions = None
        gen = torch.stack(out_tokens, 1).tolist() if out_tokens else [[] for _ in range(b)]
        answers = []
        for row in gen:
            row = [t for t in row if t not in self.eos_ids]
            text = self.tok.decode(row, skip_special_tokens=True)
            if raw:
                answers.append(text)
                continue
            cut = min((text.find(s) for s in stop if s and s in text), default=len(text))
            answers.append(text[:cut].strip())
        return answers

    def _eval_dist(
        self, prep: Prepared, ablation: Ablation | None, n_sets: int, on_batch
    ) -> list[EvalResult]:
        task = prep.task
        assert isinstance(task, DistTask), "_evaluate sends only distribution tasks here"
        tvds = [[0.0] * len(task.items) for _ in range(n_sets)]
        accs = [[0.0] * len(task.items) for _ in range(n_sets)]
        for idx, ids, mask in prep.batches:
            b = len(idx)
            self._rows_of_sets(ablation, n_sets, b)
            ids, mask = ids.to(self.device), mask.to(self.device)
            if n_sets > 1:  # set k reads rows k*b .. k*b + b - 1
                ids, mask = ids.repeat(n_sets, 1), mask.repeat(n_sets, 1)
            if ablation is not None:
                ablation.positions = None  # right padding: positions are 0..T-1
            logits = self._forward(input_ids=ids, attention_mask=mask, use_cache=False).logits
            for r in range(n_sets * b):
                k, i = r // b, idx[r % b]
                item = task.items[i]
                limit = min(len(item.ids), self.max_len) - 1
                keep = sum(1 for p in item.positions if p < limit)
                pos = torch.tensor(item.positions[:keep], dtype=torch.long, device=self.device)
                sup = torch.tensor(item.support, device=self.device)
                q = torch.softmax(logits[r, pos][:, sup].float(), -1).cpu().numpy()
                tvds[k][i], accs[k][i] = metrics.distribution_scores(
                    q, item.valid[:keep], item.support
                )
            if on_batch:
                for _ in range(n_sets):
                    on_batch()
        out = []
        for k in range(n_sets):
            items = {"tvd": tvds[k], "acc": accs[k]}
            scores = {name: float(np.nanmean(values)) for name, values in items.items()}
            out.append(EvalResult(scores=scores, items=items))
        return out


#: Share of the free memory that the head sets of one pass may fill (the rest is headroom
#: for the allocator, the weights' temporaries and whatever else runs).
MEMORY_SHARE = 0.25


#: On the CPU a pass's prompt tokens (rows x width) stop at this many: beyond a few thousand
#: tokens a forward is compute-bound there, so more sets per pass save no overhead and spill
#: the attention scores out of cache (grown8c-s0: 3 sets of 32 prompts were at best ~1.1x,
#: 6 and 12 slower than one per pass; docs/results.md, "Many head sets, one forward pass").
CPU_PASS_TOKENS = 4096
#: On the CPU a pass's prefill stops at this many FLOPs (2 x tokens x parameters): a model
#: whose one set already costs more (SmolLM2: ~2e11 for 16 prompts of 52 tokens) gains nothing
#: from more sets per pass (4 sets ran 0.85x as fast as one per pass, docs/results.md).
CPU_PASS_FLOPS = 2e10


def free_bytes(device: torch.device) -> int:
    """Free memory for a pass: the GPU's free memory on CUDA, else the machine's available
    RAM (``/proc/meminfo``'s MemAvailable, else free pages)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 4 << 30


def _shape(bridge) -> dict[str, int]:
    """Widths the memory estimate needs, from the bridge's config."""
    cfg = bridge.cfg
    n_heads = int(cfg.n_heads)
    d_head = int(getattr(cfg, "d_head", 0) or cfg.d_model // n_heads)
    kv = int(getattr(cfg, "n_key_value_heads", None) or n_heads)
    d_mlp = int(getattr(cfg, "d_mlp", None) or 4 * cfg.d_model)
    return {"d_head": d_head, "kv_heads": kv, "d_model": int(cfg.d_model), "d_mlp": d_mlp}


def _mean(values) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else float("nan")


# ---------------------------------------------------------------------- result cache
class ResultCache:
    """Append-only JSONL of finished results, one line per (task fingerprint, ablation key).

    Each line is sealed (:func:`induction.store.cache_integrity.seal_record`: a ``seal`` field, the
    SHA-256 of its key and result) and written with a single ``write``, then flushed and
    fsynced. On reading, a torn last line (a crash mid-write) is dropped quietly; a complete
    line whose seal does not match (or that does not parse into a result) is dropped with one
    ``note:`` line on stderr; either way the file is rewritten without it and those results
    are recomputed.
    """

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path is not None else None
        self.data: dict[str, EvalResult] = {}
        self.hits = 0
        if self.path is not None and self.path.is_file():
            self._load(self.path)
        elif self.path is not None and (self.path.exists() or self.path.is_symlink()):
            # a folder, FIFO or dangling link where the cache file belongs (AC13): recompute
            # and cache nothing, rather than fail at the first write or read from a FIFO
            from induction.store.cache_integrity import note_damaged

            note_damaged(self.path, "not a regular file; results are recomputed, not cached")
            self.path = None

    def _load(self, path: Path) -> None:
        from induction.store.cache_integrity import note_damaged
        from induction.store.io import replace_file

        lines = path.read_bytes().split(b"\n")
        torn = lines.pop()  # b"" when the file ends with a newline
        kept, damaged = [], 0
        for raw in lines:
            found = _parse_line(raw)
            if found is not None:
                self.data[found[0]] = found[1]
                kept.append(raw.decode("utf-8") + "\n")
            elif raw.strip():
                damaged += 1
        if damaged:
            s = "" if len(lines) == 1 else "s"
            note_damaged(path, f"content hash mismatch on {damaged} of {len(lines)} line{s}")
        if damaged or torn:
            try:
                replace_file(path, "".join(kept))
            except OSError:  # a read-only cache: the damaged lines are skipped each time
                pass

    @staticmethod
    def key(fingerprint: str, ablation_key: str) -> str:
        return f"{fingerprint}|{ablation_key}"

    def get(self, key: str) -> EvalResult | None:
        hit = self.data.get(key)
        self.hits += hit is not None
        return hit

    def put(self, key: str, result: EvalResult) -> None:
        self.data[key] = result
        if self.path is None:
            return
        from induction.store.cache_integrity import seal_record

        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(seal_record({"key": key, "result": result.to_json()})) + "\n"
        try:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as e:  # a full disk names the cache (docs/safety.md)
            from induction.store.io import disk_full

            raise (disk_full(e, self.path) or e) from None


def _parse_line(raw: bytes) -> tuple[str, EvalResult] | None:
    """``(key, result)`` of a resume-cache line whose seal matches, else None."""
    from induction.store.cache_integrity import open_record

    try:
        rec = open_record(json.loads(raw.decode("utf-8")))
        if rec is None or not isinstance(rec["key"], str):
            return None
        return rec["key"], EvalResult.from_json(rec["result"])
    except (ValueError, KeyError, TypeError, RecursionError, AttributeError):
        return None


def fits(task: Task, result: EvalResult) -> bool:
    """Whether ``result`` has the form :meth:`Engine.evaluate` gives ``task``: the task's
    metrics, one score per item for each, each mean the mean of the finite item scores (NaN
    only when there is none) and, for generation tasks, one answer per item. A cached result
    that does not fit (an entry edited along with its seal) is recomputed."""
    n = len(task.items)
    if isinstance(task, GenTask):
        needed = {task.metric} | ({"em"} if task.metric == "f1" else set())
        if result.predictions is None or len(result.predictions) != n:
            return False
    else:
        needed = {"tvd", "acc"}
    if set(result.scores) != set(result.items) or not needed <= set(result.scores):
        return False
    for name, values in result.items.items():
        score, mean = result.scores[name], _mean(values)
        if len(values) != n:
            return False
        if np.isnan(mean) or np.isnan(score):
            if not (np.isnan(mean) and np.isnan(score)):
                return False
        elif not np.isclose(score, mean, rtol=1e-9, atol=1e-12):
            return False
    return True


def ablation_key(heads, mode: str, mean_over: str) -> str:
    if not heads:
        return "clean"
    spec = ",".join(f"{a}.{b}" for a, b in sorted(heads))
    return f"{mode}:{mean_over}:{spec}" if mode == "mean" else f"zero:{spec}"
