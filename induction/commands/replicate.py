"""``induction replicate``: the source's induction-head claims on the zoo, with validity gates
(:mod:`induction.replication`; method and results: docs/research.md, docs/results.md).

The measurement's settings are options built from
:class:`induction.replication.config.SettingsOptions`; the command declares the rest (which
models, where outputs go, how the run executes). ``python benchmarks/replication.py`` is the
same command under another name (:func:`main`).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperCommand

from induction.commands.config_options import config_command
from induction.replication.config import DEFAULT_OUT, SettingsOptions

#: Where :class:`_Command` keeps the arguments as given, for the command line the generated
#: docs blocks name.
_ARGV = "induction.replicate.argv"
_NUMBER = re.compile(r"-\d")


class _Command(TyperCommand):
    """Takes a repeatable option's values as the shell lists them, ``--families a b`` (as
    ``--families a --families b``), and keeps the arguments as given."""

    def parse_args(self, ctx, args):
        ctx.meta[_ARGV] = list(args)
        many = {
            name
            for p in self.params
            if getattr(p, "multiple", False)
            for name in getattr(p, "opts", ())
        }
        spread: list[str] = []
        flag, given = None, 0
        for i, arg in enumerate(args):
            if flag is not None and (not arg.startswith("-") or _NUMBER.match(arg)):
                spread += [arg] if given == 0 else [flag, arg]
                given += 1
                continue
            _needs_value(ctx, flag, given)
            if arg == "--":
                spread += args[i:]
                break
            flag, given = (arg, 0) if arg in many else (None, 0)
            spread.append(arg)
        else:
            _needs_value(ctx, flag, given)
        return super().parse_args(ctx, spread)


def _needs_value(ctx, flag: str | None, given: int) -> None:
    if flag is not None and given == 0:
        from induction.commands.main import UsageError

        raise UsageError(f"Option '{flag}' requires an argument.", ctx)


@config_command(SettingsOptions)
def replicate(
    ctx: typer.Context,
    families: Annotated[
        list[str] | None,
        typer.Option(
            "--families",
            help="Zoo families (default: round 4, dense8r grown8rt grown8rte grown8r looped8r; "
            "or all in --models-dir).",
        ),
    ] = None,
    seeds: Annotated[list[int] | None, typer.Option("--seeds", help="Model seeds.")] = None,
    models_dir: Annotated[
        str | None, typer.Option("--models-dir", help="Folder of <family>-s<seed> models.")
    ] = None,
    config: SettingsOptions = SettingsOptions(),
    threads: Annotated[
        int,
        typer.Option(
            "--threads",
            help="Torch intra-op threads (default 1: the zoo models are tiny, and on a busy "
            "2-core machine two threads made every matmul ~50x slower); 0 keeps torch's "
            "default.",
        ),
    ] = 1,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            help="Models measured at once, each in its own process (2 on a 2-core machine).",
        ),
    ] = 1,
    no_store: Annotated[
        bool,
        typer.Option(
            "--no-store",
            help="Measure every model afresh and keep nothing in OUT_DIR/models/ (by default "
            "a model measured before from the same inputs is reused, and each new one is "
            "stored as it lands, so a replication can span sessions).",
        ),
    ] = False,
    stored_only: Annotated[
        bool,
        typer.Option(
            "--stored-only",
            help="Measure nothing: summarise the models measured before (OUT_DIR/models/) "
            "with these settings, naming the others (an interim report of a run spanning "
            "sessions).",
        ),
    ] = False,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Measure nothing: report the stored measurements (OUT_DIR/models/) as they "
            "are, whatever code measured them, as a record (the first fixed-protocol zoo, "
            "zoo2).",
        ),
    ] = False,
    no_gates: Annotated[
        bool,
        typer.Option(
            "--no-gates",
            help="Skip the gate table and the gated verdict (they run the in-context probe "
            "on every model: seconds each).",
        ),
    ] = False,
    out_dir: Annotated[
        str, typer.Option("--out-dir", help="Folder of the tables, JSON, figure and store.")
    ] = str(DEFAULT_OUT),
    no_png: Annotated[
        bool, typer.Option("--no-png", help="No PNG of the figure (HTML only).")
    ] = False,
    progress: Annotated[
        bool, typer.Option("--progress", help="Progress bars (with --jobs 1).")
    ] = False,
    readme: Annotated[
        str | None,
        typer.Option(
            "--readme",
            help="Rewrite the replication block of this Markdown file (docs/results.md).",
        ),
    ] = None,
    summary: Annotated[
        str | None,
        typer.Option(
            "--summary",
            help="Also rewrite the short replication-summary block of this Markdown file "
            "(README.md).",
        ),
    ] = None,
    from_results: Annotated[
        bool,
        typer.Option(
            "--from-results",
            help="Do not measure: rewrite outputs (and --readme) from --out-dir's JSON.",
        ),
    ] = False,
) -> None:
    """Replicate the source's induction-head claims on the zoo: dense vs LIDAS vs looped.

    \b
        induction replicate                     # the shipped zoo, full settings
        induction replicate --fast              # reduced settings (CI, notebooks)
        induction replicate --models-dir runs/zoo2 --out-dir benchmarks/results/zoo2
        induction replicate --readme docs/results.md  # and rewrite its results block
        induction replicate --readme docs/results.md --summary README.md  # and README's
        induction replicate --from-results --readme docs/results.md  # from the JSON
    """
    from induction.errors import InputError
    from induction.replication.models import discover
    from induction.replication.pipeline import replicate as replicate_models
    from induction.replication.results import (
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
    from induction.replication.store import MeasurementStore

    command = f"{ctx.command_path} {shlex.join(ctx.meta.get(_ARGV, []))}"
    # refuse bad options and a target without its markers before measuring, not after
    for flag, value, low in (("--threads", threads, 0), ("--jobs", jobs, 1)):
        if value < low:
            raise InputError(f"{flag} must be an integer >= {low}, got {value}")
    if any(s < 0 or s >= 2**32 for s in seeds or ()):
        raise InputError(f"--seeds must be in 0..{2**32 - 1}, got {seeds}")
    if models_dir is not None and not Path(models_dir).is_dir():
        raise InputError(
            f"--models-dir {models_dir} is not a folder; pass a folder of <family>-s<seed> models"
        )
    out = Path(out_dir)
    for folder in (out, *out.parents):
        if folder.exists() and not folder.is_dir():
            raise InputError(f"--out-dir {out}: {folder} is a file; pass a folder path")
    if readme:
        check_block(readme, README_START, README_END)
    if summary:
        check_block(summary, SUMMARY_START, SUMMARY_END)
    if threads:
        import torch

        torch.set_num_threads(threads)

    def finish(rep) -> None:
        if not no_gates and rep.gates.empty:
            rep.add_gates()
        for path in write_outputs(rep, out_dir, png=not no_png):
            print(f"wrote {path}", file=sys.stderr)
        if readme:
            link = figure_link(readme, out_dir)
            print(f"wrote {update_readme(readme, rep, link, command)}", file=sys.stderr)
        if summary:
            target = Path(readme or "docs/results.md").resolve()
            rel = os.path.relpath(target, Path(summary).resolve().parent)
            wrote = update_summary(summary, rep, f"{rel}#replication", command)
            print(f"wrote {wrote}", file=sys.stderr)
        print(rep.markdown())

    if from_results:
        rep = load_results(out_dir)
        if rep is None:
            raise InputError(f"no replication.json of this version in {out_dir}")
        finish(rep)
        return
    refs = discover(families, seeds, models_dir)
    if not refs:
        raise InputError("no zoo models found (induction models lists them)")
    from induction.models.loading import quiet_libraries

    quiet_libraries()
    check_out_dir(out_dir, refs, models_dir)
    store = None if no_store else MeasurementStore(Path(out_dir) / "models")
    settings = config.settings()
    if record:  # the settings the record was measured with, as its report states them
        settings = record_settings(out_dir, settings)
    rep = replicate_models(
        refs,
        settings,
        progress=progress and jobs == 1,
        log=lambda s: print(s, file=sys.stderr),
        store=store,
        jobs=jobs,
        threads=threads,
        stored_only=stored_only,
        record=record,
    )
    finish(rep)
    print(f"\n{len(rep.models)} models, {rep.seconds:.0f} s of measuring", file=sys.stderr)


replicate.command_settings = {"cls": _Command}  # type: ignore[attr-defined]


def main(
    argv: Sequence[str] | None = None, command: str = "python benchmarks/replication.py"
) -> int:
    """Run :func:`replicate` with command-line arguments ``argv`` (default ``sys.argv[1:]``)
    under the name ``command`` (how the generated docs blocks name the run); returns the exit
    code. A usage error or a :class:`~induction.errors.WorkbenchError` is one ``error:`` line
    on stderr and exit code 2, as in every ``induction`` command."""
    from induction.commands.main import UsageError
    from induction.errors import WorkbenchError

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    app.command(**replicate.command_settings)(replicate)  # type: ignore[attr-defined]
    click_command = typer.main.get_command(app)
    args = None if argv is None else list(argv)
    try:
        code = click_command.main(args=args, prog_name=command, standalone_mode=False)
    except UsageError as e:
        message = f"{e.format_message()} (see `{command} --help`)"
    except WorkbenchError as e:
        message = str(e) or type(e).__name__
    else:
        return code if isinstance(code, int) else 0
    print(f"error: {' '.join(message.split())}", file=sys.stderr)
    return 2
