"""FV heads across growth and training on the function-vector pair (issue 26, item 5): when do
a dense and a grown model's FV heads form, after their induction heads or not, in the same
heads or not, and do a grown model's FV heads descend from few ancestors, as its induction
heads do?

    python benchmarks/fv_zoo.py [MODEL ...] [--top 7] [--fv-share 0.5] [--samples 2000]
        [--corruption shuffled|foreign] [--dataset DIR] [--out-dir benchmarks/results/fv]
        [--markdown FILE]

MODEL: zoo models with a shipped checkpoint series (default ``dense8f-s0 grown8f-s0``) or run
folders (``checkpoints/step-*`` beside the final model). Per
model, through the jobs ``induction sweep``, ``induction timeline`` and ``induction lineage``
run:

1. **Gate.** The FV half reads only where the model does the pair tasks FV heads are defined
   on (Todd et al. 2024): the gate of ``benchmarks/fv_comparison.py MODEL`` (its
   ``<out-dir>/<model>.json``, run it first with the same ``--corruption``): the pair tasks
   above chance and the corrupted prompts losing the task (headroom); without it, or failing
   it, the model is reported "untestable here" and nothing below is read as evidence.
2. **Formation.** The checkpoint series is swept with ``--scores induction,fv --loss``
   (:func:`induction.dynamics.sweep.sweep`, resumable, into ``--dataset``), and each score's
   per-head formation step comes from :func:`induction.dynamics.timeline.build_timeline`
   (a grown model's head follows its ancestor before growth). Induction heads form at the
   convention 0.4. FV scores have no convention, so the FV threshold is fixed in advance as
   ``--fv-share`` (0.5) of the final model's strongest FV score: a head "forms" as an FV head
   once it holds half the strongest head's effect to the end. Reported for the top ``--top``
   FV heads (10% of 64): the FV formation step, the same head's induction formation step and
   its largest induction score at or before its FV formation ("started out as an induction
   head", Yin and Steinhardt 2025), and the first formation step of each kind.
3. **Lineage** (grown models): the primary ancestors of the top ``--top`` FV heads and of the
   top ``--top`` induction heads of the final model (:func:`lineage.trace` on the sweep's
   final scores), each against ``--samples`` random head sets of the same size
   (:func:`induction.replication.ancestor_counts`, seed 0; p: the share of random sets with
   as few distinct ancestors or fewer) and the fewest the architecture allows.

Writes ``<out-dir>/<model>-formation.json`` (every number), each model's FV and induction
timelines as PNG beside it, and a markdown table (``--markdown``) that docs/results.md links.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from induction.dynamics.dataset import read_dataset  # noqa: E402
from induction.dynamics.sweep import SweepSettings, sweep  # noqa: E402
from induction.dynamics.timeline import Timeline, build_timeline  # noqa: E402
from induction.figures.plots import static_png  # noqa: E402
from induction.replication import ancestor_counts  # noqa: E402
from induction.scores.score_names import INDUCTION_THRESHOLD  # noqa: E402
from induction.store.io import write_bytes, write_json, write_text  # noqa: E402

MODELS = ROOT / "induction" / "zoo" / "models"
DEFAULT = ("dense8f-s0", "grown8f-s0")


def sweep_settings(corruption: str) -> SweepSettings:
    return SweepSettings(scores=("induction", "fv"), loss=True, fv_corruption=corruption)


def gate_of(model: str, out_dir: Path, corruption: str = "shuffled") -> tuple[bool, str]:
    """The gate fv_comparison measured for ``model`` with the same corruption (pair tasks
    above chance, headroom)."""
    path = out_dir / f"{model}.json"
    if not path.is_file():
        return False, f"no gate measured: run `python benchmarks/fv_comparison.py {model}` first"
    found = json.loads(path.read_text())
    measured = found.get("rankings", {}).get("corruption", "shuffled")
    if measured != corruption:
        return False, (
            f"the gate in {path} was measured with {measured} labels; rerun "
            f"`python benchmarks/fv_comparison.py {model} --corruption {corruption} --out-dir "
            f"{out_dir}`"
        )
    return bool(found["testable"]), found["gate"]


def final_scores(timeline: Timeline) -> pd.DataFrame:
    """``layer, head, <score>`` of the final checkpoint."""
    return timeline.formed[["layer", "head", "final"]].rename(columns={"final": timeline.score})


def first_formed(timeline: Timeline) -> int | None:
    steps = timeline.formed["formed_step"].dropna()
    return int(steps.min()) if len(steps) else None


def head_rows(ind: Timeline, fv: Timeline, top: int) -> list[dict]:
    """The ``top`` FV heads of the final model: when each formed as an FV head and as an
    induction head, and its largest induction score up to its FV formation."""
    by_head = ind.formed.set_index(["layer", "head"])
    rows = []
    for r in fv.formed.nsmallest(top, "rank").itertuples():
        i = by_head.loc[(r.layer, r.head)]
        s = ind.series[(ind.series["layer"] == r.layer) & (ind.series["head"] == r.head)]
        upto = s if pd.isna(r.formed_step) else s[s["step"] <= int(r.formed_step)]
        rows.append(
            {
                "head": f"L{r.layer}H{r.head}",
                "fv_rank": int(r.rank),
                "fv": float(r.final),
                "fv_formed_step": None if pd.isna(r.formed_step) else int(r.formed_step),
                "induction": float(i["final"]),
                "induction_rank": int(i["rank"]),
                "induction_formed_step": (
                    None if pd.isna(i["formed_step"]) else int(i["formed_step"])
                ),
                "max_induction_until_fv_formed": float(upto["value"].max()),
            }
        )
    return rows


def lineage_rows(folder: Path, scores: pd.DataFrame, top: int, samples: int) -> dict:
    """Ancestor concentration of the top FV heads and of the top induction heads."""
    import lineage

    traced = lineage.trace(str(folder), scores=scores, top=top, score="fv", threshold=0.0)
    anc = traced.ancestry
    primary = {
        (int(r.layer), int(r.head)): (int(r.ancestor_layer), int(r.ancestor_head))
        for r in anc[anc["primary"]].itertuples()
    }
    out = {"depths": list(traced.lineage.depths)}
    for score in ("fv", "induction"):
        ranked = scores.sort_values([score, "layer", "head"], ascending=[False, True, True])
        heads = [(int(r.layer), int(r.head)) for r in ranked.head(top).itertuples()]
        counts = ancestor_counts(primary, heads, samples)
        rng = np.random.default_rng(0)
        pool = sorted(primary)
        draws = [
            len({primary[pool[i]] for i in rng.choice(len(pool), len(heads), replace=False)})
            for _ in range(samples)
        ]
        counts["p_random"] = float(np.mean(np.array(draws) <= counts["top_ancestors"]))
        counts["heads"] = [f"L{a}H{b}" for a, b in heads]
        counts["ancestors"] = sorted({f"L{a}H{b}" for a, b in (primary[h] for h in heads)})
        out[score] = counts
    out["shared_ancestors"] = sorted(
        set(out["fv"]["ancestors"]) & set(out["induction"]["ancestors"])
    )
    return out


def save_png(timeline: Timeline, path: Path) -> str | None:
    data = static_png(timeline.figure(top=8))
    if data is None:
        return None
    write_bytes(path, data)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def measure(spec: str, args) -> dict:
    folder = Path(spec) if Path(spec).is_dir() else MODELS / spec
    model = folder.name
    if not (folder / "checkpoints").is_dir():
        raise SystemExit(
            f"{spec}: no checkpoint series under {folder}; pass a seed-0 zoo model or a run folder"
        )
    start = time.time()
    testable, gate = gate_of(model, args.out_dir, args.corruption)
    dataset = (args.dataset or args.out_dir / "sweeps") / model
    settings = sweep_settings(args.corruption)
    report = sweep([str(folder)], dataset, settings=settings, progress=True)
    if report.failed:
        raise SystemExit(f"{model}: the sweep failed: {report.failed[0][1]}")
    rows = read_dataset(dataset)
    ind = build_timeline(rows, score="induction", threshold=INDUCTION_THRESHOLD)
    # the threshold is a share of the final strongest FV score, read off a first timeline
    final_fv = build_timeline(rows, score="fv", threshold=float("inf")).formed["final"]
    fv_threshold = args.fv_share * float(final_fv.max())
    fv = build_timeline(rows, score="fv", threshold=fv_threshold)
    scores = final_scores(ind).merge(final_scores(fv), on=["layer", "head"])
    fv_first, ind_first = first_formed(fv), first_formed(ind)
    formed_fv = fv.formed.dropna(subset=["formed_step"])
    formed_ind = ind.formed.dropna(subset=["formed_step"])
    both = set(zip(formed_fv["layer"], formed_fv["head"])) & set(
        zip(formed_ind["layer"], formed_ind["head"])
    )
    result = {
        "model": model,
        "testable": testable,
        "gate": gate,
        "checkpoints": len(ind.order),
        "checkpoint_steps": sorted({int(x) for x in ind.order["step"]}),
        "growth_steps": ind.growth,
        "fv_threshold": fv_threshold,
        "fv_share": args.fv_share,
        "induction_threshold": INDUCTION_THRESHOLD,
        "first_induction_formed": ind_first,
        "first_fv_formed": fv_first,
        "n_induction_formed": len(formed_ind),
        "n_fv_formed": len(formed_fv),
        "formed_as_both": sorted(f"L{a}H{b}" for a, b in both),
        "fv_sentence": fv.sentence(),
        "induction_sentence": ind.sentence(),
        "top_fv_heads": head_rows(ind, fv, args.top),
        "spearman_final": float(scores["fv"].rank().corr(scores["induction"].rank())),
        "lineage": lineage_rows(folder, scores, args.top, args.samples) if ind.growth else None,
        "figures": {
            score: save_png(t, args.out_dir / f"{model}-timeline-{score}.png")
            for score, t in (("fv", fv), ("induction", ind))
        },
        "sweep_settings": settings.hash(),
        "settings": {
            "top": args.top,
            "fv_share": args.fv_share,
            "samples": args.samples,
            "corruption": args.corruption,
        },  # fmt: skip
    }
    result["seconds"] = time.time() - start
    return result


def _step(x, steps: list[int] | None = None) -> str:
    """A formation step as the checkpoint interval it lies in: the score crossed after the
    checkpoint before and by this one (the series' resolution, not the training log's)."""
    if x is None:
        return "never"
    before = [s for s in steps or () if s < x]
    return f"{before[-1]}-{x}" if before else str(x)


def markdown(found: list[dict]) -> str:
    out = [
        "| model | gate | first induction head (>= 0.4; checkpoint steps) | first FV head (>= "
        "half the strongest) | formed: induction / FV / both | growth |",
        "|---|---|---|---|---|---|",
    ]
    for m in found:
        gate = "passes" if m["testable"] else f"untestable: {m['gate']}"
        steps = m.get("checkpoint_steps")
        out.append(
            f"| {m['model']} | {gate} | {_step(m['first_induction_formed'], steps)} | "
            f"{_step(m['first_fv_formed'], steps)} (FV >= {m['fv_threshold']:.3g}) | "
            f"{m['n_induction_formed']} / {m['n_fv_formed']} / {len(m['formed_as_both'])} | "
            f"{', '.join(map(str, m['growth_steps'])) or 'none'} |"
        )
    out += [
        "",
        "| model | FV head | FV (rank) | FV formed | induction (rank) | induction formed | "
        "largest induction score until FV formed |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in found:
        steps = m.get("checkpoint_steps")
        for h in m["top_fv_heads"]:
            out.append(
                f"| {m['model']} | {h['head']} | {h['fv']:.3g} ({h['fv_rank']}) | "
                f"{_step(h['fv_formed_step'], steps)} | {h['induction']:.2f} "
                f"({h['induction_rank']}) | {_step(h['induction_formed_step'], steps)} | "
                f"{h['max_induction_until_fv_formed']:.2f} |"
            )
    grown = [m for m in found if m["lineage"]]
    if grown:
        out += [
            "",
            "| model | top heads | distinct ancestor heads (random sets; p) | fewest possible | "
            "distinct ancestor layers (random sets) | ancestors | shared with the other kind |",
            "|---|---|---|---|---|---|---|",
        ]
        for m in grown:
            lin = m["lineage"]
            for score, kind in (("fv", "FV"), ("induction", "induction")):
                c = lin[score]
                out.append(
                    f"| {m['model']} | {c['top_n']} {kind} | {c['top_ancestors']} "
                    f"({c['random_ancestors']:.1f}; {c['p_random']:.3f}) | {c['min_ancestors']} | "
                    f"{c['top_layers']} of {c['layer_pool']} ({c['random_layers']:.1f}) | "
                    f"{', '.join(c['ancestors'])} | {len(lin['shared_ancestors'])} |"
                )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=list(DEFAULT))
    ap.add_argument("--top", type=int, default=7, help="heads per kind (default 10%% of 64)")
    ap.add_argument("--fv-share", type=float, default=0.5)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--dataset", type=Path, default=None, help="default: <out-dir>/sweeps")
    ap.add_argument(
        "--corruption",
        default="shuffled",
        choices=["shuffled", "foreign"],
        help="how FV prompts lose the task (induction fv --corruption); use the one "
        "fv_comparison's gate in --out-dir was measured with",
    )
    ap.add_argument("--out-dir", type=Path, default=ROOT / "benchmarks" / "results" / "fv")
    ap.add_argument("--markdown", type=Path, default=None)
    ap.add_argument(
        "--from-results", action="store_true", help="re-render the tables from --out-dir's JSON"
    )
    args = ap.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    if args.from_results:
        found = [
            json.loads((args.out_dir / f"{m}-formation.json").read_text()) for m in args.models
        ]
    else:
        found = []
        for spec in args.models:
            result = measure(spec, args)
            write_json(args.out_dir / f"{result['model']}-formation.json", result)
            found.append(result)
    table = markdown(found)
    print(table)
    if args.markdown is not None:
        write_text(args.markdown, table)
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
