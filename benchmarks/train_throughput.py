"""Many seeds per process: training tokens/s for S seeds batched in one process against S
single-seed runs, and the fraction of a matmul peak each reaches, measured in one run
(issue 42, items 1 and 4).

    python benchmarks/train_throughput.py [--preset dense8c] [--steps 10] [--seeds 1 4 8 16]
        [--device cpu] [--threads 1] [--out benchmarks/results/train_throughput.json]

Both sides run the real training loop (:func:`induction.training.protocol.train_runs`: data
drawn per seed, growth and checkpoint logic, clipping, AdamW; no files, no monitor) for
``--steps`` steps after a warm-up step: the single-seed side is
:func:`~induction.training.protocol.train_fixed`'s step, one seed after another (S separate
runs on the same cores take S times one run's time); the batched side is
:func:`induction.training.multiseed.train_seeds`'s (on a GPU with its data workers, the
prefetch starting afresh each timed leg). Two ceilings are measured in the same run:
``peak``, a float32 1024 x 1024 matmul, and ``shape``, the model's own largest matmul
(``[S, batch x seq, d_model] @ [S, d_model, d_mlp]``) at each S. FLOPs are
:func:`induction.training.model.matmul_flops_per_token`. Ratios, not wall times, are the
result. On the CPU every rate is per second of this process's CPU time (tokens/s per core at
``--threads 1``, unmoved by other jobs on a shared machine); on a GPU per wall second.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from induction.errors import InputError  # noqa: E402
from induction.store.io import write_json  # noqa: E402
from induction.training.multiseed import default_data_workers, train_batched  # noqa: E402
from induction.training.protocol import (  # noqa: E402
    PRESETS,
    _model_step,
    _Run,
    check_device,
    preset_config,
    train_runs,
)

WARMUP = 1


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _clock(device: str) -> float:
    """Seconds of this process's CPU time on the CPU (per core, and blind to other jobs on a
    shared machine); wall seconds on a GPU."""
    return time.perf_counter() if torch.device(device).type == "cuda" else time.process_time()


def matmul_rate(shape: tuple[int, int, int, int], device: str, seconds: float = 0.5) -> float:
    """GFLOP/s of a float32 batched matmul ``[b, m, k] @ [b, k, n]`` (``shape = (b, m, k, n)``)
    repeated for about ``seconds``."""
    b, m, k, n = shape
    x, w = torch.randn(b, m, k, device=device), torch.randn(b, k, n, device=device)
    torch.bmm(x, w)
    _sync(device)
    reps, t = 0, _clock(device)
    while _clock(device) - t < seconds:
        torch.bmm(x, w)
        reps += 1
        if reps % 10 == 0:
            _sync(device)
    _sync(device)
    return 2 * b * m * k * n * reps / (_clock(device) - t) / 1e9


def train_rate(preset: str, seeds: int, batched: bool, steps: int, device: str = "cpu",
               threads: int = 1, **overrides) -> dict:  # fmt: skip
    """Tokens/s and GFLOP/s of ``seeds`` seeds of ``preset`` (config ``overrides``) for
    ``steps`` steps: batched in one process, or one single-seed run after another."""
    overrides |= dict(eval_every=10_000_000, probe_every=0, threads=threads, device=device)
    cfgs = [preset_config(preset, seed=s, **overrides) for s in range(seeds)]
    groups = [cfgs] if batched else [[c] for c in cfgs]
    elapsed, tokens, flops = 0.0, 0, 0.0
    for group in groups:
        runs = [_Run(c, None, False, None, False, seeds_per_process=len(group)) for c in group]
        workers = default_data_workers(device, seeds) if batched else 0

        def train(stop_at: int) -> None:
            if batched:  # as train_seeds trains: its data workers on a GPU
                train_batched(runs, stop_at, workers)
            else:
                train_runs(runs, _model_step, stop_at)

        train(WARMUP)
        _sync(device)
        before = [(r.st.tokens, r.st.flops) for r in runs]
        t = _clock(device)
        train(WARMUP + steps)
        _sync(device)
        elapsed += _clock(device) - t
        tokens += sum(r.st.tokens - b[0] for r, b in zip(runs, before, strict=True))
        flops += sum(r.st.flops - b[1] for r, b in zip(runs, before, strict=True))
    return {"seeds": seeds, "batched": batched, "seconds": elapsed,
            "tokens_per_s": tokens / elapsed, "gflops": flops / elapsed / 1e9}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="dense8c")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 4, 8, 16])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=None, help="sequences per seed and step "
                    "(default: the preset's)")  # fmt: skip
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    try:
        if args.preset not in PRESETS:
            raise InputError(f"--preset {args.preset!r} is not one of {', '.join(PRESETS)}")
        if min(args.steps, args.threads, *args.seeds, args.batch or 1) < 1:
            raise InputError("--steps, --threads, --batch and every --seeds value must be >= 1")
        check_device(args.device)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    sizes = {} if args.batch is None else {"batch": args.batch}
    cfg = preset_config(args.preset, **sizes)
    peak = matmul_rate((1, 1024, 1024, 1024), args.device)
    single = train_rate(args.preset, 1, False, args.steps, args.device, args.threads, **sizes)
    rows = []
    for s in args.seeds:
        apart = single if s == 1 else train_rate(args.preset, s, False, args.steps, args.device,
                                                   args.threads, **sizes)  # fmt: skip
        together = train_rate(args.preset, s, True, args.steps, args.device, args.threads, **sizes)
        shape = matmul_rate((s, cfg.batch * cfg.seq_len, cfg.d_model, cfg.d_mlp), args.device)
        rows.append({
            "seeds_per_process": s,
            "separate_tokens_per_s": apart["tokens_per_s"],
            "batched_tokens_per_s": together["tokens_per_s"],
            "ratio": together["tokens_per_s"] / apart["tokens_per_s"],
            "separate_of_peak": apart["gflops"] / peak,
            "batched_of_peak": together["gflops"] / peak,
            "shape_gflops": shape,
            "shape_of_peak": shape / peak,
        })  # fmt: skip
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    print(f"{args.preset}, {args.steps} steps, {device}, {args.threads} thread(s); "
          f"matmul peak {peak:.1f} GFLOP/s")  # fmt: skip
    print(f"{'S':>3} {'separate tok/s':>14} {'batched tok/s':>13} {'ratio':>6} "
          f"{'sep. of peak':>12} {'bat. of peak':>12} {'shape of peak':>13}")  # fmt: skip
    for r in rows:
        print(
            f"{r['seeds_per_process']:>3} {r['separate_tokens_per_s']:>14.0f} "
            f"{r['batched_tokens_per_s']:>13.0f} {r['ratio']:>5.2f}x "
            f"{r['separate_of_peak']:>12.1%} {r['batched_of_peak']:>12.1%} "
            f"{r['shape_of_peak']:>13.1%}"
        )
    if args.out is not None:
        write_json(args.out, {"preset": args.preset, "steps": args.steps, "device": device,
                              "batch": cfg.batch, "seq_len": cfg.seq_len,
                              "threads": args.threads, "matmul_peak_gflops": peak,
                              "rows": rows})  # fmt: skip
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
