"""Tasks as data: one :class:`TaskSpec` record per task, the catalog every suite declares.

A record says what a task is (suite, group, prompt format, default shots and items), where its
examples come from (a shipped file, a dataset file in its released format, or a seeded
generator) and how it is scored (a metric name looked up in :data:`ablation.metrics.METRICS`).
Suite modules turn records into prompts; :func:`ablation.tasks.catalog` lists them all
(``induction tasks``).
In the spirit of lm-evaluation-harness task configs (see ``docs/lm-eval.md``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ablation.metrics import get_metric
from induction.errors import InputError


@dataclass(frozen=True)
class TaskSpec:
    """One task of a suite.

    ``source`` is ``"file:<path>"`` (shipped with the package), ``"dataset:<folder>/<glob>"``
    (a released dataset file under ``--data-dir``; ``train`` names the demonstration split) or
    ``"generator:<module>.<function>"`` (seeded, generated on the fly). ``prompt_format`` shows
    one demonstration, ``{x}`` the input and ``{y}`` the answer. ``positive_control`` marks
    tasks that are induction by construction: reported apart, kept out of the mean.
    """

    name: str
    suite: str
    group: str
    metric: str
    source: str
    prompt_format: str
    shots: int = 5
    n_items: int = 40
    max_new_tokens: int = 16
    stop: tuple[str, ...] = ("\n",)
    train: str | None = None
    hub: str | None = None  # a Hugging Face dataset the task can be read from with --hub
    positive_control: bool = False

    def __post_init__(self) -> None:
        get_metric(self.metric)  # an unknown metric is a bug in the record: fail at import
        if self.source.split(":", 1)[0] not in ("file", "dataset", "generator"):
            raise InputError(f"task {self.name!r}: unknown source kind in {self.source!r}")

    @property
    def kind(self) -> str:
        """``gen`` (decoded answers) or ``dist`` (next-symbol distributions)."""
        return "dist" if get_metric(self.metric).kind == "dist" else "gen"

    def stamp(self, task):
        """``task`` (a built :class:`~ablation.tasks.base.GenTask`) carrying this record's
        metric, stops, decode length, group, suite and control flag; returns it."""
        task.metric, task.stop = self.metric, list(self.stop)
        task.max_new_tokens, task.group = self.max_new_tokens, self.group
        task.suite, task.positive_control = self.suite, self.positive_control
        return task

    def to_dict(self) -> dict:
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d


def index(specs: list[TaskSpec]) -> dict[str, TaskSpec]:
    """Records by name; a duplicate name is a bug in the catalog."""
    out: dict[str, TaskSpec] = {}
    for spec in specs:
        if spec.name in out:
            raise InputError(f"task {spec.name!r} is declared twice in suite {spec.suite!r}")
        out[spec.name] = spec
    return out
