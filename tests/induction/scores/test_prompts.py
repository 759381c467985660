"""Repeated random-token prompts: ordinary distinct ids, seeded, the layout the scores read."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from induction.errors import InputError
from induction.scores.prompts import PromptLayout, make_prompts, normalize_seeds, token_pool


@dataclass(frozen=True)
class Info:
    vocab_size: int = 128
    n_ctx: int = 256
    bos_token_id: int | None = 1
    special_token_ids: tuple[int, ...] = (0, 1, 2, 3)
    ordinary_token_range: tuple[int, int] = (4, 128)
    default_repeat_len: int = 32


def test_prompt_layout_and_token_rules():
    p = make_prompts(Info(), batch=5, seeds=(0, 7))
    T = 32
    assert p.tokens.shape == (10, 1 + 2 * T) and p.seq_len == T
    assert (p.tokens[:, 0] == 1).all()  # BOS first
    r = p.tokens[:, 1 : 1 + T]
    assert torch.equal(p.tokens[:, 1 + T :], r)  # second copy repeats the first
    assert all(len(set(row.tolist())) == T for row in r)  # distinct within a prompt
    assert ((r >= 4) & (r < 128)).all()  # never a special token
    assert p.seed_index.tolist() == [0] * 5 + [1] * 5
    assert torch.equal(p.for_seed(7), p.tokens[5:])


def test_same_seed_same_prompts_different_seed_differs():
    a = make_prompts(Info(), seq_len=10, batch=3, seeds=(4,))
    b = make_prompts(Info(), seq_len=10, batch=3, seeds=(4,))
    c = make_prompts(Info(), seq_len=10, batch=3, seeds=(5,))
    assert torch.equal(a.tokens, b.tokens)
    assert not torch.equal(a.tokens, c.tokens)
    # a seed's prompts do not depend on which other seeds are drawn with it
    both = make_prompts(Info(), seq_len=10, batch=3, seeds=(5, 4))
    assert torch.equal(both.for_seed(4), a.tokens)


def test_n_repeats_and_token_range():
    p = make_prompts(Info(), seq_len=6, batch=2, seeds=1, n_repeats=4, token_range=(40, 60))
    assert p.tokens.shape == (2, 25)
    body = p.tokens[:, 1:].reshape(2, 4, 6)
    assert (body == body[:, :1]).all()
    assert ((body >= 40) & (body < 60)).all()


def test_specials_inside_the_range_are_skipped():
    info = Info(special_token_ids=(0, 1, 2, 3, 50, 51), ordinary_token_range=(45, 56))
    pool = token_pool(info)
    assert pool.ids.tolist() == [45, 46, 47, 48, 49, 52, 53, 54, 55]


def test_prefix_without_bos_uses_eos_then_an_ordinary_token():
    no_bos = Info(bos_token_id=None)
    pool = token_pool(no_bos, eos_token_id=2)
    assert (pool.prefix_token, pool.prefix_kind) == (2, "eos")
    pool = token_pool(no_bos)
    assert (pool.prefix_token, pool.prefix_kind) == (4, "ordinary")
    assert 4 not in pool.ids.tolist()  # the prefix is never drawn into r
    p = make_prompts(no_bos, seq_len=8, batch=4, seeds=1)
    assert (p.tokens[:, 0] == 4).all() and not (p.tokens[:, 1:] == 4).any()


def test_pairs_read_the_right_positions():
    lay = PromptLayout(seq_len=3, n_repeats=3)  # P a b c a b c a b c
    q, k, n = lay.pairs("induction")
    assert q.tolist() == [4, 5, 6, 7, 8, 9] and k.tolist() == [2, 3, 4, 5, 6, 7] and n == 6
    q, k, n = lay.pairs("prefix_matching")
    assert sorted(zip(q.tolist(), k.tolist(), strict=True)) == [
        (4, 2), (5, 3), (6, 4), (7, 2), (7, 5), (8, 3), (8, 6), (9, 4), (9, 7)
    ]  # fmt: skip
    q, k, n = lay.pairs("duplicate_token")
    assert sorted(zip(q.tolist(), k.tolist(), strict=True)) == [
        (4, 1), (5, 2), (6, 3), (7, 1), (7, 4), (8, 2), (8, 5), (9, 3), (9, 6)
    ]  # fmt: skip
    q, k, n = lay.pairs("previous_token")
    assert q.tolist() == list(range(2, 10)) and (q - k).eq(1).all() and n == 8
    first, rep = lay.repeat_targets()
    assert first.tolist() == [1, 2] and rep.tolist() == [4, 5, 7, 8]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(seq_len=128), "does not fit the model's context of 256"),
        (dict(seq_len=125), "needs 125 distinct tokens"),
        (dict(batch=0), "batch must be a positive integer"),
        (dict(seq_len=1), "seq_len must be an integer >= 2"),
        (dict(n_repeats=1), "n_repeats must be an integer >= 2"),
        (dict(seeds=[1, 1]), "duplicate prompt seeds"),
        (dict(token_range=(0, 500)), "not inside the vocabulary"),
    ],
)
def test_bad_prompt_requests(kwargs, match):
    with pytest.raises(InputError, match=match):
        make_prompts(Info(), **kwargs)


def test_normalize_seeds():
    assert normalize_seeds(3) == (0, 1, 2)
    assert normalize_seeds([4, 2]) == (4, 2)
    with pytest.raises(InputError):
        normalize_seeds(0)
