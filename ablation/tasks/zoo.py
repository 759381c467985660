"""The ``zoo`` suite: token-level in-context tasks in the zoo's training formats.

Every prompt is drawn fresh from ``numpy.random.default_rng([SEED_OFFSET + seed, task])``, a
seed namespace disjoint from the training corpus (which derives its seeds from the model seed
below 10 000), so the maps, programs and automata evaluated are new draws, not training data;
RegBench additionally uses only held-out automata (``regbench.dfa_split == "test"``).

Tasks (``shots`` means what each format has as demonstrations):

- ``lookup``: a fresh map of 6-12 keys to values (words ``w0``-``w87``); ``shots`` pairs
  ``k > v`` (keys with replacement) joined by ``" , "``, then a shown key ``k >``; the answer
  is its value, decoded until ``,`` or ``.``. Default 8 pairs.
- ``copy``: ``r r`` with ``r`` 16 random words; the prompt stops 8 words into the second copy
  and the next 4 words are the answer (no stop token; exactly 4 tokens decoded). ``shots`` is
  unused.
- ``var_depth0`` / ``var_depth1``: ``a = 3 , b = 7 , c = a ; c ? 3 .`` programs of 3-6
  statements over letters ``a``-``r`` and digits; depth 0 queries a ``var = digit`` variable,
  depth 1 a ``var = var`` whose source is a digit. ``shots`` whole programs (default 3) precede
  the query program; decoding stops at ``.``.
- ``regbench``: next-symbol TVD / greedy accuracy (see :mod:`ablation.tasks.regbench`).
"""

from __future__ import annotations

import numpy as np

from ablation.tasks import regbench
from ablation.tasks.base import GenItem, GenTask
from induction.zoo import vocab

SEED_OFFSET = 10_000
TASKS = ("lookup", "copy", "var_depth0", "var_depth1", "regbench")
DEFAULT_SHOTS = {"lookup": 8, "copy": 0, "var_depth0": 3, "var_depth1": 3}


def _rng(seed: int, task: str) -> np.random.Generator:
    return np.random.default_rng([SEED_OFFSET + seed, TASKS.index(task)])


def lookup(n_items: int, shots: int, seed: int) -> GenTask:
    rng = _rng(seed, "lookup")
    items = []
    for _ in range(n_items):
        n_keys = int(rng.integers(6, 13))
        picks = rng.choice(vocab.WORDS, size=2 * n_keys, replace=False).tolist()
        mapping = dict(zip(picks[:n_keys], picks[n_keys:], strict=True))
        keys = list(mapping)
        shown = [keys[int(rng.integers(n_keys))] for _ in range(max(shots, 1))]
        query = shown[int(rng.integers(len(shown)))]
        demos = " , ".join(f"{k} > {mapping[k]}" for k in shown)
        items.append(GenItem(prompt=f"{demos} , {query} >", golds=[mapping[query]]))
    return GenTask(
        "lookup", items, metric="em", stop=[",", "."], max_new_tokens=4, group="zoo", suite="zoo"
    )


def copy(n_items: int, seed: int, length: int = 16, shown: int = 8, answer: int = 4) -> GenTask:
    rng = _rng(seed, "copy")
    items = []
    for _ in range(n_items):
        r = rng.choice(vocab.WORDS, size=length, replace=False).tolist()
        prompt = " ".join(r + r[:shown])
        items.append(GenItem(prompt=prompt, golds=[" ".join(r[shown : shown + answer])]))
    return GenTask(
        "copy", items, metric="f1", stop=[], max_new_tokens=answer, group="zoo", suite="zoo"
    )


def _program(rng: np.random.Generator, depth: int) -> tuple[str, str]:
    n = int(rng.integers(3, 7))
    names = rng.choice(vocab.LETTERS, size=n, replace=False).tolist()
    values: dict[str, str] = {}
    stmts, digit_vars, chained = [], [], []
    for i, name in enumerate(names):
        # the first two statements assign digits so a depth-1 chain always exists
        if i < 2 or not digit_vars or rng.random() < 0.5:
            val = str(int(rng.integers(10)))
            values[name] = val
            digit_vars.append(name)
        else:
            src = digit_vars[int(rng.integers(len(digit_vars)))]
            val = src
            values[name] = values[src]
            chained.append(name)
        stmts.append(f"{name} = {val}")
    if depth == 1 and not chained:
        # force one var = var statement at the end
        name = [c for c in vocab.LETTERS if c not in names][0]
        src = digit_vars[int(rng.integers(len(digit_vars)))]
        values[name] = values[src]
        stmts.append(f"{name} = {src}")
        chained.append(name)
    pool = digit_vars if depth == 0 else chained
    q = pool[int(rng.integers(len(pool)))]
    return f"{' , '.join(stmts)} ; {q} ?", values[q]


def var_assign(depth: int, n_items: int, shots: int, seed: int) -> GenTask:
    name = f"var_depth{depth}"
    rng = _rng(seed, name)
    items = []
    for _ in range(n_items):
        demos = []
        for _ in range(shots):
            text, ans = _program(rng, depth)
            demos.append(f"{text} {ans} .")
        text, ans = _program(rng, depth)
        items.append(GenItem(prompt=" ".join(demos + [text]), golds=[ans]))
    return GenTask(
        name, items, metric="em", stop=[".", ","], max_new_tokens=3, group="zoo", suite="zoo"
    )


def load(
    tokenizer,
    n_items: int = 64,
    shots: int | None = None,
    seed: int = 0,
    max_tokens: int = 512,
    names=None,
) -> list:
    tasks = []
    for name in names or TASKS:
        k = DEFAULT_SHOTS.get(name, 0) if shots is None else shots
        if name == "lookup":
            tasks.append(lookup(n_items, k, seed))
        elif name == "copy":
            tasks.append(copy(n_items, seed))
        elif name.startswith("var_depth"):
            tasks.append(var_assign(int(name[-1]), n_items, k, seed))
        elif name == "regbench":
            t = regbench.load(
                tokenizer,
                vocab.BOS_ID,
                n_items=max(8, n_items // 2),
                seed=seed,
                max_tokens=max_tokens,
            )[0]
            t.suite = "zoo"
            tasks.append(t)
    return tasks
