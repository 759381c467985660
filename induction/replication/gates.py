"""The replication's validity gates and the gated verdict, per source claim.

Each measured model passes or fails the gates of :mod:`ablation.gates` (computed from its
stored measurement and its card) and of :mod:`induction.zoo.probe` (in-context lookup and
variable assignment on fresh content, run on the model itself):

- **heads**: a head at or above the induction threshold;
- **heads before growth** (grown models): one logged before the first growth step;
- **in context**: the probe's gates (lookup >= 0.6 and >= 3x chance; variable assignment >=
  0.5 without answering by position);
- **above chance**: most measured tasks' clean scores above the best right-type guess, by the
  lower end of a 95% Wilson interval (F1 of one-token answers and EM are 0/1 per item);
- **not saturated**: the top heads' ablation leaves more than 10% of the mean score's margin
  over chance.

:func:`claims` turns the family tables into one row per source claim: agree / disagree /
untestable here, with the gate (or the design fact) that decides it. A drop comparison is
read only when every model of both families passes every gate (the primary verdict). Where a
seed fails, :func:`secondary_claims` adds the same claim read on the seeds that pass, named
as conditional on passing (docs/replication.md, "Amendment"), after the primary rows.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ablation.gates import VERDICT_ORDER, heads_before_growth, saturated, verdict_readout, wilson
from induction.stats import holm, min_perm_p, seed_test

from .config import ROUND4_SCALES, SOURCE, Settings
from .intervals import difference_cells, drop_cells, fmt_ci, read_shift
from .lineage_claim import chance_ancestors, descendants_per_head, read_lineage, read_timing
from .models import ROUND4_TIMING_PAIR, drop_claim_families, is_round4, source_family

ALPHA = 0.05
SOURCE_LIDAS = "0.18 vs 0.08 mean F1 (+0.10, x2.25)"
SOURCE_LOOPED = "0.28 vs 0.08 mean F1 (+0.20, x3.50)"
#: RegBench: a family's clean TVD must beat the in-context letter-frequency rule by this much
#: before its order among families is read.
REGBENCH_MARGIN = 0.05


def task_chances(settings: Settings, max_tokens: int = 96) -> dict[str, float]:
    """Chance (:func:`ablation.gates.chance_level`) of each measured task, averaged over the
    prompt seeds, for the items the replication measured."""
    from ablation.gates import chance_level
    from ablation.tasks import load_suite
    from ablation.tasks.base import GenTask

    out: dict[str, list[float]] = {}
    for seed in settings.prompt_seeds:
        tasks = load_suite(settings.suite, n_items=settings.n_items, seed=seed,
                           max_tokens=max_tokens, tasks=settings.tasks)  # fmt: skip
        for task in tasks:
            if isinstance(task, GenTask) and not task.positive_control:
                out.setdefault(task.name, []).append(chance_level(task))
    return {k: float(np.mean(v)) for k, v in out.items()}


def regbench_rule_tvd(settings: Settings, max_tokens: int = 96) -> float:
    """TVD of the in-context letter-frequency rule on the measured RegBench items: at each
    position, the letters seen so far in the sequence, by frequency (uniform over the support
    before the first letter). A model at this level has learnt no more of the automaton than
    which letters it uses."""
    from ablation.metrics import distribution_scores
    from ablation.tasks import zoo

    tvds = []
    for seed in settings.prompt_seeds:
        task = zoo.load(n_items=settings.n_items, seed=seed, max_tokens=max_tokens,
                        names=("regbench",))[0]  # fmt: skip
        for item in task.items:
            sup = list(item.support)
            q = []
            for pos in item.positions:
                seen = [t for t in item.ids[: pos + 1] if t in sup]
                counts = np.array([seen.count(a) for a in sup], dtype=float)
                q.append(counts if counts.sum() else np.ones(len(sup)))
            tvds.append(distribution_scores(np.array(q), item.valid, sup)[0])
    return float(np.nanmean(tvds))


def _folder(model: str) -> Path | None:
    """A model's folder: ``model`` itself where it is one (``--models-dir``), else the zoo
    model of that name, else None."""
    from induction.models.registry import local_model_path

    path = Path(model)
    return path if (path / "config.json").is_file() else local_model_path(model)


def _card(model: str) -> dict | None:
    import json

    folder = _folder(model)
    path = folder / "card.json" if folder is not None else None
    return json.loads(path.read_text()) if path is not None and path.is_file() else None


def copied_head_gate(model: str):
    """R4-gate (:func:`ablation.gates.copied_head_before_growth`) of a shipped grown model, or
    None when it did not grow or nothing says where its heads sat before growth. Cards from
    before round 4 keep no per-head scores: they are then measured on the ``-pre`` checkpoint
    of the first growth where the model ships its series (seed 0), with the trainer's monitor
    (distance 32, the checkpoints' own score)."""
    import json

    from ablation.gates import copied_head_before_growth, pre_growth_head_scores
    from lineage.log import LOG_FILE, DuplicationLog

    card, folder = _card(model), _folder(model)
    if not card or not card.get("growth_steps") or not (folder and (folder / LOG_FILE).is_file()):
        return None
    log = DuplicationLog.load(folder / LOG_FILE)
    if pre_growth_head_scores(card) is None:
        first = int(card["growth_steps"][0])
        pre = folder / "checkpoints" / f"step-{first}-pre"
        if not (pre / "config.json").is_file():
            return None
        from transformers import LlamaForCausalLM
        from transformers.utils import logging as hf_logging

        from induction.training.model import induction_head_scores

        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            net = LlamaForCausalLM.from_pretrained(str(pre), torch_dtype="float32")
        finally:
            if bars:
                hf_logging.enable_progress_bar()
        dist = int(json.loads((pre / "card.json").read_text()).get("repeat_len", 32))
        scores = induction_head_scores(net, dist, batch=32, seed=12345)
        entry = {"step": first, "growth": "before", "head_scores": scores.tolist()}
        card = {**card, "checkpoints": [entry]}
    from induction import INDUCTION_THRESHOLD

    return copied_head_before_growth(card, log, INDUCTION_THRESHOLD)


def gate_table(
    models: pd.DataFrame,
    tasks: pd.DataFrame,
    settings: Settings,
    probe: bool = True,
    specs: dict[str, str] | None = None,
) -> pd.DataFrame:
    """One row per model: each gate's numbers and whether it passes; ``testable`` when all do
    (``probe=False`` skips the in-context probe, which loads each model). ``specs``: each
    model's zoo name or folder (``--models-dir``), where its card, log and weights are read;
    by default its name in the zoo."""
    from induction import INDUCTION_THRESHOLD

    chances = task_chances(settings)
    rows = []
    for m in models.to_dict(orient="records"):
        name = m["model"]
        t = tasks[(tasks["model"] == name) & tasks["task"].isin(list(chances))]
        t = t[t["metric"] != "logprob"].drop_duplicates("task")
        above = [
            wilson(float(r.clean), int(r.n))[0] > chances[r.task] for r in t.itertuples()
        ]  # fmt: skip
        chance = float(np.mean([chances[k] for k in t["task"]])) if len(t) else math.nan
        margin = m["clean"] - chance
        # None: no margin over chance to saturate (the above-chance gate already fails)
        pinned = saturated(m["clean"], m["ablated"], chance) if margin > 0 else None
        row = {
            "model": name,
            "family": m["family"],
            "max_induction": m["max_induction"],
            "heads": bool(m["max_induction"] >= INDUCTION_THRESHOLD),
            "tasks_above_chance": int(sum(above)),
            "tasks": len(t),
            "clean": m["clean"],
            "chance": chance,
            "ablated": m["ablated"],
            "above_chance": bool(sum(above) > 0.5 * len(t)) if len(t) else False,
            "saturated": pinned,
        }
        spec = str((specs or {}).get(name) or name)
        before = heads_before_growth(_card(spec))
        row["before_growth"] = None if before is None else before[1]
        row["heads_before_growth"] = (
            None if before is None else bool(before[1] >= INDUCTION_THRESHOLD)
        )
        copied = copied_head_gate(spec)
        row["chance_ancestors"] = _chance_ancestors(spec)
        row["copied_head_before_growth"] = None if copied is None else copied.passed
        row["copied_head"] = "" if copied is None else copied.detail
        if probe:
            row.update(_probe(spec))
        rows.append(row)
    df = pd.DataFrame(rows)
    gates = ["heads"] + (["in_context"] if probe else [])
    # the task metric (F1/EM, the source's), then each verdict readout's suite gate as the
    # ablation computed it (ablation.gates.suite_gate: most tasks above chance, not saturated)
    df["testable"] = df[gates + ["above_chance"]].all(axis=1) & (df["saturated"] == False)  # noqa: E712
    for readout in VERDICT_ORDER:
        col = f"gate_pass_{readout}"
        if col in models.columns:
            df[f"pass_{readout}"] = models[col].fillna(False).astype(bool).to_numpy()
            df[f"testable_{readout}"] = df[gates].all(axis=1) & df[f"pass_{readout}"]
    return df


def _chance_ancestors(spec: str) -> float:
    """A grown model's chance level of ``m`` from its duplication log; NaN for any other."""
    descendants = descendants_per_head(_folder(spec))
    return math.nan if descendants is None else chance_ancestors(descendants)


def with_chance(gates: pd.DataFrame, specs: dict[str, str] | None = None) -> pd.DataFrame:
    """The gate table with its ``chance_ancestors`` column, computed where a stored table
    (written before A11) has none: the level depends on the growth schedule alone."""
    if gates.empty or "chance_ancestors" in gates:
        return gates
    out = gates.copy()
    out["chance_ancestors"] = [
        _chance_ancestors(str((specs or {}).get(m) or m)) for m in out["model"]
    ]  # fmt: skip
    return out


def _probe(name: str) -> dict:
    from induction.models.loading import load_model
    from induction.zoo.probe import gates, probe

    result = probe(load_model(name, device="cpu", threads=1))
    passed = {g.name: g.passed for g in gates(result)}
    return {
        "lookup": result.lookup,
        "lookup_chance": result.lookup_chance,
        "varassign": result.varassign,
        "position_gap": result.position_gap,
        "in_context": all(passed.values()),
    }


def _failures(g: pd.DataFrame, readouts: bool = False) -> str:
    """'17 of 20 models fail in-context; ...' over the gates that fail somewhere
    (``readouts``: each verdict readout's suite gate in place of the task metric's, which
    then decides nothing)."""
    names = {"heads": "induction heads", "in_context": "in-context probe"}
    if readouts:
        names |= {f"pass_{r}": f"the {r} gate (above chance, not saturated)"
                  for r in VERDICT_ORDER}  # fmt: skip
    else:
        names["above_chance"] = "clean above chance"
    parts = []
    for col, label in names.items():
        if col in g and (~g[col].astype(bool)).any():
            parts.append(f"{int((~g[col].astype(bool)).sum())} of {len(g)} fail {label}")
    n_saturated = int((g["saturated"] == True).sum())  # noqa: E712  (None: no margin)
    if n_saturated and not readouts:  # a readout's own gate holds its saturation
        parts.append(f"{n_saturated} of {len(g)} have a saturated drop")
    return "; ".join(parts)


def claims(rep, gates: pd.DataFrame, rule_tvd: float | None = None) -> pd.DataFrame:
    """One row per source claim: ``claim``, ``source``, ``zoo`` (the measured figure),
    ``verdict`` (agree / disagree / untestable here) and ``decided_by``."""
    fams = rep.families.set_index("family")
    by_src: dict[str, list[str]] = {}
    for fam, r in fams.iterrows():
        by_src.setdefault(r["source_family"], []).append(fam)
    comps = rep.comparisons
    rows = []

    models = rep.models

    def drop_claim(claim: str, source: str, a: str, b: str, expect: str) -> None:
        """The verdict's readout is the first of ablation.gates.VERDICT_ORDER whose gates pass
        for every model of both families (docs/replication.md); a record measured before the
        readouts existed is read on its task metric (F1/EM) and the ``testable`` gate."""
        pair = gates[gates["family"].isin([a, b])]
        present = [r for r in VERDICT_ORDER if f"testable_{r}" in pair]
        if present:
            readout = verdict_readout({r: bool(pair[f"testable_{r}"].all()) for r in present})
            col, measure, label, ok = (f"drop_{readout}", f"drop[{readout}]", readout,
                                       bool(pair[f"testable_{readout}"].all()))  # fmt: skip
        else:
            col, measure, label, ok = "drop", "drop", "F1/EM", bool(pair["testable"].all())
        mean_drop = models.groupby("family")[col].mean()
        zoo = f"{label}: {a} {mean_drop[a]:+.3f} vs {b} {mean_drop[b]:+.3f}"
        n_a, n_b = int((models.family == a).sum()), int((models.family == b).sum())
        floor = min_perm_p(n_b, n_a)
        # the smallest Holm-adjusted p the seeds allow: every comparison of the measure at the
        # smallest p its seeds allow (the best case for each)
        same = comps[comps.measure == measure]
        floors = dict(zip(same["family"], holm(same["min_p"].astype(float).tolist()), strict=True))
        holm_floor = floors.get(b, floor)
        names = {f: list(models.loc[models.family == f, "model"]) for f in (a, b)}
        src_family = source_family(b)
        if src_family is None:
            raise ValueError(f"family {b!r} has no known source family")
        scale = ROUND4_SCALES.get(label) if round4 else None
        cells, reading = drop_cells(models.set_index("model"), names[a], names[b],
                                    None if label == "F1/EM" else label, src_family,
                                    n_drop, scale)  # fmt: skip
        if not ok:
            verdict, why = "untestable here", _failures(pair, readouts=bool(present))
        elif floor > ALPHA:
            verdict = "untestable here"
            why = (f"gates pass on {label}, but {n_b} and {n_a} seeds allow no permutation p "
                   f"below {floor:.2g}")  # fmt: skip
        elif holm_floor > ALPHA:
            verdict = "untestable here"
            why = (f"gates pass on {label}, but {n_b} and {n_a} seeds allow no Holm-adjusted p "
                   f"below {holm_floor:.2g} over {len(same)} comparisons")  # fmt: skip
        else:
            c = comps[(comps.family == b) & (comps.measure == measure)]
            p = float(c["p_holm"].iloc[0]) if len(c) else math.nan
            verdict = reading.word
            why = (f"all gates pass on {label}; adjusted intervals: {cells['scales']}; "
                   f"permutation p {p:.2g} (Holm)")  # fmt: skip
        rows.append({"claim": claim, "source": source, "zoo": zoo, "verdict": verdict,
                     "decided_by": why, "families": [a, b], **cells})  # fmt: skip

    dense = (by_src.get("dense") or [None])[0]
    claimed = drop_claim_families(fams.index)  # round 4: R8's three; else every arm (A9)
    round4 = is_round4(fams.index)
    n_drop = len(claimed)  # Holm's m
    for lidas in [f for f in by_src.get("lidas", []) if f in claimed]:
        if dense:
            drop_claim(
                f"top-20% ablation costs LIDAS ({lidas}) more than dense",
                SOURCE_LIDAS,
                dense,
                lidas,
                "more",
            )
    for looped in [f for f in by_src.get("looped", []) if f in claimed]:
        if dense:
            drop_claim(
                f"top-20% ablation costs looped ({looped}) more than dense",
                SOURCE_LOOPED,
                dense,
                looped,
                "more",
            )
    for lidas in by_src.get("lidas", []):
        r = fams.loc[lidas]
        fewest = r.get("src_min_min", r.get("src_min"))
        g = gates[gates["family"] == lidas]
        src = SOURCE["lineage"]
        zoo = f"m = {r['src_ancestors']:.1f} (fewest possible {fewest:.0f})"
        reasons = []
        if fewest is not None and fewest > src["ancestors"]:
            reasons.append(
                f"the growth schedule allows no fewer than {fewest:.0f} ancestors for "
                f"{src['heads']} of {src['top']} heads"
            )
        without = int((~g["heads_before_growth"].map(lambda v: _is(v, True))).sum())
        if g["heads_before_growth"].notna().any() and without:
            reasons.append(
                f"{without} of {len(g)} seeds had no induction head before the first growth"
            )
        if "copied_head_before_growth" in g:  # R4-gate (docs/replication.md)
            for _, m in g[g["copied_head_before_growth"].map(lambda v: _is(v, False))].iterrows():
                reasons.append(f"{m['model']} fails copied head before growth ({m['copied_head']})")
        read: dict = {}
        if reasons:
            verdict, why = "untestable here", "; ".join(reasons)
        else:
            ms = models[models["family"] == lidas].set_index("model")["src_ancestors"]
            verdict, why, read, zoo = read_lineage(ms, _chance_of(gates, ms.index), fewest)
            why = f"reachable and heads formed before growth; {why}"
        copied = r.get("src_copied")
        if copied is not None and copied == copied:
            why += (
                f"; {copied:.1f} of the {src['top']} strongest heads descend from a copied "
                "ancestor (only those can share one)"
            )
        rows.append({"claim": f"{src['heads']} of the {src['top']} strongest heads from "
                     f"{src['ancestors']} ancestors ({lidas})", "source": "m = 2 (3B LIDAS)",
                     "zoo": zoo, "verdict": verdict, "decided_by": why,
                     "families": [lidas], **read})  # fmt: skip
    rows += _growth_timing(rep.models, gates, by_src.get("lidas", []))
    secondary = secondary_claims(rep, gates, by_src)
    if rule_tvd is not None and "tvd_clean" in fams:
        tvds = fams["tvd_clean"]
        beat = tvds < rule_tvd - REGBENCH_MARGIN
        zoo = ", ".join(f"{f} {v:.3f}" for f, v in tvds.items())
        cells: dict = {}
        if not beat.all():
            verdict = "untestable here"
            why = (
                f"{int((~beat).sum())} of {len(beat)} families do not beat the in-context "
                f"letter-frequency rule (TVD {rule_tvd:.3f}) by {REGBENCH_MARGIN}"
            )
        else:
            verdict, why, cells = _regbench_order(models, by_src)
        rows.append({"claim": "RegBench TVD: LIDAS < looped < dense", "source":
                     "0.119 < 0.125 < 0.137", "zoo": zoo, "verdict": verdict,
                     "decided_by": why, "families": list(fams.index), **cells})  # fmt: skip
    if "flops_vs_dense" in fams:
        for lidas in by_src.get("lidas", []):
            saving = 1 - float(fams.loc[lidas, "flops_vs_dense"])
            rows.append({"claim": f"LIDAS saves training FLOPs ({lidas})", "source": "26%",
                         "zoo": f"{saving:.0%}", "verdict": "by design",
                         "decided_by": "set by the growth schedule, not measured",
                         "families": []})  # fmt: skip
    return pd.DataFrame(_mark_pending(rows + secondary, getattr(rep, "pending", [])))


def _regbench_order(models: pd.DataFrame, by_src: dict[str, list[str]]) -> tuple[str, str, dict]:
    """The source's order LIDAS < looped < dense as pairwise claims on the clean TVD over
    seeds (each LIDAS family below each looped and the dense one, each looped below dense;
    docs/replication.md, amendments of 2026-12-05 and "every row from an interval"). Each
    pair's difference (lower minus higher family) is read on the permutation-inverted
    interval at 0.05 / pairs against the source's own difference for that pair: the claim
    *agrees* when every pair does, *disagrees* when a pair's interval excludes the source's
    difference, else it is *inconclusive*; *untestable here* when a kind is missing or the
    seeds allow no p below 0.05 / pairs. The cells are those of the pair that decides."""
    dense, lidas, looped = (
        by_src.get("dense", []),
        by_src.get("lidas", []),
        by_src.get("looped", []),
    )
    pairs = [(lo, hi) for lo in lidas for hi in looped + dense] + [
        (lo, hi) for lo in looped for hi in dense
    ]
    tvd = {f: v.astype(float).dropna() for f, v in models.groupby("family")["tvd_clean"]}
    missing = [f for f in dense + lidas + looped if tvd.get(f) is None or tvd[f].empty]
    if missing or not (dense and lidas and looped):
        what = ", ".join(missing) or "a dense, a LIDAS and a looped family"
        return "untestable here", f"the order needs every kind measured; missing: {what}", {}
    kind = {f: k for k, fams in by_src.items() for f in fams}
    src = SOURCE["tvd"]
    readings = [
        read_shift(tvd[hi], tvd[lo], src[kind[lo]] - src[kind[hi]], m=len(pairs))
        for lo, hi in pairs
    ]
    if not all(r.testable for r in readings):
        floor = max(r.floor for r in readings)
        return "untestable here", (
            f"the seeds allow no p below {floor:.2g}, over {len(pairs)} pairs "
            f"(0.05/{len(pairs)} = {ALPHA / len(pairs):.2g})"
        ), {}  # fmt: skip
    words = [r.word for r in readings]
    verdict = next((w for w in ("disagree", "inconclusive") if w in words), "agree")
    decider = words.index(verdict)
    if verdict == "agree":  # the pair closest to holding nothing: the highest upper end
        decider = int(np.argmax([r.ci_adj[1] for r in readings]))
    parts = [
        f"{lo} - {hi} {r.diff:+.3f} {fmt_ci(r.ci_adj)} (source {r.source:+.3f}): {r.word}"
        for (lo, hi), r in zip(pairs, readings, strict=True)
    ]
    lo, hi = pairs[decider]
    why = (
        f"{words.count(verdict)} of {len(pairs)} pairs {verdict}, adjusted intervals "
        f"(0.05/{len(pairs)}): " + "; ".join(parts) + f"; cells: {lo} - {hi}"
    )
    return verdict, why, difference_cells(readings[decider])


def _mark_pending(rows: list[dict], pending: list[str]) -> list[dict]:
    """A claim that reads a family with a model not measured yet says "pending" instead of a
    verdict read from the seeds measured so far (the order of measuring is no sample); its
    ``zoo`` figure still describes those. Drops each row's ``families`` tag."""
    waiting: dict[str, list[str]] = {}
    for name in pending:
        waiting.setdefault(name.rsplit("-s", 1)[0], []).append(name)
    for row in rows:
        missing = [m for f in row.pop("families", []) for m in waiting.get(f, [])]
        if missing:
            row["verdict"] = "pending"
            row["decided_by"] = f"not measured yet: {', '.join(missing)}"
    return rows


SECONDARY = "on the seeds that pass"
#: The growth-timing row's source cell: no published claim, a declared effect of interest.
TIMING_SOURCE = "not claimed; effect of interest: m = 2 against chance"


def _is(value, expected: bool) -> bool:
    """``value`` is ``expected`` (a bool or numpy bool; None and NaN are neither)."""
    return isinstance(value, bool | np.bool_) and bool(value) is expected


def _passing(gates: pd.DataFrame, family: str, columns: list[str]) -> list[str]:
    """The models of ``family`` whose ``columns`` all hold (missing columns are not read;
    None and NaN do not hold)."""
    g = gates[gates["family"] == family]
    ok = pd.Series(True, index=g.index)
    for col in columns:
        if col in g:
            ok &= g[col].map(lambda v: _is(v, True))
    return list(g.loc[ok, "model"])


def _left_out(gates: pd.DataFrame, families: list[str], kept: list[str]) -> str:
    out = [m for m in gates.loc[gates["family"].isin(families), "model"] if m not in kept]
    return "left out: " + (", ".join(out) if out else "none")


def timing_arms(models: pd.DataFrame, grown: list[str]) -> list[tuple[str, str]]:
    """Pairs (heads first, growth first) of grown families, by design: the family whose first
    growth step comes later was grown after its heads were meant to form (docs/zoo.md, "Two
    growth timings"). Taken from the growth schedule, never from a measured gate. Round 4
    declares one pair (R4-lineage, :data:`.models.ROUND4_TIMING_PAIR`); the schedule would
    also pair its middle-growth arm with the growth-first twin."""
    if "growth_steps" not in models.columns:
        return []
    import json

    def parsed(value) -> list:
        """The row keeps the schedule as JSON text (``measure.py``); lists are taken as is."""
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return []
        return list(value) if isinstance(value, list | tuple | np.ndarray) else []

    first: dict[str, int] = {}
    for fam in grown:
        steps = [min(s) for s in map(parsed, models.loc[models["family"] == fam, "growth_steps"])
                 if s]  # fmt: skip
        if steps:
            first[fam] = min(steps)
    pairs = [(a, b) for a in first for b in first if first[a] > first[b]]
    if is_round4(models["family"]):
        pairs = [pair for pair in pairs if pair == ROUND4_TIMING_PAIR]
    return pairs


def _timing_reasons(gates: pd.DataFrame, a: str, b: str) -> list[str]:
    """What makes the growth-timing comparison of arms ``a`` (heads first) and ``b`` (growth
    first) untestable before the seeds rule: a model without heads, a seed of ``a`` without a
    head before its first growth, a seed of ``b`` with one (or with no record of it)."""
    pair = gates[gates["family"].isin([a, b])]
    reasons = []
    missing = int((~pair["heads"].map(lambda v: _is(v, True))).sum())
    if missing:
        reasons.append(f"{missing} of {len(pair)} models fail induction heads")
    for fam, wanted, what in ((a, True, "no head"), (b, False, "a head")):
        g = gates[gates["family"] == fam]
        off = g[~g["heads_before_growth"].map(lambda v: _is(v, wanted))]
        if len(off):
            # the strongest head the training monitor logged up to the first growth
            # (ablation.gates.heads_before_growth), which decides, named per seed
            scores = ", ".join(
                f"{v:.2f}" if isinstance(v, float) and v == v else "none"
                for v in off["before_growth"]
            )
            reasons.append(
                f"{len(off)} of {len(g)} seeds of {fam} had {what} before the first growth "
                f"(strongest head up to it on the training monitor: {scores})"
            )
    return reasons


def _chance_of(gates: pd.DataFrame, names) -> pd.Series:
    """Each model's chance ``m`` (:func:`~induction.replication.lineage_claim.chance_ancestors`),
    NaN where the gate table has none."""
    if "chance_ancestors" not in gates:
        return pd.Series(math.nan, index=list(names), dtype=float)
    return gates.set_index("model").loc[list(names), "chance_ancestors"].astype(float)


def secondary_claims(rep, gates: pd.DataFrame, by_src: dict[str, list[str]]) -> list[dict]:
    """The secondary verdict (docs/replication.md, "Amendment", fixed before seeds 1-4 were
    measured): each claim whose primary verdict a failing seed decides (a gate the primary
    reads), read again on the seeds that pass the gates the amendment lists, with the same
    tests and seeds rule; Holm over all drop claims, those not tested here counting as p = 1.
    Rows name the seeds left out."""
    models = rep.models.set_index("model")
    rows: list[dict] = []
    dense = (by_src.get("dense") or [None])[0]
    base = ["heads", "in_context"]

    claimed = drop_claim_families(gates["family"])
    compared = [(f, "lidas") for f in by_src.get("lidas", []) if f in claimed]
    compared += [(f, "looped") for f in by_src.get("looped", []) if f in claimed]
    tested: list[tuple] = []  # (row, diff, p, floor, left, dense seeds, arm seeds, readout, src)
    untested = 0  # drop claims without a secondary test: p = 1 in Holm
    for fam, src in compared if dense is not None else []:
        pair = [dense, fam]
        everyone = list(gates.loc[gates["family"].isin(pair), "model"])
        readouts = [r for r in VERDICT_ORDER if f"testable_{r}" in gates]
        per = {r: {f: _passing(gates, f, [f"testable_{r}"]) for f in pair} for r in readouts}
        if not readouts:  # a record measured before the readouts: F1/EM's gate
            per = {"F1/EM": {f: _passing(gates, f, ["testable"]) for f in pair}}
        if any(sorted(k[dense] + k[fam]) == sorted(everyone) for k in per.values()):
            untested += 1  # every model passes a readout: the primary verdict reads it
            continue
        label = next((r for r, k in per.items() if all(k.values())), next(iter(per)))
        col = "drop" if label == "F1/EM" else f"drop_{label}"
        kept = {
            f: [m for m in ms if math.isfinite(float(models.loc[m, col]))]
            for f, ms in per[label].items()
        }
        passed = kept[dense] + kept[fam]
        left = _left_out(gates, pair, passed)
        what = f"LIDAS ({fam})" if src == "lidas" else f"looped ({fam})"
        source = SOURCE_LIDAS if src == "lidas" else SOURCE_LOOPED
        row = {"claim": f"top-20% ablation costs {what} more than dense, {SECONDARY}",
               "source": source, "families": pair}  # fmt: skip
        n_a, n_b = len(kept[dense]), len(kept[fam])
        rows.append(row)
        if not n_a or not n_b:
            untested += 1
            why = f"no seed of a family passes the model and {label} gates; {left}"
            row |= {"zoo": f"{n_a} and {n_b} seeds pass", "verdict": "untestable here",
                    "decided_by": why}  # fmt: skip
            continue
        a = models.loc[kept[dense], col].astype(float)
        b = models.loc[kept[fam], col].astype(float)
        row["zoo"] = (f"{label}: {dense} {a.mean():+.3f} ({n_a} seeds) vs {fam} {b.mean():+.3f} "
                      f"({n_b} seeds)")  # fmt: skip
        floor = min_perm_p(n_a, n_b)
        if floor > ALPHA:
            untested += 1
            row |= {"verdict": "untestable here",
                    "decided_by": f"{n_a} and {n_b} passing seeds allow no permutation p below "
                    f"{floor:.2g}; {left}"}  # fmt: skip
            continue
        t = seed_test(b.tolist(), a.tolist())
        tested.append((row, t.diff, t.p_perm, floor, left, kept[dense], kept[fam], label, src))
    if tested:
        m = len(tested) + untested
        adjusted = holm([t[2] for t in tested] + [1.0] * untested)
        # the seeds rule after Holm: the smallest adjusted p with every claim at its floor
        floors = holm([t[3] for t in tested] + [1.0] * untested)
        round4 = is_round4(gates["family"])
        for (row, diff, p, _, left, ka, kb, label, src), p_holm, best in zip(
            tested, adjusted, floors, strict=False
        ):
            scale = ROUND4_SCALES.get(label) if round4 else None
            cells, reading = drop_cells(models, ka, kb, None if label == "F1/EM" else label,
                                        src, m, scale)  # fmt: skip
            row |= cells
            if best > ALPHA:
                row["verdict"] = "untestable here"
                row["decided_by"] = (f"the passing seeds allow no Holm-adjusted p below "
                                     f"{best:.2g} over {m} drop claims; {left}")  # fmt: skip
                continue
            row["verdict"] = reading.word
            row["decided_by"] = (f"adjusted intervals (0.05/{m}): {cells['scales']}; "
                                 f"permutation p {p:.2g}, Holm {p_holm:.2g} over {m} drop "
                                 f"claims; {left}")  # fmt: skip

    if "src_ancestors" not in models.columns:
        return rows
    grown = by_src.get("lidas", [])
    arms = timing_arms(rep.models, grown)
    growth_first = {b for _, b in arms}
    src = SOURCE["lineage"]
    for fam in grown:
        everyone = list(gates.loc[gates["family"] == fam, "model"])
        # R4-gate as the primary reads it: only a seed recorded without a copied head fails
        # (None: nothing says where its heads sat, e.g. an earlier zoo's seeds without a series)
        no_copy = set()
        if "copied_head_before_growth" in gates:
            fam_gates = gates[gates["family"] == fam]
            failed = fam_gates["copied_head_before_growth"].map(lambda v: _is(v, False))
            no_copy = set(fam_gates.loc[failed, "model"])
        all_before = len(_passing(gates, fam, ["heads_before_growth"])) == len(everyone)
        if fam in growth_first or (all_before and not no_copy):
            continue  # grown before heads by design, or no seed fails what the primary reads
        kept = [m for m in _passing(gates, fam, [*base, "heads_before_growth"]) if m not in no_copy]
        fewest = float(models.loc[everyone, "src_min"].astype(float).min())
        row = {"claim": f"{src['heads']} of the {src['top']} strongest heads from "
               f"{src['ancestors']} ancestors ({fam}), {SECONDARY}",
               "source": "m = 2 (3B LIDAS)", "families": [fam]}  # fmt: skip
        left = _left_out(gates, [fam], kept)
        if not kept:
            row |= {"zoo": "0 seeds pass", "verdict": "untestable here",
                    "decided_by": f"no seed passes; {left}"}  # fmt: skip
        elif fewest > src["ancestors"]:
            why = f"the growth schedule allows no fewer than {fewest:.0f}; {left}"
            row |= {"zoo": f"fewest possible {fewest:.0f}", "verdict": "untestable here",
                    "decided_by": why}  # fmt: skip
        else:
            ms = models.loc[kept, "src_ancestors"]
            verdict, why, cells, zoo = read_lineage(ms, _chance_of(gates, ms.index), fewest)
            why = f"heads formed before growth in these seeds; {why}; {left}"
            row |= {"zoo": zoo, "verdict": verdict, "decided_by": why, **cells}
        rows.append(row)

    for a, b in arms:
        if not _timing_reasons(gates, a, b):
            continue  # nothing the primary reads fails: the seeds rule alone decides it
        kept_a = _passing(gates, a, [*base, "heads_before_growth"])
        late = gates[(gates["family"] == b)].set_index("model")["heads_before_growth"]
        kept_b = [m for m in _passing(gates, b, base) if _is(late[m], False)]
        left = _left_out(gates, [a, b], kept_a + kept_b)
        row = {"claim": f"lineage more concentrated when heads form before growth, {SECONDARY}",
               "source": TIMING_SOURCE, "families": [a, b]}  # fmt: skip
        rows.append(row)
        if not kept_a or not kept_b:
            row |= {"zoo": f"{len(kept_a)} and {len(kept_b)} seeds pass",
                    "verdict": "untestable here",
                    "decided_by": f"no seed of an arm passes; {left}"}  # fmt: skip
            continue
        ma = models.loc[kept_a, "src_ancestors"].astype(float)
        mb = models.loc[kept_b, "src_ancestors"].astype(float)
        row["zoo"] = (f"m: {a} {ma.mean():.1f} ({len(ma)} seeds) vs {b} {mb.mean():.1f} "
                      f"({len(mb)} seeds)")  # fmt: skip
        verdict, why, cells, _ = read_timing(ma, mb, _chance_of(gates, mb.index), "passing seeds")
        row |= {"verdict": verdict, "decided_by": f"{why}; {left}", **cells}
    return rows


def _growth_timing(models: pd.DataFrame, gates: pd.DataFrame, grown: list[str]) -> list[dict]:
    """The zoo's own question beside the source's claims (docs/zoo.md, "Two growth timings"):
    is the strongest heads' lineage more concentrated when heads formed before the first
    growth? One row per pair of grown families, the arms taken from the growth schedule
    (:func:`timing_arms`), comparing ``m`` (fewest ancestors of 10 of the 12 strongest heads)
    over seeds by the exact permutation test; untestable when a model has no induction head,
    a seed of the heads-first arm had no head before its first growth or one of the
    growth-first arm had one, or the seeds are too few."""
    if "src_ancestors" not in models.columns:
        return []
    rows = []
    for a, b in timing_arms(models, grown):
        ma = models[models["family"] == a].set_index("model")["src_ancestors"].astype(float)
        mb = models[models["family"] == b].set_index("model")["src_ancestors"].astype(float)
        zoo = (
            f"m: {a} (heads before growth) {ma.mean():.1f} vs {b} (growth before heads) "
            f"{mb.mean():.1f}"
        )
        reasons = _timing_reasons(gates, a, b)
        cells: dict = {}
        if reasons:
            verdict, why = "untestable here", "; ".join(reasons)
        else:
            verdict, why, cells, _ = read_timing(ma, mb, _chance_of(gates, mb.index))
        rows.append({"claim": "lineage more concentrated when heads form before growth",
                     "source": TIMING_SOURCE, "zoo": zoo, "verdict": verdict,
                     "decided_by": why, "families": [a, b], **cells})  # fmt: skip
    return rows


def gate_markdown(gates: pd.DataFrame) -> str:
    """The gate table, one row per model."""

    def yn(v) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "n/a"
        return "pass" if bool(v) else "FAIL"

    readouts = [r for r in VERDICT_ORDER if f"pass_{r}" in gates]
    head = ["model", "strongest head", "heads before growth", "lookup (chance)",
            "varassign (gap)", "in context", "tasks above chance", "clean (chance)",
            "saturated", "testable (F1/EM)", *(f"{r} gate" for r in readouts)]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in gates.to_dict(orient="records"):
        before = r.get("before_growth")
        cells = [
            r["model"],
            f"{r['max_induction']:.2f} {yn(r['heads'])}",
            "n/a"
            if before is None or before != before
            else f"{before:.2f} {yn(r['heads_before_growth'])}",
            f"{r['lookup']:.2f} ({r['lookup_chance']:.2f})" if "lookup" in r else "-",
            f"{r['varassign']:.2f} ({r['position_gap']:.2f})" if "varassign" in r else "-",
            yn(r.get("in_context")),
            f"{r['tasks_above_chance']} of {r['tasks']} {yn(r['above_chance'])}",
            f"{r['clean']:.3f} ({r['chance']:.3f})",
            "no margin"
            if r["saturated"] is None or r["saturated"] != r["saturated"]
            else ("yes" if r["saturated"] else "no"),
            "yes" if r["testable"] else "no",
            *(yn(r[f"pass_{x}"]) for x in readouts),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: The interval cells of a drop claim (:func:`.intervals.drop_cells`) and their headers.
INTERVAL_COLUMNS = {
    "difference": "difference",
    "interval": "95% interval",
    "ratio": "ratio [adjusted]",
    "detectable": "detectable at 80% power (adjusted)",
    "power": "power for the source's (adjusted)",
    "excess_uniform": "excess over uniform heads [adjusted]",
    "excess_shaped": "excess over layer-shaped heads [adjusted]",
}


def _cell(r: dict, key: str) -> str:
    v = r.get(key)
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def claims_markdown(table: pd.DataFrame) -> str:
    """Every claim with its verdict; a drop claim also with its difference, intervals,
    detectable difference and power (:data:`INTERVAL_COLUMNS`)."""
    extra = [k for k in INTERVAL_COLUMNS if k in table.columns]
    head = ["claim", "source", "zoo", "verdict", "decided by"]
    head += [INTERVAL_COLUMNS[k] for k in extra]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.to_dict(orient="records"):
        cells = [r["claim"], r["source"], r["zoo"], f"**{r['verdict']}**", r["decided_by"]]
        lines.append("| " + " | ".join(cells + [_cell(r, k) for k in extra]) + " |")
    return "\n".join(lines)


#: The words read from an interval (:func:`induction.replication.intervals.word`).
WORDS_READ = ("agree", "disagree", "inconclusive")

#: README's short names of the claims without intervals (:func:`verdict_markdown`).
SHORT_CLAIMS = {
    "10 of the 12 strongest heads from 2 ancestors": "10 of 12 heads from 2 ancestors",
    "lineage more concentrated when heads form before growth": "lineage vs growth timing",
    f", {SECONDARY}": ", passing seeds",
}


def verdict_markdown(table: pd.DataFrame) -> str:
    """README's short verdict table: one row per drop claim (all seeds; on the seeds that
    pass), its word, the difference with its Holm-adjusted interval, the ratio, the
    detectable difference and the power; the other claims' words in one line below, each
    read one with its difference and adjusted interval (the rest: docs/results.md)."""
    import re

    lines = [
        "| arm vs dense, seeds | verdict | difference [adjusted interval] | ratio "
        "[adjusted] | detectable at 80% (adj.) | power for the source's (adj.) |",
        "|---|---|---|---|---|---|",
    ]
    others = []
    for r in table.to_dict(orient="records"):
        arm = re.search(r"\((\w+)\) more than dense", r["claim"])
        if arm is None or "difference" not in r or _cell(r, "difference") == "–":
            if r["verdict"] != "by design":  # set by the schedule: docs/results.md
                claim = r["claim"]
                for long, short in SHORT_CLAIMS.items():
                    claim = claim.replace(long, short)
                read = ""
                if r["verdict"] in WORDS_READ and _cell(r, "difference") != "–":
                    read = f" ({r['difference']} {_cell(r, 'interval').split('adjusted ')[-1]})"
                others.append(f"{claim}: **{r['verdict']}**{read}")
            continue
        seeds = "passing" if r["claim"].endswith(SECONDARY) else "all"
        adjusted = _cell(r, "interval").split("adjusted ")[-1]
        lines.append(f"| {arm.group(1)}, {seeds} | **{r['verdict']}** | "
                     f"{r['difference']} {adjusted} | {r['ratio']} | {r['detectable']} | "
                     f"{r['power']} |")  # fmt: skip
    return "\n".join(lines) + ("\n\nOther claims: " + "; ".join(others) + "." if others else "")


__all__ = [
    "with_chance",
    "claims",
    "claims_markdown",
    "gate_markdown",
    "verdict_markdown",
    "gate_table",
    "secondary_claims",
    "timing_arms",
]
