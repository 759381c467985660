"""An independent re-reading of the replication's verdict table, from the stored measurements.

    python benchmarks/independent_reading.py STORE_DIR [--json OUT] [--cards DIR]

``STORE_DIR`` holds ``models/*.json`` (one measured model each) and ``replication.json`` (the
project's reading). Every verdict row of ``replication.json``'s ``claims`` is recomputed here
from the per-model JSONs, the model folders and the rules as written in docs/replication.md
("The verdict", the amendments A1-A5, A8, A9 "verdict words from intervals", A11 "every row
from an interval", round 4's R4-gate, R4-verdict and R4-lineage, and "What a dry run of the
reading found"), then compared with the stored row as printed: each number to its printed
precision, +-1 in the last digit. One line per claim: ``OK``, ``MISMATCH`` with both
values, or ``not rechecked`` with the reason. Exit 0 when every rechecked claim matches, 1 on
any mismatch, 2 (one line, ``error: ...``) for a missing folder or unparsable JSON.

Nothing is imported from the ``induction`` package (numpy, scipy and the standard library
only), so a bug shared with ``induction.stats`` or ``induction.replication`` cannot hide here.
The statistics are written from their definitions, by brute force:

- the exact two-sided permutation test enumerates every split of the pooled seeds
  (``itertools.combinations``); its statistic is the difference of means, and a split counts
  as extreme when ``|T_split| >= |T_observed|``. The test rejects at level ``alpha`` when
  ``p <= alpha``;
- the interval holds every shift ``delta`` for which ``b - delta`` against ``a`` is not
  rejected (every ratio ``rho`` for ``b / rho``), searched on a grid of 4,001 points, each
  accept/reject boundary then found by bisection to 1e-10; the interval is the hull of the
  accepted points. For shifts the grid's range provably contains the interval (widened
  until both ends are rejected); it is infinite where even the most extreme split cannot
  reach ``p <= alpha`` (the limit of ``p`` far from the estimate). For ratios the grid is
  fixed, log-spaced over ``u = 1/rho`` in [1e-6, 1e6], and contains the interval only
  where its ends lie in that range: an end is infinite (or 0) where ``p`` in the limit
  (``u`` in the open gap just above 0, below every crossing; ``u`` without bound) exceeds
  ``alpha``, and an accepted grid edge is read the same way;
- the sign-flip test (lineage rows) enumerates every sign vector, inverted the same way;
- the adjusted interval is taken at 0.05/m (Holm's first step, Bonferroni);
- the seeds rule: the smallest p a comparison's seeds allow is 2/C(n_a + n_b, n_a) for equal
  group sizes (the split and its mirror) and 1/C(...) otherwise (2/2^n for a sign flip);
  a comparison is testable when, with every comparison of its Holm family at its own
  smallest p, its Holm-adjusted p is below 0.05;
- detectable difference at 80% power and the power for the source's effect: two-sided
  two-sample t with pooled sd (one-sample t for the lineage rows), noncentral t, both tails.

Recomputed, per claim:

- **drop claims** (every non-dense family against the dense family, all seeds and, where a
  seed fails a gate the primary reads, "on the seeds that pass"): the verdict word, the
  difference of mean drops, the 95% and adjusted intervals, the ratio of means with its
  adjusted interval, the scales' words (round 4: both words, ``(declared)`` where marked on
  the declared scale), detectable difference and power at 0.05 and 0.05/m, the excess over
  uniform and over layer-shaped random heads with adjusted intervals (round 4 too); from
  the free text: the readout and family means (``zoo``), the per-gate failure counts, the
  seeds left out, and the permutation and Holm p. The stored row set is checked too: a drop
  row the rules call for and the store lacks is a mismatch.
- **lineage** (A11, per grown family): the gates (schedule's fewest ``m``, heads before
  growth, and on a round-4 store R4-gate ``copied head before growth``: every failing seed
  named, with its step, the initial layers holding a head >= 0.4, the layers growth copies,
  the best head there and the fewest ``m`` reachable), and on the passing seeds ``m -
  chance`` with the sign-flip interval, one-sample t detectable difference and power, the
  source's effect, the word; mean ``m``, each seed's ``m``, chance, seeds left out.
- **growth timing** (A11): the pair (round 4: R4-lineage's ``grown8rt`` against
  ``grown8rte`` only; else the store's two grown families), roles from the growth schedule
  (the later first growth is the heads-first arm), the split gate (R2's heads before growth,
  the training monitor) with each arm's breaking seeds and their monitor scores, the arms'
  mean ``m``, and on the passing seeds the difference in ``m``, its interval, t-test figures,
  the permutation floor, the effect of interest ``2 - chance``, the word. A timing row
  naming another pair is recomputed as printed and named a mismatch; the declared pair's
  primary row, and its row on the seeds that pass where a seed fails induction heads or
  breaks the split (A4), must be in the store.
- **RegBench order** (A8, A11): every pair's difference of clean TVD, adjusted interval
  (0.05/k) and word, the order's word and the deciding pair's cells.
- **FLOPs rows**: "by design", the saving ``1 - card_flops_vs_dense`` in percent.

Read from outside the per-model JSONs, because they do not carry it:

- the in-context probe's raw figures (lookup, its chance, variable assignment, position gap)
  come from ``replication.json``'s ``gates`` table; the thresholds (lookup >= 0.6 and >= 3x
  chance, variable assignment >= 0.5, gap <= 0.2) are applied here;
- heads before growth: each grown model's training card (``--cards``, default
  ``induction/zoo/models/<model>/card.json``), the strongest monitor score logged at or
  before the first growth step, against 0.4;
- copied head before growth (round 4): the card's ``checkpoints`` entry just before the first
  growth, its per-head scores ``head_scores[layer][head]`` (distance 32) against 0.4, and
  the initial layers growth copies from ``duplication_log.json``;
- the schedule's fewest ``m`` (``ceil(k / the most final descendants one initial head has)``,
  the per-model ``src_min`` left unread) and the lineage chance level: each grown model's
  ``duplication_log.json`` beside its card. The chance level is computed here exactly (the
  expectation over every draw of 12 of the model's heads, by dynamic programming over
  ancestors), where the project averages 20,000 seeded draws: the two differ by the
  project's Monte Carlo error (0.008 on zoo3), within the printed digits.

Not rechecked: the above-chance gate's per-task Wilson bounds (per-task chance is not
stored; the stored count of tasks above chance is read, ``gate_above_<readout>`` or the gates
table's ``tasks_above_chance``, and "most" is taken as more than half); the RegBench
letter-frequency gate (its baseline TVD is not stored in the per-model JSONs nor derivable
from them: a row untestable by it is listed "not rechecked", otherwise the gate is taken as
passed); which lineage rows on the seeds that pass a store should hold (A4's "only where a
seed fails a gate the primary reads" is a condition, not a call for one; the rows it holds
are rechecked); any claim this script does not recognise.

Ambiguities, and the reading taken:

- "model gates" of a drop claim are induction heads and in context (heads before growth gates
  the lineage claims only, as "4 of 16 fail in-context probe" in the stored table also reads);
- a readout's gates are above chance and not saturated; saturation is ``ablated - chance <=
  0.1 (clean - chance)`` with the stored ``gate_chance_<readout>``, never for the
  log-probability, and not applied where the store has no chance for the readout (zoo2's
  F1/EM);
- the primary readout is the first of (``cand_acc``, ``logprob``) whose gates pass for every
  model of both families; when none does, its cells use the first readout stored (F1/EM
  where the store has no readouts); the secondary readout is the first on which both
  families keep a passing seed;
- words, on each scale, in this order: *agree* when the adjusted interval excludes the null
  (0, or ratio 1) on the source's side; else *disagree* when it excludes the source's effect;
  else *inconclusive*. So an interval past the source's effect reads agree, and one on the
  wrong side of the null reads disagree. A row's word needs both scales (round 3) or the
  readout's one scale (round 4: difference on ``cand_acc``, ratio on ``logprob``);
- the ratio is ``mean(b) / mean(a)``, searched over ``rho > 0``;
- the drop-claim Holm family is every non-dense family (m = their count); on a round-4 store
  (every family a round-4 arm) it is the declared three (``grown8r``, ``grown8rt``,
  ``looped8r``), and ``grown8rte`` has no drop claim;
- the secondary Holm family counts a drop claim without a secondary test as p = 1;
- the lineage chance of a row is the mean of its seeds' chance levels; the growth-timing
  effect of interest is ``2 - chance`` of the growth-first arm;
- RegBench's order is untestable when any pair's seeds allow no p below 0.05/k; its deciding
  pair is the first pair (in the source's order: LIDAS against looped, then dense; looped
  against dense) carrying the order's word;
- the point estimate "excess" of a model is its drop minus the mean drop of its random head
  sets, the mean taken here over the stored per-set drops (uniform: ``ctrl_drops``, or
  ``ctrl_drops_<readout>``; layer-shaped: ``shaped_drops_<readout>``; F1/EM has no
  layer-shaped excess), never the stored means or ``excess``; on round 4 too it
  is read on the difference scale (A9), on ``logprob`` as well, adjusted at 0.05/3;
- a t-test figure that cannot be computed (no spread in the seeds) is a dash;
- R4-gate's "checkpoint just before the first growth" is the card's last checkpoint with
  per-head scores at or before the first growth step still at the initial depth (``step-N-pre``;
  ``step-N`` at the same step is already grown); "an initial layer that some growth event
  copies" is one with more than one final descendant, the layer maps composed as for the
  lineage chance; it applies on round-4 stores only (earlier cards keep no per-head scores);
- the fewest ``m`` reachable "given where the heads sit": a head >= 0.4 counts every final
  descendant of its layer, any other head one (a head that forms after growth forms in one
  place); the fewest heads covering the source's 10, "none" when no head is >= 0.4. Reading
  every head of a layer that holds a formed head as covering its layer gives the same m once
  enough of its heads are formed (two, where each has five descendants as in round 4's top
  growth; every round-4 card so far has six);
- a round-4 lineage row reads three gates: the schedule's fewest ``m``, R2's heads before
  growth (the monitor) and R4-gate; its seeds that pass pass induction heads, in context,
  both growth gates;
- the growth-timing rows keep R2's monitor gate on round 4 (R4-lineage attaches R4-gate to
  the lineage claim; "What a dry run of the reading found" reads the timing split on the
  monitor), and compare the one pair R4-lineage declares.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import cast

import numpy as np
from scipy import optimize
from scipy import stats as sps

ROOT = Path(__file__).resolve().parents[1]
CARDS = ROOT / "induction" / "zoo" / "models"

ALPHA = 0.05
POWER = 0.8
INDUCTION_MIN = 0.4
LOOKUP_MIN, LOOKUP_CHANCE_X, VARASSIGN_MIN, GAP_MAX = 0.6, 3.0, 0.5, 0.2
SATURATION_SHARE = 0.1
SOURCE_DROP = {"dense": 0.08, "lidas": 0.18, "looped": 0.28}  # mean F1 drops, the source's
SOURCE_TVD = {"lidas": 0.119, "looped": 0.125, "dense": 0.137}
SOURCE_TOP, SOURCE_HEADS, SOURCE_M = 12, 10, 2
READOUTS = ("cand_acc", "logprob")
F1 = "F1/EM"
ROUND4_ARMS = {"dense8r", "grown8r", "grown8rt", "grown8rte", "looped8r"}
ROUND4_DROP_ARMS = ("grown8r", "grown8rt", "looped8r")
ROUND4_TIMING = ("grown8rt", "grown8rte")  # R4-lineage: the growth-timing question's pair
GRID = 4001
EXCESS = ("excess_uniform", "excess_shaped")


class InputError(Exception):
    """Bad input: printed as ``error: ...`` and exit 2."""


# ---------------------------------------------------------------------------------- loading


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from exc


@dataclass
class Model:
    name: str
    family: str
    kind: str  # source family: dense, lidas, looped
    seed: int
    row: dict
    probe: dict | None = None
    before_growth: float | None = None  # strongest monitor score up to the first growth
    chance: float | None = None  # lineage chance level of m
    fewest: int | None = None  # fewest ancestors the growth schedule allows for k heads
    first_growth: int | None = None
    card_note: str = ""
    copied: CopiedHead | None = None  # round 4's gate, from the card's per-head scores


def load_store(store: Path, cards: Path) -> tuple[list[Model], dict]:
    if not store.is_dir():
        raise InputError(f"{store}: no such folder")
    folder = store / "models"
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder")
    files = sorted(folder.glob("*.json"))
    if not files:
        raise InputError(f"{folder}: no model JSON")
    reading = read_json(store / "replication.json")
    if not isinstance(reading, dict) or not isinstance(reading.get("claims"), list):
        raise InputError(f"{store / 'replication.json'}: no 'claims' list")
    probes = {g.get("model"): g for g in reading.get("gates") or [] if isinstance(g, dict)}
    models = []
    for path in files:
        data = read_json(path)
        row = data.get("row") if isinstance(data, dict) else None
        if not isinstance(row, dict) or "model" not in row or "family" not in row:
            raise InputError(f"{path}: no 'row' with model and family")
        model = Model(
            row["model"], row["family"], row.get("source_family", ""), int(row["seed"]), row
        )
        model.probe = probes.get(model.name)
        growth = json.loads(row.get("growth_steps") or "[]")
        model.first_growth = growth[0] if growth else None
        if model.first_growth is not None:
            read_card(model, cards / model.name)
        models.append(model)
    return models, reading


def read_card(model: Model, folder: Path) -> None:
    card_path, log_path = folder / "card.json", folder / "duplication_log.json"
    if not card_path.is_file() or not log_path.is_file():
        model.card_note = f"no card or duplication log in {folder}"
        return
    assert model.first_growth is not None  # load_store reads a card for a grown model only
    card, log = read_json(card_path), read_json(log_path)
    history = card.get("history") or []
    scores = [h["score"] for h in history if h.get("step", 1e18) <= model.first_growth]
    model.before_growth = max(scores) if scores else None
    row = model.row
    per_layer = int(row["heads"]) // int(row["layers"])
    descendants = descendant_counts(log, per_layer)
    top, k = int(row.get("src_top", SOURCE_TOP)), int(row.get("src_heads", SOURCE_HEADS))
    model.chance = chance_ancestors(tuple(descendants), top, k)
    model.fewest = fewest_allowed(descendants, k)
    entry = pre_growth_checkpoint(card, model.first_growth, int(log["initial_depth"]))
    if entry is not None:
        model.copied = copied_head(entry, layer_descendants(log), k)


# ------------------------------------------------------------------------------------ gates


def in_context(model: Model) -> bool:
    p = model.probe
    if not p or any(p.get(k) is None for k in ("lookup", "varassign", "position_gap")):
        return False
    chance = p.get("lookup_chance") or 0.0
    return (
        p["lookup"] >= LOOKUP_MIN
        and p["lookup"] >= LOOKUP_CHANCE_X * chance
        and p["varassign"] >= VARASSIGN_MIN
        and p["position_gap"] <= GAP_MAX
    )


def has_heads(model: Model) -> bool:
    return float(model.row.get("max_induction") or 0.0) >= INDUCTION_MIN


def heads_before_growth(model: Model) -> bool | None:
    if model.before_growth is None:
        return None
    return model.before_growth >= INDUCTION_MIN


@dataclass
class CopiedHead:
    """R4-gate, read on the card's per-head scores (distance 32) just before the first growth."""

    step: int
    layers: list[int]  # initial layers holding a head >= 0.4
    copied: list[int]  # initial layers that some growth event copies
    best: tuple[int, float] | None  # the strongest head of a copied layer: (layer, score)
    reachable: int | None  # fewest ancestors m reachable for k heads; None: no head formed

    @property
    def passes(self) -> bool:
        return bool(set(self.layers) & set(self.copied))


def pre_growth_checkpoint(card: dict, first_growth: int, initial_depth: int) -> dict | None:
    """The card's last checkpoint with per-head scores at or before the first growth, still at
    the initial depth (``step-N-pre``; ``step-N`` at the same step is already grown)."""
    found = [
        e
        for e in card.get("checkpoints") or []
        if e.get("head_scores")
        and e.get("step", math.inf) <= first_growth
        and len(e["head_scores"]) == initial_depth
    ]
    return max(found, key=lambda e: e["step"]) if found else None


def copied_head(entry: dict, layer_desc: list[int], k: int) -> CopiedHead:
    scores = entry["head_scores"]
    layers = [i for i, heads in enumerate(scores) if max(heads) >= INDUCTION_MIN]
    copied = [i for i, d in enumerate(layer_desc) if d > 1]
    best = max(((i, max(scores[i])) for i in copied), key=lambda b: b[1], default=None)
    reach = reachable_ancestors(scores, layer_desc, k)
    return CopiedHead(int(entry["step"]), layers, copied, best, reach)


def reachable_ancestors(scores: list[list[float]], layer_desc: list[int], k: int) -> int | None:
    """Fewest initial heads whose final descendants can cover k heads, where a head already
    >= 0.4 counts every descendant of its layer and any other head one (a head that forms
    after growth forms in one place). None when no head has formed."""
    formed = [layer_desc[i] for i, heads in enumerate(scores) for h in heads if h >= INDUCTION_MIN]
    if not formed:
        return None
    others = sum(len(heads) for heads in scores) - len(formed)
    return fewest_covering(tuple(formed + [1] * others), k)


def readout_key(readout: str) -> str:
    return "task_metric" if readout == F1 else readout


def above_chance(model: Model, readout: str) -> bool:
    row, key = model.row, readout_key(readout)
    count, tasks = row.get(f"gate_above_{key}"), row.get("tasks_in_mean")
    if count is None and readout == F1 and model.probe:
        count, tasks = model.probe.get("tasks_above_chance"), model.probe.get("tasks")
    if count is None or not tasks:
        return False
    return count > tasks / 2


def saturated(model: Model, readout: str) -> bool:
    if readout == "logprob":
        return False
    row = model.row
    chance = row.get(f"gate_chance_{readout_key(readout)}")
    if chance is None:
        return False
    clean = row["clean"] if readout == F1 else row[f"clean_{readout}"]
    ablated = clean - drops_of(model, readout).drop
    return ablated - chance <= SATURATION_SHARE * (clean - chance)


def model_failures(model: Model) -> list[str]:
    out = []
    if not has_heads(model):
        out.append("induction heads")
    if not in_context(model):
        out.append("in-context probe")
    return out


def readout_failures(model: Model, readout: str) -> list[str]:
    out = []
    if not above_chance(model, readout):
        out.append("clean above chance")
    if saturated(model, readout):
        out.append("not saturated")
    return out


@dataclass(frozen=True)
class Drops:
    """A model's drop on a readout and its excesses over the random head sets (None where the
    store keeps no per-set drops to compute one from)."""

    drop: float
    excess_uniform: float | None
    excess_shaped: float | None


def control_mean(value) -> float | None:
    """Mean of a stored list of per-control drops (a list, or its JSON text); None if absent."""
    if value is None:
        return None
    try:
        drops = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError as exc:
        raise InputError(f"a stored list of control drops is not valid JSON ({exc})") from exc
    if not isinstance(drops, list) or not drops:
        return None
    return float(np.mean([float(d) for d in drops]))


def drops_of(model: Model, readout: str) -> Drops:
    """The drop and ``drop - mean(control drops)`` over uniform (``ctrl_drops``,
    ``ctrl_drops_<readout>``) and layer-shaped (``shaped_drops_<readout>``) head sets."""
    row = model.row
    if readout == F1:
        drop = float(row["drop"])
        uniform, shaped = control_mean(row.get("ctrl_drops")), None
    else:
        drop = float(row[f"drop_{readout}"])
        uniform = control_mean(row.get(f"ctrl_drops_{readout}"))
        shaped = control_mean(row.get(f"shaped_drops_{readout}"))
    return Drops(
        drop,
        None if uniform is None else drop - uniform,
        None if shaped is None else drop - shaped,
    )


def available_readouts(models: list[Model]) -> list[str]:
    found = [r for r in READOUTS if all(f"drop_{r}" in m.row for m in models)]
    return found or [F1]


# ------------------------------------------------------------------------ permutation tests


@lru_cache(maxsize=None)
def split_matrix(n_a: int, n_b: int) -> np.ndarray:
    """Every split of n_a + n_b pooled values: True marks the n_b placed in group b."""
    n = n_a + n_b
    combos = list(itertools.combinations(range(n), n_b))
    out = np.zeros((len(combos), n), dtype=bool)
    for i, combo in enumerate(combos):
        out[i, list(combo)] = True
    return out


@lru_cache(maxsize=None)
def sign_matrix(n: int) -> np.ndarray:
    return np.array(list(itertools.product((1.0, -1.0), repeat=n)))


@dataclass
class LinearPermutationTest:
    """Each relabelling's statistic ``T_s(theta) = intercept_s + theta slope_s``; ``obs`` is
    the data's own relabelling."""

    intercept: np.ndarray
    slope: np.ndarray
    obs: int

    def pvalues(self, thetas: np.ndarray) -> np.ndarray:
        thetas = np.atleast_1d(np.asarray(thetas, dtype=float))
        out = np.empty(len(thetas))
        for start in range(0, len(thetas), 256):
            th = thetas[start : start + 256, None]
            t = np.abs(self.intercept[None, :] + th * self.slope[None, :])
            tobs = t[:, self.obs : self.obs + 1]
            tol = 1e-9 * (1.0 + np.abs(th) + np.abs(self.intercept).max())
            out[start : start + 256] = (t >= tobs - tol).mean(axis=1)
        return out

    def p_limit(self) -> float:
        """p as |theta| grows without bound: only |slope| matters."""
        q = np.abs(self.slope)
        return float((q >= q[self.obs] * (1 - 1e-12)).mean())


def shift_test(a: np.ndarray, b: np.ndarray) -> LinearPermutationTest:
    """``b - delta`` against ``a``, difference of means (b minus a)."""
    x = np.concatenate([a, b])
    is_b = np.r_[np.zeros(len(a)), np.ones(len(b))]
    m = split_matrix(len(a), len(b))
    n_a, n_b = len(a), len(b)
    in_s, k = m @ x, m @ is_b
    intercept = in_s / n_b - (x.sum() - in_s) / n_a
    slope = -(k / n_b - (n_b - k) / n_a)
    return LinearPermutationTest(intercept, slope, observed_split(m, n_a))


def ratio_test(a: np.ndarray, b: np.ndarray) -> LinearPermutationTest:
    """``b * u`` (u = 1/rho) against ``a``, difference of means."""
    n_a, n_b = len(a), len(b)
    m = split_matrix(n_a, n_b)
    xa, xb = np.r_[a, np.zeros(n_b)], np.r_[np.zeros(n_a), b]
    sa, sb = m @ xa, m @ xb
    intercept = sa / n_b - (a.sum() - sa) / n_a
    slope = sb / n_b - (b.sum() - sb) / n_a
    return LinearPermutationTest(intercept, slope, observed_split(m, n_a))


def observed_split(m: np.ndarray, n_a: int) -> int:
    target = np.r_[np.zeros(n_a, bool), np.ones(m.shape[1] - n_a, bool)]
    return int(np.flatnonzero((m == target).all(axis=1))[0])


def signflip_test(y: np.ndarray) -> LinearPermutationTest:
    """Sign-flip test of mean(y - mu) = 0."""
    s = sign_matrix(len(y))
    return LinearPermutationTest(s @ y / len(y), -s.mean(axis=1), 0)


def perm_p(test: LinearPermutationTest) -> float:
    return float(test.pvalues(np.array([0.0]))[0])


def accepted_hull(
    test: LinearPermutationTest, alpha: float, lo: float, hi: float, log: bool = False
):
    """Hull of {theta in [lo, hi]: p(theta) > alpha}: grid, then bisection at each edge."""
    grid = np.geomspace(lo, hi, GRID) if log else np.linspace(lo, hi, GRID)
    ok = test.pvalues(grid) > alpha
    if not ok.any():
        return None
    first, last = int(np.flatnonzero(ok)[0]), int(np.flatnonzero(ok)[-1])
    left = grid[0] if first == 0 else bisect(test, alpha, grid[first - 1], grid[first])
    right = grid[-1] if last == len(grid) - 1 else bisect(test, alpha, grid[last + 1], grid[last])
    return left, right, first == 0, last == len(grid) - 1


def bisect(test: LinearPermutationTest, alpha: float, rejected: float, accepted: float) -> float:
    for _ in range(200):
        if abs(accepted - rejected) <= 1e-10 * (1.0 + abs(accepted)):
            break
        mid = 0.5 * (rejected + accepted)
        if test.pvalues(np.array([mid]))[0] > alpha:
            accepted = mid
        else:
            rejected = mid
    return accepted


def line_interval(test: LinearPermutationTest, alpha: float, span: tuple[float, float]):
    """Interval on the real line; ``span`` contains every accepted theta when bounded."""
    if test.p_limit() > alpha:
        return -math.inf, math.inf
    lo, hi = span
    width = max(hi - lo, 1e-6)
    lo, hi = lo - 0.01 * width - 1e-9, hi + 0.01 * width + 1e-9
    for _ in range(60):
        hull = accepted_hull(test, alpha, lo, hi)
        if hull is None:
            raise RuntimeError("no accepted shift")
        left, right, at_lo, at_hi = hull
        if not at_lo and not at_hi:
            return left, right
        lo, hi = (lo - width, hi) if at_lo else (lo, hi)
        lo, hi = (lo, hi + width) if at_hi else (lo, hi)
        width *= 2
    raise RuntimeError("interval search did not close")


def shift_interval(a, b, alpha) -> tuple[float, float]:
    a, b = np.asarray(a, float), np.asarray(b, float)
    span = (b.min() - a.max(), b.max() - a.min())
    return line_interval(shift_test(a, b), alpha, span)


def signflip_interval(y, alpha) -> tuple[float, float]:
    y = np.asarray(y, float)
    return line_interval(signflip_test(y), alpha, (y.min(), y.max()))


def ratio_interval(a, b, alpha) -> tuple[float, float]:
    """rho > 0 with ``b / rho`` against ``a`` not rejected; searched over u = 1/rho."""
    test = ratio_test(np.asarray(a, float), np.asarray(b, float))
    hi = math.inf if test.pvalues(np.array([just_above_zero(test)]))[0] > alpha else None
    lo = 0.0 if test.p_limit() > alpha else None
    hull = accepted_hull(test, alpha, 1e-6, 1e6, log=True)
    if hull is None:
        return (lo if lo is not None else math.nan), (hi if hi is not None else math.nan)
    u_lo, u_hi, at_lo, at_hi = hull
    if hi is None:
        hi = math.inf if at_lo else 1.0 / u_lo
    if lo is None:
        lo = 0.0 if at_hi else 1.0 / u_hi
    return lo, hi


def just_above_zero(test: LinearPermutationTest) -> float:
    """A u in the open gap (0, first crossing): half the smallest positive theta at which some
    relabelling's |T_s| meets the observed |T_obs| (p is constant between crossings), so p
    there is p as rho = 1/u grows without bound, read inside rho > 0. Crossings below 1e-12
    are ties at 0 up to rounding, not a gap."""
    a, b = test.intercept, test.slope
    a0, b0 = a[test.obs], b[test.obs]
    with np.errstate(divide="ignore", invalid="ignore"):
        roots = np.concatenate([(a0 - a) / (b - b0), -(a0 + a) / (b + b0)])
    positive = roots[np.isfinite(roots) & (roots > 1e-12)]
    return 0.5 * float(positive.min()) if positive.size else 1.0


def perm_floor(n_a: int, n_b: int) -> float:
    return (2.0 if n_a == n_b else 1.0) / math.comb(n_a + n_b, n_a)


def signflip_floor(n: int) -> float:
    return 2.0 / 2**n


def holm(pvalues: list[float]) -> list[float]:
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


# ------------------------------------------------------------------------------ t-test power


def power_t(d: float, se: float, df: int, alpha: float) -> float:
    if se <= 0 or df < 1:
        return math.nan
    crit = sps.t.ppf(1 - alpha / 2, df)
    ncp = abs(d) / se
    lower = float(sps.nct.cdf(-crit, df, ncp))  # scipy gives NaN deep in this tail: it is ~0
    return float(sps.nct.sf(crit, df, ncp)) + (0.0 if math.isnan(lower) else lower)


def detectable_t(se: float, df: int, alpha: float) -> float:
    if se <= 0 or df < 1:
        return math.nan
    hi = se
    while power_t(hi, se, df, alpha) < POWER:
        hi *= 2
    # without full_output, brentq returns the root alone (scipy leaves it unannotated)
    root = cast(float, optimize.brentq(lambda d: power_t(d, se, df, alpha) - POWER, 0.0, hi))
    return float(root)


def two_sample_se(a, b) -> tuple[float, int]:
    a, b = np.asarray(a, float), np.asarray(b, float)
    df = len(a) + len(b) - 2
    if df < 1:
        return math.nan, df
    ss = ((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum()
    return math.sqrt(ss / df) * math.sqrt(1 / len(a) + 1 / len(b)), df


def one_sample_se(y) -> tuple[float, int]:
    y = np.asarray(y, float)
    if len(y) < 2:
        return math.nan, 0
    return float(y.std(ddof=1) / math.sqrt(len(y))), len(y) - 1


def t_figures(se_df: tuple[float, int], effect: float, m: int) -> dict:
    se, df = se_df
    return {
        "detectable": [detectable_t(se, df, ALPHA), detectable_t(se, df, ALPHA / m)],
        "power": [power_t(effect, se, df, ALPHA), power_t(effect, se, df, ALPHA / m)],
    }


# ----------------------------------------------------------------------------------- words


def word(lo: float, hi: float, null: float, effect: float) -> str:
    """A9/A11: agree excludes the null on the source's side; disagree excludes the effect."""
    if (effect > null and lo > null) or (effect < null and hi < null):
        return "agree"
    if lo > effect or hi < effect:
        return "disagree"
    return "inconclusive"


# ----------------------------------------------------------------------------- the lineage


def layer_descendants(log: dict) -> list[int]:
    """Final descendants of each initial layer, composing every event's layer map."""
    ancestry = list(range(int(log["initial_depth"])))
    for event in log.get("events", []):
        new = []
        for sources in event["layer_map"]:
            main = max(sources, key=lambda s: s[1])  # a mixed layer descends from its largest part
            new.append(ancestry[int(main[0])])
        ancestry = new
    return [ancestry.count(layer) for layer in range(int(log["initial_depth"]))]


def descendant_counts(log: dict, heads_per_layer: int) -> list[int]:
    """Final descendants of each initial head."""
    return [c for c in layer_descendants(log) for _ in range(heads_per_layer)]


def fewest_allowed(descendants: list[int], k: int) -> int:
    """The fewest ancestors whose final descendants can hold k heads: ``ceil(k / the most
    descendants one initial head has)`` (docs/replication.md, "the fewest m the growth schedule
    allows")."""
    return math.ceil(k / max(max(descendants, default=1), 1))


def fewest_covering(parts: tuple[int, ...], k: int) -> int:
    covered = 0
    for used, part in enumerate(sorted(parts, reverse=True), start=1):
        covered += part
        if covered >= k:
            return used
    return len(parts)


@lru_cache(maxsize=None)
def chance_ancestors(descendants: tuple[int, ...], top: int, k: int) -> float:
    """Expected fewest ancestors covering k of ``top`` heads drawn at random, exactly."""
    states: dict[tuple[int, ...], int] = {(): 1}
    for d in descendants:
        nxt: dict[tuple[int, ...], int] = {}
        for parts, ways in states.items():
            drawn = sum(parts)
            for c in range(0, min(d, top - drawn) + 1):
                key = tuple(sorted((*parts, c), reverse=True)) if c else parts
                nxt[key] = nxt.get(key, 0) + ways * math.comb(d, c)
        states = nxt
    total = math.comb(sum(descendants), top)
    expect = sum(w * fewest_covering(p, k) for p, w in states.items() if sum(p) == top)
    return expect / total


# ---------------------------------------------------------------------------- claim readings


@dataclass
class Reading:
    """What this script expects of one stored claim row; ``None`` where it does not check."""

    verdict: str | None = None
    numbers: dict = field(default_factory=dict)  # field -> list of floats (None: '–' or null)
    text: dict = field(default_factory=dict)  # field -> exact string
    checks: list = field(default_factory=list)  # (label, stored, mine, ok)
    skip: str | None = None
    words: dict = field(default_factory=dict)  # a drop claim's word on each scale


def family_models(models: list[Model]) -> dict[str, list[Model]]:
    out: dict[str, list[Model]] = {}
    for m in sorted(models, key=lambda m: (m.family, m.seed)):
        out.setdefault(m.family, []).append(m)
    return out


@dataclass
class Context:
    families: dict[str, list[Model]]
    dense: str
    arms: list[str]  # drop-claim families, in order
    round4: bool
    readouts: tuple[str, ...]  # the verdict readouts (``pass_<r>`` in the gates table), in order

    @property
    def m(self) -> int:
        return max(len(self.arms), 1)


def make_context(models: list[Model], readouts: tuple[str, ...] | None = None) -> Context:
    """``readouts``: the store's verdict readouts; by default those every model has a drop on."""
    if readouts is None:
        readouts = tuple(r for r in available_readouts(models) if r != F1)
    families = family_models(models)
    dense = [f for f, ms in families.items() if ms[0].kind == "dense"]
    if len(dense) != 1:
        raise InputError(f"expected one dense family, found {dense or 'none'}")
    round4 = set(families) <= ROUND4_ARMS
    if round4:
        arms = [f for f in ROUND4_DROP_ARMS if f in families]
    else:
        order = {"lidas": 0, "looped": 1}
        arms = sorted(
            (f for f in families if f != dense[0]),
            key=lambda f: (order.get(families[f][0].kind, 2), f),
        )
    return Context(families, dense[0], arms, round4, readouts)


def source_effects(kind: str) -> tuple[float, float]:
    base, arm = SOURCE_DROP["dense"], SOURCE_DROP.get(kind, SOURCE_DROP["lidas"])
    return arm - base, arm / base


def scales_for(ctx: Context, readout: str) -> tuple[str, ...]:
    if not ctx.round4:
        return ("difference", "ratio")
    return ("ratio",) if readout == "logprob" else ("difference",)


def primary_readout(ctx: Context, fams: list[str]) -> tuple[str, bool]:
    models = [m for f in fams for m in ctx.families[f]]
    order = available_readouts(models)
    for r in order:
        if all(not readout_failures(m, r) for m in models):
            return r, True
    return order[0], False


def passing(models: list[Model], readout: str) -> list[Model]:
    return [m for m in models if not model_failures(m) and not readout_failures(m, readout)]


def secondary_readout(ctx: Context, fams: list[str]) -> tuple[str, bool]:
    models = [m for f in fams for m in ctx.families[f]]
    order = available_readouts(models)
    for r in order:
        if all(passing(ctx.families[f], r) for f in fams):
            return r, True
    return order[0], False


def needs_secondary(ctx: Context, arm: str) -> bool:
    fams = [ctx.dense, arm]
    readout, _ = primary_readout(ctx, fams)
    models = [m for f in fams for m in ctx.families[f]]
    return any(model_failures(m) or readout_failures(m, readout) for m in models)


def seeds_ok(floors: list[float], index: int) -> bool:
    return holm(floors)[index] < ALPHA


def primary_floor(ctx: Context, arm: str) -> float:
    return perm_floor(len(ctx.families[ctx.dense]), len(ctx.families[arm]))


def secondary_sets(ctx: Context, arm: str):
    fams = [ctx.dense, arm]
    readout, ok = secondary_readout(ctx, fams)
    return (
        readout,
        ok,
        passing(ctx.families[ctx.dense], readout),
        passing(ctx.families[arm], readout),
    )


def secondary_floor(ctx: Context, arm: str) -> float:
    if not needs_secondary(ctx, arm):
        return 1.0
    _, ok, a, b = secondary_sets(ctx, arm)
    return perm_floor(len(a), len(b)) if ok and a and b else 1.0


def secondary_p(ctx: Context, arm: str) -> float:
    if not needs_secondary(ctx, arm):
        return 1.0
    readout, ok, a, b = secondary_sets(ctx, arm)
    if not (ok and a and b):
        return 1.0
    return perm_p(shift_test(values(a, readout), values(b, readout)))


def values(models: list[Model], readout: str, which: str = "drop") -> np.ndarray:
    """One field of :class:`Drops` (``drop``, ``excess_uniform``, ``excess_shaped``) per model;
    NaN where it is None."""
    out = [getattr(drops_of(m, readout), which) for m in models]
    return np.array([math.nan if v is None else v for v in out], dtype=float)


def drop_cells(ctx: Context, arm: str, a_models, b_models, readout: str) -> Reading:
    kind = ctx.families[arm][0].kind
    diff_src, ratio_src = source_effects(kind)
    m = ctx.m
    a, b = values(a_models, readout), values(b_models, readout)
    diff = b.mean() - a.mean()
    ci = shift_interval(a, b, ALPHA)
    ci_adj = shift_interval(a, b, ALPHA / m)
    ratio = b.mean() / a.mean() if a.mean() != 0 else math.nan
    r_adj = ratio_interval(a, b, ALPHA / m)
    out = Reading()
    out.numbers["difference"] = [diff]
    out.numbers["interval"] = [*ci, *ci_adj]
    out.numbers["ratio"] = [ratio, *r_adj]
    figures = t_figures(two_sample_se(a, b), diff_src, m)
    out.numbers.update(figures)
    words = {
        "difference": word(*ci_adj, 0.0, diff_src),
        "ratio": word(*r_adj, 1.0, ratio_src),
    }
    used = scales_for(ctx, readout)
    if not ctx.round4:
        out.text["scales"] = ", ".join(f"{s} {words[s]}" for s in used)
    chosen = {words[s] for s in used}
    out.verdict = chosen.pop() if len(chosen) == 1 else "inconclusive"
    for name in EXCESS:
        xa, xb = values(a_models, readout, name), values(b_models, readout, name)
        if np.isnan(xa).any() or np.isnan(xb).any():
            out.numbers[name] = None
            continue
        out.numbers[name] = [xb.mean() - xa.mean(), *shift_interval(xa, xb, ALPHA / m)]
    out.words = words
    return out


def round4_scales_check(out: Reading, stored: str | None, declared: str) -> None:
    """Round 4 prints both scales' words, exactly the declared one marked ``(declared)`` (on
    the primary row and on the row on the seeds that pass alike)."""
    found = re.findall(r"(difference|ratio) (\w+)( \(declared\))?", stored or "")
    got = {scale: w for scale, w, _ in found}
    marked = [scale for scale, _, mark in found if mark]
    ok = got == out.words and marked == [declared]
    mine = ", ".join(
        f"{s} {w}" + (" (declared)" if s == declared else "") for s, w in out.words.items()
    )
    out.checks.append(("scales", stored, mine, ok))


def zoo_check(out: Reading, stored: str | None, readout: str, pairs) -> None:
    """``readout: A +x (n seeds) vs B +y (n seeds)``: readout, means and counts."""
    found = re.match(
        r"^(.+?): (\S+) ([+-]?\d+\.\d+)(?: \((\d+) seeds\))? vs (\S+) ([+-]?\d+\.\d+)"
        r"(?: \((\d+) seeds\))?$",
        stored or "",
    )
    if not found:
        out.checks.append(("zoo", stored, "a readout and two means", False))
        return
    got = found.groups()
    mine = [readout]
    ok = got[0] == readout
    for (fam, vals), (name, mean, count) in zip(pairs, (got[1:4], got[4:7]), strict=True):
        ok &= name == fam and close(mean, float(np.mean(vals)))
        ok &= count is None or int(count) == len(vals)
        mine += [fam, f"{np.mean(vals):+.4f} ({len(vals)} seeds)"]
    out.checks.append(("zoo", stored, " ".join(mine), ok))


def read_drop(ctx: Context, arm: str, secondary: bool, row: dict) -> Reading:
    fams = [ctx.dense, arm]
    models = [m for f in fams for m in ctx.families[f]]
    if not secondary:
        readout, readout_ok = primary_readout(ctx, fams)
        a_models, b_models = ctx.families[ctx.dense], ctx.families[arm]
        out = drop_cells(ctx, arm, a_models, b_models, readout)
        if ctx.round4:
            round4_scales_check(out, row.get("scales"), scales_for(ctx, readout)[0])
        blocked = any(model_failures(m) or readout_failures(m, readout) for m in models)
        floors = [primary_floor(ctx, f) for f in ctx.arms]
        testable = seeds_ok(floors, ctx.arms.index(arm))
        if blocked or not readout_ok or not testable:
            out.verdict = "untestable here"
        gate_text_check(out, row.get("decided_by") or "", ctx, models)
        pairs = [(ctx.dense, values(a_models, readout)), (arm, values(b_models, readout))]
        zoo_check(out, row.get("zoo"), readout, pairs)
        return out
    readout, ok, a_models, b_models = secondary_sets(ctx, arm)
    left = sorted(m.name for m in models if m not in a_models and m not in b_models)
    if not (ok and a_models and b_models):
        out = Reading(verdict="untestable here")
        for name in ("difference", "interval", "ratio", "detectable", "power", *EXCESS):
            out.numbers[name] = None
        counts = f"{len(a_models)} and {len(b_models)} seeds pass"
        out.checks.append(("zoo", row.get("zoo"), counts, row.get("zoo") == counts))
        left_check(out, row.get("decided_by") or "", left)
        return out
    out = drop_cells(ctx, arm, a_models, b_models, readout)
    if ctx.round4:
        round4_scales_check(out, row.get("scales"), scales_for(ctx, readout)[0])
    floors = [secondary_floor(ctx, f) for f in ctx.arms]
    if not seeds_ok(floors, ctx.arms.index(arm)):
        out.verdict = "untestable here"
    text = row.get("decided_by") or ""
    left_check(out, text, left)
    ps = [secondary_p(ctx, f) for f in ctx.arms]
    i = ctx.arms.index(arm)
    number_check(out, text, r"permutation p ([\d.e-]+)", ps[i], "permutation p")
    number_check(out, text, r"Holm ([\d.e-]+) over", holm(ps)[i], "Holm p")
    number_check(out, text, r"adjusted intervals \(0\.05/(\d+)\)", ctx.m, "Holm family m")
    pairs = [(ctx.dense, values(a_models, readout)), (arm, values(b_models, readout))]
    zoo_check(out, row.get("zoo"), readout, pairs)
    return out


def gate_failure_parts(ctx: Context, models: list[Model]) -> list[str]:
    """A drop row's failure counts as printed, in order: ``N of M fail induction heads``, ``...
    fail in-context probe``, then with verdict readouts ``... fail the <r> gate (above chance,
    not saturated)`` for each readout in order, else (an F1/EM record) ``... fail clean above
    chance`` and ``N of M have a saturated drop``; a gate no model fails is not printed."""
    n = len(models)
    counts = [
        ("induction heads", sum(not has_heads(m) for m in models)),
        ("in-context probe", sum(not in_context(m) for m in models)),
    ]
    if ctx.readouts:
        counts += [
            (f"the {r} gate (above chance, not saturated)",
             sum(bool(readout_failures(m, r)) for m in models))
            for r in ctx.readouts
        ]  # fmt: skip
    else:
        counts.append(("clean above chance", sum(not above_chance(m, F1) for m in models)))
    parts = [f"{k} of {n} fail {label}" for label, k in counts if k]
    saturations = sum(saturated(m, F1) for m in models) if not ctx.readouts else 0
    if saturations:
        parts.append(f"{saturations} of {n} have a saturated drop")
    return parts


def gate_text_check(out: Reading, text: str, ctx: Context, models: list[Model]) -> None:
    stored = [
        p.strip() for p in re.findall(r"\d+ of \d+ (?:fail [^;]+|have a saturated drop)", text)
    ]
    mine = gate_failure_parts(ctx, models)
    if stored != mine:
        out.checks.append(("gate failures", "; ".join(stored), "; ".join(mine) or "none", False))


def left_check(out: Reading, text: str, left: list[str]) -> None:
    found = re.search(r"left out: ([^;]+)", text)
    stored = sorted(s.strip() for s in found.group(1).split(",")) if found else []
    out.checks.append(("left out", ", ".join(stored), ", ".join(left), stored == left))


def number_check(out: Reading, text: str, pattern: str, mine: float, label: str) -> None:
    found = re.search(pattern, text)
    if found is None:
        return
    raw = found.group(1).rstrip(".")
    out.checks.append((label, raw, f"{mine:.4g}", close(raw, mine)))


# ------------------------------------------------------------------------------ lineage rows


def read_lineage(ctx: Context, fam: str, secondary: bool, row: dict) -> Reading:
    models = ctx.families.get(fam, [])
    if not models:
        return Reading(skip=f"no family {fam} in the store")
    if any(m.chance is None for m in models):
        return Reading(skip=models[0].card_note or "no training card")
    if ctx.round4 and any(m.copied is None for m in models):
        return Reading(skip="no per-head scores before the first growth in a card")
    text = row.get("decided_by") or ""
    out = Reading()
    fewest = min(fewest_of(m) for m in models)
    if not secondary:
        no_head = [m for m in models if not heads_before_growth(m)]
        # on round 4 every m.copied is set (a family with one missing is skipped above)
        no_copy = [m for m in models if ctx.round4 and m.copied is not None and not m.copied.passes]
        untestable = fewest > SOURCE_M or no_head or no_copy
        out.verdict = "untestable here" if untestable else None
        found = re.search(r"(\d+) of (\d+) seeds had no induction head before", text)
        if no_head or found:
            mine = f"{len(no_head)} of {len(models)}"
            got = f"{found.group(1)} of {found.group(2)}" if found else "none"
            out.checks.append(("no head before growth", got, mine, got == mine))
        found = re.search(r"allows no fewer than (\d+) ancestors", text)
        if fewest > SOURCE_M or found:
            got = found.group(1) if found else "none"
            out.checks.append(("fewest m", got, str(fewest), got == str(fewest)))
        if ctx.round4:
            k = int(models[0].row.get("src_heads", SOURCE_HEADS))
            copied_gate_check(out, text, no_copy, k)
        copied = float(np.mean([m.row.get("src_copied", math.nan) for m in models]))
        number_check(out, text, r"; ([\d.]+) of the 12 strongest heads descend", copied, "copied")
        lineage_zoo_check(out, row.get("zoo"), models, fewest)
        if out.verdict is None:
            fill_lineage(out, models, ALPHA)
            effect = SOURCE_M - float(np.mean([chance_of(m) for m in models]))
            number_check(out, text, r"against the source's ([+-]?[\d.]+)", effect, "effect")
        else:
            for name in ("difference", "interval", "detectable", "power"):
                out.numbers[name] = None
        return out
    keep = [m for m in models if lineage_passes(ctx, m)]
    left = sorted(m.name for m in models if m not in keep)
    left_check(out, text, left)
    if not keep:
        out.verdict = "untestable here"
        for name in ("difference", "interval", "detectable", "power"):
            out.numbers[name] = None
        return out
    fill_lineage(out, keep, ALPHA)
    floor = signflip_floor(len(keep))
    number_check(out, text, r"allow no sign-flip p below ([\d.]+)", floor, "sign-flip floor")
    lineage_zoo_check(out, row.get("zoo"), keep, fewest)
    return out


def chance_of(m: Model) -> float:
    """A model's lineage chance level, on a family whose every model has one."""
    assert m.chance is not None  # read_lineage and read_timing skip a family with a model without
    return m.chance


def fewest_of(m: Model) -> int:
    """A model's fewest ancestors allowed, on a family whose every model has a card."""
    assert m.fewest is not None  # read_card sets it with the chance read_lineage requires
    return m.fewest


def lineage_passes(ctx: Context, m: Model) -> bool:
    """A1/A2 and R4-lineage: the gates a seed of the lineage claim must pass."""
    copied = not ctx.round4 or (m.copied is not None and m.copied.passes)
    return has_heads(m) and in_context(m) and bool(heads_before_growth(m)) and copied


def lineage_zoo_check(out: Reading, stored: str | None, models: list[Model], fewest: int) -> None:
    """``m = 5.8 over 6 seeds (6, 5, ...); chance 7.8, fewest possible 2`` (the part after
    ``m = x`` only where printed)."""
    stored = stored or ""
    ms = [float(m.row["src_ancestors"]) for m in models]
    chance = float(np.mean([chance_of(m) for m in models]))
    mine = f"m = {np.mean(ms):.2f} over {len(ms)} seeds {ms}; chance {chance:.4f}"
    mine += f", fewest possible {fewest}"
    head = re.match(r"m = ([\d.]+)", stored)
    low = re.search(r"fewest possible (\d+)", stored)
    ok = (
        head is not None
        and low is not None
        # np.mean gives an np.float64, a float subclass (passed as is: it rounds as numpy does)
        and close(head.group(1), cast(float, np.mean(ms)))
        and int(low.group(1)) == fewest
    )
    if over := re.search(r"over (\d+) seeds \(([^)]*)\)", stored):
        vals = [float(v) for v in over.group(2).split(",")]
        ok &= int(over.group(1)) == len(ms) and vals == ms
    if got := re.search(r"chance ([\d.]+)", stored):
        ok &= close(got.group(1), chance)
    out.checks.append(("zoo", stored, mine, ok))


def balanced(text: str, start: int) -> str:
    """The text inside the parenthesis opened at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1 : i]
    return text[start + 1 :]


def copied_detail(gate: CopiedHead, k: int) -> str:
    """R4-gate's detail as the stored row words it."""
    layers = f"{gate.layers}" if gate.layers else "none"
    copied = f"{gate.copied}" if gate.copied else "none"
    best = f" (best there L{gate.best[0]} {gate.best[1]:.2f})" if gate.best else ""
    reach = "none (no head formed)" if gate.reachable is None else str(gate.reachable)
    return (
        f"step {gate.step}: heads >= 0.4 in layers {layers}; growth copies initial layers "
        f"{copied}{best}; fewest ancestors m reachable for {k} heads: {reach}"
    )


def copied_gate_check(out: Reading, text: str, failing: list[Model], k: int) -> None:
    """Every seed named as failing R4-gate, and each one's detail, against mine."""
    stored: dict[str, str] = {}
    for found in re.finditer(r"([\w.-]+) fails copied head before growth ?", text):
        after = found.end()
        stored[found.group(1)] = balanced(text, after) if text[after : after + 1] == "(" else ""
    mine = {m.name: m for m in failing}
    if sorted(stored) != sorted(mine):
        show = ", ".join(sorted(mine)) or "none"
        out.checks.append(("copied head before growth", ", ".join(sorted(stored)), show, False))
    for name in sorted(set(stored) & set(mine)):
        gate, got = mine[name].copied, stored[name]
        assert gate is not None  # a seed fails R4-gate only on a gate that was read
        ok = detail_matches(got, gate)
        out.checks.append((f"copied head before growth, {name}", got, copied_detail(gate, k), ok))


def detail_matches(got: str, gate: CopiedHead) -> bool:
    """Each part of the stored detail that is printed matches (step, layers, best, m)."""

    def ints(pattern: str) -> list[int] | None:
        found = re.search(pattern, got)
        return None if found is None else [int(x) for x in re.findall(r"\d+", found.group(1))]

    ok = ints(r"step (\d+)") in (None, [gate.step])
    ok &= ints(r"heads >= 0\.4 in layers (\[[^\]]*\]|none)") in (None, gate.layers)
    ok &= ints(r"copies initial layers (\[[^\]]*\]|none)") in (None, gate.copied)
    if best := re.search(r"best there L(\d+) ([\d.]+)", got):
        ok &= gate.best is not None and int(best.group(1)) == gate.best[0]
        ok &= gate.best is not None and close(best.group(2), gate.best[1])
    if reach := re.search(r"reachable for \d+ heads: (\d+|none)", got):
        mine = "none" if gate.reachable is None else str(gate.reachable)
        ok &= reach.group(1) == mine
    return bool(ok)


def fill_lineage(out: Reading, models: list[Model], alpha: float) -> None:
    y = np.array([float(m.row["src_ancestors"]) - chance_of(m) for m in models])
    chance = float(np.mean([chance_of(m) for m in models]))
    effect = SOURCE_M - chance
    ci = signflip_interval(y, alpha)
    out.numbers["difference"] = [float(y.mean())]
    out.numbers["interval"] = [*ci, *ci]
    out.numbers.update(t_figures(one_sample_se(y), effect, 1))
    if signflip_floor(len(y)) >= alpha:
        out.verdict = "untestable here"
    else:
        out.verdict = word(*ci, 0.0, effect)


def timing_roles(ctx: Context, fams: tuple[str, str]) -> tuple[str, str] | None:
    """(heads-first, growth-first) from the growth schedule: the later first growth is the
    heads-first arm (A4)."""
    if any(f not in ctx.families for f in fams):
        return None
    if any(m.first_growth is None for f in fams for m in ctx.families[f]):
        return None
    # every first_growth is set (checked just above): the filter only narrows the type
    first = {
        f: max(m.first_growth for m in ctx.families[f] if m.first_growth is not None) for f in fams
    }
    late, early = sorted(fams, key=lambda f: -first[f])
    return late, early


def timing_arms(ctx: Context) -> tuple[str, str] | None:
    """The pair the rules compare: R4-lineage's ``grown8rt`` against ``grown8rte`` on a
    round-4 store, else the store's two grown families."""
    if ctx.round4:
        return timing_roles(ctx, ROUND4_TIMING)
    grown = [f for f, ms in ctx.families.items() if ms[0].first_growth is not None]
    return timing_roles(ctx, (grown[0], grown[1])) if len(grown) == 2 else None


UNDECLARED = "arms (R4-lineage declares one pair: grown8rt against grown8rte)"
TIMING_ZOO = re.compile(
    r"^m: (\S+)(?: \([^)]*\))? ([\d.]+)(?: \((\d+) seeds\))? vs "
    r"(\S+)(?: \([^)]*\))? ([\d.]+)(?: \((\d+) seeds\))?$"
)


def stored_timing_pair(row: dict) -> tuple[str, str] | None:
    found = TIMING_ZOO.match(row.get("zoo") or "")
    return (found.group(1), found.group(4)) if found else None


def read_timing(ctx: Context, secondary: bool, row: dict) -> Reading:
    declared = timing_arms(ctx)
    stored = stored_timing_pair(row)
    arms = declared
    if ctx.round4 and stored is not None and set(stored) != set(declared or ()):
        arms = timing_roles(ctx, stored)  # read as printed, and named as a pair not declared
        if arms is None:
            mine = " vs ".join(declared) if declared else "none"
            return Reading(checks=[(UNDECLARED, " vs ".join(stored), mine, False)])
    if arms is None:
        return Reading(skip="no pair of grown arms with a growth schedule to compare")
    late, early = arms
    models = ctx.families[late] + ctx.families[early]
    if any(m.chance is None for m in models):
        return Reading(skip="no training card")
    text = row.get("decided_by") or ""
    out = Reading()
    if arms != declared:
        assert stored is not None  # arms leave the declared pair only for the stored one
        mine = " vs ".join(declared) if declared else "none"
        out.checks.append((UNDECLARED, " vs ".join(stored), mine, False))
    if not secondary:
        split = {
            late: [m for m in ctx.families[late] if heads_before_growth(m) is False],
            early: [m for m in ctx.families[early] if heads_before_growth(m) is True],
        }
        no_heads = [m for m in models if not has_heads(m)]
        if split[late] or split[early] or no_heads:
            out.verdict = "untestable here"
            for name in ("difference", "interval", "detectable", "power"):
                out.numbers[name] = None
        for arm, word_ in ((late, "no"), (early, "a")):
            split_check(out, text, arm, word_, split[arm], len(ctx.families[arm]))
        timing_zoo_check(out, row.get("zoo"), ctx.families[late], ctx.families[early], False)
        if out.verdict is None:
            fill_timing(out, ctx.families[late], ctx.families[early])
        return out
    keep_late = [
        m for m in ctx.families[late] if has_heads(m) and in_context(m) and heads_before_growth(m)
    ]
    keep_early = [
        m
        for m in ctx.families[early]
        if has_heads(m) and in_context(m) and heads_before_growth(m) is False
    ]
    left = sorted(m.name for m in models if m not in keep_late and m not in keep_early)
    left_check(out, text, left)
    if not keep_late or not keep_early:
        out.verdict = "untestable here"
        return out
    timing_zoo_check(out, row.get("zoo"), keep_late, keep_early, True)
    effect = fill_timing(out, keep_late, keep_early)
    number_check(out, text, r"effect of interest ([+-]?[\d.]+)", effect, "effect of interest")
    floor = perm_floor(len(keep_late), len(keep_early))
    number_check(out, text, r"allow no permutation p below ([\d.]+)", floor, "permutation floor")
    return out


def split_check(out: Reading, text: str, arm: str, had: str, breaks: list[Model], n: int) -> None:
    """``k of n seeds of ARM had no/a head before the first growth (... monitor: x, y)``."""
    found = re.search(
        rf"(\d+) of (\d+) seeds of {re.escape(arm)} had {had} head before the first growth"
        r"(?: \(strongest head up to it on the training monitor: ([\d., ]+)\))?",
        text,
    )
    if not breaks and not found:
        return
    mine = f"{len(breaks)} of {n}"
    got = f"{found.group(1)} of {found.group(2)}" if found else "none"
    out.checks.append((f"seeds of {arm} breaking the split", got, mine, got == mine))
    if found and found.group(3):
        vals = [v.strip() for v in found.group(3).split(",")]
        scores = [m.before_growth for m in breaks]
        ok = len(vals) == len(scores) and all(close(v, x) for v, x in zip(vals, scores))
        out.checks.append((f"monitor before growth, {arm}", found.group(3), str(scores), ok))


def timing_zoo_check(out, stored: str | None, late, early, counts: bool) -> None:
    """``m: LATE (...) x vs EARLY (...) y``, with ``(n seeds)`` on the seeds that pass."""
    found = TIMING_ZOO.match(stored or "")
    mine = " vs ".join(
        f"{ms[0].family} {np.mean([float(m.row['src_ancestors']) for m in ms]):.2f}"
        + (f" ({len(ms)} seeds)" if counts else "")
        for ms in (late, early)
    )
    if not found:
        out.checks.append(("zoo", stored, mine, False))
        return
    ok = True
    for ms, (name, mean, n) in zip((late, early), (found.group(1, 2, 3), found.group(4, 5, 6))):
        ok &= name == ms[0].family
        ok &= close(mean, float(np.mean([float(m.row["src_ancestors"]) for m in ms])))
        ok &= (n is None and not counts) or (n is not None and int(n) == len(ms))
    out.checks.append(("zoo", stored, mine, bool(ok)))


def fill_timing(out: Reading, late: list[Model], early: list[Model]) -> float:
    a = np.array([float(m.row["src_ancestors"]) for m in early])
    b = np.array([float(m.row["src_ancestors"]) for m in late])
    effect = SOURCE_M - float(np.mean([chance_of(m) for m in early]))
    ci = shift_interval(a, b, ALPHA)
    out.numbers["difference"] = [float(b.mean() - a.mean())]
    out.numbers["interval"] = [*ci, *ci]
    out.numbers.update(t_figures(two_sample_se(a, b), effect, 1))
    if perm_floor(len(a), len(b)) >= ALPHA:
        out.verdict = "untestable here"
    else:
        out.verdict = word(*ci, 0.0, effect)
    return effect


# ----------------------------------------------------------------------------------- RegBench


def regbench_pairs(ctx: Context) -> list[tuple[str, str]]:
    by_kind: dict[str, list[str]] = {}
    for fam, ms in ctx.families.items():
        by_kind.setdefault(ms[0].kind, []).append(fam)
    lidas, looped, dense = by_kind.get("lidas", []), by_kind.get("looped", []), [ctx.dense]
    pairs = [(x, y) for x in lidas for y in looped + dense]
    return pairs + [(x, y) for x in looped for y in dense]


def read_regbench(ctx: Context, row: dict) -> Reading:
    text = row.get("decided_by") or ""
    if "letter-frequency" in text:
        return Reading(skip="the letter-frequency rule's baseline TVD is not in the store")
    pairs = regbench_pairs(ctx)
    k = len(pairs)
    if k == 0:
        return Reading(skip="no pair of kinds to compare")
    tvd = {f: np.array([m.row["tvd_clean"] for m in ms]) for f, ms in ctx.families.items()}
    rows = []
    for lower, upper in pairs:
        a, b = tvd[upper], tvd[lower]
        src = SOURCE_TVD[ctx.families[lower][0].kind] - SOURCE_TVD[ctx.families[upper][0].kind]
        ci_adj = shift_interval(a, b, ALPHA / k)
        rows.append((lower, upper, a, b, src, ci_adj, word(*ci_adj, 0.0, src)))
    out = Reading()
    words = [r[-1] for r in rows]
    testable = all(perm_floor(len(r[2]), len(r[3])) * k < ALPHA for r in rows)
    if not testable:
        out.verdict = "untestable here"
    elif "disagree" in words:
        out.verdict = "disagree"
    elif all(w == "agree" for w in words):
        out.verdict = "agree"
    else:
        out.verdict = "inconclusive"
    target = out.verdict if out.verdict in words else words[0]
    lower, upper, a, b, src, ci_adj, _ = rows[words.index(target)]
    out.numbers["difference"] = [float(b.mean() - a.mean())]
    out.numbers["interval"] = [*shift_interval(a, b, ALPHA), *ci_adj]
    out.numbers.update(t_figures(two_sample_se(a, b), src, k))
    for name in ("ratio", *EXCESS):
        out.numbers[name] = None
    found = re.search(r"cells: (\S+) - (\S+)", text)
    if found:
        ok = found.groups() == (lower, upper)
        out.checks.append(("deciding pair", " - ".join(found.groups()), f"{lower} - {upper}", ok))
    stored_pairs = re.findall(
        r"(\S+) - (\S+) ([+-]?\d+\.\d+) \[([^\]]+)\] \(source ([+-]?\d+\.\d+)\): (\w+)", text
    )
    mine = {(r[0], r[1]): r for r in rows}
    for lo_f, up_f, diff, interval, src, got_word in stored_pairs:
        r = mine.get((lo_f, up_f))
        label = f"pair {lo_f} - {up_f}"
        if r is None:
            out.checks.append((label, "stored", "not a pair of the source's order", False))
            continue
        nums = [float(r[3].mean() - r[2].mean()), *r[5], r[4]]
        got = [diff, *interval.split(","), src]
        ok = all(close(g.strip(), v) for g, v in zip(got, nums)) and got_word == r[6]
        shown = f"{nums[0]:+.4f} [{nums[1]:+.4f}, {nums[2]:+.4f}] ({nums[3]:+.3f}): {r[6]}"
        stored = f"{diff} [{interval}] ({src}): {got_word}"
        out.checks.append((label, stored, shown, ok))
    if len(stored_pairs) != len(rows):
        out.checks.append(("pairs", str(len(stored_pairs)), str(len(rows)), False))
    return out


def read_flops(ctx: Context, fam: str, row: dict) -> Reading:
    ms = ctx.families.get(fam)
    if not ms:
        return Reading(skip=f"no family {fam}")
    saving = 1 - float(np.mean([m.row["card_flops_vs_dense"] for m in ms]))
    out = Reading(verdict="by design")
    got = re.match(r"(\d+)%", row.get("zoo") or "")
    ok = bool(got) and abs(int(got.group(1)) - 100 * saving) <= 1.0
    out.checks.append(("saving", row.get("zoo"), f"{100 * saving:.1f}%", ok))
    return out


# -------------------------------------------------------------------------------- comparing

NUMBER = re.compile(r"[+-]?inf|[+-]?\d+(?:\.\d+)?")
CHECKED = ("difference", "interval", "ratio", "detectable", "power", *EXCESS)


def close(stored: str, mine: float | None) -> bool:
    """Within +-1 in the stored figure's last printed digit."""
    stored = stored.strip()
    if mine is None or (isinstance(mine, float) and math.isnan(mine)):
        return False
    if "inf" in stored:
        return math.isinf(mine) and (mine < 0) == stored.startswith("-")
    if math.isinf(mine):
        return False
    digits = len(stored.split(".")[1]) if "." in stored else 0
    unit = 10.0**-digits
    return abs(round(mine, digits) - float(stored)) <= unit * (1 + 1e-9)


def stored_numbers(value) -> list[str] | None:
    """The printed numbers of a cell; None for a dash (``–``, ``– (–)``) or an empty cell."""
    if value is None or value in ("–", "-", ""):
        return None
    text = str(value)
    if text.startswith("x"):
        text = text[1:]
    return NUMBER.findall(text) or None


def dash_if_nan(mine: list | None) -> list | None:
    """Figures that cannot be computed (a t-test with no spread) print as a dash."""
    if mine is not None and all(isinstance(v, float) and math.isnan(v) for v in mine):
        return None
    return mine


def render(mine: list | None, stored: list[str] | None) -> str:
    if mine is None:
        return "none"
    out = []
    for i, v in enumerate(mine):
        digits = (
            len(stored[i].split(".")[1]) + 1
            if stored and i < len(stored) and "." in stored[i]
            else 4
        )
        out.append(
            "inf" if math.isinf(v) and v > 0 else "-inf" if math.isinf(v) else f"{v:+.{digits}f}"
        )
    return "[" + ", ".join(out) + "]"


def compare(row: dict, reading: Reading) -> list[str]:
    problems = []
    if reading.verdict is not None and row.get("verdict") != reading.verdict:
        problems.append(f"verdict: stored {row.get('verdict')!r}, recomputed {reading.verdict!r}")
    for name in CHECKED:
        if name not in reading.numbers:
            continue
        mine, stored = dash_if_nan(reading.numbers[name]), stored_numbers(row.get(name))
        if mine is None and stored is None:
            continue
        ok = (
            mine is not None
            and stored is not None
            and len(mine) == len(stored)
            and all(close(s, v) for s, v in zip(stored, mine))
        )
        if not ok:
            problems.append(f"{name}: stored {row.get(name)!r}, recomputed {render(mine, stored)}")
    for name, text in reading.text.items():
        if row.get(name) != text:
            problems.append(f"{name}: stored {row.get(name)!r}, recomputed {text!r}")
    for label, stored, mine, ok in reading.checks:
        if not ok:
            problems.append(f"{label}: stored {stored!r}, recomputed {mine!r}")
    return problems


# --------------------------------------------------------------------------------- dispatch

DROP = re.compile(
    r"^top-\d+% ablation costs \S+ \(([\w.-]+)\) more than dense(, on the seeds that pass)?$"
)
LINEAGE = re.compile(
    r"^\d+ of the \d+ strongest heads from \d+ ancestors \(([\w.-]+)\)(, on the seeds that pass)?$"
)
TIMING = re.compile(
    r"^lineage more concentrated when heads form before growth(, on the seeds that pass)?$"
)
FLOPS = re.compile(r"^LIDAS saves training FLOPs \(([\w.-]+)\)$")


def read_claim(ctx: Context, row: dict) -> Reading:
    claim = row.get("claim") or ""
    if found := DROP.match(claim):
        arm = found.group(1)
        if arm not in ctx.arms:
            return Reading(skip=f"{arm} is not a drop-claim family of this store")
        return read_drop(ctx, arm, bool(found.group(2)), row)
    if found := LINEAGE.match(claim):
        return read_lineage(ctx, found.group(1), bool(found.group(2)), row)
    if found := TIMING.match(claim):
        return read_timing(ctx, bool(found.group(1)), row)
    if claim.startswith("RegBench TVD"):
        return read_regbench(ctx, row)
    if found := FLOPS.match(claim):
        return read_flops(ctx, found.group(1), row)
    return Reading(skip="a claim this script does not recognise")


def expected_drop_rows(ctx: Context) -> list[str]:
    rows = []
    for arm in ctx.arms:
        kind = "LIDAS" if ctx.families[arm][0].kind == "lidas" else "looped"
        base = f"ablation costs {kind} ({arm}) more than dense"
        rows.append(base)
        if needs_secondary(ctx, arm):
            rows.append(base + ", on the seeds that pass")
    return rows


TIMING_CLAIM = "lineage more concentrated when heads form before growth"


def expected_timing_rows(ctx: Context, rows: list[dict]) -> list[str]:
    """The declared pair's rows the store lacks: the primary always (A4), the seeds that pass
    where a seed fails induction heads or breaks the split."""
    arms = timing_arms(ctx)
    if arms is None:
        return []
    late, early = arms
    both = ctx.families[late] + ctx.families[early]
    breaks = any(not has_heads(m) for m in both)
    breaks |= any(heads_before_growth(m) is False for m in ctx.families[late])
    breaks |= any(heads_before_growth(m) is True for m in ctx.families[early])
    missing = []
    for claim in [TIMING_CLAIM] + ([f"{TIMING_CLAIM}, on the seeds that pass"] if breaks else []):
        pairs = [set(stored_timing_pair(r) or arms) for r in rows if r.get("claim") == claim]
        if set(arms) not in pairs:
            missing.append(f"{claim} ({late} vs {early})")
    return missing


def verdict_readouts(reading: dict) -> tuple[str, ...]:
    """The readouts whose gate columns (``pass_<r>`` or ``testable_<r>``) the gates table has."""
    rows = [g for g in reading.get("gates") or [] if isinstance(g, dict)]
    return tuple(r for r in READOUTS if any(f"pass_{r}" in g or f"testable_{r}" in g for g in rows))


def run(store: Path, cards: Path) -> tuple[list[dict], int]:
    models, reading = load_store(store, cards)
    ctx = make_context(models, verdict_readouts(reading))
    results = []
    for row in reading["claims"]:
        if not isinstance(row, dict):
            raise InputError("replication.json: a claim that is not an object")
        mine = read_claim(ctx, row)
        if mine.skip:
            results.append({"claim": row.get("claim"), "status": "not rechecked", "why": mine.skip})
            continue
        problems = compare(row, mine)
        status = "MISMATCH" if problems else "OK"
        results.append({"claim": row.get("claim"), "status": status, "problems": problems})
    claims = [str(r.get("claim", "")) for r in reading["claims"] if isinstance(r, dict)]
    absent = [e for e in expected_drop_rows(ctx) if not any(c.endswith(e) for c in claims)]
    rows = [r for r in reading["claims"] if isinstance(r, dict)]
    for expected in absent + expected_timing_rows(ctx, rows):
        results.append(
            {"claim": expected, "status": "MISMATCH", "problems": ["row absent from the store"]}
        )
    bad = any(r["status"] == "MISMATCH" for r in results)
    return results, 1 if bad else 0


def line(result: dict) -> str:
    if result["status"] == "OK":
        return f"OK        {result['claim']}"
    if result["status"] == "not rechecked":
        return f"not rechecked  {result['claim']}: {result['why']}"
    return f"MISMATCH  {result['claim']}: " + "; ".join(result["problems"])


def main(argv: list[str] | None = None) -> int:
    assert __doc__ is not None  # stripped only under -OO, which strips this assert too
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", type=Path, help="folder with models/*.json and replication.json")
    parser.add_argument("--json", type=Path, help="write the per-claim results here")
    parser.add_argument("--cards", type=Path, default=CARDS, help="folder of <model>/card.json")
    args = parser.parse_args(argv)
    if args.json is not None and not args.json.parent.is_dir():
        print(f"error: --json {args.json}: no folder {args.json.parent}; create it or choose "
              "another path", file=sys.stderr)  # fmt: skip
        return 2
    try:
        results, code = run(args.store, args.cards)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for result in results:
        print(line(result))
    counts = {
        s: sum(r["status"] == s for r in results) for s in ("OK", "MISMATCH", "not rechecked")
    }
    print(", ".join(f"{n} {s}" for s, n in counts.items()))
    if args.json:
        try:
            write_atomically(args.json, json.dumps({"store": str(args.store), "claims": results},
                                                   indent=1))  # fmt: skip
        except OSError as exc:
            print(f"error: cannot write --json {args.json}: {exc.strerror}; choose another path",
                  file=sys.stderr)  # fmt: skip
            return 2
    return code


def write_atomically(path: Path, text: str) -> None:
    """A temporary file beside ``path``, then a rename: never a half-written file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())
