"""Seeded repeated-random-token prompts and the position bookkeeping the scores need.

A prompt is ``[P] + r * n_repeats``: ``r`` is ``seq_len`` *distinct* token ids drawn uniformly
without replacement from the model's ordinary tokens (never special or added tokens), and ``P``
is one prefix token:

- the tokenizer's BOS token when it has one (Llama, SmolLM2, the zoo);
- otherwise its EOS token (GPT-2-style models see it at every document boundary and
  TransformerLens prepends it as their BOS);
- otherwise the lowest id of the ordinary range, which is then left out of the draw.

Distinct ids make the layout unambiguous: every token of copy ``c >= 1`` has exactly one
earlier occurrence per earlier copy, so the (query, key) pairs each score reads are the same
for every prompt and are computed once (:class:`PromptLayout`). Positions: the prefix is at 0,
copy ``c`` fills ``[1 + c*T, 1 + (c+1)*T)``. For a query at offset ``i`` of copy ``c >= 1``
(position ``q = 1 + c*T + i``), the most recent earlier occurrence is ``q - T`` and the
induction target, the token right after it, is ``q - T + 1``.

Random ids come from a CPU ``torch.Generator`` seeded with the prompt seed, so the same seed
gives the same prompts on every device.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from induction.config_fields import (  # noqa: F401  (re-exported: seeds are settings)
    MAX_SEED,
    MAX_SEED_COUNT,
    normalize_seeds,
)
from induction.errors import InputError

if TYPE_CHECKING:
    from induction.models.model_types import ModelInfo

#: Shortest random block: with T = 1 the induction target would be the query itself.
MIN_SEQ_LEN = 2


@dataclass(frozen=True)
class TokenPool:
    """The ids random tokens are drawn from, and the prefix token put before each prompt."""

    ids: torch.Tensor  # 1-D long, sorted
    prefix_token: int
    prefix_kind: str  # "bos" | "eos" | "ordinary"
    token_range: tuple[int, int]  # the [lo, hi) the pool was cut from

    def __len__(self) -> int:
        return int(self.ids.numel())


def token_pool(
    info: ModelInfo,
    token_range: tuple[int, int] | None = None,
    *,
    eos_token_id: int | None = None,
) -> TokenPool:
    """Ordinary token ids for random prompts, from ``info`` (a :class:`ModelInfo`-like object).

    ``token_range`` (``[lo, hi)``) overrides ``info.ordinary_token_range``: on a BPE vocabulary
    ids are roughly ordered by merge frequency, so a range is also a frequency band. Special
    and added tokens inside the range are always left out.
    """
    vocab = int(info.vocab_size)
    lo, hi = token_range if token_range is not None else info.ordinary_token_range
    lo, hi = int(lo), int(hi)
    if not (0 <= lo < hi <= vocab):
        raise InputError(
            f"token range [{lo}, {hi}) is not inside the vocabulary [0, {vocab}); "
            "pass lo:hi with 0 <= lo < hi <= vocab size"
        )
    specials = {int(s) for s in (info.special_token_ids or ())}
    ids = torch.arange(lo, hi, dtype=torch.long)
    if specials:
        keep = ~torch.isin(ids, torch.tensor(sorted(specials), dtype=torch.long))
        ids = ids[keep]
    bos = info.bos_token_id
    if bos is not None and 0 <= int(bos) < vocab:
        prefix, kind = int(bos), "bos"
    elif eos_token_id is not None and 0 <= int(eos_token_id) < vocab:
        prefix, kind = int(eos_token_id), "eos"
    else:
        if ids.numel() == 0:
            raise InputError(f"token range [{lo}, {hi}) holds no ordinary tokens")
        prefix, kind = int(ids[0]), "ordinary"
    ids = ids[ids != prefix]
    return TokenPool(ids=ids, prefix_token=prefix, prefix_kind=kind, token_range=(lo, hi))


@dataclass(frozen=True)
class PromptLayout:
    """Where things sit in ``[P] + r * n_repeats`` (identical for every prompt)."""

    seq_len: int  # T, length of r
    n_repeats: int

    @property
    def length(self) -> int:
        return 1 + self.seq_len * self.n_repeats

    def copy_start(self, c: int) -> int:
        return 1 + c * self.seq_len

    def later_copy_queries(self) -> torch.Tensor:
        """Positions of every token in copies ``1 .. n_repeats-1``."""
        return torch.arange(self.copy_start(1), self.length, dtype=torch.long)

    def pairs(self, score: str) -> tuple[torch.Tensor, torch.Tensor, int]:
        """``(query, key, n_queries)`` for an attention score; score = sum(pattern[q,k])/n_queries.

        - ``induction``: queries in copies >= 1, key = the token after the most recent earlier
          occurrence (``q - T + 1``); the "stripe".
        - ``prefix_matching`` (Olsson et al.): same queries, keys = the token after *every*
          earlier occurrence, summed. Equals ``induction`` when ``n_repeats == 2``.
        - ``duplicate_token``: same queries, keys = every earlier occurrence of the query token.
        - ``previous_token``: every query from position 2 on, key = ``q - 1`` (the prefix
          token is never a key, so heads parked on BOS do not count).
        """
        T, n = self.seq_len, self.n_repeats
        if score == "previous_token":
            q = torch.arange(2, self.length, dtype=torch.long)
            return q, q - 1, int(q.numel())
        queries = self.later_copy_queries()
        n_q = int(queries.numel())
        if score == "induction":
            return queries, queries - T + 1, n_q
        if score not in ("prefix_matching", "duplicate_token"):
            raise KeyError(score)
        shift = 1 if score == "prefix_matching" else 0
        qs, ks = [], []
        for back in range(1, n):  # how many copies back the earlier occurrence is
            q = queries[queries >= self.copy_start(back)]
            qs.append(q)
            ks.append(q - back * T + shift)
        return torch.cat(qs), torch.cat(ks), n_q

    def tl_pairs(self, head_type: str) -> torch.Tensor:
        """TransformerLens ``detect_head`` mask entries ``(query, key)`` as a [2, n] tensor.

        Their masks on these prompts: ``previous_token_head`` marks ``(q, q-1)`` for every
        ``q >= 1``; ``duplicate_token_head`` marks every earlier occurrence of the query token;
        ``induction_head`` marks the key after every earlier occurrence (prefix matching).
        """
        if head_type == "previous_token":
            q = torch.arange(1, self.length, dtype=torch.long)
            return torch.stack([q, q - 1])
        name = {"induction": "prefix_matching", "duplicate_token": "duplicate_token"}[head_type]
        q, k, _ = self.pairs(name)
        return torch.stack([q, k])

    def repeat_targets(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Positions whose next token is predictable only in context, and their first-copy twins.

        Returns ``(first, repeat)``: logits positions predicting tokens ``1..T-1`` of copy 0 and
        of the later copies (the first token of each copy is unpredictable, so it is left out).
        """
        T = self.seq_len
        first = torch.arange(self.copy_start(0), self.copy_start(0) + T - 1, dtype=torch.long)
        rep = [
            torch.arange(self.copy_start(c), self.copy_start(c) + T - 1, dtype=torch.long)
            for c in range(1, self.n_repeats)
        ]
        return first, torch.cat(rep)


@dataclass(frozen=True)
class RepeatedPrompts:
    """A batch of repeated-random-token prompts for several seeds, stacked seed by seed."""

    tokens: torch.Tensor  # [n_seeds * batch, 1 + T * n_repeats] long, on CPU
    layout: PromptLayout
    seeds: tuple[int, ...]
    batch: int
    pool: TokenPool

    @property
    def seq_len(self) -> int:
        return self.layout.seq_len

    @property
    def n_repeats(self) -> int:
        return self.layout.n_repeats

    @property
    def seed_index(self) -> torch.Tensor:
        """For each row of ``tokens``, the index (into ``seeds``) of the seed it came from."""
        return torch.arange(len(self.seeds)).repeat_interleave(self.batch)

    def for_seed(self, seed: int) -> torch.Tensor:
        i = self.seeds.index(seed)
        return self.tokens[i * self.batch : (i + 1) * self.batch]


def check_prompt_shape(
    seq_len: int, n_repeats: int, batch: int, n_ctx: int | None, pool_size: int
) -> None:
    """Raise :class:`InputError` for a prompt that cannot be built or does not fit the model."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
        raise InputError(f"batch must be a positive integer, got {batch}")
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < MIN_SEQ_LEN:
        raise InputError(f"seq_len must be an integer >= {MIN_SEQ_LEN}, got {seq_len}")
    if isinstance(n_repeats, bool) or not isinstance(n_repeats, int) or n_repeats < 2:
        raise InputError(f"n_repeats must be an integer >= 2, got {n_repeats}")
    length = 1 + seq_len * n_repeats
    if n_ctx is not None and length > n_ctx:
        longest = (n_ctx - 1) // n_repeats
        raise InputError(
            f"seq_len {seq_len} x {n_repeats} repeats + 1 prefix token = {length} tokens does "
            f"not fit the model's context of {n_ctx}; use --seq-len {longest} or less"
        )
    if seq_len > pool_size:
        raise InputError(
            f"seq_len {seq_len} needs {seq_len} distinct tokens but the vocabulary has only "
            f"{pool_size} ordinary tokens to draw from; use --seq-len {pool_size} or less"
        )


def repeated_random_tokens(
    pool: TokenPool, *, seq_len: int, batch: int, seed: int, n_repeats: int = 2
) -> torch.Tensor:
    """``[batch, 1 + seq_len * n_repeats]`` prompts for one seed (CPU, long)."""
    check_prompt_shape(seq_len, n_repeats, batch, None, len(pool))
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    weights = torch.ones(batch, len(pool))
    picks = torch.multinomial(weights, seq_len, replacement=False, generator=gen)
    r = pool.ids[picks]  # [batch, T], distinct within each row
    prefix = torch.full((batch, 1), pool.prefix_token, dtype=torch.long)
    return torch.cat([prefix, r.repeat(1, n_repeats)], dim=1)


def make_prompts(
    info: ModelInfo,
    *,
    seq_len: int | None = None,
    batch: int = 32,
    seeds: int | Sequence[int] = 3,
    n_repeats: int = 2,
    token_range: tuple[int, int] | None = None,
    eos_token_id: int | None = None,
) -> RepeatedPrompts:
    """Prompts for every seed, validated against the model's context and vocabulary.

    ``info`` is a :class:`induction.models.loading.ModelInfo` (or anything with its fields);
    ``seq_len`` None means ``info.default_repeat_len``.
    """
    seq_len = int(info.default_repeat_len) if seq_len is None else seq_len
    seed_list = normalize_seeds(seeds)
    pool = token_pool(info, token_range, eos_token_id=eos_token_id)
    check_prompt_shape(seq_len, n_repeats, batch, int(info.n_ctx), len(pool))
    rows = [
        repeated_random_tokens(pool, seq_len=seq_len, batch=batch, seed=s, n_repeats=n_repeats)
        for s in seed_list
    ]
    return RepeatedPrompts(
        tokens=torch.cat(rows),
        layout=PromptLayout(seq_len=seq_len, n_repeats=n_repeats),
        seeds=seed_list,
        batch=batch,
        pool=pool,
    )
