"""``induction sweep`` and ``induction timeline`` (docs/dynamics.md).

Keep imports light here: ``induction --help`` imports this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from induction.commands.config_options import config_command
from induction.commands.options import PromptBatchOpt, SeqLenOpt
from induction.dynamics.sweep import SWEEP_SCAN, SWEEP_SCORES, SweepSettings


@config_command(SweepSettings)
def sweep(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="Run folders (their checkpoints/step-* and final model) and/or model specs."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Dataset folder (one Parquet file per model).")
    ],
    revisions: Annotated[
        str | None,
        typer.Option(
            "--revisions", help="Hub revisions of the one model given, e.g. step1000,step2000."
        ),
    ] = None,
    scores: Annotated[
        str,
        typer.Option(
            "--scores",
            help="Comma-separated scan scores, and fv for function-vector scores (slower: "
            "patching on the model's pair tasks).",
        ),
    ] = ",".join(SWEEP_SCORES),
    seq_len: SeqLenOpt = None,
    batch: PromptBatchOpt = SWEEP_SCAN.batch,
    seeds: Annotated[int, typer.Option("--seeds", help="Prompt seeds.")] = 3,
    loss: Annotated[
        bool, typer.Option("--loss", help="Also the in-context loss (first vs repeated copy).")
    ] = False,
    config: SweepSettings = SweepSettings(),
    workers: Annotated[int, typer.Option("--workers", help="Local worker processes.")] = 1,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Run each model as a Ray task: 'local' starts a local instance; else a "
            "cluster's address (auto, ray://host:10001).",
            metavar="ADDRESS",
        ),
    ] = None,
) -> None:
    """Scan many models or checkpoints into a resumable Parquet dataset. A run folder is its
    whole checkpoint series; a zoo name is its final model (a note says how to sweep the
    series it ships)."""
    import dataclasses

    from induction.dynamics.series import series_hint
    from induction.dynamics.sweep import sweep as run_sweep
    from induction.errors import InputError
    from induction.scores.score_names import check_sweep_scores

    if batch < 1 or seeds < 1:
        raise InputError("--batch and --seeds must be >= 1")
    names = check_sweep_scores(scores)
    # the scan each model gets (its options here are the sweep's own: four scores and fv)
    settings = dataclasses.replace(
        config, scores=names, seq_len=seq_len, batch=batch, seeds=seeds, loss=loss
    )
    revs = revisions.split(",") if revisions is not None else None
    if revs is None:  # a name whose folder ships a series: say how to sweep the series
        for hint in filter(None, map(series_hint, sources)):
            typer.echo(f"note: {hint}", err=True)
    report = run_sweep(sources, out, settings, revisions=revs, workers=workers, ray=ray)
    typer.echo(report.summary())
    if report.failed:
        typer.echo(f"failed ({len(report.failed)}):", err=True)
        for item, msg in report.failed:
            typer.echo(f"  {item.describe()}: {msg}", err=True)
        raise typer.Exit(1)


def timeline(
    dataset: Annotated[Path, typer.Argument(help="A sweep dataset folder.")],
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Model key in the dataset (default: the only one)."),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Figure: .html (interactive) or .png.")
    ] = Path("timeline.html"),
    table: Annotated[
        Path | None,
        typer.Option("--table", help="Per-head formation table (.csv, .parquet, .json, .jsonl)."),
    ] = None,
    score: Annotated[str, typer.Option("--score", help="Score to follow.")] = "induction",
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            help="Formation threshold (default 0.4; FV scores have no default: give one).",
        ),
    ] = None,
    top: Annotated[int, typer.Option("--top", help="Heads drawn (the strongest at the end).")] = 8,
    settings: Annotated[
        str | None,
        typer.Option("--settings", help="Sweep settings hash, when the dataset holds several."),
    ] = None,
) -> None:
    """Per-head formation steps, growth events and the in-context loss over training."""
    from induction.errors import InputError
    from induction.figures.plots import FIGURE_SUFFIXES
    from induction.store.io import (
        TABLE_SUFFIXES,
        check_input_path,
        check_output_path,
        prepare_outputs,
    )

    if top < 1:
        raise InputError(f"--top must be >= 1, got {top}")
    if threshold is not None and not 0 <= threshold <= 1:  # NaN fails both comparisons
        raise InputError(f"--threshold must be in [0, 1], got {threshold}")
    check_input_path(dataset, "dataset")
    check_output_path(out, FIGURE_SUFFIXES)
    check_output_path(table, TABLE_SUFFIXES, "--table")
    prepare_outputs({"--out": out, "--table": table}, [dataset])
    from induction.dynamics.dataset import read_dataset
    from induction.dynamics.timeline import build_timeline
    from induction.figures.plots import save_figure
    from induction.progress import phase
    from induction.store.io import write_table, wrote

    with phase(f"reading {dataset}"):
        rows = read_dataset(dataset)
    tl = build_timeline(
        rows,
        model=model,
        score=score,
        threshold=threshold,
        settings=settings,
    )
    with phase(f"drawing {out}"):
        note = save_figure(tl.figure(top=top), out)
    if note:
        raise InputError(note)
    typer.echo(tl.sentence())
    if tl.hint is not None:
        typer.echo(f"note: {tl.hint}", err=True)
    typer.echo(wrote(out), err=True)
    if table is not None:
        write_table(tl.formed, table)
        typer.echo(wrote(table), err=True)
