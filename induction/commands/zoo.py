"""`induction zoo ...`: list and (re)train the embedded zoo models."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from induction.errors import InputError

if TYPE_CHECKING:
    from induction.training.protocol import FixedTrainConfig

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
    seed: int = typer.Option(
        None, "--seed", help="Training seed (init, data, everything random); default 0."
    ),
    seeds: str = typer.Option(
        None,
        "--seeds",
        help="Several seeds instead of --seed: a list or ranges (0-7, 0,2,5); each trains into "
        "<out>/<family>-s<seed> (--out is then their parent folder, default ./runs).",
    ),
    seeds_per_process: int = typer.Option(
        None,
        "--seeds-per-process",
        help="fixed-protocol presets: seeds batched as one model in this process (default: 8 "
        "on cuda; 1 on cpu, where batching gains little and reruns stay bit-identical; "
        "docs/zoo.md, 'Many seeds per process').",
    ),
    out: Path = typer.Option(
        None, "--out", help="Checkpoint folder to write (default: ./runs/<family>-s<seed>)."
    ),
    steps: str | None = typer.Option(
        None,
        "--steps",
        metavar="INTEGER",
        help="Training steps (default: the zoo's); up to twice as many if no head has formed.",
    ),
    threads: int = typer.Option(
        None,
        "--threads",
        help="CPU threads (default 1); the same seed and thread count give the same weights.",
    ),
    grow_at: str = typer.Option(
        None,
        "--grow-at",
        help="grown or lidas8 only: comma-separated fractions of the steps, one LIDAS growth "
        "event each (grown: default 0.4, 4 -> 8 layers, each waits for a formed head; lidas8: "
        "default Prop-alpha, fixed).",
    ),
    resume: list[Path] = typer.Option(
        None,
        "--resume",
        help="fixed-protocol presets: continue the run in this folder from its latest complete "
        "checkpoint (same config; bit-identical to an uninterrupted run on CPU). Repeat it to "
        "resume several seeds of one arm together (--seeds-per-process).",
    ),
    device: str = typer.Option(
        None,
        "--device",
        help="fixed-protocol presets: cpu (default) or cuda; the same recipe, not bit-identical "
        "on a GPU. With --resume: continue there instead of where the run began.",
    ),
) -> None:
    """Train one zoo model from scratch with a progress bar and write it as a checkpoint folder."""
    from induction.store.io import check_output_path
    from induction.training.train import zoo_config, zoo_model_name

    threads_given, threads = threads is not None, 1 if threads is None else threads
    if threads < 1:
        raise InputError(f"--threads must be >= 1, got {threads}")
    cores = os.cpu_count() or 1
    if threads > cores:
        raise InputError(f"--threads {threads} exceeds this machine's {cores} CPU cores; "
                         f"use --threads {cores} or fewer")  # fmt: skip
    if seed is not None and not 0 <= seed < 2**32:
        raise InputError(f"--seed must be in 0..{2**32 - 1}, got {seed}")
    if seeds_per_process is not None and seeds_per_process < 1:
        raise InputError(f"--seeds-per-process must be >= 1, got {seeds_per_process}")
    n_steps = _steps(steps)
    if resume:
        given = [f for f, v in (("--steps", n_steps), ("--out", out), ("--grow-at", grow_at),
                                ("--seed", seed), ("--seeds", seeds),
                                ("--threads", threads if threads_given else None)
                                ) if v is not None]  # fmt: skip
        if given:
            raise InputError(
                f"--resume continues {resume[0]} with its own settings; drop {', '.join(given)}"
            )
        return _resume(family, resume, device, seeds_per_process)
    if family is None:
        raise InputError("name a zoo family (or --resume a run folder)")
    if seed is not None and seeds is not None:
        raise InputError("give --seed or --seeds, not both")
    if seeds is not None:
        from induction.training.multiseed import parse_seeds

        seed_list = parse_seeds(seeds)
    else:
        seed_list = [seed or 0]
    cfgs = [zoo_config(family, s, threads=threads) for s in seed_list]
    fixed = getattr(cfgs[0], "protocol", None) == "fixed"
    if device is not None:
        if not fixed:
            raise InputError(f"--device applies to fixed-protocol presets; {family} trains on cpu")
        from induction.training.protocol import check_device

        check_device(device)
    if seeds_per_process not in (None, 1) and not fixed:
        raise InputError(
            f"--seeds-per-process applies to fixed-protocol presets; {family} trains one seed "
            "per process"
        )
    for cfg in cfgs:
        if fixed:
            cfg.device = device or cfg.device
            _fixed_options(cfg, n_steps, grow_at)
        else:
            _first_zoo_options(cfg, n_steps, grow_at)
    names = [zoo_model_name(cfg) for cfg in cfgs]
    if seeds is None:
        outs = [out or Path("runs") / names[0]]
    else:
        if out is not None and out.exists() and not out.is_dir():
            raise InputError(f"--out {out} is a file; pass a folder path")
        outs = [(out or Path("runs")) / name for name in names]
    for path in outs:
        if path.exists() and not path.is_dir():
            raise InputError(f"--out {path} is a file; pass a folder path")
        check_output_path(path, flag_name="--out", folder=True)
    from induction.models import registry
    from induction.store.io import check_outputs, claim_outputs

    check_outputs({"--out": outs}, [registry.MODELS_DIR])  # never into the shipped zoo
    with claim_outputs(outs):  # one run per output folder; cleans a killed run's leftovers
        for path in outs:
            if path.exists() and any(path.iterdir()):
                hint = f", or --resume {path}" if fixed else ""
                raise InputError(
                    f"{path} already exists and is not empty; pass another --out{hint}"
                )
        if fixed:
            per = seeds_per_process or _default_per_process(cfgs[0].device)
            cards = _train_fixed(cfgs, outs, per)
        else:
            cards = [_train_atomic(cfg, path) for cfg, path in zip(cfgs, outs, strict=True)]
    for card, path in zip(cards, outs, strict=True):
        _report(card, path)


def _default_per_process(device: str) -> int:
    from induction.training.multiseed import default_seeds_per_process

    return default_seeds_per_process(device)


def _first_zoo_options(cfg, steps: int | None, grow_at: str | None) -> None:
    if grow_at is not None:
        if cfg.family != "grown":
            raise InputError("--grow-at applies to the grown family only (and lidas presets)")
        cfg.grow_at = _fractions(grow_at)
        cfg.depth = cfg.initial_depth + cfg.grow_block * len(cfg.grow_at)
    if steps is not None:
        cfg.steps, cfg.max_steps = steps, 2 * steps


def _train_atomic(cfg, out: Path) -> dict:
    """Old-protocol families: train in a hidden temporary folder, renamed into place."""
    from induction.store.io import note_written
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


def _train_fixed(cfgs: list, outs: list[Path], per_process: int) -> list[dict]:
    """Fixed-protocol runs train in their folders themselves (so they can resume): checkpoints
    under ``out/checkpoints``, the model files when they finish, ``card.json`` last;
    ``per_process`` seeds at a time as one batched model."""
    from induction.training.multiseed import train_seeds
    from induction.training.protocol import train_fixed

    if per_process == 1:
        return [train_fixed(cfg, out=o)[1] for cfg, o in zip(cfgs, outs, strict=True)]
    cards = []
    for i in range(0, len(cfgs), per_process):
        chunk: list[Path | None] = [*outs[i : i + per_process]]  # as train_seeds types it
        done = train_seeds(cfgs[i : i + per_process], chunk)
        cards += [card for _, card in done]
    return cards


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
        from induction.heads import INDUCTION_THRESHOLD

        gate = copied_head_before_growth(card, DuplicationLog.load(out / LOG_FILE),
                                         INDUCTION_THRESHOLD)  # fmt: skip
        word = {True: "PASS", False: "FAIL", None: "N/A "}[gate.passed]
        Console().print(f"{word} gate {gate.name}: {gate.detail}")  # the one gate-line form


def _resume(
    family: str | None, outs: list[Path], device: str | None, per_process: int | None
) -> None:
    from induction.store.io import claim_outputs, read_json
    from induction.training.multiseed import train_seeds
    from induction.training.protocol import TRAIN_CONFIG, read_run_config, train_fixed

    if len(set(outs)) != len(outs):
        raise InputError("--resume names a run folder twice; name each once")
    devices = []
    recorded: list[FixedTrainConfig] = []  # each run's config as it recorded it
    for out in outs:
        config = out / TRAIN_CONFIG
        if not config.is_file():
            raise InputError(f"{out} is not a fixed-protocol run folder (no {TRAIN_CONFIG})")
        if (out / "card.json").is_file():
            raise InputError(f"{out} has finished training; nothing to resume")
        recorded.append(read_run_config(out))  # whole, checked before any work
        preset = recorded[-1].preset
        data = read_json(config, "training config")
        if family is not None and family != preset:
            raise InputError(f"{out} is a {preset} run, not {family}")
        devices.append(device or (data.get("device") if isinstance(data, dict) else None))
    per = per_process or _default_per_process(str(devices[0] or "cpu"))
    with claim_outputs(outs):  # one run per folder
        if per == 1:
            # resuming, train_fixed reads the config from the folder again
            cards = [
                train_fixed(c, out=o, resume=True, device=device)[1]
                for c, o in zip(recorded, outs, strict=True)
            ]
        else:
            cards = []
            for i in range(0, len(outs), per):
                chunk: list[Path | None] = [*outs[i : i + per]]  # as train_seeds types it
                done = train_seeds([None] * len(chunk), chunk, resume=True, device=device)
                cards += [card for _, card in done]
    for card, out in zip(cards, outs, strict=True):
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
