"""`induction zoo ...`: list and (re)train the embedded zoo models."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import typer

from induction.errors import InputError

zoo_app = typer.Typer(
    help="The embedded zoo of tiny dense, grown and looped models.", no_args_is_help=True
)


@zoo_app.command("train")
def train_command(
    family: str = typer.Argument(..., help="dense, grown, looped or grown12 (4 -> 8 -> 12)"),
    seed: int = typer.Option(0, "--seed", help="Training seed (init, data, everything random)."),
    out: Path = typer.Option(
        None, "--out", help="Checkpoint folder to write (default: ./runs/<family>-s<seed>)."
    ),
    steps: int = typer.Option(
        None,
        "--steps",
        help="Training steps (default: the zoo's); up to twice as many if no head has formed.",
    ),
    threads: int = typer.Option(
        1, "--threads", help="CPU threads; the same seed and thread count give the same weights."
    ),
    grow_at: str = typer.Option(
        None,
        "--grow-at",
        help="grown only: comma-separated fractions of the steps, one LIDAS growth event each "
        "(default 0.4: 4 -> 8 layers; '0.25,0.5': 4 -> 8 -> 12). Each waits for a formed head.",
    ),
) -> None:
    """Train one zoo model from scratch with a progress bar and write it as a checkpoint folder."""
    from rich.console import Console

    from induction.io import check_output_path
    from zoo.train import train, zoo_config, zoo_model_name

    if threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    if steps is not None and steps <= 0:
        raise InputError(f"--steps must be positive, got {steps}")
    cfg = zoo_config(family, seed, threads=threads)
    if grow_at is not None:
        if cfg.family != "grown":
            raise InputError("--grow-at applies to the grown family only")
        cfg.grow_at = _fractions(grow_at)
        cfg.depth = cfg.initial_depth + cfg.grow_block * len(cfg.grow_at)
    out = out or Path("runs") / zoo_model_name(cfg)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; pass a folder path")
    check_output_path(out, flag_name="--out", folder=True)
    if steps is not None:
        if steps <= 0:
            raise InputError("--steps must be positive")
        cfg.steps, cfg.max_steps = steps, 2 * steps
    from induction.io import check_outputs, claim_output, note_written
    from induction.zoo import registry

    check_outputs({"--out": out}, [registry.MODELS_DIR])  # never into the shipped zoo
    with claim_output(out):  # one run per output folder; cleans a killed run's leftovers
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise InputError(f"{out} already exists and is not empty; pass another --out")
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
        try:
            _, card = train(cfg, out=tmp)
            os.chmod(tmp, 0o755)
            if out.exists():
                out.rmdir()  # empty, checked above under the claim
            os.replace(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        note_written(out, replaced=False)
    score = card[f"max_induction_d{card['repeat_len']}"]
    Console().print(
        f"[bold]{card['name']}[/]: {card['steps']} steps in {card['train_seconds']} s, "
        f"heads formed at step {card['formed_at_step']}, max induction (d={card['repeat_len']}) "
        f"{score}, FLOPs {card['train_flops']:.3g} "
        f"({card['flops_vs_dense']}x dense) -> {out}"
    )


def _fractions(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        values = ()
    if not values or any(not 0 <= v < 1 for v in values) or list(values) != sorted(set(values)):
        raise InputError(
            f"--grow-at takes increasing fractions in [0, 1) separated by commas, got {text!r}"
        )
    return values
