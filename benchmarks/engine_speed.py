"""Benchmark: the ablation engine vs per-example ``generate`` loops on the same items.

    python benchmarks/engine_speed.py [MODEL] [--suite S] [--tasks 4] [--n-items 32] [--runs 3]
                                [--threads 1]

All three decode greedily with a KV cache, with the same heads zero-ablated (the top
``--frac`` by induction score, hooks on ``blocks.{l}.attn.hook_z``), and must produce the same
answers (checked):

- ``engine``: :class:`ablation.engine.Engine` — prompts batched with left padding, one
  batched prefill and batched greedy decoding with the KV cache through the bridge;
- ``bridge_generate``: ``bridge.generate(tokens, do_sample=False)`` once per prompt inside
  ``ablate_heads`` (the TransformerLens way to generate with hooks);
- ``hf_generate``: the wrapped HF model's ``generate`` once per prompt inside ``ablate_heads``
  (stop tokens as extra EOS ids or ``stop_strings``).

The three are timed in interleaved rounds (``--runs``, default 3) and each figure is the
median over rounds; ratios are also given per round (median of the per-round ratios), which
resists load drift from other processes. Reported: seconds for each, the ratios, the engine's
share of time outside model forward passes (tokenising, padding, stop checks, Python) and its
split between prefill and decoding forwards (prefill costs the same FLOPs batched or not, so a
large prefill share bounds what batching can gain on a compute-bound CPU). On a busy 2-core
machine pass ``--threads 1``: two OpenMP threads competing with other processes run ~100x
slower.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch


def stop_kwargs(stop, tok) -> dict:
    """``generate`` stopping: single-token stops (the zoo's word-level vocabulary, whose
    tokenizer HF's ``stop_strings`` cannot parse) as extra EOS ids, else ``stop_strings``."""
    if not stop:
        return {}
    vocab = tok.get_vocab()
    if all(s in vocab for s in stop):
        return {"eos_token_id": [vocab[s] for s in stop] + [tok.eos_token_id]}
    return {"stop_strings": list(stop), "tokenizer": tok}


def cut(text: str, stop) -> str:
    idx = min([text.find(s) for s in stop if s and s in text] or [len(text)])
    return text[:idx].strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default="grown")
    ap.add_argument("--suite", default=None)
    ap.add_argument("--tasks", type=int, default=4, help="first N generation tasks")
    ap.add_argument("--n-items", type=int, default=32)
    ap.add_argument("--frac", type=float, default=0.2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3, help="interleaved rounds (median)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda, auto (the engine syncs CUDA)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None, help="also write the numbers to this file")
    args = ap.parse_args()
    from ablation.engine import Engine
    from ablation.hooks import HeadAblation, ablate_heads
    from ablation.run import plan_heads
    from ablation.tasks import default_suite, load_suite
    from induction.models.loading import load_model

    loaded = load_model(args.model, device=args.device, threads=args.threads)
    device = torch.device(loaded.bridge.cfg.device)
    info, bridge, tok = loaded.info, loaded.bridge, loaded.tokenizer
    suite = args.suite or default_suite(info)
    tasks = [
        t
        for t in load_suite(
            suite, tokenizer=tok, bos_id=info.bos_token_id, n_items=args.n_items, seed=0
        )
        if t.kind == "gen"
    ][: args.tasks]
    heads = plan_heads(loaded, frac=args.frac, n_controls=0).target
    engine = Engine(bridge, tok, batch_size=args.batch_size)  # also enables the KV cache fix
    preps = [engine.prepare(t) for t in tasks]
    engine.evaluate(preps[0], HeadAblation(heads))  # warm-up

    prefill_s = decode_s = 0.0
    prefill_tokens = padded_tokens = 0  # real prompt tokens, and with the padding
    plain_forward = engine._forward

    def split_forward(**kw):  # attribute each engine forward to prefill or decoding
        nonlocal prefill_s, decode_s, prefill_tokens, padded_tokens
        t = time.perf_counter()
        out = plain_forward(**kw)
        dt = time.perf_counter() - t
        if kw["input_ids"].shape[1] > 1:
            prefill_s += dt
            prefill_tokens += int(kw["attention_mask"].sum())
            padded_tokens += kw["attention_mask"].numel()
        else:
            decode_s += dt
        return out

    engine._forward = split_forward

    def run_engine():
        return [engine.evaluate(p, HeadAblation(heads)).predictions for p in preps]

    def loop(kind: str):
        outs = []
        with torch.no_grad(), ablate_heads(bridge, heads):
            for task in tasks:
                row = []
                for it in task.items:
                    ids = torch.tensor([tok(it.prompt)["input_ids"]], device=device)
                    if kind == "bridge":
                        g = bridge.generate(
                            ids,
                            max_new_tokens=task.max_new_tokens,
                            do_sample=False,
                            use_past_kv_cache=True,
                            return_type="tokens",
                            verbose=False,
                        )
                    else:
                        g = loaded.hf_model.generate(
                            ids,
                            attention_mask=torch.ones_like(ids),
                            do_sample=False,
                            max_new_tokens=task.max_new_tokens,
                            pad_token_id=tok.pad_token_id or tok.eos_token_id,
                            **stop_kwargs(task.stop, tok),
                        )
                    text = tok.decode(g[0, ids.shape[1] :].tolist(), skip_special_tokens=True)
                    row.append(cut(text, task.stop))
                outs.append(row)
        return outs

    times: dict[str, list[float]] = {"engine": [], "bridge": [], "hf": []}
    forward_s = []
    for _ in range(args.runs):
        engine.timer.forward_s = 0.0
        t0 = time.perf_counter()
        got = run_engine()
        times["engine"].append(time.perf_counter() - t0)
        forward_s.append(engine.timer.forward_s)
        for kind in ("bridge", "hf"):
            t0 = time.perf_counter()
            ref = loop(kind)
            times[kind].append(time.perf_counter() - t0)
            if kind == "bridge":
                ref_b = ref
            else:
                ref_h = ref
    total = sum(len(r) for r in got)
    med = {k: statistics.median(v) for k, v in times.items()}

    def paired(kind: str) -> float:
        return statistics.median(b / e for b, e in zip(times[kind], times["engine"], strict=True))

    def same(ref):
        n = sum(a == b for g, r in zip(got, ref, strict=True) for a, b in zip(g, r, strict=True))
        return f"{n}/{total}"

    res = {
        "model": info.name,
        "suite": suite,
        "tasks": [t.name for t in tasks],
        "items": total,
        "ablated_heads": len(heads),
        "runs": args.runs,
        "engine_s": round(med["engine"], 3),
        "bridge_generate_loop_s": round(med["bridge"], 3),
        "hf_generate_loop_s": round(med["hf"], 3),
        "ratio_vs_bridge_generate": round(med["bridge"] / med["engine"], 2),
        "ratio_vs_hf_generate": round(med["hf"] / med["engine"], 2),
        "ratio_vs_bridge_generate_paired": round(paired("bridge"), 2),
        "ratio_vs_hf_generate_paired": round(paired("hf"), 2),
        "engine_share_outside_forward": round(
            1 - statistics.median(f / e for f, e in zip(forward_s, times["engine"])), 3
        ),
        "engine_forward_share_prefill": round(prefill_s / (prefill_s + decode_s), 3),
        "engine_prefill_ms_per_token": round(1e3 * prefill_s / max(prefill_tokens, 1), 3),
        "engine_prefill_padding_share": round(1 - prefill_tokens / max(padded_tokens, 1), 3),
        "identical_answers_bridge": same(ref_b),
        "identical_answers_hf": same(ref_h),
        "threads": torch.get_num_threads(),
        "device": str(device),
    }
    print(json.dumps(res, indent=2))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
