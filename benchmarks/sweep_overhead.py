"""Sweep overhead and driver memory over the checkpoints of one model.

    python benchmarks/sweep_overhead.py [--preset dense8] [--steps 80] [--seeds 3]

Trains a short fixed-protocol run (checkpoints at 0, 5, 10, 20, 40 and the final model), then
in this one process: (1) a bare scan of each checkpoint, loaded beforehand (``scan`` only);
(2) ``induction sweep`` of the run (load, hash, scan, write). Prints the sweep's
per-checkpoint time against the bare scan's, the overhead ratio, and the driver's RSS after
each checkpoint (it must not grow with the number of checkpoints). Figures: docs/dynamics.md.
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="dense8")
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3, help="sweep passes over fresh datasets")
    args = ap.parse_args()

    import induction
    from induction.dynamics import sweep as sw
    from induction.scores.scan import scan
    from induction.training.protocol import preset_config, train_fixed

    tmp = Path(tempfile.mkdtemp(prefix="sweep-bench."))
    run = tmp / f"{args.preset}-s0"
    cfg = preset_config(args.preset, steps=args.steps, first_checkpoint=5, eval_every=1000)
    t = time.perf_counter()
    train_fixed(cfg, out=run, progress=False)
    print(f"trained {run.name}: {args.steps} steps in {time.perf_counter() - t:.0f} s")
    items = sw.discover([str(run)])
    settings = sw.SweepSettings(seeds=args.seeds, device="cpu")
    config = settings.scan_config  # the ScanConfig each model of the sweep gets

    loaded = [induction.load_model(it.spec, device="cpu") for it in items]
    scan(loaded[0], config)  # warm-up
    t = time.perf_counter()
    for m in loaded:
        scan(m, config)
    bare = (time.perf_counter() - t) / len(items)
    del loaded
    gc.collect()

    per_ckpt = []
    rss = []
    orig = sw.run_item

    def tracked(item, s, chash=None):
        out = orig(item, s, chash)
        rss.append(rss_mb())
        return out

    sw.run_item = tracked
    for i in range(args.repeat):
        t = time.perf_counter()
        report = sw.sweep([str(run)], tmp / f"ds{i}", settings=settings, progress=False)
        per_ckpt.append((time.perf_counter() - t) / report.computed)
    sweep_t = min(per_ckpt)
    print(f"{len(items)} checkpoints, {args.seeds} seeds x 32 prompts")
    print(f"bare scan (model loaded): {bare * 1000:.0f} ms per checkpoint")
    print(f"sweep (load + hash + scan + write): {sweep_t * 1000:.0f} ms per checkpoint")
    print(f"overhead: {(sweep_t - bare) / bare:.0%} of one scan (target <= 20%)")
    print("driver RSS after each checkpoint (MB): " + " ".join(f"{r:.0f}" for r in rss))


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
