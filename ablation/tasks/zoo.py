"""The ``zoo`` suite: token-level in-context tasks in the zoo's training formats.

Prompts are built with the zoo corpus's own segment generators (``induction.zoo.corpus``) so
the formats match training exactly, but every draw comes from
``numpy.random.default_rng([SEED_OFFSET + seed, task])``, a seed namespace disjoint from the
training corpus, so the maps, programs and strings evaluated are fresh; RegBench uses only
held-out automata (``corpus.sample_dfa(rng, training=False)``, the corpus's hash split).
Prompts stay within the model's training length (``max_tokens``, default 96 tokens: the zoo's
``seq_len``); var-assign prompts drop their oldest demonstrations to fit.

Tasks (``shots`` means what each format has as demonstrations):

- ``lookup``: a fresh map of 6-12 keys (words) with distinct values; ``shots`` pairs
  ``k > v`` (keys with replacement) joined by ``" , "``, then ``k >`` for a key drawn
  uniformly from the distinct keys shown; the answer is its value, decoded until ``,`` or
  ``.``. Default 12 pairs. Exact match. Positive control.
- ``copy``: ``r r`` with ``r`` 12-20 random words; the prompt stops ``shown`` words into the
  second copy (uniform over 1 .. len(r) - 4) and the next 4 words are the answer (exactly 4
  tokens decoded). Token F1. ``shots`` unused. Positive control.
- ``var_depth0`` / ``var_depth1``: ``a = 3 , b = 7 , c = a ; c ? 3 .`` programs; depth 0
  queries a ``var = digit`` variable, depth 1 a ``var = var`` alias, each uniformly (see
  ``corpus.varassign_segment``). ``shots`` whole programs (default 3) precede the query
  program; decoding stops at ``.``. Exact match.

Positive controls (``positive_control=True``) are induction by construction (Olsson et al.
2022) and are reported apart from the measured tasks. Simple rules
that ignore which entry is queried score at chance on every task
(``tests/ablation/test_task_baselines.py``).
- ``regbench``: held-out automata, strings of 1-9 letters joined by ``|`` up to ``max_tokens``;
  next-letter TVD (primary, lower is better) and greedy accuracy, scored as in
  :mod:`ablation.tasks.regbench`.
"""

from __future__ import annotations

import numpy as np

from ablation.tasks.base import DistItem, DistTask, GenItem, GenTask
from ablation.tasks.registry import SuiteRequest, register
from ablation.tasks.spec import TaskSpec, index
from induction.errors import InputError
from induction.zoo import corpus
from induction.zoo import vocab as V

SEED_OFFSET = 10_000
CONTEXT = 96  # default prompt budget: the zoo's training sequence length (card config seq_len)


_GENERATOR = {"var_depth0": "var_assign", "var_depth1": "var_assign"}


def _spec(name, metric, fmt, shots, positive_control=False, **kw) -> TaskSpec:
    return TaskSpec(name=name, suite="zoo", group="zoo", metric=metric,
                    source=f"generator:ablation.tasks.zoo.{_GENERATOR.get(name, name)}",
                    prompt_format=fmt, shots=shots, n_items=64,
                    positive_control=positive_control, **kw)  # fmt: skip


#: ``copy`` and ``lookup`` are induction by construction: positive controls, kept out of the
#: mean drop and reported apart.
SPECS: list[TaskSpec] = [
    _spec("lookup", "em", "k > v , ... , k > {y}", 12, True, max_new_tokens=3, stop=(",", ".")),
    _spec("copy", "f1", "r r[:8] {y}", 0, True, max_new_tokens=4, stop=()),
    _spec("var_depth0", "em", "a = 3 , b = a ; a ? {y} .", 3, max_new_tokens=3, stop=(".", ",")),
    _spec("var_depth1", "em", "a = 3 , b = a ; b ? {y} .", 3, max_new_tokens=3, stop=(".", ",")),
    _spec("regbench", "tvd", "abc | ab | ...", 0),
]
BY_NAME = index(SPECS)
TASKS = tuple(BY_NAME)
DEFAULT_SHOTS = {spec.name: spec.shots for spec in SPECS}


def _rng(seed: int, task: str) -> np.random.Generator:
    return np.random.default_rng([SEED_OFFSET + seed, TASKS.index(task)])


def _text(ids) -> str:
    return " ".join(V.TOKENS[int(i)] for i in ids)


def lookup(n_items: int, shots: int, seed: int) -> GenTask:
    rng = _rng(seed, "lookup")
    items = []
    for _ in range(n_items):
        seg = corpus.lookup_segment(rng, int(rng.integers(6, 13)), max(shots, 1))
        shown = {k: v for k, _, v in (seg[i : i + 3] for i in range(0, len(seg), 4))}
        # uniform over the distinct keys shown (not over pairs, which favours keys shown
        # often and so the most frequent value)
        key = list(shown)[int(rng.integers(len(shown)))]
        prompt = _text(seg[:-1]) + f" , {V.TOKENS[key]} >"
        items.append(GenItem(prompt=prompt, golds=[V.TOKENS[shown[key]]]))
    return GenTask(
        "lookup",
        items,
        metric="em",
        stop=[",", "."],
        max_new_tokens=3,
        group="zoo",
        suite="zoo",
        positive_control=True,
    )


def copy(n_items: int, seed: int, length: tuple[int, int] = (12, 20), answer: int = 4) -> GenTask:
    """``r r[:shown]`` -> ``r[shown : shown + answer]``: span length uniform over ``length``
    (inclusive) and ``shown`` uniform over ``1 .. len(r) - answer``, so neither a fixed
    position in the prompt nor a fixed distance back gives the answer."""
    rng = _rng(seed, "copy")
    items = []
    for _ in range(n_items):
        n = int(rng.integers(length[0], length[1] + 1))
        shown = int(rng.integers(1, n - answer + 1))
        r = rng.choice(V.WORDS, size=n, replace=False).tolist()
        prompt = " ".join(r + r[:shown])
        items.append(GenItem(prompt=prompt, golds=[" ".join(r[shown : shown + answer])]))
    return GenTask(
        "copy",
        items,
        metric="f1",
        stop=[],
        max_new_tokens=answer,
        group="zoo",
        suite="zoo",
        positive_control=True,
    )


def var_assign(
    depth: int, n_items: int, shots: int, seed: int, max_tokens: int = CONTEXT
) -> GenTask:
    name = f"var_depth{depth}"
    rng = _rng(seed, name)
    items = []
    kept = shots
    for _ in range(n_items):
        # a demonstration is at least 2 tokens: more than max_tokens // 2 can never fit
        n_demos = min(shots, max_tokens // 2)
        demos = [_text(corpus.varassign_segment(rng, depth)) for _ in range(n_demos)]
        query = corpus.varassign_segment(rng, depth)  # [... q ? answer .]
        # BOS + demos + query prompt + answer + stop must fit the training length: drop the
        # oldest demonstrations (one pass)
        room = max_tokens - 1 - len(query)
        if room < 0:
            raise InputError(
                f"a {name} question with its answer needs {1 + len(query)} tokens, more than "
                f"the {max_tokens}-token prompt budget; raise --max-prompt-tokens"
            )
        sizes = [len(d.split()) for d in demos]
        total, first = sum(sizes), 0
        while total > room:
            total, first = total - sizes[first], first + 1
        demos = demos[first:]
        kept = min(kept, len(demos))
        prompt = " ".join(demos + [_text(query[:-2])])
        items.append(GenItem(prompt=prompt, golds=[V.TOKENS[query[-2]]]))
    task = GenTask(
        name, items, metric="em", stop=[".", ","], max_new_tokens=3, group="zoo", suite="zoo"
    )
    task.shots_kept = kept  # the fewest demonstrations an item kept (a note when < asked)
    return task


def regbench_item(dfa, strings: list[list[int]], max_tokens: int = CONTEXT) -> DistItem:
    ids, positions, valid = [V.BOS_ID], [], []
    for i, s in enumerate(strings):
        if i:
            ids.append(V.VOCAB["|"])
        state = 0
        for letter in s:
            if len(ids) >= max_tokens:
                break
            positions.append(len(ids) - 1)
            valid.append(dfa.valid_next(state))
            ids.append(letter)
            state = dfa.step(state, letter)
    support = sorted({a for edges in dfa.edges for a, _ in edges})
    return DistItem(ids=ids[:max_tokens], positions=positions, valid=valid, support=support)


def regbench(n_items: int, seed: int, max_tokens: int = CONTEXT) -> DistTask:
    rng = _rng(seed, "regbench")
    items = []
    for _ in range(n_items):
        dfa = corpus.sample_dfa(rng, training=False)
        strings, total = [], 1
        while total < max_tokens:
            s = corpus.sample_string(rng, dfa, int(rng.integers(1, 10)))
            strings.append(s)
            total += len(s) + 1
        items.append(regbench_item(dfa, strings, max_tokens))
    return DistTask("regbench", items, metric="tvd", group="zoo", suite="zoo")


def load(
    tokenizer=None,
    n_items: int = 64,
    shots: int | None = None,
    seed: int = 0,
    max_tokens: int = CONTEXT,
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
            tasks.append(var_assign(int(name[-1]), n_items, k, seed, max_tokens))
        elif name == "regbench":
            tasks.append(regbench(max(8, n_items // 2), seed, max_tokens))
    for task in tasks:
        task.positive_control = BY_NAME[task.name].positive_control
    return tasks


@register("zoo", lambda: list(SPECS))
def _load_suite(r: SuiteRequest) -> list[GenTask]:
    return load(r.tokenizer, n_items=r.n_items or 64, shots=r.shots, seed=r.seed,
                max_tokens=r.max_tokens or CONTEXT, names=r.tasks)  # fmt: skip
