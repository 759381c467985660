"""``induction lineage`` and ``induction grow``.

Keep imports light here: ``induction --help`` imports this module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from induction.commands.config_options import config_command
from induction.commands.options import DEFAULT_MODEL, ModelArg
from induction.errors import InputError, LineageError
from lineage.api import TraceConfig
from lineage.log import MAX_STEP


@config_command(TraceConfig, progress=True)
def lineage(
    model: ModelArg = DEFAULT_MODEL,
    config: TraceConfig = TraceConfig(),
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the summary as JSON instead of tables.")
    ] = False,
) -> None:
    """Trace the strongest induction heads back to their ancestors in the initial network."""
    import math

    from induction.models.specs import model_inputs
    from induction.store.io import TABLE_SUFFIXES, check_output_path, check_outputs, claim_outputs
    from lineage.api import trace
    from lineage.export import SUFFIXES

    initial, out, export = config.initial, config.out, config.export_paths
    if initial is not None and config.initial_scores is not None:
        raise InputError("pass either --initial or --initial-scores, not both")
    if config.top < 1:
        raise InputError(f"--top must be a positive integer, got {config.top}")
    if not 0 < config.cover <= 1:
        raise InputError(f"--cover must be in (0, 1], got {config.cover}; e.g. 0.8")
    threshold = config.threshold
    if threshold is not None and not math.isfinite(threshold):
        raise InputError(f"--threshold must be a finite score, got {threshold}; e.g. 0.4")
    check_output_path(out, TABLE_SUFFIXES, "--out")
    for path in export:
        check_output_path(path, tuple(SUFFIXES), "--export")
    check_outputs(
        {"--out": out, "--export": export},
        [*model_inputs(model), *model_inputs(initial), *config.input_paths],
    )
    with claim_outputs([out, *export]):  # one writer per output for the whole run
        result = trace(model, config)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        result.print()


def grow(
    checkpoint: Annotated[
        str, typer.Argument(help="Checkpoint folder (or zoo name) to grow; never modified.")
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="Folder for the grown checkpoint and its duplication_log.json."
        ),
    ],
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            help="lidas (default) or midas: one growth step; llama-pro: a zero-output copy "
            "after every --every layers (LLaMA-Pro block expansion).",
        ),
    ] = None,
    block: Annotated[
        int | None, typer.Option("--block", help="Block size of midas/lidas (default 4).")
    ] = None,
    every: Annotated[
        int | None,
        typer.Option("--every", help="llama-pro: insert a copy after every K-th layer."),
    ] = None,
    mergekit: Annotated[
        Path | None,
        typer.Option("--mergekit", help="A mergekit passthrough config (slices) to apply."),
    ] = None,
    step: Annotated[
        int | None,
        typer.Option("--step", help="Training step recorded in the log (default: the last one)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing output folder (never the input).")
    ] = False,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            help="Write an output that would fill more than half the disk's free space (or "
            "exceed $INDUCTION_LARGE_OUTPUT bytes) without refusing.",
        ),
    ] = False,
) -> None:
    """Grow a checkpoint by a MIDAS/LIDAS step, LLaMA-Pro expansion or a mergekit config."""
    if step is not None and not 0 <= step <= MAX_STEP:
        raise InputError(f"--step must be in 0..{MAX_STEP:,}, got {step}")
    from induction.models.specs import model_inputs
    from induction.store.io import check_output_path, check_outputs, wrote
    from lineage.checkpoint import grow_checkpoint, read_checkpoint
    from lineage.mergekit import apply_mergekit

    if preset is not None and mergekit is not None:
        raise InputError("pass either --preset or --mergekit, not both")
    if block is not None and (mergekit is not None or preset == "llama-pro"):
        what = "--mergekit" if mergekit is not None else "--preset llama-pro"
        raise InputError(f"--block goes with --preset midas or lidas, not {what}; drop it")
    block = 4 if block is None else block
    if block < 1:
        raise InputError(f"--block must be >= 1 (layers per copied block), got {block}")
    check_outputs({"--out": out}, [*model_inputs(checkpoint), mergekit])
    check_output_path(out, flag_name="--out", folder=True)
    if every is not None and preset != "llama-pro":
        raise InputError("--every goes with --preset llama-pro")
    before = read_checkpoint(checkpoint)
    if mergekit is not None:
        grown = apply_mergekit(mergekit, checkpoint, out, step=step, force=force, allow_large=yes)
        how = f"mergekit {mergekit.name}"
    else:
        grown = grow_checkpoint(
            checkpoint,
            out,
            preset=preset or "lidas",
            block=block,
            every=every,
            step=step,
            force=force,
            allow_large=yes,
        )
        how = (
            f"llama-pro (every {every})"
            if preset == "llama-pro"
            else f"{preset or 'lidas'} (block {block})"
        )
    event = grown.events[-1]
    replaced = " (replaced the old folder)" if wrote(out).startswith("replaced") else ""
    typer.echo(
        f"grew {before.folder} ({before.depth} layers) by {how} -> {out}{replaced} "
        f"({event.depth_after} layers); duplication_log.json: {len(grown.events)} event(s), "
        f"initial depth {grown.initial_depth}"
    )
    order = [p for [(p, _)] in event.layer_map]
    typer.echo(f"layer sources: {order}")
    if event.zeroed:
        typer.echo(f"zero-output copies (o_proj/down_proj = 0, write nothing): {event.zeroed}")


__all__ = ["grow", "lineage", "LineageError"]
