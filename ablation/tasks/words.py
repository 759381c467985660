"""The offline ``words`` suite: 19 word-level in-context tasks shipped as JSON.

In the spirit of the function-vector tasks (Todd et al. 2023): each task is a list of
``{"input": x, "output": [gold, ...]}`` pairs in ``ablation/tasks/data/words/<task>.json``.
Prompt format ``Q: x\\nA: y`` per demonstration, demonstrations joined by a blank line, greedy
decoding until a newline, scored by the metric in the file (token F1 or exact match).
"""

from __future__ import annotations

from pathlib import Path

from ablation.tasks.base import Example, GenTask, make_task
from ablation.tasks.registry import SuiteRequest, register
from ablation.tasks.spec import TaskSpec
from induction.store.io import read_json

DATA = Path(__file__).parent / "data" / "words"


def task_names() -> list[str]:
    return sorted(p.stem for p in DATA.glob("*.json"))


def specs() -> list[TaskSpec]:
    """One record per shipped JSON file (its ``metric`` field, token F1 by default)."""
    out = []
    for name in task_names():
        meta, _ = load_examples(DATA / f"{name}.json")
        out.append(
            TaskSpec(
                name=name,
                suite="words",
                group="words",
                metric=meta.get("metric", "f1"),
                source=f"file:ablation/tasks/data/words/{name}.json",
                prompt_format="Q: {x}\nA: {y}",
                shots=5,
                n_items=40,
                max_new_tokens=10,
            )
        )
    return out


def load_examples(path: Path) -> tuple[dict, list[Example]]:
    meta = read_json(path, "task file")
    exs = [qa_example(it["input"], it["output"]) for it in meta["items"]]
    return meta, exs


def qa_example(x: str, golds: list[str] | str) -> Example:
    golds = [golds] if isinstance(golds, str) else list(golds)
    prompt = f"Q: {x}\nA:"
    return Example(prompt=prompt, golds=tuple(golds), demo=f"{prompt} {golds[0]}")


def load(shots: int = 5, n_items: int = 40, seed: int = 0, names=None) -> list[GenTask]:
    by_name = {spec.name: spec for spec in specs()}
    tasks = []
    for name in names or by_name:
        _, exs = load_examples(DATA / f"{name}.json")
        tasks.append(make_task(by_name[name], exs, shots, n_items, seed))
    return tasks


@register("words", specs)
def _load_suite(r: SuiteRequest) -> list[GenTask]:
    return load(shots=5 if r.shots is None else r.shots, n_items=r.n_items or 40, seed=r.seed,
                names=r.tasks)  # fmt: skip
