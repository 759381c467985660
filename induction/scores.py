"""Score every attention head for induction behaviour in one batched, hooked forward pass.

:func:`induction_scores` builds seeded repeated-random-token prompts
(:mod:`induction.prompts`), runs them through the model's TransformerBridge with one hook per
scored layer on ``blocks.{l}.attn.hook_pattern`` (``[batch, head, query, key]``), and reduces
each pattern on the spot: one ``index_select`` of the (query, key) pairs every score reads
and one small matmul give ``[batch, head, score]``, written into a preallocated tensor on the
model's device. No activation cache, no Python loop over heads, no ``.item()`` per head: the
results cross to the host once, at the end. The forward pass stops (by raising
TransformerLens's ``StopAtLayerException`` from the last scored layer's hook) as soon as the
last attention pattern needed is seen, so the rest of that layer, any later layers and the
unembedding never run, unless the in-context loss asks for logits.

Attention scores (definitions in :meth:`induction.prompts.PromptLayout.pairs`), convention
``"stripe"`` (default):

- ``induction``: mean attention from second- (and later-) copy queries to the token right
  after the query token's most recent earlier occurrence; only later-copy queries count
  (ARENA's ``diagonal(offset=1-T)`` also picks up first-copy queries).
- ``prefix_matching``: Olsson et al.; attention to the token after *every* earlier copy,
  summed (equals ``induction`` with two copies; use ``n_repeats=4, seq_len=25`` for their
  setting).
- ``duplicate_token``: attention to earlier occurrences of the query token.
- ``previous_token``: attention to the previous token, queries from position 2.

Convention ``"tl_mul"`` computes ``induction``, ``duplicate_token`` and ``previous_token`` as
TransformerLens ``head_detector.detect_head(..., error_measure="mul")`` does: the head's mask
(their ``induction_head`` mask marks the key after every earlier occurrence) over the whole
pattern, divided by the sum of the whole pattern, per prompt, then averaged. Rows without a
match dilute it, so on two copies it is about ``T / (2T + 1)`` of the stripe score.
``prefix_matching`` has no TransformerLens counterpart and keeps the stripe form.

``copying`` is weights-only (Olsson et al.'s OV-circuit test, direct path), see
:func:`copying_scores`. Spread: each prompt seed gives one batch; scores are the mean over
seeds of the batch means, ``<score>_std`` the standard deviation across seeds and
``<score>_ci_lo`` / ``<score>_ci_hi`` a 95% Student-t interval for the mean (NaN with a single
seed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from induction.errors import InputError
from induction.prompts import PromptLayout, RepeatedPrompts, make_prompts

SCORES = ("induction", "prefix_matching", "duplicate_token", "previous_token", "copying")
ATTENTION_SCORES = SCORES[:4]
CONVENTIONS = ("stripe", "tl_mul")
#: Scores that ``convention="tl_mul"`` computes TransformerLens's way.
TL_SCORES = ("induction", "duplicate_token", "previous_token")
#: A head at or above this induction score is conventionally called an induction head.
INDUCTION_THRESHOLD = 0.4
DEFAULT_SEEDS = (0, 1, 2)
DEFAULT_COPYING_TOKENS = 512

# Two-sided 95% Student-t quantiles t_{0.975, df}, df = 1..30 (beyond: normal 1.96).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


# --------------------------------------------------------------------------- model view


@dataclass
class _Target:
    """What the scan needs from a LoadedModel or a bare TransformerBridge."""

    bridge: Any
    info: Any
    loop_plan: Any
    name: str


def _resolve(model: Any) -> _Target:
    bridge = getattr(model, "bridge", None)
    if bridge is not None and getattr(model, "info", None) is not None:
        return _Target(bridge, model.info, getattr(model, "loop_plan", None), model.info.name)
    if hasattr(model, "blocks") and hasattr(model, "cfg") and hasattr(model, "original_model"):
        info = _info_from_bridge(model)
        return _Target(model, info, None, info.name)
    raise InputError(
        f"induction_scores needs a LoadedModel (induction.load_model) or a TransformerBridge, "
        f"got {type(model).__name__}"
    )


@dataclass(frozen=True)
class _BridgeInfo:
    name: str
    n_layers: int
    n_heads: int
    vocab_size: int
    n_ctx: int
    bos_token_id: int | None
    special_token_ids: tuple[int, ...]
    ordinary_token_range: tuple[int, int]
    default_repeat_len: int


def _info_from_bridge(bridge) -> _BridgeInfo:
    """The ModelInfo fields the scan reads, for a bridge that did not come from load_model."""
    from induction.loading import (
        DEFAULT_REPEAT_LEN,
        is_zoo_tokenizer,
        ordinary_token_range,
        special_token_ids,
    )
    from induction.zoo import vocab

    cfg, tok = bridge.cfg, bridge.tokenizer
    n_vocab = int(cfg.d_vocab)
    if tok is None:
        specials: tuple[int, ...] = ()
        token_range, bos = (0, n_vocab), None
    else:
        specials = special_token_ids(tok)
        if is_zoo_tokenizer(tok):
            token_range = (vocab.FIRST_ORDINARY_ID, vocab.VOCAB_SIZE)
        else:
            token_range = ordinary_token_range(min(len(tok), n_vocab), specials)
        bos = tok.bos_token_id
    n_ctx = int(cfg.n_ctx)
    name = str(getattr(cfg, "model_name", None) or type(bridge.original_model).__name__)
    return _BridgeInfo(
        name=name,
        n_layers=int(cfg.n_layers),
        n_heads=int(cfg.n_heads),
        vocab_size=n_vocab,
        n_ctx=n_ctx,
        bos_token_id=bos,
        special_token_ids=specials,
        ordinary_token_range=token_range,
        default_repeat_len=max(1, min(DEFAULT_REPEAT_LEN, (n_ctx - 1) // 2)),
    )


def model_device(bridge) -> torch.device:
    """Where token ids go: the device of the input embedding."""
    try:
        return bridge.original_model.get_input_embeddings().weight.device
    except (AttributeError, NotImplementedError):
        return next(bridge.parameters()).device


# --------------------------------------------------------------------------- validation


def check_scores(scores: str | Sequence[str]) -> tuple[str, ...]:
    """Validated, de-duplicated score names in canonical order."""
    names = [s.strip() for s in scores.split(",")] if isinstance(scores, str) else list(scores)
    names = [n for n in names if n]
    unknown = [n for n in names if n not in SCORES]
    if unknown:
        raise InputError(f"unknown score {unknown[0]!r}; choose from {', '.join(SCORES)}")
    if not names:
        raise InputError(f"no scores requested; choose from {', '.join(SCORES)}")
    return tuple(s for s in SCORES if s in names)


def _check_convention(convention: str) -> str:
    if convention not in CONVENTIONS:
        raise InputError(f"unknown convention {convention!r}; choose stripe or tl_mul")
    return convention


def _check_layers(layers: Sequence[int] | None, n_layers: int) -> list[int]:
    if layers is None:
        return list(range(n_layers))
    out = sorted({int(x) for x in layers})
    bad = [x for x in out if not 0 <= x < n_layers]
    if bad or not out:
        raise InputError(f"layers must be in 0..{n_layers - 1}, got {list(layers)}")
    return out


# --------------------------------------------------------------------------- reduction plan


@dataclass
class _Plan:
    """Flat (query * L + key) indices of every pair read, and how they sum into scores."""

    flat_index: torch.Tensor  # [P] long
    weights: torch.Tensor  # [P, n_attn] float32: 1/n_queries (stripe) or 1 (tl_mul columns)
    normalize: torch.Tensor  # [n_attn] bool: divide by the pattern's total (tl_mul)
    names: tuple[str, ...]


def _plan(layout: PromptLayout, names: Sequence[str], convention: str) -> _Plan:
    L = layout.length
    idx, cols = [], []
    norm = []
    for j, name in enumerate(names):
        if convention == "tl_mul" and name in TL_SCORES:
            qk = layout.tl_pairs(name)
            q, k = qk[0], qk[1]
            w = torch.ones(q.numel())
            norm.append(True)
        else:
            q, k, n_q = layout.pairs(name)
            w = torch.full((q.numel(),), 1.0 / n_q)
            norm.append(False)
        idx.append(q * L + k)
        cols.append((j, w))
    flat = torch.cat(idx)
    weights = torch.zeros(flat.numel(), len(names), dtype=torch.float32)
    start = 0
    for j, w in cols:
        weights[start : start + w.numel(), j] = w
        start += w.numel()
    return _Plan(flat, weights, torch.tensor(norm, dtype=torch.bool), tuple(names))


# --------------------------------------------------------------------------- the scan


def induction_scores(
    model: Any,
    *,
    seq_len: int | None = None,
    batch: int = 32,
    seeds: int | Sequence[int] = DEFAULT_SEEDS,
    scores: str | Sequence[str] = SCORES,
    convention: str = "stripe",
    n_repeats: int = 2,
    layers: Sequence[int] | None = None,
    token_range: tuple[int, int] | None = None,
    loss: bool = False,
    copying_tokens: int = DEFAULT_COPYING_TOKENS,
    device: str | torch.device | None = None,
    chunk: int | None = None,
    progress: bool = True,
) -> Any:
    """Score every head (layer, head) of ``model`` on repeated random tokens.

    Args:
        model: a :class:`induction.loading.LoadedModel` or a TransformerBridge.
        seq_len: length ``T`` of the random block ``r``; None means the model's
            ``default_repeat_len`` (32 for zoo models, 50 otherwise).
        batch: prompts per seed.
        seeds: prompt seeds (a sequence) or a count ``n`` meaning seeds ``0..n-1``.
        scores: names from :data:`SCORES` (a list or a comma-separated string).
        convention: ``"stripe"`` or ``"tl_mul"`` (TransformerLens ``detect_head`` "mul").
        n_repeats: copies of ``r`` in each prompt (>= 2).
        layers: layers to score (default all); the forward pass stops after the last one.
        token_range: ``[lo, hi)`` id band to draw from instead of the model's ordinary range.
        loss: also measure the in-context loss drop (needs logits: the pass runs to the end);
            stored in ``df.attrs["in_context_loss"]``.
        copying_tokens: at most this many ordinary tokens (a seeded sample) for ``copying``.
        device: run there (the model is moved if it is elsewhere); None: the model's device.
        chunk: prompts per forward pass; None sizes it to the device (all of one seed on CPU).
        progress: show a progress bar when there is more than one forward pass.

    Returns:
        A tidy DataFrame, one row per head sorted by (layer, head): ``layer``, ``head``
        (plus ``block_layer`` and ``pass`` for looped models), then per score ``<score>``,
        ``<score>_std``, ``<score>_ci_lo``, ``<score>_ci_hi``, and ``rank`` (1 = highest
        ``induction``, or the first requested score). ``df.attrs`` records the settings and
        the in-context loss (None unless ``loss``).
    """
    import pandas as pd

    target = _resolve(model)
    names = check_scores(scores)
    convention = _check_convention(convention)
    info = target.info
    layer_list = _check_layers(layers, int(info.n_layers))
    if not isinstance(copying_tokens, int) or copying_tokens < 2:
        raise InputError(f"copying_tokens must be an integer >= 2, got {copying_tokens}")
    bridge = target.bridge
    dev = _place(bridge, device)
    prompts = make_prompts(
        info,
        seq_len=seq_len,
        batch=batch,
        seeds=seeds,
        n_repeats=n_repeats,
        token_range=token_range,
        eos_token_id=_eos(bridge),
    )
    attn_names = tuple(n for n in names if n in ATTENTION_SCORES)

    per_seed: dict[str, torch.Tensor] = {}  # score -> [n_seeds, n_layers_sel, n_heads]
    loss_per_seed = None
    with _progress_bar(progress) as bar:
        if attn_names or loss:
            attn, loss_rows = _scan(
                bridge, prompts, attn_names, convention, layer_list, dev, chunk, loss, bar
            )
            n_seeds = len(prompts.seeds)
            if attn_names:
                by_seed = attn.reshape(n_seeds, prompts.batch, *attn.shape[1:]).mean(1)
                for j, name in enumerate(attn_names):
                    per_seed[name] = by_seed[..., j]
            if loss_rows is not None:
                loss_per_seed = loss_rows.reshape(n_seeds, prompts.batch, 2).mean(1)
        if "copying" in names:
            cp = copying_scores(
                target,
                layers=layer_list,
                token_ids=prompts.pool.ids,
                max_tokens=copying_tokens,
                progress=bar,
            )
            per_seed["copying"] = cp.unsqueeze(0)  # weights only: no spread

    n_heads = int(info.n_heads)
    cols: dict[str, Any] = {
        "layer": [lay for lay in layer_list for _ in range(n_heads)],
        "head": [h for _ in layer_list for h in range(n_heads)],
    }
    if target.loop_plan is not None:
        unrolled = list(target.loop_plan.unrolled_layers)
        cols["block_layer"] = [unrolled[lay][0] for lay in cols["layer"]]
        cols["pass"] = [unrolled[lay][1] for lay in cols["layer"]]
    for name in names:
        mean, std, lo, hi = _summarize(per_seed[name], deterministic=name == "copying")
        cols[name] = mean
        cols[f"{name}_std"] = std
        cols[f"{name}_ci_lo"] = lo
        cols[f"{name}_ci_hi"] = hi
    df = pd.DataFrame(cols)
    rank_by = "induction" if "induction" in names else names[0]
    df["rank"] = df[rank_by].rank(ascending=False, method="first").astype(int)
    df.attrs.update(
        {
            "model": target.name,
            "seq_len": prompts.seq_len,
            "n_repeats": prompts.n_repeats,
            "batch": prompts.batch,
            "seeds": list(prompts.seeds),
            "convention": convention,
            "scores": list(names),
            "rank_by": rank_by,
            "token_range": list(prompts.pool.token_range),
            "prefix_token": prompts.pool.prefix_token,
            "prefix_kind": prompts.pool.prefix_kind,
            "copying_tokens": min(copying_tokens, len(prompts.pool))
            if "copying" in names
            else None,
            "in_context_loss": _loss_summary(loss_per_seed) if loss_per_seed is not None else None,
        }
    )
    return df


def in_context_loss(
    model: Any,
    *,
    seq_len: int | None = None,
    batch: int = 32,
    seeds: int | Sequence[int] = DEFAULT_SEEDS,
    n_repeats: int = 2,
    token_range: tuple[int, int] | None = None,
    device: str | torch.device | None = None,
    chunk: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Model-level sanity figure: mean loss on the first copy minus the later copies.

    Loss is next-token cross-entropy (nats) on tokens 2..T of each copy (the first token of a
    copy is unpredictable). An induction-capable model has ``loss_drop`` well above 0.
    Returns ``loss_first``, ``loss_repeat``, ``loss_drop`` (means over seeds), their ``_std``
    across seeds, and ``per_seed`` rows.
    """
    target = _resolve(model)
    dev = _place(target.bridge, device)
    prompts = make_prompts(
        target.info,
        seq_len=seq_len,
        batch=batch,
        seeds=seeds,
        n_repeats=n_repeats,
        token_range=token_range,
        eos_token_id=_eos(target.bridge),
    )
    with _progress_bar(progress) as bar:
        _, rows = _scan(target.bridge, prompts, (), "stripe", [], dev, chunk, True, bar)
    n_seeds = len(prompts.seeds)
    return _loss_summary(rows.reshape(n_seeds, prompts.batch, 2).mean(1), prompts.seeds)


def _loss_summary(per_seed: torch.Tensor, seeds: Sequence[int] | None = None) -> dict[str, Any]:
    first, rep = per_seed[:, 0].double(), per_seed[:, 1].double()
    drop = first - rep
    n = per_seed.shape[0]

    def sd(x):
        return float(x.std(unbiased=True)) if n > 1 else float("nan")

    out = {
        "loss_first": float(first.mean()),
        "loss_repeat": float(rep.mean()),
        "loss_drop": float(drop.mean()),
        "loss_first_std": sd(first),
        "loss_repeat_std": sd(rep),
        "loss_drop_std": sd(drop),
    }
    if seeds is not None:
        out["per_seed"] = [
            {"seed": int(s), "loss_first": float(a), "loss_repeat": float(b)}
            for s, a, b in zip(seeds, first.tolist(), rep.tolist(), strict=True)
        ]
    return out


def _summarize(per_seed: torch.Tensor, deterministic: bool = False):
    """[n_seeds, layers, heads] -> flat (mean, std, ci_lo, ci_hi) lists in (layer, head) order.

    A deterministic score (``copying``, from the weights) has std 0 and a zero-width interval;
    a prompt score from a single seed has NaN spread.
    """
    x = per_seed.double().cpu()
    n = x.shape[0]
    mean = x.mean(0)
    if n > 1:
        std = x.std(0, unbiased=True)
        t = _T975[n - 2] if n - 1 <= len(_T975) else 1.96
        half = t * std / math.sqrt(n)
        lo, hi = mean - half, mean + half
    elif deterministic:
        std = torch.zeros_like(mean)
        lo = hi = mean
    else:
        std = torch.full_like(mean, float("nan"))
        lo = hi = std
    return (t_.flatten().tolist() for t_ in (mean, std, lo, hi))


def _eos(bridge) -> int | None:
    tok = getattr(bridge, "tokenizer", None)
    return getattr(tok, "eos_token_id", None) if tok is not None else None


def _place(bridge, device) -> torch.device:
    if device is None:
        return model_device(bridge)
    from induction.loading import resolve_device

    dev = torch.device(resolve_device(device))
    if model_device(bridge) != dev:
        bridge.to(dev)
    return model_device(bridge)


class _progress_bar:
    """A rich progress bar on stderr (a no-op when disabled); ``bar.task(n, label)``."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._progress = None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total}"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._progress.__enter__()
        return self

    def task(self, total: int, label: str):
        if self._progress is None or total <= 1:
            return lambda: None
        tid = self._progress.add_task(label, total=total)
        return lambda: self._progress.advance(tid)

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.__exit__(*exc)
        return False


#: Tokens per forward pass on CPU: activations of a pass this size stay in the caches. Measured
#: with ``benchmarks/scan.py --sweep-passes`` (1 and 2 threads): against one pass over the
#: batch, passes of about 512 tokens took 0.64-0.72x the time on the zoo model (8 x 65 tokens)
#: and 0.93x on SmolLM2 (4 x 101); much smaller passes lose it to per-pass overhead.
CPU_TOKENS_PER_PASS = 512


def auto_chunk(cfg: Any, prompts: RepeatedPrompts, device: torch.device, logits: bool) -> int:
    """Prompts per forward pass: on CPU about :data:`CPU_TOKENS_PER_PASS` tokens (the rows
    split evenly); on CUDA what fits half the free memory.

    Per prompt, eager attention holds scores, mask and pattern (``heads x L x L``, counted in
    float32), and a layer's activations (``L x (12 d_model + 3 d_mlp)``); logits add
    ``2 x L x vocab`` (the logits and their log-softmax rows).
    """
    n_rows, L = int(prompts.tokens.shape[0]), prompts.layout.length
    if device.type != "cuda":
        passes = max(1, round(n_rows * L / CPU_TOKENS_PER_PASS))
        return max(1, math.ceil(n_rows / passes))
    d_model = int(getattr(cfg, "d_model", 0) or 1024)
    d_mlp = int(getattr(cfg, "d_mlp", 0) or 4 * d_model)
    per_row = 4 * (3 * int(cfg.n_heads) * L * L + L * (12 * d_model + 3 * d_mlp))
    if logits:
        per_row += 4 * 2 * L * int(cfg.d_vocab)
    try:
        free, _ = torch.cuda.mem_get_info(device)
    except RuntimeError:  # pragma: no cover
        return min(n_rows, prompts.batch)
    return int(max(1, min(n_rows, (free // 2) // max(per_row, 1))))


def _scan(
    bridge,
    prompts: RepeatedPrompts,
    attn_names: Sequence[str],
    convention: str,
    layer_list: list[int],
    dev: torch.device,
    chunk: int | None,
    want_loss: bool,
    bar,
):
    """Run the prompts in chunks; returns ([rows, layers, heads, scores] | None, loss | None)."""
    from transformer_lens.model_bridge.exceptions import StopAtLayerException

    layout = prompts.layout
    tokens = prompts.tokens
    n_rows, L = tokens.shape
    if chunk is None:
        chunk = auto_chunk(bridge.cfg, prompts, dev, want_loss)
    elif isinstance(chunk, bool) or not isinstance(chunk, int) or chunk <= 0:
        raise InputError(f"chunk must be a positive integer, got {chunk}")
    n_heads = int(bridge.cfg.n_heads)

    out = None
    hooks = []
    state = {"rows": slice(0, 0)}
    if attn_names:
        plan = _plan(layout, attn_names, convention)
        consts: dict[torch.device, tuple] = {}  # per device (a model spread by device_map)

        def on(device: torch.device):
            if device not in consts:
                consts[device] = (
                    plan.flat_index.to(device),
                    plan.weights.to(device),
                    plan.normalize.to(device),
                )
            return consts[device]

        on(dev)
        any_norm = bool(plan.normalize.any())
        n_cols = len(attn_names)
        out = torch.zeros(n_rows, len(layer_list), n_heads, n_cols, device=dev)
        last = layer_list[-1]

        def make_hook(slot: int, stop: bool):
            def hook(pattern, hook=None):
                # pattern: [batch, head, query, key]; read only the pairs the scores need.
                flat, weights, norm_cols = on(pattern.device)
                b, h = pattern.shape[:2]
                picked = pattern.reshape(b * h, -1).index_select(1, flat)  # [b*h, pairs]
                vals = torch.mm(picked.float(), weights).view(b, h, n_cols)
                if any_norm:
                    total = pattern.sum(dim=(-2, -1), dtype=torch.float32)  # [batch, head]
                    vals = torch.where(norm_cols, vals / total.unsqueeze(-1), vals)
                out[state["rows"], slot] = vals.to(out.device, non_blocking=True)
                if stop:
                    raise StopAtLayerException(pattern)
                return None

            return hook

        for slot, layer in enumerate(layer_list):
            stop = layer == last and not want_loss
            hooks.append((f"blocks.{layer}.attn.hook_pattern", make_hook(slot, stop)))

    loss_rows = torch.zeros(n_rows, 2, device=dev) if want_loss else None
    first_pos, rep_pos = layout.repeat_targets()
    first_pos, rep_pos = first_pos.to(dev), rep_pos.to(dev)

    starts = list(range(0, n_rows, chunk))
    advance = bar.task(len(starts), "scanning heads")
    with torch.inference_mode(), bridge.hooks(fwd_hooks=hooks):
        for start in starts:
            rows = slice(start, min(start + chunk, n_rows))
            state["rows"] = rows
            x = tokens[rows].to(dev, non_blocking=True)
            if want_loss:
                logits = bridge(x, return_type="logits")
                loss_rows[rows, 0] = _mean_nll(logits, x, first_pos)
                loss_rows[rows, 1] = _mean_nll(logits, x, rep_pos)
                del logits
            else:
                bridge(x, return_type=None)
            advance()
    return (out.cpu() if out is not None else None), (
        loss_rows.cpu() if loss_rows is not None else None
    )


def _mean_nll(logits: torch.Tensor, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Per prompt, mean next-token NLL at logits positions ``pos``."""
    lp = logits.index_select(1, pos).float().log_softmax(-1)
    target = tokens.index_select(1, pos + 1)
    return -lp.gather(-1, target.unsqueeze(-1)).squeeze(-1).mean(-1)


# --------------------------------------------------------------------------- copying


def copying_scores(
    model: Any,
    *,
    layers: Sequence[int] | None = None,
    token_ids: torch.Tensor | None = None,
    max_tokens: int = DEFAULT_COPYING_TOKENS,
    seed: int = 0,
    progress: Any = None,
) -> torch.Tensor:
    """Olsson et al.'s copying score per head from the weights alone: ``[layers, heads]``.

    Direct path of each head's OV circuit, token ``s`` attended to -> logits: the embedding
    ``W_E[s]`` through the layer's input norm, ``W_V`` and ``W_O`` of the head, the final
    norm's per-channel gain, and ``W_U`` (biases and the rest of the residual stream are left
    out; a per-row scale does not matter below). With ``z_s`` the logits over the token set
    minus their mean, the head's score for ``s`` is ``relu(z_s[s]) / max relu(z_s)`` when the
    attended token is raised and ``-relu(-z_s[s]) / max relu(-z_s)`` when it is lowered; the
    score is the mean over ``s``, in [-1, 1]. 1: every attended token gets the largest boost
    (a perfect copier); -1: the largest cut (copy suppression); near 0: unrelated. Tokens:
    ``token_ids`` (default the model's ordinary range), a seeded sample of ``max_tokens`` of
    them when there are more; logits are taken over the same set. Computed in float32.
    """
    target = _resolve(model) if not isinstance(model, _Target) else model
    bridge = target.bridge
    n_layers = int(target.info.n_layers)
    layer_list = _check_layers(layers, n_layers)
    if token_ids is None:
        from induction.prompts import token_pool

        token_ids = token_pool(target.info, eos_token_id=_eos(bridge)).ids
    token_ids = torch.as_tensor(token_ids, dtype=torch.long).flatten()
    if token_ids.numel() > max_tokens:
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        keep = torch.randperm(token_ids.numel(), generator=gen)[:max_tokens]
        token_ids = token_ids[keep.sort().values]
    n_heads = int(bridge.cfg.n_heads)
    result = torch.zeros(len(layer_list), n_heads)
    advance = progress.task(len(layer_list), "copying scores") if progress else (lambda: None)
    with torch.no_grad():
        W_E = bridge.W_E
        W_U = bridge.W_U
        ids_e = token_ids.to(W_E.device)
        emb = W_E.index_select(0, ids_e)  # [S, d] in the model's dtype
        U = W_U.index_select(1, token_ids.to(W_U.device)).float()  # [d, S]
        gain = _norm_gain(getattr(bridge, "ln_final", None), W_U.shape[0], W_U)
        if gain is not None:
            U = gain.float().to(U.device).unsqueeze(1) * U
        for slot, layer in enumerate(layer_list):
            block = bridge.blocks[layer]
            x = emb.to(_module_device(block, emb.device))
            ln1 = getattr(block, "ln1", None)
            if ln1 is not None:
                x = ln1(x.unsqueeze(0)).squeeze(0)
            x = x.float()
            W_V = _expand_heads(block.attn.W_V.float(), n_heads)  # [H, d, dh]
            W_O = block.attn.W_O.float()  # [H, dh, d]
            Ul = U.to(W_O.device)
            v = torch.einsum("sd,hde->hse", x.to(W_V.device), W_V)  # [H, S, dh]
            right = torch.einsum("hed,dt->het", W_O, Ul)  # [H, dh, S]
            logits = torch.bmm(v.to(right.device), right)  # [H, S(src), S(tgt)]
            result[slot] = _copy_share(logits).cpu()
            advance()
    return result


def _copy_share(logits: torch.Tensor) -> torch.Tensor:
    """Mean over source tokens of the signed, max-normalised logit of the attended token.

    ``z = logits - mean`` is never materialised: its diagonal, max and min are the logits'
    diagonal, max and min minus the row mean.
    """
    mean = logits.mean(-1)
    lo, hi = torch.aminmax(logits, dim=-1)
    diag = logits.diagonal(dim1=-2, dim2=-1) - mean
    up = (hi - mean).clamp_min(1e-30)
    down = (mean - lo).clamp_min(1e-30)
    share = diag.clamp_min(0) / up - (-diag).clamp_min(0) / down
    return share.mean(-1)


def _expand_heads(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Grouped-query K/V weights ``[n_kv, ...]`` -> one per query head (repeat_interleave)."""
    if w.shape[0] == n_heads:
        return w
    if n_heads % w.shape[0]:
        raise InputError(f"cannot map {w.shape[0]} key/value heads onto {n_heads} query heads")
    return w.repeat_interleave(n_heads // w.shape[0], dim=0)


def _module_device(module, default: torch.device) -> torch.device:
    try:
        return next(module.parameters()).device
    except StopIteration:
        return default


def _norm_gain(norm, d_model: int, like: torch.Tensor) -> torch.Tensor | None:
    """Per-channel gain of the final norm (its scale-free part is irrelevant to shares).

    LayerNorm: its ``weight``. RMS-style norms (including Gemma's ``1 + weight``): the norm
    applied to a vector of ones, which is the gain up to one common factor.
    """
    if norm is None:
        return None
    comp = getattr(norm, "original_component", norm)
    if isinstance(comp, torch.nn.LayerNorm) or getattr(comp, "bias", None) is not None:
        w = getattr(comp, "weight", None)
        return None if w is None else w.detach()
    dev = _module_device(norm, like.device)
    ones = torch.ones(1, 1, d_model, dtype=like.dtype, device=dev)
    try:
        return norm(ones).flatten().detach()
    except Exception:  # an exotic norm: leave the gain out
        return None
