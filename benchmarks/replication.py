"""Replicate the source's induction-head claims on the zoo: dense vs grown vs looped, 3 seeds.

    python benchmarks/replication.py                     # every shipped zoo model, full settings
    python benchmarks/replication.py --fast              # reduced settings (CI, notebooks)
    python benchmarks/replication.py --families grown --seeds 0 --controls 3
    python benchmarks/replication.py --readme docs/results.md  # and rewrite its results block
    python benchmarks/replication.py --from-results --readme docs/results.md  # block from JSON

For every zoo model (``induction/zoo/models/<family>-s<seed>``) it measures, with the public
APIs of the workbench (the same calls as ``induction scan``, ``induction lineage`` and
``induction ablate``):

- from the model card: the step at which an induction head formed, the training FLOPs and
  their ratio to the dense family's (mean over the dense seeds present; the card's own
  ``flops_vs_dense`` compares against a dense model of the same final depth on the same
  tokens);
- from a scan (:func:`induction.scores.induction_scores`): the largest induction score and the
  number of heads >= 0.4;
- lineage (:func:`lineage.trace`): how many distinct ancestors the top ``n`` heads descend from.
  ``n`` defaults to the number of heads the ablation removes, ``ceil(0.2 x heads)`` (7 of the
  zoo's 32): the source's "10 of the 12 strongest" is about 1-2% of a 3B model's heads, which
  is less than one head here, and tying ``n`` to the ablated set asks whether the heads whose
  removal we measure come from few ancestors. Ancestors are heads of the initial network for
  grown models (16: 4 layers x 4 heads), heads of the stored block for looped models (8: every
  pass of a block layer shares its heads) and, trivially, the heads themselves for dense
  models (the count is ``n``). To make the numbers comparable across families each row also
  gives the fewest ancestors possible (``ceil(n / descendants per ancestor)``) and the mean
  number for ``n`` heads drawn at random (Monte Carlo, seed 0): concentration means fewer
  ancestors than random, not merely few;
- ablation (:func:`ablation.run_ablation` on the ``zoo`` suite): the mean drop over the
  generation tasks (lookup, copy, var_depth0/1: exact match or token F1, the source's "mean F1")
  when the top 20% heads by induction score are zeroed, against ``controls`` random head sets
  of the same size (``ctrl_mean``, ``ctrl_std``, ``z``), and the RegBench TVD drop apart.
  Looped models are ablated per unrolled pass (the same 7 of 32 head-passes as the others) unless
  ``tied`` (a stored head in every pass).

The spread over seeds is the standard deviation over the family's model seeds (3 each); the
source trained one model per configuration. Outputs (atomic, :mod:`induction.io`):
``replication.csv`` (one row per model), ``replication_tasks.csv`` (per task),
``replication_families.csv``, ``replication.json`` (all of it with settings and the markdown
table), ``replication.html`` and ``replication.png`` (when kaleido can export). The markdown
table is printed; the "Replication" section of ``docs/results.md`` is this output.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

FAMILIES = ("dense", "grown", "looped")
#: The source's mean F1 drop over 19 few-shot tasks when the top 20% heads are ablated.
SOURCE_DROP = {"dense": 0.08, "grown": 0.18, "looped": 0.28}
#: What the source says about lineage and cost (3B LIDAS model).
SOURCE_LINEAGE = "10 of the 12 strongest induction heads descend from 2 ancestors (3B LIDAS)"
SOURCE_FLOPS_SAVING = 0.26  # LIDAS spends 26% fewer training FLOPs than dense
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
_NAME = re.compile(r"^(?P<family>[a-z]+)-s(?P<seed>\d+)$")


@dataclass(frozen=True)
class Settings:
    """What is measured and how much work it takes (``fast()`` for CI and notebooks)."""

    frac: float = 0.2  # share of heads ablated (ceil, as `induction ablate --frac`)
    top_n: int | None = None  # heads traced to ancestors; None: as many as are ablated
    controls: int = 10  # random head sets per model
    n_items: int = 64  # items per zoo task
    prompt_seeds: tuple[int, ...] = (0,)  # task draws (the zoo suite's seed)
    tasks: tuple[str, ...] | None = None  # zoo suite tasks (None: all five)
    scan_seeds: tuple[int, ...] = (0, 1, 2)
    scan_batch: int = 32
    tied: bool = False  # looped: ablate a stored head in every pass
    mode: str = "zero"
    batch_size: int = 32
    null_samples: int = 2000  # Monte Carlo draws for the random-ancestor expectation

    @classmethod
    def fast(cls, **overrides) -> Settings:
        """Reduced settings: seconds per model on two CPU cores."""
        base = cls(
            controls=2,
            n_items=8,
            tasks=("copy", "var_depth0"),  # a positive control and one measured task
            scan_seeds=(0,),
            scan_batch=8,
            null_samples=500,
        )
        return replace(base, **overrides)


@dataclass(frozen=True)
class ModelRef:
    family: str
    seed: int
    spec: str  # zoo name or folder

    @property
    def name(self) -> str:
        return f"{self.family}-s{self.seed}"


@dataclass
class Measured:
    row: dict
    tasks: pd.DataFrame
    scores: pd.DataFrame
    sentence: str = ""
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- models


def discover(
    families: Iterable[str] = FAMILIES,
    seeds: Iterable[int] | None = None,
    models_dir: str | Path | None = None,
    one_per_family: bool = False,
) -> list[ModelRef]:
    """The zoo models present (family x seed), in family then seed order.

    ``models_dir`` reads ``<family>-s<seed>`` checkpoint folders from another folder instead
    of the shipped zoo; ``one_per_family`` keeps the lowest seed of each family.
    """
    families = tuple(families)
    wanted = None if seeds is None else {int(s) for s in seeds}
    if models_dir is None:
        from induction.zoo.registry import zoo_models

        names = [(n, n) for n in zoo_models()]
    else:
        root = Path(models_dir)
        names = [
            (p.name, str(p))
            for p in sorted(root.iterdir())
            if p.is_dir() and (p / "config.json").is_file()
        ]
    refs = []
    for name, spec in names:
        m = _NAME.match(name)
        if not m or m["family"] not in families:
            continue
        seed = int(m["seed"])
        if wanted is not None and seed not in wanted:
            continue
        refs.append(ModelRef(m["family"], seed, spec))
    refs.sort(key=lambda r: (families.index(r.family), r.seed))
    if one_per_family:
        seen: set[str] = set()
        refs = [r for r in refs if not (r.family in seen or seen.add(r.family))]
    return refs


# --------------------------------------------------------------------------- one model


def n_ablated(settings: Settings, n_heads_total: int) -> int:
    from ablation.selection import n_selected

    return n_selected(settings.frac, n_heads_total)


def ancestor_counts(
    primary: dict[tuple[int, int], tuple[int, int]],
    top: Sequence[tuple[int, int]],
    samples: int,
    seed: int = 0,
) -> dict:
    """How concentrated the ancestry of the ``top`` heads is, against random head sets.

    ``primary`` maps every head ``(layer, head)`` of the final model to its primary ancestor
    ``(layer, head)``. Returned: distinct ancestor heads (``top_ancestors``) and ancestor
    layers (``top_layers``) of the top heads, the pool sizes, the fewest possible
    (``ceil(n / most descendants of one ancestor)``) and the mean for ``n`` heads drawn at
    random without replacement (``samples`` Monte Carlo draws).
    """
    heads = sorted(primary)
    n = len(top)
    out: dict = {"top_n": n}
    for key, of in (("ancestors", lambda a: a), ("layers", lambda a: a[0])):
        labels = sorted({of(a) for a in primary.values()})
        index = {a: i for i, a in enumerate(labels)}
        anc = np.array([index[of(primary[h])] for h in heads])
        per = np.bincount(anc, minlength=len(labels))
        rng = np.random.default_rng(seed)
        draws = [len(set(anc[rng.choice(len(heads), n, replace=False)])) for _ in range(samples)]
        pool = "ancestor_pool" if key == "ancestors" else "layer_pool"
        out[f"top_{key}"] = len({of(primary[h]) for h in top})
        out[pool] = len(labels)
        out[f"min_{key}"] = math.ceil(n / int(per.max()))
        out[f"random_{key}"] = float(np.mean(draws)) if draws else float("nan")
    return out


def _lineage(loaded, scores: pd.DataFrame, top_n: int, settings: Settings) -> tuple[dict, str]:
    """Ancestor counts of the top heads; dense models are their own ancestors."""
    info = loaded.info
    ranked = scores.sort_values(["induction", "layer", "head"], ascending=[False, True, True])
    top = [(int(r.layer), int(r.head)) for r in ranked.head(top_n).itertuples()]
    if loaded.duplication_log_path is None and loaded.loop_plan is None:
        heads = [(la, h) for la in range(info.n_layers) for h in range(info.n_heads)]
        counts = ancestor_counts({h: h for h in heads}, top, settings.null_samples)
        layers = sorted({la for la, _ in top})
        sentence = (
            f"dense: the top {top_n} heads are their own {top_n} ancestors, in "
            f"{len(layers)} of {info.n_layers} layers ({', '.join(f'L{la}' for la in layers)})"
        )
        counts["headline_heads"], counts["headline_ancestors"] = top_n, top_n
        return counts, sentence
    import lineage

    result = lineage.trace(loaded, scores=scores, top=top_n)
    anc = result.ancestry
    prim = anc[anc["primary"]]
    primary = {
        (int(r.layer), int(r.head)): (int(r.ancestor_layer), int(r.ancestor_head))
        for r in prim.itertuples()
    }
    counts = ancestor_counts(primary, top, settings.null_samples)
    s = result.summary
    assert counts["top_ancestors"] == s.n_distinct, (counts, s.n_distinct)
    counts["headline_heads"] = s.headline_heads
    counts["headline_ancestors"] = len(s.headline_ancestors)
    detail = getattr(s, "detail", "")
    return counts, s.sentence + (f" {detail}" if detail else "")


def measure(ref: ModelRef, settings: Settings, progress: bool = False) -> Measured:
    """Scan, trace and ablate one zoo model; returns its table row and per-task report."""
    from ablation import AblationConfig, ablate
    from induction import induction_scores, load_model
    from induction.scores import INDUCTION_THRESHOLD

    start = time.perf_counter()
    loaded = load_model(ref.spec, device="cpu")
    info = loaded.info
    card = loaded.card or {}
    scores = induction_scores(
        loaded,
        scores=["induction"],
        seeds=settings.scan_seeds,
        batch=settings.scan_batch,
        progress=False,
    )
    n_total = int(info.n_layers) * int(info.n_heads)
    n_abl = n_ablated(settings, n_total)
    top_n = settings.top_n or n_abl
    counts, sentence = _lineage(loaded, scores, top_n, settings)

    seeds = list(settings.prompt_seeds)
    if seeds != list(range(seeds[0], seeds[0] + len(seeds))):
        raise ValueError(f"prompt seeds must be consecutive, got {seeds}")
    result = ablate(
        loaded,
        AblationConfig(
            frac=settings.frac,
            suite="zoo",
            tasks=settings.tasks,
            mode=settings.mode,
            controls=settings.controls,
            tied=settings.tied and loaded.loop_plan is not None,
            n_items=settings.n_items,
            seed=seeds[0],
            prompt_seeds=len(seeds),
            batch=settings.batch_size,
            cache=False,
        ),
        scores=scores,
        progress=progress,
    )
    plan, report = result.plan, result.to_frame()
    mean = report[report["task"] == "MEAN"].iloc[0]
    tvd = report[report["metric"] == "tvd"]

    row = {
        "model": ref.name,
        "family": ref.family,
        "seed": ref.seed,
        "layers": int(info.n_layers),
        "heads": n_total,
        "formed_step": card.get("formed_at_step"),
        "train_steps": card.get("steps"),
        "train_seconds": card.get("train_seconds"),
        "train_flops": card.get("train_flops"),
        "card_flops_vs_dense": card.get("flops_vs_dense"),
        "max_induction": float(scores["induction"].max()),
        "induction_heads": int((scores["induction"] >= INDUCTION_THRESHOLD).sum()),
        **counts,
        "top_above": int(
            (scores["induction"].nlargest(counts["top_n"]) >= INDUCTION_THRESHOLD).sum()
        ),
        "n_ablated": len(plan.expand(plan.target)),
        "ablated_heads": ",".join(f"{la}.{h}" for la, h in plan.target),
        "clean": float(mean["clean"]),
        "ablated": float(mean["ablated"]),
        "drop": float(mean["drop"]),
        "ctrl_mean": float(mean["ctrl_mean"]),
        "ctrl_std": float(mean["ctrl_std"]),
        "z": float(mean["z"]),
        "excess": float(mean["drop"] - mean["ctrl_mean"]),
        "rel_drop": _ratio(mean["drop"], mean["clean"]),
        "ctrl_rel": _ratio(mean["ctrl_mean"], mean["clean"]),
        "ctrl_drops": mean["ctrl_drops"],
        "tvd_drop": float(tvd["drop"].iloc[0]) if len(tvd) else float("nan"),
        "tvd_ctrl_mean": float(tvd["ctrl_mean"].iloc[0]) if len(tvd) else float("nan"),
    }
    report.insert(0, "model", ref.name)
    report.insert(1, "family", ref.family)
    report.insert(2, "seed", ref.seed)
    return Measured(
        row=row,
        tasks=report,
        scores=scores,
        sentence=sentence,
        seconds=time.perf_counter() - start,
    )


# --------------------------------------------------------------------------- the table


@dataclass
class Replication:
    models: pd.DataFrame  # one row per model
    tasks: pd.DataFrame  # one row per model x task
    families: pd.DataFrame  # one row per family
    settings: Settings
    sentences: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def markdown(self) -> str:
        return markdown_tables(self.models, self.families)


def replicate(
    refs: Sequence[ModelRef] | None = None,
    settings: Settings | None = None,
    progress: bool = False,
    log=print,
) -> Replication:
    """Measure every model of ``refs`` (default: all shipped zoo models) and summarise."""
    settings = settings or Settings()
    refs = discover() if refs is None else list(refs)
    if not refs:
        from induction.errors import InputError

        raise InputError("no zoo models found; train them with `induction zoo train`")
    start = time.perf_counter()
    rows, task_tables, sentences = [], [], {}
    for ref in refs:
        m = measure(ref, settings, progress=progress)
        rows.append(m.row)
        task_tables.append(m.tasks)
        sentences[ref.name] = m.sentence
        if log:
            log(
                f"{ref.name}: drop {m.row['drop']:+.3f} (random {m.row['ctrl_mean']:+.3f} ± "
                f"{m.row['ctrl_std']:.3f}); top {m.row['top_n']} heads from "
                f"{m.row['top_ancestors']} ancestors; {m.seconds:.0f} s"
            )
    models = add_flops_ratio(pd.DataFrame(rows))
    tasks = pd.concat(task_tables, ignore_index=True)
    return Replication(
        models=models,
        tasks=tasks,
        families=family_summary(models),
        settings=settings,
        sentences=sentences,
        seconds=time.perf_counter() - start,
    )


def add_flops_ratio(models: pd.DataFrame) -> pd.DataFrame:
    """``flops_vs_dense``: training FLOPs over the dense family's mean (NaN without dense)."""
    models = models.copy()
    dense = models.loc[models["family"] == "dense", "train_flops"].dropna()
    base = float(dense.mean()) if len(dense) else float("nan")
    models["flops_vs_dense"] = models["train_flops"].astype(float) / base
    return models


def _std(values) -> float:
    values = [float(v) for v in values if v == v]
    return float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")


def family_summary(models: pd.DataFrame) -> pd.DataFrame:
    """Per family: means and the spread over seeds; random controls pooled over every draw."""
    import json

    rows = []
    for fam in [f for f in FAMILIES if f in set(models["family"])]:
        g = models[models["family"] == fam]
        pooled = [d for s in g["ctrl_drops"] for d in json.loads(s)]
        rows.append(
            {
                "family": fam,
                "seeds": len(g),
                "formed_step": _mean(g["formed_step"]),
                "train_flops": _mean(g["train_flops"]),
                "flops_vs_dense": _mean(g["flops_vs_dense"]),
                "max_induction": _mean(g["max_induction"]),
                "max_induction_std": _std(g["max_induction"]),
                "top_n": int(g["top_n"].iloc[0]),
                "top_ancestors": _mean(g["top_ancestors"]),
                "top_ancestors_std": _std(g["top_ancestors"]),
                "random_ancestors": _mean(g["random_ancestors"]),
                "min_ancestors": int(g["min_ancestors"].iloc[0]),
                "ancestor_pool": int(g["ancestor_pool"].iloc[0]),
                "top_layers": _mean(g["top_layers"]),
                "top_layers_std": _std(g["top_layers"]),
                "random_layers": _mean(g["random_layers"]),
                "min_layers": int(g["min_layers"].iloc[0]),
                "layer_pool": int(g["layer_pool"].iloc[0]),
                "top_above": _mean(g["top_above"]),
                "clean": _mean(g["clean"]),
                "clean_std": _std(g["clean"]),
                "drop": _mean(g["drop"]),
                "drop_std": _std(g["drop"]),
                "ctrl_mean": float(np.mean(pooled)) if pooled else float("nan"),
                "ctrl_std": _std(pooled),
                "excess": _mean(g["excess"]),
                "rel_drop": _mean(_ratio(d, c) for d, c in zip(g["drop"], g["clean"])),
                "rel_drop_std": _std(_ratio(d, c) for d, c in zip(g["drop"], g["clean"])),
                "ctrl_rel": _mean(_ratio(d, c) for d, c in zip(g["ctrl_mean"], g["clean"])),
                "z": _mean(g["z"]),
                "z_seeds": ", ".join(_f(z, ".1f", signed=True) for z in g["z"]),
                "z_ge2": int(sum(float(z) >= 2 for z in g["z"] if z == z)),
                "source_drop": SOURCE_DROP[fam],
            }
        )
    return pd.DataFrame(rows)


def _ratio(a, b) -> float:
    """``a / b``; NaN when ``b`` is zero or missing (a model that solves nothing clean)."""
    a, b = float(a), float(b)
    return a / b if b == b and b > 0 else float("nan")


def _nan0(v) -> float:
    return 0.0 if v is None or v != v else float(v)


def _mean(values) -> float:
    values = [float(v) for v in values if v is not None and v == v]
    return float(np.mean(values)) if values else float("nan")


def verdict(families: pd.DataFrame) -> list[str]:
    """Plain sentences comparing the measured family table with the source's claims."""
    out = []
    fam = {r.family: r for r in families.itertuples(index=False)}
    for r in fam.values():
        spread = f" ± {r.drop_std:.3f}" if r.drop_std == r.drop_std else ""
        if r.z_ge2 == r.seeds:
            how = "clearly worse than random heads in every seed (z >= 2)"
        elif r.z >= 1:
            how = (
                f"worse than random heads on average, but z >= 2 in only {r.z_ge2} of "
                f"{r.seeds} seed(s)"
            )
        else:
            how = "not distinguishable from random heads"
        out.append(
            f"{r.family}: ablating the top 20% heads drops the mean task score by "
            f"{r.drop:+.3f}{spread} over {r.seeds} seed(s) (source {r.source_drop:.2f}); random "
            f"heads {r.ctrl_mean:+.3f} ± {r.ctrl_std:.3f}; z per seed {r.z_seeds}: {how}."
        )
    present = [f for f in FAMILIES if f in fam]
    if len(present) > 1:
        order = sorted(present, key=lambda f: fam[f].drop)
        source_order = sorted(present, key=lambda f: SOURCE_DROP[f])
        same = order == source_order
        out.append(
            "Order of the drops: "
            + " < ".join(f"{f} ({fam[f].drop:+.3f})" for f in order)
            + ("; the source's order is the same." if same else "; the source's order is ")
            + ("" if same else " < ".join(source_order) + ".")
        )
        close = [
            f"{a} and {b}"
            for a, b in zip(order, order[1:])
            if not abs(fam[b].drop - fam[a].drop)
            > max(_nan0(fam[a].drop_std), _nan0(fam[b].drop_std))
        ]
        if close:
            out.append(
                "Within the spread over seeds (one sd, or equal with one seed): "
                + "; ".join(close)
                + "."
            )
        ratios = [fam[f].drop / SOURCE_DROP[f] for f in present]
        out.append(
            "Size: the measured drops are "
            + ", ".join(f"{x:.1f}x" for x in ratios)
            + " the source's ("
            + ", ".join(present)
            + ")."
        )
        out.append(
            "Clean scores differ, and a drop cannot exceed the clean score: clean "
            + ", ".join(f"{f} {fam[f].clean:.3f}" for f in present)
            + "; relative to it the top-20% drop is "
            + ", ".join(f"{f} {fam[f].rel_drop:.0%}" for f in present)
            + " and random heads' "
            + ", ".join(f"{f} {fam[f].ctrl_rel:.0%}" for f in present)
            + "."
        )
    for f in present:
        r = fam[f]
        what = {"dense": "model", "grown": "initial network", "looped": "stored block"}[f]
        heads = (
            f"{r.top_ancestors:.1f} of the {what}'s {r.ancestor_pool} heads (fewest possible "
            f"{r.min_ancestors}, random heads {r.random_ancestors:.1f})"
        )
        layers = (
            f"{r.top_layers:.1f} of its {r.layer_pool} layers (fewest {r.min_layers}, random "
            f"{r.random_layers:.1f})"
        )
        if f == "dense":
            out.append(
                f"dense: the top {r.top_n} heads are their own ancestors; they sit in {layers}."
            )
            continue
        conc_h = r.top_ancestors < r.random_ancestors - 0.5
        conc_l = r.top_layers < r.random_layers - 0.5
        out.append(
            f"{f}: the top {r.top_n} heads ({r.top_above:.1f} of them >= 0.4 on average) "
            f"descend from {heads} and {layers}: by head "
            + ("more concentrated than chance" if conc_h else "no more concentrated than chance")
            + ", by layer "
            + ("more concentrated than chance." if conc_l else "no more concentrated than chance.")
        )
    if "grown" in fam and fam["grown"].flops_vs_dense == fam["grown"].flops_vs_dense:
        ratio = fam["grown"].flops_vs_dense
        out.append(
            f"Training FLOPs: grown {ratio:.2f}x dense ({1 - ratio:.0%} fewer; source "
            f"{SOURCE_FLOPS_SAVING:.0%} fewer)"
            + (
                f"; looped {fam['looped'].flops_vs_dense:.2f}x (same unrolled depth)."
                if "looped" in fam
                else "."
            )
        )
    return out


# --------------------------------------------------------------------------- formatting


def _f(v, spec: str = ".3f", signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return format(float(v), ("+" if signed else "") + spec)


def _pm(mean, std, spec: str = ".3f", signed: bool = True) -> str:
    text = _f(mean, spec, signed)
    return text if std is None or std != std else f"{text} ± {_f(std, spec)}"


def _pct(v) -> str:
    return "–" if v is None or v != v else f"{float(v):.0%}"


def _flops(v) -> str:
    return "–" if v is None or v != v else f"{float(v):.2e}"


def _md(header: list[str], rows: list[list[str]], align: str) -> str:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |")
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def markdown_tables(models: pd.DataFrame, families: pd.DataFrame) -> str:
    """Two markdown tables: families x seeds, then the family means next to the source."""
    top_n = int(models["top_n"].iloc[0]) if len(models) else 0
    header = [
        "model",
        "formed at step",
        "train FLOPs",
        "vs dense",
        "max induction (heads ≥ 0.4)",
        f"top-{top_n} ancestor heads (random)",
        "ancestor layers (random)",
        "clean",
        "top-20% drop (of clean)",
        "random heads drop",
        "z",
    ]
    rows = []
    for r in models.itertuples(index=False):
        formed = (
            "–"
            if r.formed_step is None or r.formed_step != r.formed_step
            else str(int(r.formed_step))
        )
        rows.append(
            [
                r.model,
                formed,
                _flops(r.train_flops),
                _f(r.flops_vs_dense, ".2f"),
                f"{_f(r.max_induction, '.2f')} ({int(r.induction_heads)})",
                f"{int(r.top_ancestors)} of {r.ancestor_pool} ({r.random_ancestors:.1f})",
                f"{int(r.top_layers)} of {r.layer_pool} ({r.random_layers:.1f})",
                _f(r.clean),
                f"{_f(r.drop, signed=True)} ({_pct(_ratio(r.drop, r.clean))})",
                _pm(r.ctrl_mean, r.ctrl_std),
                _f(r.z, ".1f", signed=True),
            ]
        )
    per_model = _md(header, rows, "lrrrrrrrrrr")
    fheader = [
        "family",
        "seeds",
        "clean",
        "top-20% drop (mean ± sd over seeds)",
        "relative",
        "random heads",
        "random, relative",
        "source drop",
        "FLOPs vs dense",
        f"top-{top_n} ancestor heads (fewest, random)",
        "ancestor layers (fewest, random)",
    ]
    frows = []
    for r in families.itertuples(index=False):
        frows.append(
            [
                r.family,
                str(r.seeds),
                _pm(r.clean, r.clean_std, signed=False),
                _pm(r.drop, r.drop_std),
                _pct(r.rel_drop),
                _pm(r.ctrl_mean, r.ctrl_std),
                _pct(r.ctrl_rel),
                f"{r.source_drop:.2f}",
                _f(r.flops_vs_dense, ".2f"),
                f"{_pm(r.top_ancestors, r.top_ancestors_std, '.1f', False)} of "
                f"{r.ancestor_pool} ({r.min_ancestors}, {r.random_ancestors:.1f})",
                f"{_pm(r.top_layers, r.top_layers_std, '.1f', False)} of "
                f"{r.layer_pool} ({r.min_layers}, {r.random_layers:.1f})",
            ]
        )
    return per_model + "\n\n" + _md(fheader, frows, "lrrrrrrrrrr")


def task_table(tasks: pd.DataFrame) -> str:
    """Markdown: per family and task, the top-20% drop and the random heads' drop (means over
    seeds), so one sees which abilities go."""
    if tasks is None or tasks.empty or "family" not in tasks.columns:
        return ""
    t = tasks[tasks["task"] != "MEAN"]
    names = list(dict.fromkeys(t["task"]))
    header = ["family"] + [f"{n} ({t[t.task == n].metric.iloc[0]})" for n in names]
    rows = []
    for fam in [f for f in FAMILIES if f in set(t["family"])]:
        g = t[t["family"] == fam]
        cells = [fam]
        for n in names:
            x = g[g["task"] == n]
            cells.append(
                f"{_f(x['clean'].mean(), '.2f')} → {_f(x['drop'].mean(), '.2f', True)} "
                f"(random {_f(x['ctrl_mean'].mean(), '.2f', True)})"
            )
        rows.append(cells)
    return _md(header, rows, "l" + "r" * len(names))


def figure(models: pd.DataFrame, families: pd.DataFrame, title: str | None = None):
    """Left: top-20% drop per family (mean ± sd over seeds, seeds as points), random controls
    (pooled mean ± sd) and the source's value. Right: ancestors of the top heads vs random."""
    from plotly.subplots import make_subplots

    fams = list(families["family"])
    pos = {f: i for i, f in enumerate(fams)}
    top_n = int(families["top_n"].iloc[0]) if len(families) else 0
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.62, 0.38],
        subplot_titles=(
            "mean drop over zoo tasks, top 20% heads zeroed",
            f"distinct ancestor heads | layers of the top {top_n} heads",
        ),
    )
    left = [pos[f] - 0.2 for f in fams]
    fig.add_bar(
        x=left,
        y=families["drop"],
        width=0.38,
        error_y={"type": "data", "array": families["drop_std"].fillna(0)},
        name="top 20% by induction (mean ± sd over seeds)",
        marker_color="#1f77b4",
        row=1,
        col=1,
    )
    fig.add_bar(
        x=[pos[f] + 0.2 for f in fams],
        y=families["ctrl_mean"],
        width=0.38,
        error_y={"type": "data", "array": families["ctrl_std"].fillna(0)},
        name="random heads (mean ± sd, all draws)",
        marker_color="#aaaaaa",
        row=1,
        col=1,
    )
    fig.add_scatter(
        x=[pos[f] - 0.2 for f in models["family"]],
        y=models["drop"],
        mode="markers",
        marker={"color": "#08306b", "size": 8, "symbol": "circle-open", "line": {"width": 2}},
        name="one seed",
        text=models["model"],
        row=1,
        col=1,
    )
    fig.add_scatter(
        x=left,
        y=[SOURCE_DROP[f] for f in fams],
        mode="markers",
        marker={"color": "#d62728", "size": 13, "symbol": "diamond"},
        name="source (mean F1 drop, 19 tasks)",
        row=1,
        col=1,
    )
    for key, shift, color in (("ancestors", -0.2, "#2ca02c"), ("layers", 0.2, "#98df8a")):
        xs = [pos[f] + shift for f in fams]
        fig.add_bar(
            x=xs,
            y=families[f"top_{key}"],
            width=0.38,
            error_y={"type": "data", "array": families[f"top_{key}_std"].fillna(0)},
            name=f"ancestor {'heads' if key == 'ancestors' else 'layers'} of the top heads",
            marker_color=color,
            row=1,
            col=2,
        )
        fig.add_scatter(
            x=xs,
            y=families[f"random_{key}"],
            mode="markers",
            marker={"color": "#333333", "size": 18, "symbol": "line-ew-open", "line": {"width": 3}},
            name="random heads (expected)",
            showlegend=key == "ancestors",
            row=1,
            col=2,
        )
    fig.update_xaxes(tickvals=list(range(len(fams))), ticktext=fams, row=1, col=1)
    fig.update_xaxes(tickvals=list(range(len(fams))), ticktext=fams, row=1, col=2)
    fig.update_layout(
        barmode="group",
        title=title or "Replication on the zoo: dense vs grown (LIDAS) vs looped",
        template="plotly_white",
        height=460,
        width=1000,
        legend={"orientation": "h", "y": -0.18},
    )
    fig.update_yaxes(title_text="drop (positive = worse)", row=1, col=1)
    fig.update_yaxes(title_text="ancestors", rangemode="tozero", row=1, col=2)
    return fig


# --------------------------------------------------------------------------- outputs


def write_outputs(rep: Replication, out_dir: str | Path, png: bool = True) -> list[str]:
    """Write tables, JSON and the figure atomically; returns what was written (and notes)."""
    from induction.io import write_json, write_table
    from induction.plots import save_figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [
        str(write_table(rep.models, out / "replication.csv")),
        str(write_table(rep.tasks, out / "replication_tasks.csv")),
        str(write_table(rep.families, out / "replication_families.csv")),
    ]
    payload = {
        "settings": asdict(rep.settings),
        "source": {
            "drop": SOURCE_DROP,
            "lineage": SOURCE_LINEAGE,
            "flops_saving_grown": SOURCE_FLOPS_SAVING,
        },
        "seconds": round(rep.seconds, 1),
        "models": rep.models.to_dict(orient="records"),
        "families": rep.families.to_dict(orient="records"),
        "sentences": rep.sentences,
        "markdown": rep.markdown(),
    }
    written.append(str(write_json(out / "replication.json", _clean(payload))))
    fig = figure(rep.models, rep.families)
    save_figure(fig, out / "replication.html")
    written.append(str(out / "replication.html"))
    if png:
        note = save_figure(fig, out / "replication.png")
        written.append(note or str(out / "replication.png"))
    return written


def _clean(obj: Any) -> Any:
    """NaN -> None, numpy scalars -> Python, recursively (strict JSON)."""
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, str):
        obj = obj.item()
    if isinstance(obj, float) and math.isnan(obj):
        return None
    return obj


def load_results(out_dir: str | Path = DEFAULT_OUT) -> Replication | None:
    """The last written replication (``replication.json``), or None."""
    import json

    path = Path(out_dir) / "replication.json"
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    tasks_path = Path(out_dir) / "replication_tasks.csv"
    tasks = pd.read_csv(tasks_path) if tasks_path.is_file() else pd.DataFrame()
    settings = Settings(
        **{
            k: tuple(v) if isinstance(v, list) else v
            for k, v in data["settings"].items()
            if k in Settings.__dataclass_fields__
        }
    )
    models = pd.DataFrame(data["models"]).astype({"ctrl_drops": str}).fillna(np.nan)
    return Replication(
        models=models,
        tasks=tasks,
        families=family_summary(models),  # recomputed: summaries added later apply too
        settings=settings,
        sentences=data.get("sentences", {}),
        seconds=float(data.get("seconds") or 0.0),
    )


README_START = "<!-- replication:start -->"
README_END = "<!-- replication:end -->"


def readme_block(
    rep: Replication, figure_path: str = "../benchmarks/results/replication.png"
) -> str:
    """The generated block of ``docs/results.md`` (the figure path is relative to ``docs/``):
    command, settings, figure, tables and verdict."""
    s = rep.settings
    n = len(rep.models)
    tasks = ", ".join(s.tasks) if s.tasks else "the whole zoo suite"
    lines = [
        README_START,
        "Generated by `python benchmarks/replication.py --readme docs/results.md` "
        f"({n} models, {rep.seconds / 60:.0f} min on 2 CPU cores shared with other jobs; "
        "`--fast` for reduced settings). Outputs in `benchmarks/results/` (CSV, JSON, HTML "
        "figure).",
        "",
        f"Settings: top {s.frac:.0%} heads by induction score zeroed, {s.controls} random-head "
        f"controls per model, {s.n_items} items per task ({tasks}), prompt seed(s) "
        f"{', '.join(map(str, s.prompt_seeds))}; scan {len(s.scan_seeds)} seeds x "
        f"{s.scan_batch} prompts; looped models ablated "
        + ("tied across passes" if s.tied else "per unrolled pass")
        + ". Drop = mean over the generation tasks (EM/F1); positive = worse.",
        "",
        f"![replication figure]({figure_path})",
        "",
        rep.markdown(),
        "",
        "Per task (mean over seeds): clean score → drop with the top 20% ablated (random heads' "
        "drop); RegBench is TVD (lower is better, drop = increase) and next-letter accuracy.",
        "",
        task_table(rep.tasks),
        "",
        *[f"- {line}" for line in verdict(rep.families)],
        README_END,
    ]
    return "\n".join(lines)


def update_readme(path: str | Path, rep: Replication) -> Path:
    """Replace the block between the replication markers of ``path`` (atomic write)."""
    from induction.errors import InputError
    from induction.io import write_text

    path = Path(path)
    text = path.read_text()
    if README_START not in text or README_END not in text:
        raise InputError(f"{path} has no {README_START} ... {README_END} block")
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    return write_text(path, head + readme_block(rep) + tail)


# --------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast", action="store_true", help="reduced settings (CI, notebooks)")
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    ap.add_argument("--seeds", nargs="+", type=int, default=None, help="model seeds")
    ap.add_argument("--models-dir", default=None, help="folder of <family>-s<seed> checkpoints")
    ap.add_argument("--controls", type=int, default=None)
    ap.add_argument("--n-items", type=int, default=None)
    ap.add_argument("--top", type=int, default=None, help="heads traced to ancestors")
    ap.add_argument("--tied", action="store_true", help="looped: ablate tied across passes")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (default 1: the zoo models are tiny, and on a busy 2-core "
        "machine two threads made every matmul ~50x slower); 0 keeps torch's default",
    )
    ap.add_argument("--out-dir", default=str(DEFAULT_OUT))
    ap.add_argument("--no-png", action="store_true")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument(
        "--readme",
        default=None,
        help="rewrite the replication block of this Markdown file (docs/results.md)",
    )
    ap.add_argument(
        "--from-results",
        action="store_true",
        help="do not measure: rewrite outputs (and --readme) from --out-dir's replication.json",
    )
    args = ap.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    settings = Settings.fast() if args.fast else Settings()
    overrides = {
        "controls": args.controls,
        "n_items": args.n_items,
        "top_n": args.top,
        "tied": args.tied or None,
    }
    settings = replace(settings, **{k: v for k, v in overrides.items() if v is not None})
    if args.from_results:
        rep = load_results(args.out_dir)
        if rep is None:
            print(f"error: no replication.json in {args.out_dir}", file=sys.stderr)
            return 2
        for path in write_outputs(rep, args.out_dir, png=not args.no_png):
            print(f"wrote {path}", file=sys.stderr)
        if args.readme:
            print(f"wrote {update_readme(args.readme, rep)}", file=sys.stderr)
        print(rep.markdown())
        return 0
    refs = discover(args.families, args.seeds, args.models_dir)
    if not refs:
        print("error: no zoo models found (induction models lists them)", file=sys.stderr)
        return 2
    from induction.loading import quiet_libraries

    quiet_libraries()
    rep = replicate(refs, settings, progress=args.progress, log=lambda s: print(s, file=sys.stderr))
    for path in write_outputs(rep, args.out_dir, png=not args.no_png):
        print(f"wrote {path}", file=sys.stderr)
    if args.readme:
        print(f"wrote {update_readme(args.readme, rep)}", file=sys.stderr)
    print(rep.markdown())
    print(f"\n{len(refs)} models in {rep.seconds:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
