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
#: The most training steps ``--steps`` accepts (days of CPU time for the smallest model).
MAX_STEPS = 10_000_000


@zoo_app.command("train")
def train_command(
    family: str = typer.Argument(
        None,
        help="dense, grown, looped or grown12 (4 -> 8 -> 12); fixed protocol (docs/zoo.md): "
        "dense8, lidas8, looped8 (FLOP-matched), looped8p (parameter-matched); round 4 "
        "(zoo4g): dense8r, grown8r, grown8re, grown8rt, grown8rte, looped8r, looped8rp",
    ),
    seed: int = typer.Option(0, "--seed", help="Training seed (init, data, everything random)."),
    out: Path = typer.Option(
        None, "--out", help="Checkpoint folder to write (default: ./runs/<family>-s<seed>)."
    ),
    steps: str = typer.Option(
        None,
        "--steps",
        metavar="INTEGER",
        help="Training steps (default: the zoo's); up to twice as many if no head has formed.",
    ),
    threads: int = typer.Option(
        1, "--threads", help="CPU threads; the same seed and thread count give the same weights."
    ),
    grow_at: str = typer.Option(
        None,
        "--grow-at",
        help="grown or lidas8 only: comma-separated fractions of the steps, one LIDAS growth "
        "event each (grown: default 0.4, 4 -> 8 layers, each waits for a formed head; lidas8: "
        "default Prop-alpha, fixed).",
    ),
    resume: Path = typer.Option(
        None,
        "--resume",
        help="fixed-protocol presets: continue the run in this folder from its latest complete "
        "checkpoint (same config; bit-identical to an uninterrupted run on CPU).",
    ),
    device: str = typer.Option(
        None,
        "--device",
        help="fixed-protocol presets: cpu (default) or cuda; the same recipe, not bit-identical "
        "on a GPU. With --resume: continue there instead of where the run began.",
    ),
) -> None:
    """Train one zoo model from scratch with a progress bar and write it as a checkpoint folder."""
    from induction.io import check_output_path
    from induction.training.train import zoo_config, zoo_model_name

    if threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    cores = os.cpu_count() or 1
    if threads > cores:
        raise InputError(f"--threads {threads} exceeds this machine's {cores} CPU cores; "
                         f"use --threads {cores} or fewer")  # fmt: skip
    if not 0 <= seed < 2**32:
        raise InputError(f"--seed must be in 0..{2**32 - 1}, got {seed}")
    steps = _steps(steps)
    if resume is not None:
        given = [f for f, v in (("--steps", steps), ("--out", out), ("--grow-at", grow_at),
                                ("--seed", seed or None)) if v is not None]  # fmt: skip
        if given:
            raise InputError(
                f"--resume continues {resume} with its own settings; drop {', '.join(given)}"
            )
        return _resume(family, resume, device)
    if family is None:
        raise InputError("name a zoo family (or --resume a run folder)")
    cfg = zoo_config(family, seed, threads=threads)
    fixed = getattr(cfg, "protocol", None) == "fixed"
    if device is not None:
        if not fixed:
            raise InputError(f"--device applies to fixed-protocol presets; {family} trains on cpu")
        from induction.training.protocol import check_device

        check_device(device)
        cfg.device = device
    if fixed:
        from induction.training.protocol import model_name

        _fixed_options(cfg, steps, grow_at)
        out = out or Path("runs") / model_name(cfg)
    else:
        if grow_at is not None:
            if cfg.family != "grown":
                raise InputError("--grow-at applies to the grown family only (and lidas presets)")
            cfg.grow_at = _fractions(grow_at)
            cfg.depth = cfg.initial_depth + cfg.grow_block * len(cfg.grow_at)
        if steps is not None:
            cfg.steps, cfg.max_steps = steps, 2 * steps
        out = out or Path("runs") / zoo_model_name(cfg)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; pass a folder path")
    check_output_path(out, flag_name="--out", folder=True)
    from induction.io import check_outputs, claim_output
    from induction.zoo import registry

    check_outputs({"--out": out}, [registry.MODELS_DIR])  # never into the shipped zoo
    with claim_output(out):  # one run per output folder; cleans a killed run's leftovers
        if out.exists() and any(out.iterdir()):
            hint = f", or --resume {out}" if fixed else ""
            raise InputError(f"{out} already exists and is not empty; pass another --out{hint}")
        card = _train_fixed(cfg, out) if fixed else _train_atomic(cfg, out)
    _report(card, out)


def _train_atomic(cfg, out: Path) -> dict:
    """Old-protocol families: train in a hidden temporary folder, renamed into place."""
    from induction.io import note_written
    from induction.training.train import train

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        _, card = train(cfg, out=tmp)
        os.chmod(tmp, 0o755)
        if out.exists():
            out.rmdir()  # empty, checked under the claim
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    note_written(out, replaced=False)
    return card


def _fixed_options(cfg, steps: int | None, grow_at: str | None) -> None:
    if grow_at is not None:
        if cfg.family != "lidas":
            raise InputError("--grow-at applies to the grown family only (and lidas presets)")
        cfg.grow_at = list(_fractions(grow_at))
        cfg.depth = cfg.initial_depth + cfg.grow_block * len(cfg.grow_at)
    if steps is not None:
        cfg.steps = steps


def _train_fixed(cfg, out: Path) -> dict:
    """A fixed-protocol run trains in ``out`` itself (so it can resume): checkpoints under
    ``out/checkpoints``, the model files when it finishes, ``card.json`` last."""
    from induction.training.protocol import train_fixed

    _, card = train_fixed(cfg, out=out)
    return card


def _report(card: dict, out: Path) -> None:
    from rich.console import Console

    if "formed_at_step" in card:
        when = f"heads formed at step {card['formed_at_step']}"
    else:
        when = f"grown at steps {card['growth_steps']}" if card["growth_steps"] else "no growth"
    score = card[f"max_induction_d{card['repeat_len']}"]
    Console().print(
        f"[bold]{card['name']}[/]: {card['steps']} steps in {card['train_seconds']} s, "
        f"{when}, max induction (d={card['repeat_len']}) "
        f"{score}, FLOPs {card['train_flops']:.3g} "
        f"({card['flops_vs_dense']}x dense) -> {out}"
    )
    from lineage.log import LOG_FILE, DuplicationLog

    if card.get("growth_steps") and (out / LOG_FILE).is_file():
        # R4-gate (docs/replication.md): were the heads where growth copies? m reachable
        from ablation.gates import copied_head_before_growth
        from induction.score_names import INDUCTION_THRESHOLD

        gate = copied_head_before_growth(card, DuplicationLog.load(out / LOG_FILE),
                                         INDUCTION_THRESHOLD)  # fmt: skip
        word = {True: "PASS", False: "FAIL", None: "n/a"}[gate.passed]
        Console().print(f"gate {gate.name}: {word}: {gate.detail}")


def _resume(family: str | None, out: Path, device: str | None = None) -> None:
    from induction.io import claim_output, read_json
    from induction.training.protocol import TRAIN_CONFIG, train_fixed

    config = out / TRAIN_CONFIG
    if not config.is_file():
        raise InputError(f"{out} is not a fixed-protocol run folder (no {TRAIN_CONFIG})")
    data = read_json(config, "training config")
    preset = data.get("preset") if isinstance(data, dict) else None
    if family is not None and family != preset:
        raise InputError(f"{out} is a {preset} run, not {family}")
    if (out / "card.json").is_file():
        raise InputError(f"{out} has finished training; nothing to resume")
    with claim_output(out):  # one run per folder
        _, card = train_fixed(None, out=out, resume=True, device=device)
    _report(card, out)


def _steps(text: str | None) -> int | None:
    """``--steps`` as a whole number in [1, :data:`MAX_STEPS`] (``1e5`` is 100000)."""
    if text is None:
        return None
    try:
        value: float = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
    if not 1 <= value <= MAX_STEPS or value != int(value):
        raise InputError(
            f"--steps must be a whole number of steps from 1 to {MAX_STEPS:,}, got {text}"
        )
    return int(value)


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
