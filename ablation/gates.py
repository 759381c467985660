"""Validity gates: the preconditions under which an ablation drop can say anything.

docs/research.md ("Designing an experiment that can fail"): a drop means something only if

- **above chance**: the model does the task when clean, above the best right-type guess
  (chance from the task's own answer set, :func:`chance_level`), by the lower end of a 95%
  interval over items;
- **not saturated**: the ablated model still keeps some of its above-chance score. A drop that
  removes at least :data:`SATURATION` of the margin over chance is pinned at the floor: every
  family then "loses everything" and no difference between families can appear;
- **heads**: the model has induction heads (a head at or above the threshold);
- **heads before growth** (grown models): a head at or above the threshold before the first
  growth event, which the source's "copied across depth" mechanism needs;
- **copied head before growth** (grown models, round 4's rule R4-gate in docs/replication.md):
  such a head *in an initial layer that growth copies*, read from the per-head scores the
  training card keeps for the checkpoint just before the first growth. A head elsewhere is
  never copied, so "growth copies formed heads" cannot be tested (:func:`fewest_ancestors`).

Where a gate fails the honest sentence is "untestable here" (naming the gate), never
"disagrees". :func:`task_gates` computes the per-task gates of one run for each readout
(``f1``/``em``/``digits``, ``cand_acc``, ``logprob``); :func:`model_gates` the model's;
:func:`verdict_readout` says which readout a verdict uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ablation import readout as R
from ablation.metrics import get_metric
from ablation.tasks.base import GenTask

#: A drop that removes this share of the clean score's margin over chance is saturated.
SATURATION = 0.9
#: Share of measured tasks that must be above chance for a suite mean to be read.
MOST_TASKS = 0.5
#: The readouts a verdict may use, in the order it tries them (fixed in advance,
#: docs/replication.md): the first whose gates pass decides. Accuracy over the task's answer
#: candidates first: same scale as F1 (a share of items), chance known per item, and it floors
#: at chance rather than at zero as greedy F1 does. Then the gold answer's teacher-forced
#: log-probability, which has no floor, so it cannot saturate where accuracy does.
VERDICT_ORDER = ("cand_acc", "logprob")
VERDICT_READOUT = VERDICT_ORDER[0]


def chance_level(task: GenTask, metric: str | None = None) -> float:
    """The best right-type guess's expected score on ``task``: the larger of the best constant
    answer from the task's answer set and a uniform guess over each item's candidates
    (``metric``: the task's own by default; ``cand_acc``: mean ``1 / candidates``;
    ``logprob``: mean ``log(1 / candidates)``)."""
    cands = R.candidates(task)
    if metric == "cand_acc":
        return R.chance(task)
    if metric == "logprob":
        return float(np.mean([math.log(1.0 / len(c)) for c in cands]))
    score = get_metric(metric or task.metric).text_score()
    answer_set = sorted({c for cs in cands for c in cs})
    constant = max(
        (float(np.mean([score(a, it.golds) for it in task.items])) for a in answer_set),
        default=0.0,
    )
    uniform = float(
        np.mean([np.mean([score(c, it.golds) for c in cs]) for it, cs in zip(task.items, cands)])
    )
    return max(constant, uniform)


def wilson(mean: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson 95% interval of a share ``mean`` of ``n`` 0/1 items."""
    if n <= 0 or not math.isfinite(mean):
        return math.nan, math.nan
    centre = (mean + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(mean * (1 - mean) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def interval(values: Sequence[float], z: float = 1.96) -> tuple[float, float]:
    """95% interval of a mean over items: Wilson for 0/1 scores, else normal."""
    x = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
    n = len(x)
    if n == 0:
        return math.nan, math.nan
    m = float(x.mean())
    if np.all((x == 0) | (x == 1)):
        return wilson(m, n, z)
    se = float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    return m - z * se, m + z * se


@dataclass(frozen=True)
class TaskGate:
    """One task under one readout: clean and ablated scores with 95% intervals, chance, and
    whether each gate passes."""

    task: str
    group: str
    readout: str
    n: int
    clean: float
    clean_lo: float
    chance: float
    ablated: float
    above_chance: bool
    saturated: bool | None  # None: the readout has no floor (logprob)

    @property
    def passed(self) -> bool:
        return self.above_chance and not self.saturated


def saturated(clean: float, ablated: float, chance: float) -> bool:
    """The drop removes at least :data:`SATURATION` of the clean score's margin over chance
    (False when there is no margin)."""
    margin = clean - chance
    return margin > 0 and (clean - ablated) >= SATURATION * margin


def task_gates(tasks: Sequence, results: dict, task_key) -> pd.DataFrame:
    """Per generation task (not positive controls) and readout: the gates of one ablation run
    (``results[task_key(task)]`` a :class:`~ablation.results.TaskResults`); prompt seeds of one
    task are pooled. Columns of :class:`TaskGate` plus ``passed``."""
    by_name: dict[str, list] = {}
    for t in tasks:
        if isinstance(t, GenTask) and not t.positive_control:
            by_name.setdefault(t.name, []).append(t)
    rows = []
    for name, group in by_name.items():
        first = group[0]
        clean0 = results[task_key(first)].clean.items
        for readout in [first.metric, *[m for m in R.READOUTS if m in clean0]]:
            clean_items, abl_items, chances = [], [], []
            for t in group:
                res = results[task_key(t)]
                clean_items += res.clean.items[readout]
                abl_items += res.ablated.items[readout]
                chances.append(chance_level(t, readout))
            clean = float(np.nanmean(clean_items))
            ablated = float(np.nanmean(abl_items))
            chance = float(np.mean(chances))
            lo, _ = interval(clean_items)
            floorless = readout == "logprob"
            gate = TaskGate(
                task=name,
                group=first.group,
                readout=readout,
                n=len(clean_items),
                clean=clean,
                clean_lo=lo,
                chance=chance,
                ablated=ablated,
                above_chance=bool(lo > chance),
                saturated=None if floorless else saturated(clean, ablated, chance),
            )
            rows.append({**asdict(gate), "passed": gate.passed})
    return pd.DataFrame(rows)


def suite_gate(gates: pd.DataFrame, readout: str | None = None) -> dict:
    """The suite-level gate of one readout (None: each task's own metric): most tasks above
    chance, and the mean drop not saturated (means of clean, ablated and chance over tasks)."""
    if readout is None:
        g, readout = gates.groupby("task", sort=False).head(1), "task metric"
    else:
        g = gates[gates.readout == readout]
    if g.empty:
        return {"readout": readout, "tasks": 0, "above_chance": 0, "passed": False}
    above = int(g.above_chance.sum())
    clean, ablated, chance = g.clean.mean(), g.ablated.mean(), g.chance.mean()
    pinned = readout != "logprob" and saturated(clean, ablated, chance)
    most = above > MOST_TASKS * len(g)
    return {
        "readout": readout,
        "tasks": len(g),
        "above_chance": above,
        "clean": clean,
        "ablated": ablated,
        "chance": chance,
        "saturated": bool(pinned),
        "passed": bool(most and not pinned),
    }


@dataclass(frozen=True)
class ModelGate:
    name: str
    passed: bool | None  # None: does not apply (heads before growth of a dense model)
    detail: str


def model_gates(
    max_induction: float,
    threshold: float,
    card: dict | None = None,
    log=None,
) -> list[ModelGate]:
    """The model-level gates: induction heads now, and (grown models, from the training
    card's history) before the first growth; with the model's duplication ``log``
    (:class:`lineage.log.DuplicationLog` or its JSON), also :func:`copied_head_before_growth`."""
    gates = [
        ModelGate(
            "induction heads",
            bool(max_induction >= threshold),
            f"strongest head {max_induction:.2f} (needs >= {threshold:g})",
        )
    ]
    before = heads_before_growth(card)
    if before is None:
        gates.append(ModelGate("heads before growth", None, "not a grown model"))
    else:
        step, score = before
        gates.append(
            ModelGate(
                "heads before growth",
                bool(score >= threshold),
                f"strongest head {score:.2f} up to the first growth (step {step}; needs "
                f">= {threshold:g})",
            )
        )
        if log is not None:
            gates.append(copied_head_before_growth(card, log, threshold))
    return gates


def pre_growth_head_scores(card: dict | None) -> tuple[int, list[list[float]]] | None:
    """``(step, head_scores[layer][head])`` of the last checkpoint at or before the first
    growth that the card keeps per-head scores for (the ``-pre`` checkpoint of round-4
    training), None when the card keeps none (models trained before round 4)."""
    if not card or not card.get("growth_steps"):
        return None
    first = int(card["growth_steps"][0])
    kept = [
        c for c in card.get("checkpoints") or []
        if c.get("head_scores") and c["step"] <= first and c.get("growth") != "after"
    ]  # fmt: skip
    if not kept:
        return None
    last = max(kept, key=lambda c: (c["step"], c.get("growth") == "before"))
    return int(last["step"]), last["head_scores"]


def _events(log) -> list[tuple[tuple[int, int] | None, list]]:
    """``(source span, layer map)`` of each growth event of a duplication log, given as a
    :class:`lineage.log.DuplicationLog` or its JSON (``duplication_log.json``, read as is: this
    layer sits beside :mod:`lineage` and does not import it)."""
    events = log.events if hasattr(log, "events") else log.get("events", [])
    out = []
    for e in events:
        source = e.source if hasattr(e, "source") else e.get("source")
        layer_map = e.layer_map if hasattr(e, "layer_map") else e.get("layer_map", [])
        out.append((tuple(source) if source is not None else None, layer_map))
    return out


def _ancestors(events, layer: int, stage: int) -> set[int]:
    """Initial-network ancestors of ``layer`` at ``stage`` (after ``stage`` events)."""
    here = {layer}
    for _, layer_map in reversed(events[:stage]):
        here = {int(parent) for child in here for parent, _ in layer_map[child]}
    return here


def copied_initial_layers(log) -> list[int]:
    """Initial layers that some growth event of ``log`` copies (the initial ancestors of each
    event's source span at its stage); [] for events without a span."""
    events = _events(log)
    out: set[int] = set()
    for stage, (source, _) in enumerate(events):
        if source is not None:
            for layer in range(*source):
                out |= _ancestors(events, layer, stage)
    return sorted(out)


def fewest_ancestors(log, head_layers: list[int], n_claim: int = 10) -> int:
    """The fewest initial ancestor heads that ``n_claim`` final heads can descend from, when
    the heads formed before growth sit in the initial layers ``head_layers``: an ancestor head
    has at most one copy per descendant layer, so the best case is ``ceil(n_claim / c)`` with
    ``c`` the most descendants any of those layers has (``n_claim`` when none was copied)."""
    events = _events(log)
    depth = len(events[-1][1]) if events else 0
    finals = [_ancestors(events, i, len(events)) for i in range(depth)]
    copies = [sum(1 for a in finals if layer in a) for layer in head_layers]
    return math.ceil(n_claim / max(copies, default=1))


def copied_head_before_growth(card: dict | None, log, threshold: float) -> ModelGate:
    """Round 4's gate (R4-gate): a head >= ``threshold`` just before the first growth in an
    initial layer that growth copies; ``passed`` None where the card keeps no per-head
    scores. The detail names the heads' layers, the copied ones and the fewest ancestors m
    that "10 of the 12 strongest heads from m ancestors" can reach."""
    name = "copied head before growth"
    found = pre_growth_head_scores(card)
    copied = copied_initial_layers(log)
    if found is None:
        return ModelGate(name, None, "the card keeps no per-head scores before growth")
    step, scores = found
    strong = sorted({layer for layer, row in enumerate(scores) if max(row) >= threshold})
    best = {layer: max(scores[layer]) for layer in copied}
    m = fewest_ancestors(log, strong) if strong else "none (no head formed)"
    detail = (
        f"step {step}: heads >= {threshold:g} in layers {strong or 'none'}; growth copies "
        f"initial layers {copied} (best there "
        + (", ".join(f"L{k} {v:.2f}" for k, v in best.items()) or "none")
        + f"); fewest ancestors m reachable for 10 heads: {m}"
    )
    return ModelGate(name, bool(set(strong) & set(copied)), detail)


def heads_before_growth(card: dict | None) -> tuple[int, float] | None:
    """``(first growth step, strongest head score logged at or before it)`` from a training
    card, None for a model that did not grow (or a card without the history)."""
    if not card or not card.get("growth_steps"):
        return None
    first = int(card["growth_steps"][0])
    history = card.get("history") or []
    logged = [h["score"] for h in history if "score" in h and h.get("step", 0) <= first]
    return (first, float(max(logged))) if logged else None


def verdict_readout(passes: dict[str, bool] | None = None) -> str:
    """The readout a verdict uses: the first of :data:`VERDICT_ORDER` whose gates pass
    (``passes``: readout -> passed; readouts absent were not measured), else the first
    measured one (whose failure the verdict then names); :data:`VERDICT_READOUT` without
    ``passes``."""
    if passes is None:
        return VERDICT_READOUT
    measured = [r for r in VERDICT_ORDER if r in passes]
    for readout in measured:
        if passes[readout]:
            return readout
    return measured[0] if measured else VERDICT_READOUT
