"""A real pretrained model beside the zoo: SmolLM2-135M's top 5%, 10% and 20% heads by
induction score ablated against random head sets of the same size, per task, on the `words`
suite and on paper19's four generated reasoning primitives (variable assignment, depth 0/1,
math and code forms; Saunshi et al. 2025), through ``ablation.ablate`` as ``induction
ablate`` runs it.

    python benchmarks/real_model.py [--model smollm2] [--fracs 0.05 0.1 0.2] [--controls 20]
        [--n-items 20] [--suites words paper19:var_math_depth0,...]
        [--out-dir benchmarks/results/smollm2] [--readme docs/results.md]
        [--details docs/results.md]

Each (suite, fraction) report is written as it lands (``<out-dir>/<suite>-frac<f>.json``,
the ablation report with its meta) and reused while its key holds (every file of the model,
the settings, the head ranking, the evaluated items' content and the ablation code's syntax
tree: :func:`run_key`), so the run can span sessions;
the ablation's resume cache also keeps finished (task, head set) results. Heads are ranked
once (the scan ``induction ablate`` runs) and every fraction takes the top of that ranking.
Every run also reads the teacher-forced readouts beside F1/EM (``logprob`` of the gold
answer, ``cand_acc`` over the task's answer candidates; ``ablation.readout``) and compares
the top heads with uniform and layer-shaped random sets (``--controls`` of each), with the
validity gates and the verdict line ``induction ablate`` prints (``ablation.gates``).
Prints, per suite and fraction, the means of each readout: the clean score, the drop with
the top heads ablated and the random sets' drops (mean ± sd, permutation p); ``--readme``
writes that table into a file's real-model block, ``--details`` the per-task tables of every
readout into another file's block.
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
DETAILS_START = "<!-- real-model-tasks:start -->"
DETAILS_END = "<!-- real-model-tasks:end -->"
#: Readouts tabled, in this order: the task's own metric (F1/EM, the source's), then the
#: teacher-forced ones (ablation.readout; the verdict reads the first whose gates pass).
READOUTS = ("metric", "cand_acc", "logprob")


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
    from induction.replication.store import model_hash
    from induction.store.fingerprint import fingerprint

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
NUMERIC += ("shaped_mean", "shaped_std", "p_shaped")


def stored_report(path: Path, key: str) -> tuple[pd.DataFrame, dict] | None:
    """The report written at ``path`` under ``key`` (numeric columns as floats) and its meta,
    else None."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["meta"].get("key") != key or "verdict" not in data["meta"]:
            return None  # another key, or written before reports carried their verdict
        report = pd.DataFrame(data["rows"])
        for col in NUMERIC:
            if col in report:
                report[col] = pd.to_numeric(report[col], errors="coerce").astype(float)
        return report, data["meta"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


@dataclass(frozen=True)
class Measured:
    """Every (suite, fraction) report stacked (``suite`` and ``frac`` columns), each run's
    gate lines and verdict (as ``induction ablate`` prints them), and the model's info."""

    reports: pd.DataFrame
    verdicts: dict[tuple[str, float], tuple[list[str], str]]
    info: object  # induction.models.loading.ModelInfo


def measure(args, log=print) -> Measured:
    """Every (suite, fraction) report, measured or reused while its key holds."""
    from ablation import ablate
    from ablation.run import compute_scores
    from induction import load_model

    loaded = load_model(args.model, device="cpu")
    scores = compute_scores(loaded)  # the ranking `induction ablate` uses
    from induction.replication.store import code_hash

    code = code_hash(("ablation.pipeline",))  # the ablation and every package it depends on
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frames, verdicts = [], {}
    specs = parse_suites(args.suites)
    names = [suite for suite, _ in specs]
    for spec, (suite, tasks) in zip(args.suites, specs, strict=True):
        # the suite's name labels its rows, the whole spec where a suite is given twice
        label = suite if names.count(suite) == 1 else spec
        for frac in args.fracs:
            run = Run(suite, tasks, frac)
            cfg = config_for(run, args)
            key = run_key(loaded, cfg, scores, code)
            path = out / f"{run.name}.json"
            stored = stored_report(path, key)
            if stored is None:
                result = ablate(loaded, cfg, scores=scores, progress=args.progress, log=log)
                result.meta |= {
                    "key": key,
                    "gate_lines": result.gate_lines(),
                    "verdict": result.verdict(),
                }
                result.save(path)
                stored = stored_report(path, key)  # as a rerun will read it
                log(f"{run.name}: {result.verdict()}; wrote {path}")
            else:
                log(f"{run.name}: reused {path} (same model, settings, ranking and code)")
            report, meta = stored
            frames.append(report.assign(suite=label, frac=frac))
            verdicts[(label, frac)] = (meta.get("gate_lines", []), meta.get("verdict", ""))
    return Measured(pd.concat(frames, ignore_index=True), verdicts, loaded.info)


def _known(v) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _cell(row, fmt: str = "+.2f") -> str:
    """``drop (uniform random mean ± sd, p; layer-shaped mean ± sd, p)``; what is undefined
    (no or one control, no shaped controls) is left out."""

    def spread(mean, std, p) -> str:
        text = f"{row[mean]:{fmt}}"
        if _known(row.get(std)):
            text += f" ± {row[std]:{fmt.lstrip('+')}}"
        if _known(row.get(p)):
            text += f", p {row[p]:.2f}"
        return text

    text = f"{row['drop']:{fmt}}" if _known(row["drop"]) else "n/a"
    parts = [spread("ctrl_mean", "ctrl_std", "p_ctrl")] if _known(row.get("ctrl_mean")) else []
    if _known(row.get("shaped_mean")):
        parts.append("shaped " + spread("shaped_mean", "shaped_std", "p_shaped"))
    return f"{text} ({'; '.join(parts)})" if parts else text


def _readout_of(task: str) -> tuple[str, str]:
    """Report row name -> (task, readout): ``antonyms:cand_acc`` -> ("antonyms", "cand_acc"),
    ``MEAN[logprob]`` -> ("MEAN", "logprob"), ``antonyms`` -> ("antonyms", "metric")."""
    if task.startswith("MEAN[") and task.endswith("]"):
        return "MEAN", task[5:-1]
    name, _, readout = task.rpartition(":")
    if name and readout in READOUTS and not task.startswith("MEAN:"):
        return name, readout
    return task, "metric"


def _split(reports: pd.DataFrame) -> pd.DataFrame:
    """``reports`` with ``base`` (the task) and ``readout`` columns; group means dropped."""
    rows = reports[~reports["task"].str.startswith("MEAN:")].copy()
    parsed = [_readout_of(t) for t in rows["task"]]
    rows["base"] = [b for b, _ in parsed]
    rows["readout"] = [r for _, r in parsed]
    return rows


def _fmt(readout: str) -> str:
    return "+.1f" if readout == "logprob" else "+.2f"


def table(reports: pd.DataFrame, readout: str = "metric") -> str:
    """Markdown, one readout: one row per task (and each suite's MEAN), the clean score, then
    one column per fraction."""
    fracs = sorted(reports["frac"].unique())
    rows = _split(reports)
    rows = rows[rows["readout"] == readout]
    head = ["suite", "task", "metric", "clean"]
    head += [f"top {f:.0%}: drop (uniform random; layer-shaped random)" for f in fracs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    fmt = _fmt(readout)
    for (suite, task), g in rows.groupby(["suite", "base"], sort=False):
        by_frac = {float(r["frac"]): r for _, r in g.iterrows()}
        first = g.iloc[0]
        name = f"**{task}**" if task == "MEAN" else task
        cells = [suite, name, str(first["metric"]), f"{first['clean']:{fmt.lstrip('+')}}"]
        cells += [_cell(by_frac[f], fmt) if f in by_frac else "" for f in fracs]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def means_table(reports: pd.DataFrame) -> str:
    """Markdown: per suite and readout, its mean over tasks: clean, then per fraction the drop
    against both kinds of random sets."""
    fracs = sorted(reports["frac"].unique())
    rows = _split(reports)
    rows = rows[rows["base"] == "MEAN"]
    head = ["suite", "readout", "clean"]
    head += [f"top {f:.0%}: drop (uniform random; layer-shaped random)" for f in fracs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    order = {r: i for i, r in enumerate(READOUTS)}
    rows = rows.assign(_order=rows["readout"].map(order)).sort_values(["_order"], kind="stable")
    for suite in dict.fromkeys(reports["suite"]):
        for readout, g in rows[rows["suite"] == suite].groupby("readout", sort=False):
            by_frac = {float(r["frac"]): r for _, r in g.iterrows()}
            first = g.iloc[0]
            fmt = _fmt(readout)
            name = str(first["metric"]) if readout == "metric" else readout
            cells = [suite, name, f"{first['clean']:{fmt.lstrip('+')}}"]
            cells += [_cell(by_frac[f], fmt) if f in by_frac else "" for f in fracs]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict_lines(measured: Measured, gates: bool = False) -> str:
    """One line per (suite, fraction): the verdict ``induction ablate`` prints; with
    ``gates``, each gate's line under it."""
    lines = []
    for (suite, frac), (gate_lines, verdict) in measured.verdicts.items():
        lines.append(f"- {suite}, top {frac:.0%}: {verdict or 'not recorded'}")
        if gates:
            lines += [f"  - {g.removeprefix('gate ')}" for g in gate_lines]
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
    ap.add_argument(
        "--controls", type=int, default=20, help="uniform and layer-shaped random sets, each"
    )
    ap.add_argument("--n-items", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    ap.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results" / "smollm2"))
    ap.add_argument("--readme", default=None, help="rewrite this file's real-model block")
    ap.add_argument(
        "--details", default=None, help="rewrite this file's real-model-tasks block (per task)"
    )
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    from induction.errors import InputError

    for flag, value, low in (("--threads", args.threads, 0), ("--controls", args.controls, 0),
                             ("--n-items", args.n_items, 1), ("--batch", args.batch, 1),
                             ("--seed", args.seed, 0)):  # fmt: skip
        if value < low:
            raise InputError(f"{flag} must be an integer >= {low}, got {value}")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    from induction.models.loading import quiet_libraries

    quiet_libraries()
    try:
        from induction.replication.results import check_block

        # refused before the hours of measuring, not after
        if args.readme:
            check_block(args.readme, START, END)
        if args.details:
            check_block(args.details, DETAILS_START, DETAILS_END)
        measured = measure(args, log=lambda s: print(s, file=sys.stderr))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from induction.store.io import write_table

    reports, info = measured.reports, measured.info
    write_table(reports, Path(args.out_dir) / "real_model.csv")
    command = "python benchmarks/real_model.py " + shlex.join(
        sys.argv[1:] if argv is None else list(argv)
    )
    from ablation.selection import n_selected

    n_heads = info.n_layers * info.n_heads
    sizes = ", ".join(f"{f:.0%} = {n_selected(f, n_heads)}" for f in args.fracs)
    setting = (
        f"Generated by `{command}` ({info.name}, {n_heads} heads; heads ablated: {sizes}; "
        f"{args.controls} uniform and {args.controls} layer-shaped random sets of the same "
        f"size per fraction; {args.n_items} items per task, fewer where a word list is "
        "shorter; zero ablation). "
    )
    readouts = (
        "Readouts: the task's metric (F1/EM, the source's), `cand_acc` (accuracy over the "
        "task's answer candidates, teacher-forced) and `logprob` (the gold answer's "
        "teacher-forced log-probability, nats); the verdict reads the first of `cand_acc`, "
        "`logprob` whose gates pass (`ablation.gates`). Each cell: the drop with the top heads "
        "by induction score ablated and, in brackets, the uniform and the layer-shaped random "
        "sets' drops (mean ± sd) with the permutation p of the top heads' drop against each, "
        "(1 + k) / (1 + n)."
    )
    text = (
        setting
        + "Per suite, the mean over its tasks. "
        + readouts
        + "\n\n"
        + means_table(reports)
        + "\n\nVerdict per run, as `induction ablate` prints it (each gate: `--details`):\n\n"
        + verdict_lines(measured)
    )
    present = set(_split(reports)["readout"])
    details = (
        setting
        + readouts
        + "\n\nVerdicts and gates per run:\n\n"
        + verdict_lines(measured, gates=True)
        + "".join(
            f"\n\n**{'the task metric (F1/EM)' if r == 'metric' else r}**\n\n" + table(reports, r)
            for r in READOUTS
            if r in present
        )
    )
    from induction.replication.results import replace_block

    if args.readme:
        wrote = replace_block(args.readme, START, END, f"{START}\n{text}\n{END}")
        print(f"wrote {wrote}", file=sys.stderr)
    if args.details:
        block = f"{DETAILS_START}\n{details}\n{DETAILS_END}"
        wrote = replace_block(args.details, DETAILS_START, DETAILS_END, block)
        print(f"wrote {wrote}", file=sys.stderr)
    print(text)
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
