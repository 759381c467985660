"""Benchmark: FV head patching (causal indirect effects) with and without the prefix KV cache.

    python benchmarks/fv_speed.py [MODEL] [--task antonyms] [--prompts 8] [--heads 27]
                                  [--runs 2] [--threads 1] [--max-rows 256] [--json F]

On one pair task's corrupted prompts (``induction.circuits.fv``), every side on the same
heads (``--heads N`` spread evenly over the model, default all), measured in one run:

- ``loop``: :func:`~induction.circuits.fv.cie_loop`, one full forward per head, the baseline;
- ``full``: :func:`~induction.circuits.fv.cie_batched` with ``reuse_prefix=False``: many heads
  per pass, each copy of a prompt run in full;
- ``prefix``: the default, each patched copy runs the last token alone on the prompts' prefix
  KV cache (exact: the patch is at the last position).

Rounds are interleaved (``--runs``) and medians reported with the ratios ``loop / prefix``
and ``full / prefix``, and the largest CIE difference from the loop (the paths must agree).
Pass ``--threads 1`` on a shared machine and read the ratios, not the wall times.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default="smollm2")
    ap.add_argument("--task", default=None, help="default: antonyms, or the first zoofacts task")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--shots", type=int, default=5)
    ap.add_argument("--heads", type=int, default=None, help="heads timed (default all)")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-rows", type=int, default=256)
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    from induction.circuits import fv
    from induction.models.loading import load_model

    loaded = load_model(args.model, device="cpu")
    suite = "zoofacts" if loaded.info.zoo_vocabulary else "words"
    task = args.task or ("antonyms" if suite == "words" else fv.pair_tasks(suite).task_names()[0])
    examples, joiner = fv.pair_examples(suite, task)
    prompts = fv.fv_prompts(examples, args.prompts, args.shots, 0, joiner)
    answers = [p.answer for p in prompts]
    clean = fv.encode(loaded.tokenizer, [p.clean for p in prompts], answers, "cpu")
    corrupted = fv.encode(loaded.tokenizer, [p.corrupted for p in prompts], answers, "cpu")
    means = fv.mean_activations(loaded, clean)
    every = [(la, h) for la in range(loaded.info.n_layers) for h in range(loaded.info.n_heads)]
    step = max(1, len(every) // args.heads) if args.heads else 1
    heads = every[::step][: args.heads] if args.heads else every

    sides = {
        "loop": lambda: fv.cie_loop(loaded, corrupted, means, heads),
        "full": lambda: fv.cie_batched(
            loaded, corrupted, means, heads, args.max_rows, reuse_prefix=False
        ),
        "prefix": lambda: fv.cie_batched(loaded, corrupted, means, heads, args.max_rows),
    }
    sides["prefix"]()  # warm-up: allocations and lazy set-up
    times: dict[str, list[float]] = {k: [] for k in sides}
    found: dict[str, torch.Tensor] = {}
    for _ in range(args.runs):
        for name, side in sides.items():
            t = time.perf_counter()
            found[name] = side()
            times[name].append(time.perf_counter() - t)
    med = {k: statistics.median(x) for k, x in times.items()}
    out = {
        "model": loaded.info.name,
        "task": task,
        "heads": len(heads),
        "prompts": int(corrupted.ids.shape[0]),
        "tokens_per_prompt": int(corrupted.ids.shape[1]),
        "threads": args.threads,
        "runs": args.runs,
        "seconds": med,
        "loop_over_prefix": med["loop"] / med["prefix"],
        "full_over_prefix": med["full"] / med["prefix"],
        "max_abs_cie_diff": max(
            float((found[k] - found["loop"]).abs().max()) for k in ("full", "prefix")
        ),
        "max_abs_cie": float(found["loop"].abs().max()),
    }
    print(
        f"{out['model']}: {task}, {len(heads)} heads, {out['prompts']} prompts x "
        f"{out['tokens_per_prompt']} tokens, {args.threads} thread(s), median of {args.runs} "
        "interleaved rounds"
    )
    for name, label in (("loop", "loop of full forwards"), ("full", "batched, full passes"),
                        ("prefix", "batched, last token on the prefix cache")):  # fmt: skip
        print(f"  {label:<40} {med[name]:8.3f} s")
    print(f"  loop / prefix = {out['loop_over_prefix']:.1f}x, full / prefix = "
          f"{out['full_over_prefix']:.1f}x")  # fmt: skip
    print(
        f"  largest |CIE difference| from the loop {out['max_abs_cie_diff']:.1e} "
        f"(largest |CIE| {out['max_abs_cie']:.1e})"
    )
    if args.json:
        from induction.store.io import write_json

        write_json(args.json, out)
    return out


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
