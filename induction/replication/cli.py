"""``python benchmarks/replication.py``: measure, write, and regenerate the docs block."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .config import DEFAULT_OUT, Settings
from .models import discover
from .pipeline import replicate
from .results import (
    README_END,
    README_START,
    SUMMARY_END,
    SUMMARY_START,
    check_block,
    check_out_dir,
    figure_link,
    load_results,
    record_settings,
    update_readme,
    update_summary,
    write_outputs,
)
from .store import MeasurementStore

USAGE = """Replicate the source's induction-head claims on the zoo: dense vs LIDAS vs looped.

    python benchmarks/replication.py                     # the shipped zoo, full settings
    python benchmarks/replication.py --fast              # reduced settings (CI, notebooks)
    python benchmarks/replication.py --models-dir runs/zoo2 --out-dir benchmarks/results/zoo2
    python benchmarks/replication.py --readme docs/results.md  # and rewrite its results block
    python benchmarks/replication.py --readme docs/results.md --summary README.md  # and README's
    python benchmarks/replication.py --from-results --readme docs/results.md  # from the JSON
"""


class _Parser(argparse.ArgumentParser):
    """A usage error is one ``error:`` line and exit code 2, as in every ``induction``
    command (argparse would print the usage block first)."""

    def error(self, message: str):  # type: ignore[override]
        print(f"error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


def parser(prog: str | None = None) -> argparse.ArgumentParser:
    ap = _Parser(prog=prog, description=USAGE, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fast", action="store_true", help="reduced settings (CI, notebooks)")
    ap.add_argument(
        "--families",
        nargs="+",
        default=None,
        help="zoo families (default: the second zoo, dense8c grown8c grown8ce looped8c "
        "looped8cp; or all in --models-dir)",
    )
    ap.add_argument("--seeds", nargs="+", type=int, default=None, help="model seeds")
    ap.add_argument("--models-dir", default=None, help="folder of <family>-s<seed> models")
    ap.add_argument("--controls", type=int, default=None, help="random head sets per model")
    ap.add_argument("--n-items", type=int, default=None, help="items per task and prompt seed")
    ap.add_argument("--prompt-seeds", type=int, default=None, help="prompt seeds 0..N-1")
    ap.add_argument("--tasks", nargs="+", default=None, help="tasks of the suite (default all)")
    ap.add_argument("--no-regbench", action="store_true", help="skip the RegBench ablation")
    ap.add_argument("--top", type=int, default=None, help="heads traced against random sets")
    ap.add_argument("--tied", action="store_true", help="looped: ablate tied across passes")
    ap.add_argument(
        "--cache",
        action="store_true",
        help="reuse `induction ablate`'s resume cache (same numbers; resumable)",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (default 1: the zoo models are tiny, and on a busy 2-core "
        "machine two threads made every matmul ~50x slower); 0 keeps torch's default",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="models measured at once, each in its own process (2 on a 2-core machine)",
    )
    ap.add_argument(
        "--no-store",
        action="store_true",
        help="measure every model afresh and keep nothing in OUT_DIR/models/ (by default a "
        "model measured before from the same inputs is reused, and each new one is stored as "
        "it lands, so a replication can span sessions)",
    )
    ap.add_argument(
        "--stored-only",
        action="store_true",
        help="measure nothing: summarise the models measured before (OUT_DIR/models/) with "
        "these settings, naming the others (an interim report of a run spanning sessions)",
    )
    ap.add_argument(
        "--record",
        action="store_true",
        help="measure nothing: report the stored measurements (OUT_DIR/models/) as they are, "
        "whatever code measured them, as a record (the first fixed-protocol zoo, zoo2)",
    )
    ap.add_argument(
        "--no-gates",
        action="store_true",
        help="skip the gate table and the gated verdict (they run the in-context probe on "
        "every model: seconds each)",
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
        "--summary",
        default=None,
        help="also rewrite the short replication-summary block of this Markdown file (README.md)",
    )
    ap.add_argument(
        "--from-results",
        action="store_true",
        help="do not measure: rewrite outputs (and --readme) from --out-dir's JSON",
    )
    return ap


def settings_from(args) -> Settings:
    settings = Settings.fast() if args.fast else Settings()
    overrides = {
        "controls": args.controls,
        "n_items": args.n_items,
        "top_n": args.top,
        "tied": args.tied or None,
        "tasks": tuple(args.tasks) if args.tasks else None,
        "prompt_seeds": tuple(range(args.prompt_seeds)) if args.prompt_seeds else None,
        "regbench": False if args.no_regbench else None,
        "cache": args.cache or None,
    }
    return replace(settings, **{k: v for k, v in overrides.items() if v is not None})


def check_args(args) -> None:
    """Refuse, before any work, option values no run can use (one :class:`InputError`
    line): counts out of range, a missing ``--models-dir``, an ``--out-dir`` that is a file."""
    from induction.errors import InputError

    for flag, value, low in (
        ("--threads", args.threads, 0),
        ("--jobs", args.jobs, 1),
        ("--controls", args.controls, 0),
        ("--n-items", args.n_items, 1),
        ("--prompt-seeds", args.prompt_seeds, 1),
        ("--top", args.top, 1),
    ):
        if value is not None and value < low:
            raise InputError(f"{flag} must be an integer >= {low}, got {value}")
    if any(s < 0 or s >= 2**32 for s in args.seeds or ()):
        raise InputError(f"--seeds must be in 0..{2**32 - 1}, got {args.seeds}")
    if args.models_dir is not None and not Path(args.models_dir).is_dir():
        raise InputError(
            f"--models-dir {args.models_dir} is not a folder; pass a folder of "
            "<family>-s<seed> models"
        )
    out = Path(args.out_dir)
    for folder in (out, *out.parents):
        if folder.exists() and not folder.is_dir():
            raise InputError(f"--out-dir {out}: {folder} is a file; pass a folder path")


def main(
    argv: Sequence[str] | None = None, command: str = "python benchmarks/replication.py"
) -> int:
    """Run the replication with command-line arguments ``argv``; ``command`` is how the run is
    named in the generated docs blocks (``induction replicate`` or the benchmark script)."""
    args = parser(prog=command).parse_args(argv)
    command = command + " " + shlex.join(sys.argv[1:] if argv is None else list(argv))

    def finish(rep) -> None:
        if not args.no_gates and rep.gates.empty:
            rep.add_gates()
        for path in write_outputs(rep, args.out_dir, png=not args.no_png):
            print(f"wrote {path}", file=sys.stderr)
        if args.readme:
            link = figure_link(args.readme, args.out_dir)
            print(f"wrote {update_readme(args.readme, rep, link, command)}", file=sys.stderr)
        if args.summary:
            target = Path(args.readme or "docs/results.md").resolve()
            rel = os.path.relpath(target, Path(args.summary).resolve().parent)
            wrote = update_summary(args.summary, rep, f"{rel}#replication", command)
            print(f"wrote {wrote}", file=sys.stderr)
        print(rep.markdown())

    from induction.errors import InputError

    try:  # refuse bad options and a target without its markers before measuring, not after
        check_args(args)
        if args.readme:
            check_block(args.readme, README_START, README_END)
        if args.summary:
            check_block(args.summary, SUMMARY_START, SUMMARY_END)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.from_results:
        try:
            rep = load_results(args.out_dir)
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if rep is None:
            print(f"error: no replication.json of this version in {args.out_dir}", file=sys.stderr)
            return 2
        finish(rep)
        return 0
    refs = discover(args.families, args.seeds, args.models_dir)
    if not refs:
        print("error: no zoo models found (induction models lists them)", file=sys.stderr)
        return 2
    from induction.models.loading import quiet_libraries

    quiet_libraries()
    try:
        check_out_dir(args.out_dir, refs, args.models_dir)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    store = None if args.no_store else MeasurementStore(Path(args.out_dir) / "models")
    settings = settings_from(args)
    if args.record:  # the settings the record was measured with, as its report states them
        settings = record_settings(args.out_dir, settings)
    try:
        rep = replicate(
            refs,
            settings,
            progress=args.progress and args.jobs == 1,
            log=lambda s: print(s, file=sys.stderr),
            store=store,
            jobs=args.jobs,
            threads=args.threads,
            stored_only=args.stored_only,
            record=args.record,
        )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finish(rep)
    print(f"\n{len(rep.models)} models, {rep.seconds:.0f} s of measuring", file=sys.stderr)
    return 0
