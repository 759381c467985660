"""Typed results of evaluating tasks under head ablations.

:class:`EvalResult` is one task evaluated under one head set (clean, the target set, or one
random control): the mean of each metric, the per-item scores behind it and, for generation
tasks, the decoded answers. :class:`TaskResults` holds every head set's result for one task
instance (a task and a prompt seed). Results round-trip through JSON for the resume cache.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

CLEAN, TARGET = "clean", "ablated"


def control_label(i: int) -> str:
    """Label of the ``i``-th random control head set."""
    return f"control{i}"


def shaped_label(i: int) -> str:
    """Label of the ``i``-th layer-shaped control head set."""
    return f"shaped{i}"


@dataclass
class EvalResult:
    """One task under one head set: ``scores[metric]`` is the mean of ``items[metric]``."""

    scores: dict[str, float]
    items: dict[str, list[float]]
    predictions: list[str] | None = None  # generation tasks: the decoded answers, item order
    heads: str = ""  # the hooked heads, "L3H0,L5H1" ("" when clean)

    def to_json(self) -> dict:
        out = {"scores": self.scores, "items": self.items, "heads": self.heads}
        if self.predictions is not None:
            out["predictions"] = self.predictions
        return out

    @classmethod
    def from_json(cls, data: dict) -> EvalResult:
        """Read :meth:`to_json`'s form; raises ``KeyError``/``TypeError`` when malformed."""
        scores = {str(k): float(v) for k, v in data["scores"].items()}
        items = {str(k): [float(x) for x in v] for k, v in data["items"].items()}
        preds = data.get("predictions")
        return cls(scores, items, None if preds is None else [str(p) for p in preds],
                   str(data.get("heads", "")))  # fmt: skip


@dataclass
class TaskResults:
    """Every head set's :class:`EvalResult` for one task instance, keyed by label
    (``clean``, ``ablated``, ``control0``, ...)."""

    by_label: dict[str, EvalResult] = field(default_factory=dict)

    def __getitem__(self, label: str) -> EvalResult:
        return self.by_label[label]

    def __setitem__(self, label: str, result: EvalResult) -> None:
        self.by_label[label] = result

    def __contains__(self, label: str) -> bool:
        return label in self.by_label

    def __iter__(self) -> Iterator[str]:
        return iter(self.by_label)

    @property
    def clean(self) -> EvalResult:
        return self.by_label[CLEAN]

    @property
    def ablated(self) -> EvalResult:
        return self.by_label[TARGET]

    def controls(self) -> list[EvalResult]:
        """The random controls' results in control order."""
        return self._series(control_label)

    def shaped(self) -> list[EvalResult]:
        """The layer-shaped controls' results in control order."""
        return self._series(shaped_label)

    def _series(self, label) -> list[EvalResult]:
        out, i = [], 0
        while label(i) in self.by_label:
            out.append(self.by_label[label(i)])
            i += 1
        return out
