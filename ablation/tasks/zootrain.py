"""The ``zootrain`` suite: the source's task groups in the zoo's *training* formats.

``zoo19`` asks each question in a format the models never saw (transfer). The second zoo
(docs/zoo.md) does its training formats on fresh content and ``zoo19``'s formats at chance,
so on ``zoo19`` every drop claim is untestable (docs/results.md). This suite is the measured
suite of the second zoo's replication, fixed before any of it was measured
(docs/replication.md): the groups of Saunshi et al. 2025's suite that the corpus trains, in the
formats it trains them, with content absent from the weights wherever a task is in-context.

- **closed-book QA** (``fact_digit`` ... ``fact_word4``): the fixed world's facts
  (:mod:`induction.zoo.world`) in the corpus's own statement ``entity relation value .``.
  Demonstrations are other entities of the same relation whose values are drawn independently
  of the queried value (as ``zoo19``'s closed-book tasks), then ``entity relation`` is asked.
  Closed-book by definition: the answer is in the weights, never in the prompt, so every rule
  reading only the prompt is right with probability ``1 / len(values)``.
- **reasoning primitives** (``var_depth0``, ``var_depth1``): the ``zoo`` suite's variable
  assignment programs (``a = 3 , b = a ; b ? 3 .``), fresh bindings from the ``zoo`` suite's
  seed namespace (the same items as ``--suite zoo``).
- ``lookup`` and ``copy`` are positive controls (induction by construction), kept out of the
  mean as everywhere.

Left out, with the reason (docs/replication.md): open-book QA beyond lookup, math word
problems, counting and yes/no need skills the corpus never trains; ``zoo19`` reports them
beside as transfer.
"""

from __future__ import annotations

import numpy as np

from ablation.tasks import zoo
from ablation.tasks.base import GenItem, GenTask
from ablation.tasks.registry import SuiteRequest, register
from ablation.tasks.spec import TaskSpec, index
from induction.errors import InputError
from induction.zoo.world import world

SUITE = "zootrain"
#: Draws of the closed-book tasks; disjoint from ``zoo`` (10_000) and ``zoo19`` (19_000).
SEED_OFFSET = 29_000
CONTEXT = zoo.CONTEXT
FACT_NAMES = ("fact_digit", "fact_word", "fact_letter", "fact_word4")
CLOSED_SHOTS = 8


def _spec(name, group, fmt, shots, positive_control=False, source=None, metric="em",
          max_new=2, stop=(".", ",")) -> TaskSpec:  # fmt: skip
    return TaskSpec(name=name, suite=SUITE, group=group, metric=metric,
                    source=source or f"generator:{__name__}.fact_task", prompt_format=fmt,
                    shots=shots, n_items=64, max_new_tokens=max_new, stop=stop,
                    positive_control=positive_control)  # fmt: skip


SPECS: list[TaskSpec] = [
    *(_spec(name, "closed_qa", "e r v . ... {x} r {y} .", CLOSED_SHOTS) for name in FACT_NAMES),
    _spec("var_depth0", "primitives", "a = 3 , b = a ; a ? {y} .", 3,
          source="generator:ablation.tasks.zoo.var_assign"),
    _spec("var_depth1", "primitives", "a = 3 , b = a ; b ? {y} .", 3,
          source="generator:ablation.tasks.zoo.var_assign"),
    _spec("lookup", "control", "k > v , ... , k > {y}", 12, True,
          "generator:ablation.tasks.zoo.lookup", max_new=3),
    _spec("copy", "control", "r r[:8] {y}", 0, True, "generator:ablation.tasks.zoo.copy",
          metric="f1", max_new=4, stop=()),
]  # fmt: skip
BY_NAME = index(SPECS)
TASKS = tuple(BY_NAME)


def fact_task(
    name: str, n_items: int, shots: int = CLOSED_SHOTS, seed: int = 0, max_tokens: int = CONTEXT
) -> GenTask:
    """Closed-book questions of one relation in the training statement format; BOS, the
    prompt and the answer fit ``max_tokens`` (demonstrations stop where the next would not
    fit, so building stays linear in the budget whatever ``shots``)."""
    relation = world().relations[FACT_NAMES.index(name)]
    rng = np.random.default_rng([SEED_OFFSET + seed, FACT_NAMES.index(name)])
    max_new = BY_NAME[name].max_new_tokens
    items, kept = [], shots
    for _ in range(n_items):
        entity = relation.facts[int(rng.integers(len(relation.facts)))][0]
        used, demos = {entity}, []
        question = f"{entity} {relation.word}"
        room = max_tokens - 1 - len(question.split()) - max_new  # BOS, question, answer
        if room < 0:
            raise InputError(
                f"a {name} question with its answer needs {max_tokens - room} tokens, more than "
                f"the {max_tokens}-token prompt budget; raise --max-prompt-tokens"
            )
        for _ in range(shots):
            value = relation.values[int(rng.integers(len(relation.values)))]
            holders = [e for e in relation.entities_with(value) if e != entity]
            fresh = [e for e in holders if e not in used] or holders
            if not fresh:  # the queried entity is this value's only holder
                continue
            e = fresh[int(rng.integers(len(fresh)))]
            demo = f"{e} {relation.word} {value} ."
            room -= len(demo.split())
            if room < 0:
                break
            used.add(e)
            demos.append(demo)
        kept = min(kept, len(demos))
        prompt = " ".join([*demos, question])
        items.append(
            GenItem(
                prompt=prompt, golds=[relation.value(entity)], candidates=list(relation.values)
            )  # fmt: skip
        )
    task = GenTask(name, items, metric="em")
    task.shots_kept = kept  # the fewest demonstrations an item kept (a note when < asked)
    return task


def build(
    name: str, n_items: int, shots: int | None = None, seed: int = 0, max_tokens: int = CONTEXT
) -> GenTask:
    spec = BY_NAME[name]
    k = spec.shots if shots is None else shots
    if name in FACT_NAMES:
        task = fact_task(name, n_items, k, seed, max_tokens)
    elif name == "lookup":
        task = zoo.lookup(n_items, k, seed, max_tokens)
    elif name == "copy":
        task = zoo.copy(n_items, seed)
    else:
        task = zoo.var_assign(int(name[-1]), n_items, k, seed, max_tokens)
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
