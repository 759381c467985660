"""The ``zoo4g`` suite: the source's 19 tasks in four groups, in round 4's training formats.

Round 4's measured suite (docs/replication.md, rule R4-suite; docs/zoo.md "Round 4: the zoo4g
suite"). Saunshi et al. 2025 (docs/research.md) score 19 few-shot tasks in four groups and
count every group in the mean; ``zootrain`` kept 6, four of them closed-book. Here each group
has 4-5 tasks, asked in the format the round-4 corpus (``corpus.MIX_R4``) trains:

- **closed-book QA** (``fact_digit`` ... ``fact_word4``): ``zootrain``'s questions, the fixed
  world's facts in the statement ``entity relation value .``; only the weights know them.
- **open-book QA** (``open_lookup``, ``open_keys``, ``open_hops``, ``open_passage``,
  ``open_reverse``): answers only in the prompt's passage (:mod:`induction.zoo.problems`).
- **math word problems** (``math_add`` ... ``math_distractor``): one- and two-step arithmetic
  over the zoo's digits, single-digit answers.
- **reasoning primitives** (``var_depth0``-``var_depth2``, ``var_reassign``, ``var_which``):
  variable assignment in the corpus's ``a = 3 , b = a ; b ? 3 .`` syntax.
- ``lookup`` and ``copy`` are positive controls (induction by construction), out of the mean.

A prompt is ``shots`` problems of the task's type then the queried one, as a round-4 training
sequence lays them out; in-context content is drawn from
``numpy.random.default_rng([SEED_OFFSET + seed, task index])``, a namespace disjoint from the
corpus's ``[data_seed, step]``. The oldest demonstrations are dropped until BOS, the prompt and
the answer fit ``max_tokens`` (default 96, the training length). Every item carries its
right-type candidates (for ``cand_acc`` and :func:`ablation.gates.chance_level`); rules that
read no content score at chance (``tests/ablation/test_zoo4g.py``).
"""

from __future__ import annotations

import numpy as np

from ablation.tasks import zoo, zootrain
from ablation.tasks.base import GenItem, GenTask
from ablation.tasks.registry import SuiteRequest, register
from ablation.tasks.spec import TaskSpec, index
from induction.zoo import problems as P
from induction.zoo import vocab as V

SUITE = "zoo4g"
#: In-context draws; disjoint from ``zoo`` (10_000), ``zoo19`` (19_000), ``zootrain`` (29_000).
SEED_OFFSET = 40_000
CONTEXT = zoo.CONTEXT
STOP = tuple(V.SYMBOLS)


def _spec(name, group, fmt, shots, max_new=2, metric="em", positive_control=False,
          source=None) -> TaskSpec:  # fmt: skip
    maker = "var_depth" if name.startswith("var_depth") else name
    return TaskSpec(name=name, suite=SUITE, group=group, metric=metric,
                    source=source or f"generator:induction.zoo.problems.{maker}",
                    prompt_format=fmt, shots=shots, n_items=64, max_new_tokens=max_new,
                    stop=STOP, positive_control=positive_control)  # fmt: skip


_FACT = "generator:ablation.tasks.zootrain.fact_task"
_O, _M, _P = "open_qa", "math", "primitives"
#: 19 measured tasks in the source's four groups, then the two positive controls.
SPECS: list[TaskSpec] = [
    *(_spec(n, "closed_qa", "e r v . ... {x} r {y} .", zootrain.CLOSED_SHOTS, source=_FACT)
      for n in zootrain.FACT_NAMES),
    _spec("open_lookup", _O, "e > v , e > v . ? {x} > {y} |", 2),
    _spec("open_keys", _O, "e > v , e > v . ? {x} {x} > {y} {y} |", 2, max_new=3),
    _spec("open_hops", _O, "a > b , b > c . ? ? {x} > {y} |", 2),
    _spec("open_passage", _O, "x r v . x s u . {x} r {y} |", 2),
    _spec("open_reverse", _O, "e > v , e > v . ? > {x} {y} |", 2),
    _spec("math_add", _M, "P : 4 O , P w74 3 ; w78 O : {y} |", 4),
    _spec("math_sub", _M, "P : 7 O , P w75 3 ; w78 O : {y} |", 4),
    _spec("math_two_step", _M, "P : 4 O , P w74 3 , P w75 2 ; w78 O : {y} |", 4),
    _spec("math_compare", _M, "P : 7 O , Q : 3 O ; P w77 Q w78 : {y} |", 4),
    _spec("math_distractor", _M, "P : 4 O , P : 6 O2 , P w74 3 O ; w78 O : {y} |", 4),
    _spec("var_depth0", _P, "a = 3 , b = 7 ; {x} ? {y} .", 3),
    _spec("var_depth1", _P, "a = 3 , b = a ; {x} ? {y} .", 3),
    _spec("var_depth2", _P, "a = 3 , b = a , c = b ; {x} ? {y} .", 3),
    _spec("var_reassign", _P, "a = 3 , a = 7 , b = 2 ; {x} ? {y} .", 3),
    _spec("var_which", _P, "a = 3 , b = 7 ; {x} ? {y} .", 3),
    _spec("lookup", "control", "k > v , ... , k > {y}", 12, 3, positive_control=True,
          source="generator:ablation.tasks.zoo.lookup"),
    _spec("copy", "control", "r r[:8] {y}", 0, 4, "f1", True,
          "generator:ablation.tasks.zoo.copy"),
]  # fmt: skip
BY_NAME = index(SPECS)
TASKS = tuple(BY_NAME)
MEASURED = tuple(s.name for s in SPECS if not s.positive_control)
GROUPS = {"closed_qa": 4, "open_qa": 5, "math": 5, "primitives": 5}


def problems(
    name: str, n_items: int, shots: int | None = None, seed: int = 0, max_tokens: int = CONTEXT
) -> list[tuple[list[P.Problem], P.Problem]]:
    """``(demonstrations, query)`` of each item of an in-context task (the tests read them)."""
    spec = BY_NAME[name]
    k = spec.shots if shots is None else shots
    make = P.MAKERS[name]
    rng = np.random.default_rng([SEED_OFFSET + seed, TASKS.index(name)])
    out = []
    for _ in range(n_items):
        demos = [make(rng) for _ in range(k)]
        query = make(rng)
        size = 1 + len(query.query) + spec.max_new_tokens
        while demos and size + sum(len(d.tokens) for d in demos) > max_tokens:
            demos.pop(0)
        out.append((demos, query))
    return out


def build(
    name: str, n_items: int, shots: int | None = None, seed: int = 0, max_tokens: int = CONTEXT
) -> GenTask:
    """One task of the suite as a :class:`GenTask`."""
    spec = BY_NAME[name]
    k = spec.shots if shots is None else shots
    if name in zootrain.FACT_NAMES:
        task = zootrain.fact_task(name, n_items, k, seed)
    elif name == "lookup":
        task = zoo.lookup(n_items, k, seed)
    elif name == "copy":
        task = zoo.copy(n_items, seed)
    else:
        items = []
        for demos, q in problems(name, n_items, shots, seed, max_tokens):
            prompt = " ".join([t for d in demos for t in d.tokens] + list(q.query))
            items.append(GenItem(prompt, [q.answer_text], list(q.candidates)))
        task = GenTask(name, items)
    return spec.stamp(task)


def load(
    tokenizer=None,
    n_items: int = 64,
    shots: int | None = None,
    seed: int = 0,
    max_tokens: int = CONTEXT,
    names=None,
) -> list[GenTask]:
    """The suite's tasks (all, or ``names``), deterministic for ``seed``."""
    return [build(name, n_items, shots, seed, max_tokens) for name in names or TASKS]


@register(SUITE, lambda: list(SPECS))
def _load_suite(r: SuiteRequest) -> list[GenTask]:
    return load(r.tokenizer, n_items=r.n_items or 64, shots=r.shots, seed=r.seed,
                max_tokens=r.max_tokens or CONTEXT, names=r.tasks)  # fmt: skip
