"""Zoo training throughput: tokens/s and achieved GFLOP/s against a matmul peak measured in
the same run (issue 22, item 6), for the batch sizes and thread counts the zoo could use.

    python benchmarks/zoo_throughput.py [--steps 20] [--depth 8] [--batches 32 64 128]

Each configuration trains ``--steps`` real steps of the fixed protocol (after 3 warm-up steps)
on the zoo's data, single process; the baseline is a float32 ``n x n`` matmul at the same
thread count (the machine's dense-matmul rate, the ceiling a tiny model cannot reach). FLOPs
are :func:`induction.training.model.matmul_flops_per_token` (forward + backward matmuls). Ratios,
not wall
times, are the result: machines are noisy. Writes ``benchmarks/results/zoo_throughput.json``
with ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from induction.store.io import write_json  # noqa: E402
from induction.training.model import matmul_flops_per_token  # noqa: E402
from induction.training.protocol import _initial_model, _optimizer, batch_at, preset_config  # noqa: E402


def matmul_peak(threads: int, n: int = 512, reps: int = 20) -> float:
    """GFLOP/s of a float32 ``n x n`` matmul at ``threads`` threads."""
    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - t) / 1e9


def train_rate(
    preset: str, batch: int, threads: int, steps: int, compile: bool = False, **overrides
) -> dict:
    """Tokens/s and GFLOP/s of ``steps`` training steps of ``preset`` at ``batch``
    (``compile``: through ``torch.compile``, its compilation in the 3 warm-up steps)."""
    torch.set_num_threads(threads)
    cfg = preset_config(preset, seed=0, batch=batch, threads=threads, **overrides)
    model, _, _ = _initial_model(cfg)
    opt = _optimizer(cfg, model, torch.device("cpu"))
    if compile:
        model = torch.compile(model)
    depth = cfg.depth
    batches = [torch.from_numpy(batch_at(cfg, 1000 + i)) for i in range(steps + 3)]
    elapsed = 0.0
    for i, tokens in enumerate(batches):
        t = time.perf_counter()
        loss = model(tokens, labels=tokens).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i >= 3:
            elapsed += time.perf_counter() - t
    n_tokens = steps * batches[0].numel()
    flops = matmul_flops_per_token(cfg, depth, batches[0].shape[1]) * n_tokens
    return {
        "preset": preset,
        "batch": batch,
        "threads": threads,
        "compiled": compile,
        "s_per_step": elapsed / steps,
        "tokens_per_s": n_tokens / elapsed,
        "gflops": flops / elapsed / 1e9,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--preset", default="dense8")
    ap.add_argument("--batches", type=int, nargs="+", default=[32, 64, 128])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--compile", action="store_true", help="also the first batch size compiled")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = []
    for threads in args.threads:
        peak = matmul_peak(threads)
        for batch in args.batches:
            row = train_rate(args.preset, batch, threads, args.steps)
            row["matmul_peak_gflops"] = peak
            row["of_peak"] = row["gflops"] / peak
            rows.append(row)
        if args.compile:
            row = train_rate(args.preset, args.batches[0], threads, args.steps, compile=True)
            row["matmul_peak_gflops"] = peak
            row["of_peak"] = row["gflops"] / peak
            rows.append(row)
    base = rows[0]["tokens_per_s"]
    print(f"{'threads':>7} {'batch':>5} {'compiled':>8} {'s/step':>7} {'tok/s':>8} "
          f"{'GFLOP/s':>8} {'of peak':>7} {'vs first':>8}")  # fmt: skip
    for r in rows:
        r["vs_first"] = r["tokens_per_s"] / base
        print(
            f"{r['threads']:>7} {r['batch']:>5} {str(r['compiled']):>8} {r['s_per_step']:>7.3f} "
            f"{r['tokens_per_s']:>8.0f} {r['gflops']:>8.2f} {r['of_peak']:>7.1%} "
            f"{r['vs_first']:>7.2f}x"
        )
    if args.out is not None:
        write_json(args.out, {"preset": args.preset, "steps": args.steps, "rows": rows})
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
