"""`induction zoo ...`: list and (re)train the embedded zoo models."""

from __future__ import annotations

from pathlib import Path

import typer

from induction.errors import InputError

zoo_app = typer.Typer(
    help="The embedded zoo of tiny dense, grown and looped models.", no_args_is_help=True
)


@zoo_app.command("train")
def train_command(
    family: str = typer.Argument(..., help="dense, grown or looped"),
    seed: int = typer.Option(0, "--seed", help="Training seed (init, data, everything random)."),
    out: Path = typer.Option(
        None, "--out", help="Checkpoint folder to write (default: ./zoo/<family>-s<seed>)."
    ),
    steps: int = typer.Option(
        None,
        "--steps",
        help="Training steps (default: the zoo's); up to twice as many if no head has formed.",
    ),
    threads: int = typer.Option(
        1, "--threads", help="CPU threads; the same seed and thread count give the same weights."
    ),
) -> None:
    """Train one zoo model from scratch with a progress bar and write it as a checkpoint folder."""
    from rich.console import Console

    from induction.zoo.train import FAMILIES, ZooTrainConfig, train

    if family not in FAMILIES:
        raise InputError(f"unknown zoo family {family!r}; use one of {', '.join(FAMILIES)}")
    out = out or Path("zoo") / f"{family}-s{seed}"
    if out.exists() and any(out.iterdir()):
        raise InputError(f"{out} already exists and is not empty; pass another --out")
    cfg = ZooTrainConfig(family=family, seed=seed, threads=threads)
    if steps is not None:
        if steps <= 0:
            raise InputError("--steps must be positive")
        cfg.steps, cfg.max_steps = steps, 2 * steps
    tmp = out.with_name(out.name + ".partial")
    _, card = train(cfg, out=tmp)
    tmp.rename(out)
    score = card[f"max_induction_d{card['repeat_len']}"]
    Console().print(
        f"[bold]{card['name']}[/]: {card['steps']} steps in {card['train_seconds']} s, "
        f"heads formed at step {card['formed_at_step']}, max induction (d={card['repeat_len']}) "
        f"{score}, FLOPs {card['train_flops']:.3g} "
        f"({card['flops_vs_dense']}x dense) -> {out}"
    )
