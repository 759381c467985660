"""Task types shared by every suite.

A *generation task* is a list of :class:`GenItem` (a finished few-shot prompt and its gold
answers) plus how to decode (stop strings, token budget) and score (``f1``, ``em`` or
``number``). A *distribution task* (:class:`DistTask`, RegBench) is scored from the model's
next-token distribution at given positions, with no decoding.

Few-shot prompts are built by :func:`build_fewshot` from :class:`Example` records: each
evaluated example gets ``shots`` demonstrations drawn with a seeded RNG from a pool that never
contains evaluated examples (see :func:`split_pool`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from induction.errors import InputError

if TYPE_CHECKING:
    from ablation.tasks.spec import TaskSpec


@dataclass(frozen=True)
class Example:
    """One raw example: ``prompt`` ends right before the answer; ``demo`` is the full
    demonstration text (prompt + first gold answer) used when the example serves as a shot."""

    prompt: str
    golds: tuple[str, ...]
    demo: str


@dataclass
class GenItem:
    """A finished prompt and its gold answers; ``candidates``: the right-type answers a blind
    guess would choose from (for the ``cand_acc`` readout and the chance level; None: the
    task's answer set, ``ablation.readout.candidates``)."""

    prompt: str
    golds: list[str]
    candidates: list[str] | None = None


@dataclass
class GenTask:
    name: str
    items: list[GenItem]
    metric: str = "f1"  # f1 | em | number
    stop: list[str] = field(default_factory=lambda: ["\n"])
    max_new_tokens: int = 16
    group: str = ""
    suite: str = ""
    kind: str = "gen"
    seed: int = 0  # prompt seed the items were drawn with
    # induction by construction (copying a repeated span, recalling a shown pair; Olsson et
    # al. 2022): a positive control, reported apart from the measured mean
    positive_control: bool = False
    # the fewest demonstrations an item kept where a suite cut prompts to fit its budget
    # (a note when fewer than asked); None where nothing was cut
    shots_kept: int | None = field(default=None, repr=False, compare=False)

    @property
    def higher_is_better(self) -> bool:
        return True


@dataclass
class DistItem:
    """Token ids of one sequence; for each evaluated position ``t`` (predicting token
    ``t + 1``) the valid next tokens ``valid[j]`` (a subset of ``support``). The model's
    next-token distribution is renormalised over ``support`` before scoring."""

    ids: list[int]
    positions: list[int]
    valid: list[list[int]]
    support: list[int]


@dataclass
class DistTask:
    name: str
    items: list[DistItem]
    metric: str = "tvd"  # primary metric; "acc" (greedy accuracy) is reported alongside
    group: str = "regbench"
    suite: str = ""
    kind: str = "dist"
    seed: int = 0
    positive_control: bool = False

    @property
    def higher_is_better(self) -> bool:
        return self.metric != "tvd"


Task = GenTask | DistTask


def split_pool(
    examples: Sequence[Example], n_items: int, shots: int, seed: int, name: str
) -> tuple[list[Example], list[Example]]:
    """Split examples into (evaluated, shot pool), disjoint, deterministic for ``seed``.

    With enough data the pool gets ``max(4 * shots, 20)`` examples (capped at half the data)
    and up to ``n_items`` of the rest are evaluated. With too little data for that (e.g. the
    7 weekdays) every example is evaluated and each one's shots come from the others
    (leave-one-out): the returned pool is then empty and :func:`build_fewshot` samples from
    ``examples`` minus the evaluated one.
    """
    if not examples:
        raise InputError(f"task {name!r} has no examples")
    if shots > len(examples) - 1:
        raise InputError(
            f"--shots {shots} is larger than task {name!r}'s pool of {len(examples) - 1} "
            f"demonstrations; use --shots {max(0, len(examples) - 1)} or fewer"
        )
    order = list(examples)
    random.Random(seed).shuffle(order)
    pool_n = min(max(4 * shots, 20), len(order) // 2)
    if shots == 0:
        return order[:n_items], []
    if pool_n >= shots and len(order) - pool_n >= min(n_items, 10):
        return order[pool_n : pool_n + n_items], order[:pool_n]
    return order[:n_items], []


def build_fewshot(
    evaluated: Sequence[Example],
    pool: Sequence[Example],
    shots: int,
    seed: int,
    joiner: str = "\n\n",
    header: str = "",
    all_examples: Sequence[Example] | None = None,
) -> list[GenItem]:
    """Few-shot prompts: ``header + demo_1 + joiner + ... + demo_k + joiner + prompt``.

    Shots are sampled without replacement by ``random.Random(seed + i)`` for item ``i`` from
    ``pool``, or, when ``pool`` is empty, from ``all_examples`` minus the item itself.
    """
    items = []
    for i, ex in enumerate(evaluated):
        rng = random.Random(seed * 100_003 + i)
        source = list(pool) if pool else [e for e in (all_examples or evaluated) if e != ex]
        if shots > len(source):
            raise InputError(
                f"--shots {shots} is larger than the demonstration pool ({len(source)})"
            )
        demos = [d.demo for d in rng.sample(source, shots)]
        prompt = header + "".join(d + joiner for d in demos) + ex.prompt
        items.append(GenItem(prompt=prompt, golds=list(ex.golds)))
    return items


def make_gen_task(
    name: str,
    examples: Sequence[Example],
    shots: int,
    n_items: int,
    seed: int,
    metric: str = "f1",
    group: str = "",
    suite: str = "",
    joiner: str = "\n\n",
    header: str = "",
    stop: Sequence[str] = ("\n",),
    max_new_tokens: int = 16,
    pool: Sequence[Example] | None = None,
) -> GenTask:
    """A few-shot generation task. ``pool`` (e.g. a train split) overrides the split of
    ``examples`` into evaluated items and demonstrations."""
    if pool is not None:
        if shots > len(pool):
            raise InputError(
                f"--shots {shots} is larger than task {name!r}'s pool of {len(pool)} demonstrations"
            )
        order = list(examples)
        random.Random(seed).shuffle(order)
        evaluated, shot_pool = order[:n_items], list(pool)
    else:
        evaluated, shot_pool = split_pool(examples, n_items, shots, seed, name)
    items = build_fewshot(evaluated, shot_pool, shots, seed, joiner, header, examples)
    return GenTask(
        name=name,
        items=items,
        metric=metric,
        stop=list(stop),
        max_new_tokens=max_new_tokens,
        group=group,
        suite=suite,
    )


def make_task(
    spec: TaskSpec,
    examples: Sequence[Example],
    shots: int,
    n_items: int,
    seed: int,
    pool: Sequence[Example] | None = None,
    joiner: str = "\n\n",
    header: str = "",
) -> GenTask:
    """A few-shot generation task from its record (metric, group, decoding) and examples."""
    task = make_gen_task(
        spec.name,
        examples,
        shots,
        n_items,
        seed,
        metric=spec.metric,
        group=spec.group,
        suite=spec.suite,
        joiner=joiner,
        header=header,
        stop=spec.stop,
        max_new_tokens=spec.max_new_tokens,
        pool=pool,
    )
    task.positive_control = spec.positive_control
    return task


@dataclass
class LmEvalTask:
    """One lm-evaluation-harness task (:mod:`ablation.lm_eval_backend`) at one prompt seed,
    shaped like the engine's tasks for the report: ``metric`` is the primary metric,
    ``metrics`` every ``(name, higher_is_better)``. Here, beside the engine's task types, so the
    run and the report name it without importing the harness's adapter."""

    name: str
    metrics: list[tuple[str, bool]]
    output_type: str
    n_docs: int
    fingerprint: str
    group: str = "lm-eval"
    suite: str = "lm-eval"
    kind: str = "lm-eval"
    seed: int = 0
    items: list = field(default_factory=list)  # the evaluated docs (first 16 kept)

    @property
    def metric(self) -> str:
        return self.metrics[0][0]

    @property
    def higher_is_better(self) -> bool:
        return self.metrics[0][1]

    @property
    def in_mean(self) -> bool:
        """Generation tasks join the report's ``MEAN`` row, as the engine's do."""
        return self.output_type == "generate_until"
