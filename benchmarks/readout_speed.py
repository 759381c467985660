"""Benchmark: the teacher-forced readouts read on the prompt's shared pass vs one full forward
per candidate row, on the same items under the same ablation.

    python benchmarks/readout_speed.py [MODEL] [--suite zootrain] [--n-items 32] [--runs 3]
                                       [--threads 1] [--json out.json]

Both give ``logprob`` and ``cand_acc`` (:mod:`ablation.readout`) for every generation task of
the suite with the top ``--frac`` heads by induction score zeroed:

- ``shared``: :class:`ablation.engine.Engine` with readouts on, minus the same engine with
  them off (generation alone): what the readouts add to an evaluation. The prompt's
  last-position logits come from the generation's prefill, and only candidates of several
  tokens run further, on a copy of its KV cache;
- ``plain``: the readouts alone as one forward of prompt + candidate prefix per row (rows
  sharing a prefix merged, right-padded batches of ``--batch-size``): how they were computed
  before the shared pass, and the reference the numbers are checked against.

Timed in interleaved rounds; each figure is the median over rounds, the ratio the median of
per-round ratios. Also printed: the largest |difference| of the log-probabilities and the
share of items whose ``cand_acc`` agrees. On a busy 2-core machine pass ``--threads 1``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from induction.store.io import replace_file


def plain_readouts(engine, prep, heads, batch_size: int) -> dict[str, list]:
    """The readouts of ``prep`` by full forwards of prompt + prefix, right-padded (the way
    before the shared pass)."""
    from ablation import readout as R
    from ablation.hooks import ablate_heads

    rplan, tok = prep.readout, engine.tok
    rows = []  # (item, ids, start, scored), start: the position predicting tokens[0]
    for i, it in enumerate(prep.task.items):
        prompt = tuple(tok(it.prompt)["input_ids"])
        conts = rplan.conts[i]
        singles = tuple((j, c) for j, c in conts.items() if len(c) == 1)
        if singles or not rplan.rows[i]:
            rows.append((i, prompt, len(prompt) - 1, singles))
        for r in rplan.rows[i]:
            rows.append((i, prompt + r.prefix, len(prompt) - 1, r.scored))
    cand_lp: dict[int, dict[int, float]] = {i: {} for i in range(rplan.n_items)}
    order = sorted(range(len(rows)), key=lambda k: len(rows[k][1]))
    with torch.inference_mode(), ablate_heads(engine.bridge, heads):
        for s in range(0, len(order), batch_size):
            chunk = [rows[k] for k in order[s : s + batch_size]]
            width = max(len(ids) for _, ids, _, _ in chunk)
            ids = torch.full((len(chunk), width), engine.pad_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for b, (_, row_ids, _, _) in enumerate(chunk):
                ids[b, : len(row_ids)] = torch.tensor(row_ids)
                mask[b, : len(row_ids)] = 1
            logits = engine.hf(
                input_ids=ids.to(engine.device), attention_mask=mask.to(engine.device)
            ).logits
            logp = torch.log_softmax(logits.float(), -1).cpu()
            for b, (item, _, start, scored) in enumerate(chunk):
                for j, tokens in scored:
                    pos = torch.arange(start, start + len(tokens))
                    cand_lp[item][j] = float(logp[b, pos, list(tokens)].sum())
    return R.finish(rplan, cand_lp)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default="dense8c-s0")
    ap.add_argument("--suite", default="zootrain")
    ap.add_argument("--n-items", type=int, default=32)
    ap.add_argument("--frac", type=float, default=0.2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3, help="interleaved rounds (median)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None, help="also write the numbers to this file")
    args = ap.parse_args()
    from ablation.engine import Engine
    from ablation.hooks import HeadAblation
    from ablation.run import plan_heads
    from ablation.tasks import load_suite
    from induction.models.loading import load_model

    loaded = load_model(args.model, device="cpu", threads=args.threads)
    info, tok = loaded.info, loaded.tokenizer
    tasks = [
        t
        for t in load_suite(
            args.suite, tokenizer=tok, bos_id=info.bos_token_id, n_items=args.n_items, seed=0
        )
        if t.kind == "gen"
    ]
    heads = plan_heads(loaded, frac=args.frac, n_controls=0).target
    with_readouts = Engine(loaded.bridge, tok, batch_size=args.batch_size, readouts=True)
    gen_only = Engine(loaded.bridge, tok, batch_size=args.batch_size, readouts=False)
    preps = [with_readouts.prepare(t) for t in tasks]
    preps_gen = [gen_only.prepare(t) for t in tasks]
    times: dict[str, list[float]] = {"with_readouts": [], "generation": [], "plain": []}
    for _ in range(args.runs):
        t0 = time.perf_counter()
        shared = [with_readouts.evaluate(p, HeadAblation(heads)) for p in preps]
        times["with_readouts"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for p in preps_gen:
            gen_only.evaluate(p, HeadAblation(heads))
        times["generation"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        plain = [plain_readouts(with_readouts, p, heads, args.batch_size) for p in preps]
        times["plain"].append(time.perf_counter() - t0)
    shared_s = [w - g for w, g in zip(times["with_readouts"], times["generation"], strict=True)]
    diff, agree, n = 0.0, 0, 0
    for res, ref in zip(shared, plain, strict=True):
        for a, b in zip(res.items["logprob"], ref["logprob"], strict=True):
            diff = max(diff, abs(a - b))
        for a, b in zip(res.items["cand_acc"], ref["cand_acc"], strict=True):
            agree, n = agree + (a == b or (a != a and b != b)), n + 1
    out = {
        "model": info.name,
        "suite": args.suite,
        "tasks": [t.name for t in tasks],
        "items": n,
        "ablated_heads": len(heads),
        "runs": args.runs,
        "readouts_shared_s": round(statistics.median(shared_s), 3),
        "readouts_plain_s": round(statistics.median(times["plain"]), 3),
        "generation_s": round(statistics.median(times["generation"]), 3),
        "ratio_plain_vs_shared": round(
            statistics.median(p / max(s, 1e-9) for p, s in zip(times["plain"], shared_s)), 2
        ),
        "evaluation_ratio": round(
            statistics.median(
                (g + p) / w
                for g, p, w in zip(times["generation"], times["plain"], times["with_readouts"])
            ),
            2,
        ),
        "max_abs_logprob_diff": float(f"{diff:.2e}"),
        "cand_acc_agree": f"{agree}/{n}",
        "threads": torch.get_num_threads(),
    }
    print(json.dumps(out, indent=2))
    if args.json:
        replace_file(args.json, json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
