"""Benchmark: the ablation engine vs a per-example ``generate`` loop on the same items.

    python benchmarks/ablate.py [MODEL] [--suite words] [--tasks 3] [--n-items 16]

Both sides decode greedily with a KV cache, stop at the task's stop strings and produce the
same answers (checked). The baseline is the plain HF model's ``generate`` called once per
prompt (``stop_strings`` set); the engine batches prompts (left padding) and decodes the
batch together through the bridge. Reported: seconds for each, the ratio, and the engine's
share of time spent outside model forward passes (tokenising, padding, stop checks, Python
overhead). Repeat with ``--ablate 0.2`` to time an ablated run (hooks active).
"""

from __future__ import annotations

import argparse
import json
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default="grown")
    ap.add_argument("--suite", default=None)
    ap.add_argument("--tasks", type=int, default=3, help="first N tasks of the suite")
    ap.add_argument("--n-items", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None, help="also write the numbers to this file")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from transformers import AutoModelForCausalLM

    from ablation.engine import Engine
    from ablation.tasks import load_suite
    from induction.loading import load_model

    loaded = load_model(args.model, device="cpu")
    info = loaded.info
    suite = args.suite or info.default_suite
    tasks = [
        t
        for t in load_suite(
            suite,
            tokenizer=loaded.tokenizer,
            bos_id=info.bos_token_id,
            n_items=args.n_items,
            seed=0,
        )
        if t.kind == "gen"
    ][: args.tasks]
    tok = loaded.tokenizer
    engine = Engine(loaded.bridge, tok, batch_size=args.batch_size)
    preps = [engine.prepare(t) for t in tasks]
    engine.evaluate(preps[0])  # warm-up
    engine.timer.forward_s = engine.timer.total_s = 0.0

    t0 = time.perf_counter()
    got = [engine.evaluate(p)["predictions"] for p in preps]
    t_engine = time.perf_counter() - t0
    outside = 1 - engine.timer.forward_s / t_engine

    raw = AutoModelForCausalLM.from_pretrained(info.path, dtype=torch.float32).eval()
    t0 = time.perf_counter()
    ref = []
    with torch.no_grad():
        for task in tasks:
            outs = []
            for it in task.items:
                ids = torch.tensor([tok(it.prompt)["input_ids"]])
                kw = {"stop_strings": task.stop, "tokenizer": tok} if task.stop else {}
                g = raw.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    do_sample=False,
                    max_new_tokens=task.max_new_tokens,
                    pad_token_id=tok.pad_token_id or tok.eos_token_id,
                    **kw,
                )
                text = tok.decode(g[0, ids.shape[1] :].tolist(), skip_special_tokens=True)
                cut = min([text.find(s) for s in task.stop if s in text] or [len(text)])
                outs.append(text[:cut].strip())
            ref.append(outs)
    t_loop = time.perf_counter() - t0
    same = sum(a == b for g, r in zip(got, ref, strict=True) for a, b in zip(g, r, strict=True))
    total = sum(len(r) for r in ref)
    res = {
        "model": info.name,
        "suite": suite,
        "tasks": [t.name for t in tasks],
        "items": total,
        "engine_s": round(t_engine, 2),
        "generate_loop_s": round(t_loop, 2),
        "ratio": round(t_loop / t_engine, 2),
        "engine_share_outside_forward": round(outside, 3),
        "identical_answers": f"{same}/{total}",
        "threads": torch.get_num_threads(),
    }
    print(json.dumps(res, indent=2))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
