"""``induction scan``: score and rank every attention head of a model as an induction head."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from induction.commands.config_options import config_command
from induction.commands.options import (
    DEFAULT_MODEL,
    DeviceOpt,
    DtypeOpt,
    ModelArg,
    OutOpt,
    TrustRemoteCodeOpt,
)
from induction.errors import InputError
from induction.scores.score_names import PATTERN_MODES, ScanConfig


@config_command(ScanConfig)
def scan(
    model: ModelArg = DEFAULT_MODEL,
    config: ScanConfig = ScanConfig(),
    top: Annotated[
        int, typer.Option("--top", help="Heads shown in the table and the --bar chart.")
    ] = 10,
    output_norm: Annotated[
        bool,
        typer.Option(
            "--output-norm",
            help="Add each head's output norm on the scan prompts (mean |z W_O|; heads near 0 "
            "write nothing, e.g. zero-initialised copies of llama-pro growth).",
        ),
    ] = False,
    layers: Annotated[
        str | None, typer.Option("--layers", help="Layers to score: 0,3,5 or 2:6 (half-open).")
    ] = None,
    out: OutOpt = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Layer x head heatmap of the induction score (.html/.png)."),
    ] = None,
    bar: Annotated[
        Path | None, typer.Option("--bar", help="Ranked bar chart of the top heads (.html/.png).")
    ] = None,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = None,
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            help="CPU threads for torch (default: $INDUCTION_THREADS, else 1 for zoo-vocabulary "
            "models on CPU, whose tiny matrices gain nothing from more, else torch's).",
        ),
    ] = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
) -> None:
    """Score every attention head on repeated random tokens and rank the induction heads."""
    from induction.scores.prompts import normalize_seeds
    from induction.scores.score_names import check_rank_by

    check_rank_by(config.rank_by, config.scores)
    normalize_seeds(config.seeds)  # before any work
    if config.batch <= 0:
        raise InputError(f"batch must be a positive integer, got {config.batch}")
    if top < 1:
        raise InputError(f"--top must be >= 1, got {top}")
    if threads is not None and threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    if config.chunk is not None and config.chunk < 1:
        raise InputError(f"--chunk must be a positive integer, got {config.chunk}; or leave it out")
    if config.patterns not in PATTERN_MODES:
        raise InputError(f"--patterns {config.patterns!r}: choose auto, eager or chunked")
    _check_outputs(model, out, plot, bar)

    from induction.store.io import claim_outputs, wrote

    with claim_outputs([out, plot, bar]):  # held for the whole run: one writer per output
        from induction.models.loading import load_model
        from induction.progress import phase

        with phase(f"loading {model}"):  # a line in a log when it takes over 2 s
            loaded = load_model(
                model,
                device=device,
                dtype=dtype,
                trust_remote_code=trust_remote_code,
                threads=threads,
            )
        layer_list = _parse_layers(layers, loaded.info.n_layers) if layers else None
        from induction.scores.scan import scan as run_scan

        result = run_scan(loaded, config, layers=layer_list)
        df = result.to_frame()
        if output_norm:
            from induction.scores.output_norm import add_output_norm

            df = add_output_norm(df, loaded)  # on the scan's own prompts, attrs kept
        _print_report(df, loaded, top)
        if out is not None:
            from induction.store.io import write_table

            write_table(df, out)
            typer.echo(wrote(out), err=True)
        notes = []
        for path, kind in ((plot, "heatmap"), (bar, "bar")):
            if path is None:
                continue
            from induction.figures import plots

            # --top sizes the bar chart as it does the table
            note = plots.save_figure(result.plot(kind, top=top), path)
            if note:
                notes.append(note)
            else:
                typer.echo(wrote(path), err=True)
        if notes:  # a figure that could not be written: exit 2, after every other output
            raise InputError("; ".join(notes))


# --------------------------------------------------------------------------- parsing


def _parse_layers(text: str, n_layers: int) -> list[int]:
    try:
        if ":" in text:
            lo, hi = text.split(":")
            return list(range(int(lo or 0), int(hi) if hi else n_layers))
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"--layers {text!r}: expected 0,3,5 or 2:6") from None


def _check_outputs(model: str, out: Path | None, plot: Path | None, bar: Path | None) -> None:
    """Refuse unusable output paths before any work: an input, a bad suffix, a folder, an
    unwritable or impossible location, or two outputs naming one file."""
    from induction.figures.plots import FIGURE_SUFFIXES
    from induction.models.specs import model_inputs
    from induction.store.io import TABLE_SUFFIXES, check_output_path, check_outputs

    check_outputs({"--out": out, "--plot": plot, "--bar": bar}, model_inputs(model))
    check_output_path(out, TABLE_SUFFIXES, "--out")
    check_output_path(plot, FIGURE_SUFFIXES, "--plot")
    check_output_path(bar, FIGURE_SUFFIXES, "--bar")


# --------------------------------------------------------------------------- report


def _print_report(df, loaded, top: int) -> None:
    from rich.console import Console
    from rich.table import Table

    from induction import INDUCTION_THRESHOLD

    a = df.attrs
    console = Console()
    if not console.is_terminal:  # piped or captured: do not squeeze the table to 80 columns
        console = Console(width=max(console.width, 160))
    rank_by = a["rank_by"]
    score_cols = list(a["scores"])
    table = Table(
        title=f"Top {min(top, len(df))} heads of {a['model']} by {rank_by}",
        title_justify="left",
    )
    table.add_column("rank", justify="right")
    table.add_column("layer", justify="right")
    table.add_column("head", justify="right")
    looped = "pass" in df.columns
    if looped:
        table.add_column("block layer", justify="right")
        table.add_column("pass", justify="right")
    for s in score_cols:
        table.add_column(s, justify="right")
    norms = "output_norm" in df.columns
    if norms:
        table.add_column("output_norm", justify="right")
    for row in df.sort_values("rank").head(top).itertuples(index=False):
        cells = [str(row.rank), str(row.layer), str(getattr(row, "head"))]
        if looped:  # named rows rename the keyword column "pass" (to "_2"): read it by place
            cells += [str(row.block_layer), str(row[list(df.columns).index("pass")])]
        for s in score_cols:
            value, std = getattr(row, s), getattr(row, f"{s}_std")
            text = f"{value:.3f}"
            if std == std and std > 0:  # not NaN, not a weights-only score
                text += f" ± {std:.3f}"
            cells.append(text)
        if norms:
            cells.append(f"{row.output_norm:.3g}")
        table.add_row(*cells)
    console.print(table)
    layout = (
        f"[BOS]+r x{a['n_repeats']}"
        if a["prefix_kind"] == "bos"
        else (f"[{a['prefix_kind']} {a['prefix_token']}]+r x{a['n_repeats']}")
    )
    console.print(
        f"prompts: {layout}, T={a['seq_len']}, {a['batch']} per seed, seeds {a['seeds']}, "
        f"token ids [{a['token_range'][0]}, {a['token_range'][1]}); convention {a['convention']}"
        + ("; score ± sd over prompt seeds" if len(a["seeds"]) > 1 else ""),
        highlight=False,
    )
    if "induction" in df.columns:
        n = int((df["induction"] >= INDUCTION_THRESHOLD).sum())
        console.print(
            f"heads with induction >= {INDUCTION_THRESHOLD}: {n} of {len(df)}", highlight=False
        )
    loss = a.get("in_context_loss")
    if loss:
        spread = loss["loss_drop_std"]
        console.print(
            f"in-context loss: first copy {loss['loss_first']:.3f}, repeated "
            f"{loss['loss_repeat']:.3f}, drop {loss['loss_drop']:.3f}"
            + (f" ± {spread:.3f}" if spread == spread else "")
            + " nats",
            highlight=False,
        )
