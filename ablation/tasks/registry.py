"""The suite registry: each suite module registers its records and its loader here.

A suite is data plus one loader (lm-eval's pattern: tasks as data, a registry by name);
:func:`ablation.tasks.load_suite` validates a request once and hands it to the suite's loader,
so adding a suite is one module that calls :func:`register`, and one line in
:data:`ablation.tasks.SUITES` for its place in listings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ablation.tasks.base import Task
from ablation.tasks.spec import TaskSpec


@dataclass(frozen=True)
class SuiteRequest:
    """What a caller asks of a suite; ``None`` takes the suite's default."""

    tokenizer: Any = None
    bos_id: int | None = None
    shots: int | None = None
    n_items: int | None = None
    seed: int = 0
    tasks: list[str] | None = None
    data_dir: str | Path | None = None
    hub: bool = False
    max_tokens: int | None = None


@dataclass(frozen=True)
class Suite:
    name: str
    specs: Callable[[], list[TaskSpec]]
    load: Callable[[SuiteRequest], Sequence[Task]]


REGISTRY: dict[str, Suite] = {}


def register(name: str, specs: Callable[[], list[TaskSpec]]):
    """Decorator: register ``load(request) -> tasks`` as suite ``name`` with its records."""

    def decorate(load: Callable[[SuiteRequest], Sequence[Task]]):
        if name in REGISTRY:
            raise ValueError(f"suite {name!r} is registered twice")
        REGISTRY[name] = Suite(name, specs, load)
        return load

    return decorate
