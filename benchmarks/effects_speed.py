"""Benchmark: single-head ablation of every head, batched vs a loop, and attribution patching.

    python benchmarks/effects_speed.py [MODEL] [--batch 4] [--seq-len 20] [--runs 2] [--threads 1]
                                 [--heads N] [--max-rows 256] [--device cuda] [--json F]

On the scan's repeated-token prompts (``[BOS] r r``), measured in one run:

- ``loop``: one ablated forward per head (``ablation.hooks.ablate_heads``, full logits), the
  baseline; with ``--heads N`` only the first N heads are looped and the time is scaled to
  all heads (printed as such);
- ``batched``: :func:`induction.circuits.effects.ablate_each_head` (per-row head mask, shared clean
  prefix, logits on the read positions), all heads; its losses are checked against the
  loop's on the heads both ran;
- ``forward``: one clean forward of the prompt batch (full logits), the unit of
  "forward-pass equivalents";
- ``atp``: :func:`induction.circuits.effects.attribution` (one forward + one backward).

Rounds are interleaved (``--runs``) and medians reported, with the ratios
``loop / batched`` and ``atp / forward``. On a shared machine pass ``--threads 1`` and read
the ratios, not the wall times. ``--device cuda`` runs every side on the GPU (each timing
waits for the device to finish), where a small forward is latency-bound and the batched
ablation's ratio can grow (docs/circuits.md, "Limits").
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default="smollm2")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=20)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--heads", type=int, default=None, help="Heads in the loop (default all).")
    ap.add_argument("--max-rows", type=int, default=256)
    ap.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    ap.add_argument("--json", default=None, help="Also write the figures to this file.")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    from induction.circuits.effects import ablate_each_head, ablate_loop, attribution, setup
    from induction.circuits.patching import clean_pass, make_replacement
    from induction.models.loading import load_model

    loaded = load_model(args.model, device=args.device)
    device = torch.device(loaded.info.device)

    def clock() -> float:
        if device.type == "cuda":  # kernels run asynchronously: time finished work only
            torch.cuda.synchronize(device)
        return time.perf_counter()

    s = setup(loaded, seq_len=args.seq_len, batch=args.batch, seeds=1)
    v = s.v
    heads = [(layer, h) for layer in range(v.n_layers) for h in range(v.n_heads)]
    looped = heads if args.heads is None else heads[:: max(1, len(heads) // args.heads)]
    looped = looped[: args.heads] if args.heads else looped
    clean = clean_pass(v, s.tokens, s.logits_at, s.targets)
    repl = make_replacement(v, "zero", "task", s.tokens, clean, s.info)

    with torch.no_grad():  # warm-up: the first pass pays for allocations and lazy setup
        v.bridge(s.tokens, return_type="logits")
    times: dict[str, list[float]] = {"loop": [], "batched": [], "forward": [], "atp": []}
    batched = loop = None
    for _ in range(args.runs):
        t = clock()
        with torch.no_grad():
            v.bridge(s.tokens, return_type="logits")
        times["forward"].append(clock() - t)
        t = clock()
        loop = ablate_loop(s, looped, "zero")
        times["loop"].append((clock() - t) * len(heads) / len(looped))
        t = clock()
        batched = ablate_each_head(s, heads, repl, clean, max_rows=args.max_rows)
        times["batched"].append(clock() - t)
        t = clock()
        attribution(s, repl, clean)
        times["atp"].append(clock() - t)
    idx = [heads.index(h) for h in looped]
    err = float((batched[idx] - loop).abs().max())
    med = {k: statistics.median(x) for k, x in times.items()}
    out = {
        "model": s.name,
        "heads": len(heads),
        "heads_looped": len(looped),
        "prompts": int(s.tokens.shape[0]),
        "tokens_per_prompt": int(s.tokens.shape[1]),
        "threads": args.threads,
        "device": str(device),
        "runs": args.runs,
        "seconds": med,
        "loop_over_batched": med["loop"] / med["batched"],
        "atp_forward_equivalents": med["atp"] / med["forward"],
        "max_abs_loss_diff": err,
    }
    scale = "" if len(looped) == len(heads) else f" (timed on {len(looped)} heads, scaled)"
    print(
        f"{s.name}: {len(heads)} heads, {out['prompts']} prompts x {out['tokens_per_prompt']} "
        f"tokens, {device}, {args.threads} thread(s), median of {args.runs} interleaved rounds"
    )
    print(f"  forward (clean, full logits)  {med['forward']:8.3f} s")
    print(f"  loop of ablated forwards       {med['loop']:8.3f} s{scale}")
    print(f"  batched single-head ablation   {med['batched']:8.3f} s")
    print(f"  attribution patching           {med['atp']:8.3f} s")
    print(f"  loop / batched = {out['loop_over_batched']:.1f}x  (target >= 5x)")
    print(f"  AtP = {out['atp_forward_equivalents']:.2f} forward-pass equivalents (target <= 3)")
    print(f"  batched vs loop: max |loss difference| {err:.2e}")
    if args.json:
        from induction.store.io import write_json

        write_json(args.json, out)
    return out


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
