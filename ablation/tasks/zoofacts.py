"""The ``zoofacts`` suite: the zoo world's four relations as input -> output pair tasks.

The zoo's analogue of the ``words`` suite for function-vector heads (Todd et al. 2024): each
relation of the fixed world (:mod:`induction.zoo.world`) is a function from 32 entity words
to a small value set, which the fixed-protocol models were trained on as ``entity relation
value .`` statements. A prompt shows demonstrations ``entity value .`` *without* the relation
word, then a queried entity: only the demonstrations say which function to apply, which is
what a function vector carries (with the labels shuffled, they no longer do). Greedy decoding
of one token, exact match. Models trained without the ``facts`` kind (``corpus.MIX_V1``) do
not know the facts, so their clean scores sit at chance and their drops mean nothing (the
gates say so).
"""

from __future__ import annotations

from ablation.tasks.base import Example, GenTask, make_task
from ablation.tasks.registry import SuiteRequest, register
from ablation.tasks.spec import TaskSpec
from induction.zoo.world import world

SUITE = "zoofacts"
#: Between demonstrations: the statement end the facts corpus uses.
JOINER = " . "
NAMES = ("fact_digit", "fact_word", "fact_letter", "fact_word4")


def task_names() -> list[str]:
    return list(NAMES)


def specs() -> list[TaskSpec]:
    return [
        TaskSpec(
            name=name,
            suite=SUITE,
            group="facts",
            metric="em",
            source=f"generator:{__name__}.examples",
            prompt_format="{entity} {value} . ... {entity}",
            shots=5,
            n_items=32,
            max_new_tokens=1,
            stop=(" .",),
        )
        for name in NAMES
    ]


def examples(name: str) -> list[Example]:
    """Every fact of the relation ``name`` names (``fact_digit``: relation 0, ...), one
    example per entity: the prompt is the entity, the answer its value."""
    relation = world().relations[NAMES.index(name)]
    return [Example(prompt=e, golds=(v,), demo=f"{e} {v}") for e, v in relation.facts]


def load(shots: int = 5, n_items: int = 32, seed: int = 0, names=None) -> list[GenTask]:
    by_name = {spec.name: spec for spec in specs()}
    return [
        make_task(by_name[name], examples(name), shots, n_items, seed, joiner=JOINER)
        for name in names or NAMES
    ]


@register(SUITE, specs)
def _load_suite(r: SuiteRequest) -> list[GenTask]:
    return load(shots=5 if r.shots is None else r.shots, n_items=r.n_items or 32, seed=r.seed,
                names=r.tasks)  # fmt: skip
