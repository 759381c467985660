"""``induction fv``: function-vector scores of every head (Todd et al. 2024;
induction.circuits.fv)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from induction.circuits.config import FVConfig
from induction.commands.config_options import config_command
from induction.commands.options import DEFAULT_MODEL, DeviceOpt, DtypeOpt, ModelArg, figure_opt
from induction.errors import InputError
from induction.heads import head_label

#: Below this headroom (answer probability, clean minus corrupted) the scores are noise.
HEADROOM_WARN = 0.1


@config_command(FVConfig, progress=True)
def fv(
    model: ModelArg = DEFAULT_MODEL,
    config: FVConfig = FVConfig(),
    top: Annotated[int, typer.Option("--top", help="Heads shown in the table.")] = 12,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Score table (.csv, .parquet, .jsonl).")
    ] = None,
    plot: Annotated[Path | None, figure_opt("Layer x head heatmap of the FV scores")] = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = None,
    threads: Annotated[
        int | None, typer.Option("--threads", help="CPU threads for torch (default: torch's).")
    ] = None,
) -> None:
    """Score every head by its function-vector effect: its mean output at the last position
    of clean few-shot prompts, patched into prompts with shuffled (or foreign) labels, raises
    the answer's probability by this much (the causal indirect effect, mean over the tasks)."""
    from induction.models.specs import model_inputs
    from induction.store.io import (
        TABLE_SUFFIXES,
        check_output_path,
        check_outputs,
        claim_outputs,
        wrote,
    )

    if top < 1:
        raise InputError(f"--top must be an integer >= 1, got {top}")
    if threads is not None and threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    check_output_path(out, TABLE_SUFFIXES, "--out")
    if plot is not None and plot.suffix.lower() not in (".html", ".htm", ".png"):
        raise InputError(f"--plot {plot}: use a .html or .png file name")
    outputs = {"--out": out, "--plot": plot}
    check_outputs(outputs, model_inputs(model))
    with claim_outputs(outputs.values()):  # held for the whole run: one writer per output
        from induction.circuits.fv import fv_scores
        from induction.models.loading import load_model
        from induction.progress import phase

        with phase(f"loading {model}"):
            loaded = load_model(model, device=device, dtype=dtype, threads=threads)
        result = fv_scores(loaded, config)
        table = result.to_frame().sort_values("rank").head(top)
        typer.echo(
            f"{result.model}: function-vector score (mean causal indirect effect on the "
            f"answer's probability over {result.settings['n_tasks']} "
            f"{result.settings['suite']} tasks, {config.n_prompts} prompts x {config.seeds} "
            f"seed(s), {config.shots} shots, {config.corruption} labels)"
        )
        baselines = result.baselines
        assert baselines is not None  # fv_scores measures them
        b = baselines.groupby("task")[["p_clean", "p_corrupted"]].mean().mean()
        typer.echo(
            f"answer probability without a patch: clean {b.p_clean:.3f}, corrupted "
            f"{b.p_corrupted:.3f} (headroom {result.headroom:+.3f}: the most a CIE can be)"
        )
        null = float(baselines["cie_null"].abs().max())
        typer.echo(f"null patch (the same passes, nothing patched): CIE {null:.1e} (should be 0)")
        if result.headroom < HEADROOM_WARN:
            typer.echo(
                f"warning: headroom {result.headroom:+.3f} < {HEADROOM_WARN}: the corrupted "
                "prompts still do the task, so these scores are noise; try --corruption "
                "foreign",
                err=True,
            )
        typer.echo(f"{'rank':>4} {'head':>6} {'fv':>9} {'sd (seeds)':>10}")
        rows = zip(
            table["rank"].astype(int),
            table["layer"].astype(int),
            table["head"].astype(int),
            table["fv"].astype(float),
            table["fv_std"].astype(float),
            strict=True,
        )
        for rank, layer, head, score, sd in rows:
            spread = "-" if sd != sd else f"{sd:.4f}"  # one seed: no spread (NaN)
            typer.echo(f"{rank:>4} {head_label(layer, head):>6} {score:>9.4f} {spread:>10}")
        if out is not None:
            result.save(out)
            typer.echo(wrote(out), err=True)
        if plot is not None:
            result.plot(plot)
            typer.echo(wrote(plot), err=True)
