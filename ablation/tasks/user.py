"""User tasks from a JSONL file.

Each line is an object with ``input`` and ``output``: a string or a list of acceptable
answers, e.g. ``{"input": "cat", "output": ["cats"]}``. Optional per-line ``metric`` is
ignored; the task's metric is chosen with the ``metric`` argument (default token F1). Prompts
use the words-suite format ``Q: x\\nA: y``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ablation.tasks.base import GenTask, make_gen_task
from ablation.tasks.words import qa_example
from induction.errors import InputError
from induction.store.io import read_text


def read_jsonl(path: str | Path) -> list[tuple[str, list[str]]]:
    path = Path(path)
    if not path.is_file():
        raise InputError(
            f"task file {path} not found; give a JSONL file of "
            '{"input": ..., "output": ...} lines'
        )
    rows = []
    for n, line in enumerate(read_text(path, "task file").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except RecursionError:
            raise InputError(f"{path}:{n}: nested too deeply to be read as JSON") from None
        except json.JSONDecodeError as e:
            raise InputError(
                f'{path}:{n}: not JSON ({e.msg}); each line must be {{"input": ..., "output": ...}}'
            ) from None
        if not isinstance(obj, dict) or "input" not in obj or "output" not in obj:
            raise InputError(f'{path}:{n}: each line needs "input" and "output" keys')
        out = obj["output"]
        golds = [out] if isinstance(out, str) else out
        if (
            not isinstance(obj["input"], str)
            or not isinstance(golds, list)
            or not golds
            or not all(isinstance(g, str) for g in golds)
        ):
            raise InputError(
                f'{path}:{n}: "input" must be a string and "output" a string or '
                "a non-empty list of strings"
            )
        rows.append((obj["input"], golds))
    if not rows:
        raise InputError(f'task file {path} is empty; add {{"input": ..., "output": ...}} lines')
    return rows


def load(
    path: str | Path, shots: int = 5, n_items: int = 40, seed: int = 0, metric: str = "f1"
) -> list[GenTask]:
    rows = read_jsonl(path)
    exs = [qa_example(x, golds) for x, golds in rows]
    name = Path(path).stem
    return [
        make_gen_task(
            name,
            exs,
            shots,
            n_items,
            seed,
            metric=metric,
            group="user",
            suite="user",
            stop=["\n"],
            max_new_tokens=24,
        )
    ]
