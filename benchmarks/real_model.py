"""A real pretrained model beside the zoo: SmolLM2-135M's top 5%, 10% and 20% heads by
induction score ablated against random head sets of the same size, per task, on the `words`
suite and on paper19's four generated reasoning primitives (variable assignment, depth 0/1,
math and code forms; Saunshi et al. 2025), through ``ablation.ablate`` as ``induction
ablate`` runs it.

    python benchmarks/real_model.py [--model smollm2] [--fracs 0.05 0.1 0.2] [--controls 20]
        [--n-items 20] [--suites words paper19:var_math_depth0,...]
        [--out-dir benchmarks/results/smollm2] [--readme docs/results.md]

Each (suite, fraction) report is written as it lands (``<out-dir>/<suite>-frac<f>.json``,
the ablation report with its meta) and reused while its key holds (every file of the model,
the settings, the head ranking, the evaluated items' content and the ablation code's syntax
tree: :func:`run_key`), so the run can span sessions;
the ablation's resume cache also keeps finished (task, head set) results. Heads are ranked
once (the scan ``induction ablate`` runs) and every fraction takes the top of that ranking.
Prints a per-task table: clean score, then per fraction the drop with the top heads ablated
and the random sets' drop (mean ± sd, permutation p).
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: What is measured by default: ``suite`` or ``suite:task,task`` (``--suites``).
SUITES = ("words", "paper19:var_math_depth0,var_math_depth1,var_code_depth0,var_code_depth1")
START = "<!-- real-model:start -->"
END = "<!-- real-model:end -->"


@dataclass(frozen=True)
class Run:
    suite: str
    tasks: tuple[str, ...] | None  # None: the whole suite
    frac: float

    @property
    def name(self) -> str:
        """File stem: the suite's name (a path's stem), its tasks' hash when some are picked,
        the fraction."""
        import hashlib
        import re

        stem = re.sub(r"[^A-Za-z0-9_.]+", "_", Path(self.suite).stem) or "suite"
        if self.tasks:
            stem += "-" + hashlib.sha256(",".join(self.tasks).encode()).hexdigest()[:6]
        return f"{stem}-frac{self.frac:g}"


def parse_suites(specs) -> list[tuple[str, tuple[str, ...] | None]]:
    """``["words", "paper19:var_math_depth0,var_code_depth0"]`` -> ``[(suite, tasks), ...]``."""
    out = []
    for spec in specs:
        suite, _, tasks = spec.partition(":")
        names = tuple(t for t in tasks.split(",") if t) or None
        out.append((suite, names))
    return out


def config_for(run: Run, args):
    from ablation import AblationConfig

    return AblationConfig(
        suite=run.suite,
        tasks=run.tasks,
        frac=run.frac,
        controls=args.controls,
        n_items=args.n_items,
        seed=args.seed,
        batch=args.batch,
        cache=True,
    )


def tasks_hash(tasks) -> str:
    """Content of the items a run evaluates (prompts, answers, scored positions), whatever
    they were built from: generators, word lists, dataset files or a user's JSONL."""
    import dataclasses
    import hashlib
    import json

    h = hashlib.sha256()
    for task in tasks:
        h.update(f"{type(task).__name__}:{task.name}:{task.metric}".encode())
        for item in task.items:
            h.update(json.dumps(dataclasses.asdict(item), default=str).encode())
    return h.hexdigest()


def run_key(loaded, cfg, scores: pd.DataFrame, code: str) -> str:
    """The model (every file of its folder, as the replication's store), the settings, the
    head ranking, the evaluated items and the ablation code (syntax trees)."""
    from ablation.pipeline import build_tasks
    from induction.fingerprint import fingerprint
    from induction.replication.store import model_hash

    return fingerprint(
        model_hash(loaded),
        str(loaded.info.dtype),
        cfg.to_dict(),
        scores[["layer", "head", "induction"]].to_numpy().tolist(),
        tasks_hash(build_tasks(cfg, cfg.suite, loaded)),
        code,
        length=32,
    )


#: Numeric columns of a report (JSON turns NaN into null; read back they are floats again).
NUMERIC = ("n", "seeds", "clean", "ablated", "drop", "drop_se", "drop_ci_lo", "drop_ci_hi")
NUMERIC += ("seed_std", "ctrl_mean", "ctrl_std", "z", "p_ctrl")


def stored_report(path: Path, key: str) -> pd.DataFrame | None:
    """The report written at ``path`` under ``key`` (numeric columns as floats), else None."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["meta"].get("key") != key:
            return None
        report = pd.DataFrame(data["rows"])
        for col in NUMERIC:
            if col in report:
                report[col] = pd.to_numeric(report[col], errors="coerce").astype(float)
        return report
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def measure(args, log=print):
    """Every (suite, fraction) report, stacked with ``suite`` and ``frac`` columns, and the
    model's :class:`~induction.loading.ModelInfo`."""
    from ablation import ablate
    from ablation.run import compute_scores
    from induction import load_model

    loaded = load_model(args.model, device="cpu")
    scores = compute_scores(loaded)  # the ranking `induction ablate` uses
    from induction.replication.store import code_hash

    code = code_hash(("ablation", "induction.prompts", "induction.zoo.corpus"))
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frames = []
    for suite, tasks in parse_suites(args.suites):
        for frac in args.fracs:
            run = Run(suite, tasks, frac)
            cfg = config_for(run, args)
            key = run_key(loaded, cfg, scores, code)
            path = out / f"{run.name}.json"
            report = stored_report(path, key)
            if report is None:
                result = ablate(loaded, cfg, scores=scores, progress=args.progress, log=log)
                result.meta["key"] = key
                result.save(path)
                report = stored_report(path, key)  # as a rerun will read it
                drop = result.mean_drop
                said = "" if drop is None else f"mean drop {drop:+.3f}; "
                log(f"{run.name}: {said}wrote {path}")
            else:
                log(f"{run.name}: reused {path} (same model, settings, ranking and code)")
            frames.append(report.assign(suite=suite, frac=frac))
    return pd.concat(frames, ignore_index=True), loaded.info


def _cell(row) -> str:
    """``drop (random mean ± sd, p)``; what is undefined (no or one control) is left out."""

    def known(v) -> bool:
        return v is not None and not (isinstance(v, float) and math.isnan(v))

    text = f"{row['drop']:+.2f}" if known(row["drop"]) else "n/a"
    if not known(row["ctrl_mean"]):
        return text
    spread = f" ± {row['ctrl_std']:.2f}" if known(row["ctrl_std"]) else ""
    p = f", p {row['p_ctrl']:.2f}" if known(row["p_ctrl"]) else ""
    return f"{text} ({row['ctrl_mean']:+.2f}{spread}{p})"


def table(reports: pd.DataFrame) -> str:
    """Markdown: one row per task (and each suite's MEAN), clean, then one column per frac."""
    fracs = sorted(reports["frac"].unique())
    rows = reports[~reports["task"].str.startswith("MEAN:")]
    head = ["suite", "task", "metric", "clean"] + [f"top {f:.0%}: drop (random)" for f in fracs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (suite, task), g in rows.groupby(["suite", "task"], sort=False):
        by_frac = {float(r["frac"]): r for _, r in g.iterrows()}
        first = g.iloc[0]
        name = f"**{task}**" if task == "MEAN" else task
        cells = [suite, name, str(first["metric"]), f"{first['clean']:.2f}"]
        cells += [_cell(by_frac[f]) if f in by_frac else "" for f in fracs]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument(
        "--suites",
        nargs="+",
        default=list(SUITES),
        help="suites measured, each SUITE or SUITE:TASK,TASK (default: words and paper19's "
        "four primitives)",
    )
    ap.add_argument("--fracs", type=float, nargs="+", default=[0.05, 0.1, 0.2])
    ap.add_argument("--controls", type=int, default=20)
    ap.add_argument("--n-items", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    ap.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results" / "smollm2"))
    ap.add_argument("--readme", default=None, help="rewrite this file's real-model block")
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    from induction.errors import InputError
    from induction.loading import quiet_libraries

    quiet_libraries()
    try:
        if args.readme:  # refused before the hour of measuring, not after
            from induction.replication.results import check_block

            check_block(args.readme, START, END)
        reports, info = measure(args, log=lambda s: print(s, file=sys.stderr))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from induction.io import write_table

    write_table(reports, Path(args.out_dir) / "real_model.csv")
    command = "python benchmarks/real_model.py " + shlex.join(
        sys.argv[1:] if argv is None else list(argv)
    )
    from ablation.selection import n_selected

    n_heads = info.n_layers * info.n_heads
    sizes = ", ".join(f"{f:.0%} = {n_selected(f, n_heads)}" for f in args.fracs)
    text = (
        f"Generated by `{command}` ({info.name}, {n_heads} heads; heads ablated: {sizes}; "
        f"{args.controls} random sets of the same size per fraction; {args.n_items} items per "
        "task, fewer where a word list is shorter; zero ablation). Per task: the clean score, "
        "then per fraction the drop with the top heads by induction score ablated and, in "
        "brackets, the random sets' drop (mean ± sd) and the permutation p of the top heads' "
        "drop against them, (1 + k) / (1 + n). MEAN: the suite's mean over its tasks.\n\n"
        + table(reports)
    )
    if args.readme:
        from induction.replication.results import replace_block

        wrote = replace_block(args.readme, START, END, f"{START}\n{text}\n{END}")
        print(f"wrote {wrote}", file=sys.stderr)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
