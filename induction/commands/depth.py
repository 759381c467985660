"""``induction depth``: per-layer angles of the residual stream and its updates (docs/dynamics.md).

Keep imports light here: ``induction --help`` imports this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from induction.commands.options import DeviceOpt, DtypeOpt, TrustRemoteCodeOpt


def depth(
    models: Annotated[
        list[str],
        typer.Argument(help="One or more model specs; several are overlaid in one figure."),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Figure: .html (interactive) or .png.")
    ] = Path("depth.html"),
    table: Annotated[
        Path | None,
        typer.Option("--table", help="Also write the angles (.csv, .parquet, .json, .jsonl)."),
    ] = None,
    text: Annotated[
        Path | None,
        typer.Option("--text", help="UTF-8 text file to run (default: the scan's prompts)."),
    ] = None,
    batch: Annotated[int, typer.Option("--batch", help="Scan prompts to run.")] = 8,
    device: DeviceOpt = "auto",
    dtype: DtypeOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
) -> None:
    """Angles between consecutive residual states and consecutive layer updates, per layer
    (Liu et al. 2026, arXiv 2602.05970)."""
    from induction.errors import InputError
    from induction.figures.plots import FIGURE_SUFFIXES
    from induction.models.specs import model_inputs
    from induction.store.io import TABLE_SUFFIXES, check_output_path, check_outputs, claim_outputs

    if batch < 1:
        raise InputError(f"--batch must be >= 1, got {batch}")
    check_output_path(out, FIGURE_SUFFIXES)
    check_output_path(table, TABLE_SUFFIXES, "--table")
    content = None
    if text is not None:
        from induction.store.io import read_text

        content = read_text(text, "--text file")
    inputs = [p for m in models for p in model_inputs(m)] + [text]
    check_outputs({"--out": out, "--table": table}, inputs)
    with claim_outputs([out, table]):  # held for the whole run: one writer per output
        import pandas as pd

        from induction.figures.plots import save_figure
        from induction.models.loading import load_model
        from induction.progress import phase
        from induction.scores.depth import depth_angles, depth_figure
        from induction.store.io import write_table, wrote

        results = []
        for spec in models:
            with phase(f"loading {spec}"):
                loaded = load_model(
                    spec, device=device, dtype=dtype, trust_remote_code=trust_remote_code
                )
            r = depth_angles(loaded, text=content, batch=batch, progress=True)
            results.append(r)
            mean_state = sum(r.state_mean) / len(r.state_mean)
            typer.echo(
                f"{r.model}: {len(r.state_mean)} layers, mean state angle {mean_state:.1f} deg"
            )
            del loaded
        with phase(f"drawing {out}"):
            note = save_figure(depth_figure(results), out)
        if note:
            raise InputError(note)
        typer.echo(wrote(out))
        if table is not None:
            write_table(pd.concat([r.to_frame() for r in results], ignore_index=True), table)
            typer.echo(wrote(table))
