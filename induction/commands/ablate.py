"""``induction ablate``: zero (or mean-ablate) the top heads and measure few-shot drops."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ablation.config import AblationConfig
from induction.commands.config_options import config_command
from induction.commands.options import DEFAULT_MODEL, DeviceOpt, DtypeOpt, ModelArg
from induction.errors import InputError


@config_command(AblationConfig)
def ablate(
    model: ModelArg = DEFAULT_MODEL,
    config: AblationConfig = AblationConfig(),
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Report table (.csv, .parquet, .json, .jsonl)."),
    ] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Bar chart of the drops (.html or .png).")
    ] = None,
    token_loss_out: Annotated[
        Path | None,
        typer.Option(
            "--token-loss-out",
            help="With --token-loss: its table, one row per head set (.csv, .parquet, .json).",
        ),
    ] = None,
    scores_tables: Annotated[
        list[Path] | None,
        typer.Option(
            "--scores",
            help="Score table(s) that rank and exclude heads instead of computing them now "
            "(layer, head and score columns, as `induction scan --out` and `induction fv --out` "
            "write; repeatable, merged on layer and head), e.g. FV scores from `induction fv "
            "--corruption foreign`.",
        ),
    ] = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = None,
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            help="CPU threads for torch (default: 1 for zoo models, whose tiny matrices gain "
            "nothing from more, else torch's; 1 is far faster on a busy machine).",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Ablate the top --frac heads by induction score and report few-shot drops per task
    against random-head controls. Interrupted runs resume from a cache of finished results."""
    from induction.figures.plots import FIGURE_SUFFIXES
    from induction.models.loading import load_model
    from induction.store.io import (
        TABLE_SUFFIXES,
        check_output_path,
        claim_outputs,
        prepare_outputs,
        wrote,
    )

    check_output_path(out, TABLE_SUFFIXES, "--out")
    check_output_path(plot, FIGURE_SUFFIXES, "--plot")
    check_output_path(token_loss_out, TABLE_SUFFIXES, "--token-loss-out")
    if token_loss_out is not None and not config.token_loss:
        raise InputError("--token-loss-out needs --token-loss")
    if threads is not None and threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    # everything the run reads: the model, a task file, data, lm-eval task configs (whose code
    # is refused here without --trust-remote-code)
    if scores_tables and config.heads is not None:
        raise InputError("--scores ranks heads for --frac; --heads names them: pass one")
    scores = read_score_tables(scores_tables or [])
    outputs = {"--out": out, "--plot": plot, "--token-loss-out": token_loss_out}
    prepare_outputs(outputs, [*_inputs(model, config), *(scores_tables or [])])
    if config.heads is None:  # every score and column the run reads, before the model loads
        from ablation.run import check_scores_before_work

        check_scores_before_work(config.score, config.exclusion(), scores, "the --scores table")

    with claim_outputs(outputs.values()):  # held for the whole run: one writer per output
        from induction.progress import phase

        with phase(f"loading {model}", enabled=not quiet):
            loaded = load_model(
                model,
                device=device,
                dtype=dtype,
                threads=threads,
                trust_remote_code=config.trust_remote_code,
            )
        result = _run(loaded, config, quiet, scores)
        _report(result, out, plot, quiet)
        if result.token_loss is not None:
            if token_loss_out is not None:
                result.token_loss.save(token_loss_out)
                _say(wrote(token_loss_out))
            if not quiet:
                _say(result.token_loss.line())


def _inputs(model: str, config: AblationConfig) -> list[Path]:
    from ablation.pipeline import run_inputs

    if not config.lm_eval:
        return run_inputs(model, config)
    from ablation.lm_eval_backend import task_inputs

    return run_inputs(model, config, lm_eval_inputs=task_inputs(config))


def read_score_tables(paths: list[Path]):
    """The score tables of ``--scores`` merged on (layer, head), or None without any. A later
    table adds only the columns the earlier ones lack; a table without ``layer`` and ``head``,
    or tables naming different heads, are refused."""
    from induction.store.io import read_table

    merged = None
    for path in paths:
        try:
            table = read_table(path)
        except InputError:
            raise
        except Exception as exc:  # a corrupt table
            raise InputError(f"cannot read --scores {path}: {' '.join(str(exc).split())}") from None
        if not {"layer", "head"} <= set(table.columns):
            raise InputError(
                f"--scores {path} has no layer and head columns; pass a table written by "
                "`induction scan --out` or `induction fv --out`"
            )
        if merged is None:
            merged = table
            continue
        new = [c for c in table.columns if c not in merged.columns]
        joined = merged.merge(table[["layer", "head", *new]], on=["layer", "head"])
        if len(joined) != len(merged) or len(joined) != len(table):
            raise InputError(
                f"--scores {path} names other heads than {paths[0]}; pass tables of one model"
            )
        merged = joined
    return merged


def _run(loaded, config: AblationConfig, quiet: bool, scores=None):
    """The ablation job with progress on stderr; Ctrl-C says what the resume cache kept."""
    from ablation.pipeline import ablate as run_ablate

    try:
        return run_ablate(
            loaded, config, scores=scores, progress=not quiet, log=None if quiet else _say
        )
    except KeyboardInterrupt:
        kept = (
            "finished results are kept in the resume cache; rerun the same command to resume"
            if config.cache
            else "nothing is kept (--no-cache)"
        )
        _say(f"interrupted: no report written; {kept}")
        raise typer.Exit(130) from None


def _report(result, out: Path | None, plot: Path | None, quiet: bool) -> None:
    """The table on stdout, the files, then the mean drop, the gates and the verdict."""
    from ablation.render import stdout_console
    from induction.store.io import wrote

    result.print(console=stdout_console())
    if out is not None:
        result.save(out)
        _say(wrote(out))
    if plot is not None:
        result.plot(plot)
        _say(wrote(plot))
    if quiet:
        return
    if result.mean_drop is not None:
        row = result.report[result.report.task == "MEAN"].iloc[0]
        _say(
            f"mean drop over generation tasks: {result.mean_drop:+.3f} (random controls "
            f"{row.ctrl_mean:+.3f} ± {row.ctrl_std:.3f}, p {row.p_ctrl:.2f})"
        )
    for line in [*result.gate_lines(), f"verdict: {result.verdict()}"]:
        _say(line)


def _say(message: str) -> None:
    from rich.console import Console

    Console(stderr=True).print(message, markup=False, highlight=False, soft_wrap=True)


def tasks(
    suite: Annotated[
        str | None, typer.Argument(help="A suite (zoo, words, paper19, regbench, gsm8k).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the records as JSON.")] = False,
) -> None:
    """List the task records of the built-in suites: group, metric, shots, source, format."""
    import json

    from ablation.tasks import catalog, suite_specs

    specs = suite_specs(suite) if suite else catalog()
    if as_json:
        typer.echo(json.dumps([s.to_dict() for s in specs], indent=2))
        return
    from rich.table import Table

    from ablation.render import stdout_console

    table = Table(title="Task records" + (f" of suite {suite}" if suite else ""))
    for col in ("suite", "task", "group", "metric", "shots", "source"):
        table.add_column(col)
    for s in specs:
        name = f"{s.name} †" if s.positive_control else s.name
        table.add_row(s.suite, name, s.group, s.metric, str(s.shots), s.source)
    table.caption = "† positive control (induction by construction): not in the means"
    stdout_console().print(table)
