"""Task registry: every suite is loaded through :func:`load_suite`.

Suites: ``zoo`` (token-level tasks in the zoo's formats), ``zoo19`` (the source's 19 few-shot
tasks in four groups, rebuilt in the zoo vocabulary, plus two positive controls; default for
zoo models; ``docs/zoo19.md``), ``zootrain`` (the same groups in the zoo's training formats:
the second zoo's measured suite), ``zoofacts`` (the zoo world's relations as pair tasks, for
function-vector heads), ``words``
(19 offline word-level tasks; default for real models), ``paper19`` (the 19 tasks of Saunshi
et al. 2025; dataset-backed ones need local data), ``regbench`` (held-out random automata),
``gsm8k`` (8-shot, local file), and user JSONL files (``suite="path/to/tasks.jsonl"``).
"""

from __future__ import annotations

from pathlib import Path

from ablation.tasks import (  # noqa: F401  (register)
    paper19,
    regbench,
    user,
    words,
    zoo,
    zoo4g,
    zoo19,
    zoofacts,
    zootrain,
)
from ablation.tasks.base import DistItem, DistTask, Example, GenItem, GenTask, Task
from ablation.tasks.registry import REGISTRY, SuiteRequest
from ablation.tasks.spec import TaskSpec
from induction.errors import InputError

#: The built-in suites in listing order; each registers itself (:mod:`ablation.tasks.registry`).
SUITES = ("zoo", "zoo19", "zootrain", "zoo4g", "zoofacts", "words", "paper19", "regbench", "gsm8k")
assert sorted(SUITES) == sorted(REGISTRY), "a suite module is registered but not listed"

__all__ = [
    "SUITES",
    "SUITE_SPECS",
    "TaskSpec",
    "catalog",
    "default_suite",
    "suite_specs",
    "DistItem",
    "DistTask",
    "Example",
    "GenItem",
    "GenTask",
    "Task",
    "load_suite",
    "suite_task_names",
]


def default_suite(info, card: dict | None = None) -> str:
    """The suite a model gets without ``--suite``: ``words`` for a real tokenizer; for the zoo
    vocabulary ``zootrain`` (the source's groups in the training formats, docs/replication.md)
    for the second zoo's families, which learn in context but answer new formats at chance,
    and ``zoo19`` for the others (its tasks are written in the vocabulary; models trained
    without the ``facts`` corpus kind are at chance on its closed-book group by construction).
    The family is read from the model's ``card`` (its ``preset``) when it has one, so a copy
    of a zoo model in a folder of another name gets the same suite; else from its name. A
    model whose training card shows a round-4 data kind (``corpus.R4_KINDS``, the ``r4``
    curriculum) gets ``zoo4g``, the suite that curriculum trains (docs/replication.md, R4)."""
    if not info.zoo_vocabulary:
        return "words"
    from induction.models.registry import FV_ZOO, SECOND_ZOO, family_of

    if trained_on_round4(getattr(info, "path", None)):
        return "zoo4g"
    named = card.get("preset") or card.get("name") if isinstance(card, dict) else None
    name = named if isinstance(named, str) else getattr(info, "name", "")
    return "zootrain" if family_of(name) in SECOND_ZOO + FV_ZOO else "zoo19"


def trained_on_round4(folder) -> bool:
    """Whether the model folder's ``card.json`` records a data phase with a round-4 kind; a
    checkpoint (``<run>/checkpoints/step-N``, whose card keeps no config) reads its run's
    ``train_config.json``."""
    import json

    from induction.zoo.corpus import R4_KINDS

    if not folder:
        return False
    folder = Path(folder)
    try:
        config = json.loads((folder / "card.json").read_text()).get("config")
        if config is None and (folder.parent.parent / "train_config.json").is_file():
            config = json.loads((folder.parent.parent / "train_config.json").read_text())
        phases = (config or {}).get("phases") or []
        return any(set(R4_KINDS) & set(p.get("mix", {})) for p in phases)
    except (OSError, ValueError, AttributeError, TypeError):
        return False


#: Each built-in suite's task records (:class:`ablation.tasks.spec.TaskSpec`).
SUITE_SPECS = {name: REGISTRY[name].specs for name in SUITES}


def suite_specs(suite: str) -> list[TaskSpec]:
    """The task records of a built-in suite."""
    if suite not in SUITE_SPECS:
        raise InputError(f"unknown suite {suite!r}; use one of {', '.join(SUITES)}")
    return SUITE_SPECS[suite]()


def suite_task_names(suite: str) -> list[str]:
    return [spec.name for spec in suite_specs(suite)]


def load_suite(*args, seed: int = 0, **kwargs) -> list[Task]:
    """Build a suite's tasks (prompts and golds), deterministic for ``seed``; see
    :func:`_load_suite` for the arguments. Each task records its prompt ``seed``."""
    tasks = _load_suite(*args, seed=seed, **kwargs)
    for t in tasks:
        t.seed = seed
    return tasks


def _load_suite(
    suite: str,
    tokenizer=None,
    bos_id: int | None = None,
    shots: int | None = None,
    n_items: int | None = None,
    seed: int = 0,
    tasks: list[str] | None = None,
    data_dir: str | Path | None = None,
    hub: bool = False,
    max_tokens: int | None = None,
) -> list[Task]:
    """Build a suite's tasks (prompts and golds), deterministic for ``seed``.

    ``shots``/``n_items`` of ``None`` take each suite's defaults; ``tasks`` selects a subset
    by name; ``max_tokens`` bounds generated prompts (default: 96 for ``zoo`` and ``zoo19``,
    the zoo's training length; 512 for ``regbench``).
    """
    if shots is not None and shots < 0:
        raise InputError(f"--shots must be >= 0, got {shots}")
    if n_items is not None and n_items < 1:
        raise InputError(f"--n-items must be >= 1, got {n_items}")
    path = Path(suite)
    if suite.endswith(".jsonl") or (suite not in SUITES and path.is_file()):
        return list(
            user.load(path, shots=5 if shots is None else shots, n_items=n_items or 40, seed=seed)
        )
    if suite not in SUITES:
        raise InputError(
            f"unknown suite {suite!r}; use one of {', '.join(SUITES)} "
            "or a path to a JSONL task file"
        )
    if tasks:
        known = suite_task_names(suite)
        bad = [t for t in tasks if t not in known]
        if bad:
            raise InputError(
                f"unknown task(s) {', '.join(bad)} in suite {suite!r}; "
                f"available: {', '.join(known)}"
            )
    request = SuiteRequest(
        tokenizer, bos_id, shots, n_items, seed, tasks, data_dir, hub, max_tokens
    )
    return list(REGISTRY[suite].load(request))


def catalog() -> list[TaskSpec]:
    """Every task record of every built-in suite, in suite order."""
    return [spec for name in SUITES for spec in REGISTRY[name].specs()]
