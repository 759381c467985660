"""An lm-evaluation-harness model (``lm_eval.api.model.TemplateLM``) over a workbench model,
with a head ablation applied to every forward.

:class:`AblatedLM` answers the harness's three request types with the same bridge, hooks and
batching as the built-in engine (:mod:`ablation.engine`):

- ``generate_until``: requests grouped by their generation settings, contexts tokenised with
  the tokenizer's defaults (as the engine does), left-truncated to ``max_length -
  max_gen_toks``, sorted by length, left-padded and decoded greedily by
  :meth:`ablation.engine.Engine.generate` (KV cache, EOS stop, stop strings). The text is then
  cut the harness's way: split at each ``until`` string in turn, not stripped (tasks strip with
  a ``remove_whitespace`` filter). Sampling (``do_sample: true``) is refused.
- ``loglikelihood``: context and continuation encoded by the harness's ``TemplateLM`` rules,
  sorted by length, right-padded, one forward per batch; the continuation's summed log
  probability and whether greedy decoding would produce it.
- ``loglikelihood_rolling``: the harness's disjoint rolling windows
  (``lm_eval.utils.get_rolling_token_windows``) scored as loglikelihood requests and summed.

The ablation (:meth:`AblatedLM.set_heads`) is a :class:`~ablation.hooks.HeadAblation` on
``blocks.{l}.attn.hook_z``, applied with :func:`~ablation.hooks.ablate_heads`. Mean ablation
takes its means over the inputs of the call (the contexts the harness sends for one request
type), computed once per distinct input set. See ``docs/lm-eval.md``.

Importing this module imports ``lm_eval``; :mod:`ablation.lm_eval_backend` imports it lazily.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from lm_eval.api.model import TemplateLM
from lm_eval.models.utils import normalize_gen_kwargs
from lm_eval.utils import get_rolling_token_windows, make_disjoint_window

from ablation.config import AblationMode, MeanOver
from ablation.engine import Engine
from ablation.hooks import HeadAblation, HeadMeans, ablate_heads, head_means
from induction.errors import InputError

#: Token budget of generated answers when a task names none (the harness's default).
DEFAULT_MAX_GEN_TOKS = 256


class AblatedLM(TemplateLM):
    """A workbench model (a :class:`~induction.LoadedModel`, or a bridge and tokenizer) as an
    lm-eval ``LM``; ``set_heads`` chooses the heads ablated in every later request."""

    def __init__(
        self,
        model,
        tokenizer=None,
        batch_size: int = 32,
        engine: Engine | None = None,
        max_gen_toks: int = DEFAULT_MAX_GEN_TOKS,
    ):
        super().__init__()
        bridge = getattr(model, "bridge", model)
        tokenizer = tokenizer or getattr(model, "tokenizer", None)
        self.engine = engine or Engine(bridge, tokenizer, batch_size=batch_size)
        self.bridge = self.engine.bridge
        self.tokenizer = self.engine.tok
        self.batch_size = self.engine.batch_size
        self.max_gen_toks = max_gen_toks
        self.heads: list[tuple[int, int]] = []
        self.mode: AblationMode = "zero"
        self.mean_over: MeanOver = "all"
        self._means: dict[str, HeadMeans] = {}

    # ------------------------------------------------------------------ ablation
    def set_heads(
        self,
        heads: Sequence[tuple[int, int]],
        mode: AblationMode = "zero",
        mean_over: MeanOver = "all",
    ):
        """Ablate ``heads`` (``[(layer, head), ...]``; empty: clean) in every later request."""
        HeadAblation(heads, mode, HeadMeans({}) if mode == "mean" else None, mean_over)  # checks
        self.heads = sorted({(int(a), int(b)) for a, b in heads})
        self.mode, self.mean_over = mode, mean_over
        return self

    def _ablation(self, seqs: list[list[int]]) -> HeadAblation | None:
        if not self.heads:
            return None
        means = None
        if self.mode == "mean":
            means = self._means_for(seqs)
        return HeadAblation(self.heads, self.mode, means, self.mean_over)

    def _means_for(self, seqs: list[list[int]]) -> HeadMeans:
        """Head means over ``seqs`` (this call's inputs), once per distinct input set."""
        key = self.mean_over + hashlib.sha256(json.dumps(seqs).encode()).hexdigest()
        if key not in self._means:
            batches = [(ids, mask) for _, ids, mask in self._batches(seqs, left=True)]
            self._means[key] = head_means(
                self.bridge,
                batches,
                range(self.bridge.cfg.n_layers),
                per_position=self.mean_over == "position",
            )
        return self._means[key]

    # ------------------------------------------------------------------ harness interface
    @property
    def eot_token_id(self) -> int:
        return self.tokenizer.eos_token_id

    @property
    def prefix_token_id(self) -> int:
        bos = getattr(self.tokenizer, "bos_token_id", None)
        return bos if bos is not None else self.eot_token_id

    @property
    def max_length(self) -> int:
        return self.engine.max_len

    @property
    def device(self):
        return self.engine.device

    @property
    def tokenizer_name(self) -> str:
        return getattr(self.tokenizer, "name_or_path", "") or type(self.tokenizer).__name__

    def tok_encode(
        self, string: str, add_special_tokens: bool | None = None, **kwargs
    ) -> list[int]:
        """The tokenizer's ids for ``string``; by default with its special tokens (a BOS for
        the zoo and Llama tokenizers), as the engine tokenises prompts."""
        if add_special_tokens is None:
            return list(self.tokenizer(string)["input_ids"])
        return list(self.tokenizer(string, add_special_tokens=add_special_tokens)["input_ids"])

    def tok_decode(self, tokens, skip_special_tokens: bool = True) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=skip_special_tokens)

    def loglikelihood(self, requests, disable_tqdm: bool = True):
        return super().loglikelihood(requests, disable_tqdm=disable_tqdm)

    # ------------------------------------------------------------------ batching
    def _batches(self, seqs: list[list[int]], left: bool, budget: float | None = None):
        """``(indices, ids, mask)`` batches of ``seqs`` sorted by length (ties by index),
        left- or right-padded; with ``budget`` (floats of logits) batches of long sequences
        shrink so ``batch * length * vocab`` stays under it."""
        order = sorted(range(len(seqs)), key=lambda i: (len(seqs[i]), i))
        vocab = max(len(self.tokenizer), int(self.bridge.cfg.d_vocab))
        start = 0
        while start < len(order):
            bs = self.batch_size
            if budget is not None:
                longest = len(seqs[order[min(start + bs, len(order)) - 1]])
                bs = max(1, min(bs, int(budget // (max(longest, 1) * vocab))))
            idx = order[start : start + bs]
            start += len(idx)
            width = max(len(seqs[i]) for i in idx)
            ids = torch.full((len(idx), width), self.engine.pad_id, dtype=torch.long)
            mask = torch.zeros((len(idx), width), dtype=torch.long)
            for row, i in enumerate(idx):
                s = torch.tensor(seqs[i], dtype=torch.long)
                if left:
                    ids[row, width - len(s) :], mask[row, width - len(s) :] = s, 1
                else:
                    ids[row, : len(s)], mask[row, : len(s)] = s, 1
            yield idx, ids, mask

    # ------------------------------------------------------------------ loglikelihood
    @torch.inference_mode()
    def _loglikelihood_tokens(self, requests, disable_tqdm: bool = True, **kwargs):
        """``(sum log p(continuation | context), greedy)`` per ``(strings, ctx, cont)``."""
        inputs, n_cont, targets = [], [], []
        for _, ctx, cont in requests:
            whole = (list(ctx) + list(cont))[-(self.max_length + 1) :]
            if not cont:
                raise InputError("lm-eval sent an empty continuation to score")
            inputs.append(whole[:-1])
            n_cont.append(min(len(cont), len(whole) - 1))
            targets.append(whole[-n_cont[-1] :])
        out: dict[int, tuple[float, bool]] = {}  # by request index: every one is answered
        ablation = self._ablation(inputs)
        with ablate_heads(self.bridge, ablation or []):
            for idx, ids, mask in self._batches(inputs, left=False, budget=self.engine.dist_budget):
                ids, mask = ids.to(self.device), mask.to(self.device)
                pos = torch.arange(ids.shape[1], device=self.device).expand_as(ids)
                if ablation is not None:
                    ablation.positions = None  # right padding: positions are 0..T-1
                logits = self.engine._forward(
                    input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False
                ).logits
                for row, i in enumerate(idx):
                    end, k = len(inputs[i]), n_cont[i]
                    logp = F.log_softmax(logits[row, end - k : end].float(), dim=-1)
                    tgt = torch.tensor(targets[i], device=self.device)
                    score = float(logp.gather(-1, tgt[:, None]).sum())
                    greedy = bool((logp.argmax(-1) == tgt).all())
                    out[i] = (score, greedy)
        answers = [out[i] for i in range(len(requests))]
        for (strings, _, _), answer in zip(requests, answers, strict=True):
            if strings is not None and strings[0] is not None:
                self.cache_hook.add_partial("loglikelihood", strings, answer)
        return answers

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = True) -> list[float]:
        """Summed log probability of each whole string over the harness's disjoint windows
        (no special tokens; the first token is predicted from ``prefix_token_id``)."""
        windows, owner = [], []
        for n, req in enumerate(requests):
            (string,) = req.args
            tokens = self.tok_encode(string, add_special_tokens=False)
            for ctx, cont in map(
                make_disjoint_window,
                get_rolling_token_windows(
                    token_list=tokens,
                    prefix_token=self.prefix_token_id,
                    max_seq_len=self.max_length,
                    context_len=1,
                ),
            ):
                windows.append((None, ctx, cont))
                owner.append(n)
        scores = self._loglikelihood_tokens(windows) if windows else []
        totals = [0.0] * len(requests)
        for n, (score, _) in zip(owner, scores, strict=True):
            totals[n] += score
        for req, total in zip(requests, totals, strict=True):
            self.cache_hook.add_partial("loglikelihood_rolling", req.args, total)
        return totals

    # ------------------------------------------------------------------ generation
    def generate_until(self, requests, disable_tqdm: bool = True) -> list[str]:
        """Greedy answers, grouped by generation settings; see the module docstring."""
        out: dict[int, str] = {}  # by request index: every one is answered
        groups: dict[str, list[int]] = {}
        for n, req in enumerate(requests):
            key = json.dumps(req.args[1], sort_keys=True, default=str)
            groups.setdefault(key, []).append(n)
        for members in groups.values():
            first = requests[members[0]]
            kwargs = normalize_gen_kwargs(dict(first.args[1]), self.max_gen_toks)
            if kwargs.get("do_sample"):
                raise InputError(
                    f"lm-eval task {first.task_name!r} samples (do_sample: true); ablation "
                    "runs decode greedily: set generation_kwargs do_sample: false"
                )
            # normalize_gen_kwargs always sets both keys (its TypedDict marks none required)
            until = [s for s in kwargs.get("until", []) if s]
            max_new = int(kwargs.get("max_gen_toks", self.max_gen_toks))
            budget = self.max_length - max_new
            if budget < 1:
                raise InputError(
                    f"lm-eval task {first.task_name!r} asks for {max_new} new tokens but the "
                    f"model's context is {self.max_length}; lower max_gen_toks"
                )
            contexts = [self.tok_encode(requests[n].args[0])[-budget:] for n in members]
            for n, text in zip(members, self._generate(contexts, until, max_new), strict=True):
                for stop in until:  # the harness's cut: text before each stop string in turn
                    text = text.split(stop)[0]
                out[n] = text
                self.cache_hook.add_partial("generate_until", requests[n].args, text)
        return [out[n] for n in range(len(requests))]

    @torch.inference_mode()
    def _generate(self, contexts: list[list[int]], until: list[str], max_new: int) -> list[str]:
        texts: list[str] = [""] * len(contexts)
        suspects = self.engine._suspects(until)
        ablation = self._ablation(contexts)
        with ablate_heads(self.bridge, ablation or []):
            for idx, ids, mask in self._batches(contexts, left=True):
                gen = self.engine.generate(
                    ids, mask, max_new, until, suspects, ablation=ablation, raw=True
                )
                for row, i in enumerate(idx):
                    texts[i] = gen[row]
        return texts
