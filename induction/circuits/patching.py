"""Batched single-head ablation: many heads ablated in one forward pass, one head per row block.

The prompt batch (``B`` prompts) is replicated once per ablated head of a *chunk*; a hook on
``blocks.{l}.attn.hook_z`` (``[rows, pos, head, d_head]``) blends every row with its
replacement through a ``[rows, heads]`` keep-mask (1 everywhere except the row block's own
head): ``z' = keep * z + (1 - keep) * replacement``. Replacements (docs/research.md, "Circuits
and per-head causality"; Yin and Steinhardt 2025 for mean ablation over random tokens):

- ``zero``: 0 (moves activations off distribution);
- ``mean``: the head's mean ``hook_z`` over a reference distribution
  (:func:`ablation.hooks.head_means`): ``random`` (random-token prompts, not repeated) or
  ``task`` (the repeated-token prompts themselves);
- ``resample``: the head's ``hook_z`` on another prompt of the reference distribution at the
  same position (row ``b`` takes reference row ``b + 1`` for ``task``, row ``b`` for
  ``random``).

Two savings beyond batching make it cheaper than a loop of one ablated forward per head:

- **Shared prefix.** Ablating a head of layer ``l`` changes nothing before layer ``l``, so a
  chunk holds heads of one layer and starts there, from the clean residual stream entering
  layer ``l`` (cached by one clean pass). The decoder runs on a slice of its layer list,
  fed the residual as ``inputs_embeds``; this needs a decoder that adds no absolute position
  embedding to ``inputs_embeds`` (Llama, Qwen, Gemma, SmolLM2, the zoo). Others run from the
  tokens (same results, no saving). A decoder picks each layer's attention type (sliding or
  global window, local or global RoPE base: Gemma 2/3, Qwen2/3) from per-layer config lists
  indexed by the layer's place in the list, so the slice slices those lists too; and before a
  start layer's first shortcut, one prompt checks it against a full pass
  (:func:`shortcut_exact`): where they differ the passes run from the tokens (docs/specs.md,
  "Architectures").
- **Only the logits read.** The loss is read on the second copy only, so the unembedding runs
  on those positions.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

import torch
from jaxtyping import Float, Int
from torch import Tensor

from induction.circuits.config import check_mode
from induction.errors import InputError
from induction.heads import Head

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge

    from induction.models.model_types import LoadedModel, ModelInfo


def z_hook(layer: int) -> str:
    return f"blocks.{layer}.attn.hook_z"


# --------------------------------------------------------------------------- the model view


@dataclass
class View:
    """The parts of a loaded model the batched passes drive."""

    bridge: Any
    hf: Any
    base: Any  # the decoder module that owns the layer list (e.g. LlamaModel)
    layers: Any  # its nn.ModuleList
    lm_head: Any
    n_layers: int
    n_heads: int
    d_head: int
    device: torch.device
    can_skip: bool  # the decoder accepts a mid-stack residual as inputs_embeds
    exact_from: dict[int, bool] = field(default_factory=dict)  # start layer -> shortcut checked
    reference: Any = None  # (tokens [1, pos], residual entering each layer, logits [1, pos, vocab])


def view(model: LoadedModel | TransformerBridge) -> View:
    from induction.models.layers import LAYER_PATHS
    from induction.models.model_types import LoadedModel

    bridge = model.bridge if isinstance(model, LoadedModel) else model
    hf: Any = bridge.original_model  # a transformers model (the bridge types it nn.Module)
    base = layers = None
    for path in LAYER_PATHS:
        parts = path.split(".")
        obj = hf
        for part in parts[:-1]:
            obj = getattr(obj, part, None)
        lst = getattr(obj, parts[-1], None) if obj is not None else None
        if isinstance(lst, torch.nn.ModuleList):
            base, layers = obj, lst
            break
    absolute = any(
        getattr(base, a, None) is not None
        for a in ("wpe", "embed_positions", "position_embeddings")
    )
    lm_head = hf.get_output_embeddings() if hasattr(hf, "get_output_embeddings") else None
    cfg = bridge.cfg
    dev = next(bridge.parameters()).device
    return View(
        bridge=bridge,
        hf=hf,
        base=base,
        layers=layers,
        lm_head=lm_head,
        n_layers=int(cfg.n_layers),
        n_heads=int(cfg.n_heads),
        d_head=int(cfg.d_head),
        device=dev,
        can_skip=base is not None and lm_head is not None and not absolute,
    )


# Config lists with one entry per layer that a decoder's forward indexes by the layer's place
# in its layer list (``config.layer_types[i]`` picks the mask and the RoPE table of layer i).
PER_LAYER_CONFIG = ("layer_types",)


@contextmanager
def _only_layers(v: View, start: int, stop: int) -> Iterator[None]:
    """Temporarily shrink the decoder's layer list to ``layers[start:stop]`` (names kept), and
    its per-layer config lists with it, so layer ``start + i`` keeps its own attention type."""
    saved = list(v.layers._modules.items())
    cfg = getattr(v.base, "config", None)
    lists = {
        name: getattr(cfg, name)
        for name in PER_LAYER_CONFIG
        if isinstance(getattr(cfg, name, None), list | tuple)
        and len(getattr(cfg, name)) == len(saved)
    }
    try:
        v.layers._modules.clear()
        for name, module in saved[start:stop]:
            v.layers._modules[name] = module
        for name, values in lists.items():
            setattr(cfg, name, list(values)[start:stop])
        yield
    finally:
        v.layers._modules.clear()
        for name, module in saved:
            v.layers._modules[name] = module
        for name, values in lists.items():
            setattr(cfg, name, values)


def unembed(v: View, hidden: Float[Tensor, "row at d_model"]) -> Float[Tensor, "row at vocab"]:
    """The LM head on final-norm hidden states, with the final logit soft-capping of Gemma 2
    (``cap * tanh(logits / cap)``) that the causal-LM wrapper applies after the head."""
    logits = v.lm_head(hidden)
    cap = getattr(getattr(v.hf, "config", None), "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def _shortcut_logits(v: View, resid: torch.Tensor, start: int) -> torch.Tensor:
    with _only_layers(v, start, v.n_layers):
        out = v.base(inputs_embeds=resid, use_cache=False)
    return unembed(v, out.last_hidden_state)


@torch.no_grad()
def shortcut_exact(v: View, tokens: Int[Tensor, "row pos"], start: int) -> bool:
    """Whether running layers ``start..`` from the clean residual gives the full pass's logits,
    checked once per start layer on the first prompt (the guard of the shared prefix: a decoder
    whose forward does something this module does not mirror gets full passes, with a warning).
    """
    if start in v.exact_from:
        return v.exact_from[start]
    if v.reference is None:
        row = tokens[:1]
        resid: dict[int, torch.Tensor] = {}

        def grab(x, hook):
            resid[int(hook.name.split(".")[1])] = x.detach().clone()

        hooks = [(f"blocks.{i}.hook_resid_pre", grab) for i in range(v.n_layers)]
        with v.bridge.hooks(fwd_hooks=hooks):
            full = v.bridge(row, return_type="logits")
        v.reference = (row, resid, full)
    row, resid, full = v.reference
    try:
        got = _shortcut_logits(v, resid[start], start)
        gap = float((got.float() - full.float()).abs().max())
    except Exception as err:  # noqa: BLE001  (any failure of the shortcut: run full passes)
        gap, why = float("inf"), f"fails ({type(err).__name__})"
    else:
        why = f"differs from a full pass by {gap:.2g}"
    fp32 = full.dtype in (torch.float32, torch.float64)
    tol = (1e-4 if fp32 else 2e-2) * float(full.abs().max().clamp(min=1.0))
    v.exact_from[start] = gap <= tol
    if not v.exact_from[start]:
        warnings.warn(
            f"running layers {start}.. from the residual {why}; "
            "patching runs full passes from the tokens (slower, same results)",
            stacklevel=3,
        )
    return v.exact_from[start]


@overload
def run_rows(
    v: View,
    tokens: Int[Tensor, "row pos"],
    *,
    start: int = 0,
    resid: Float[Tensor, "row pos d_model"] | None = None,
    stop: int | None = None,
    logits_at: None = None,
    hooks: Sequence[tuple[str, Any]] = (),
) -> None: ...
@overload
def run_rows(
    v: View,
    tokens: Int[Tensor, "row pos"],
    *,
    start: int = 0,
    resid: Float[Tensor, "row pos d_model"] | None = None,
    stop: int | None = None,
    logits_at: Int[Tensor, " at"],
    hooks: Sequence[tuple[str, Any]] = (),
) -> Float[Tensor, "row at vocab"]: ...
@overload
def run_rows(
    v: View,
    tokens: Int[Tensor, "row pos"],
    *,
    start: int = 0,
    resid: Float[Tensor, "row pos d_model"] | None = None,
    stop: int | None = None,
    logits_at: Int[Tensor, " at"] | None = None,
    hooks: Sequence[tuple[str, Any]] = (),
) -> Float[Tensor, "row at vocab"] | None: ...
def run_rows(
    v: View,
    tokens: Int[Tensor, "row pos"],
    *,
    start: int = 0,
    resid: Float[Tensor, "row pos d_model"] | None = None,
    stop: int | None = None,
    logits_at: Int[Tensor, " at"] | None = None,
    hooks: Sequence[tuple[str, Any]] = (),
) -> Float[Tensor, "row at vocab"] | None:
    """Run ``tokens`` (``[rows, pos]``) through layers ``start .. stop-1`` with ``hooks``.

    ``resid`` is the residual entering layer ``start`` (``[rows, pos, d_model]``); with it and
    a decoder that allows it, the earlier layers are skipped. Returns the logits at positions
    ``logits_at`` (``[rows, len(logits_at), vocab]``), or None when ``logits_at`` is None.
    """
    stop = v.n_layers if stop is None else stop
    # the shortcut also from layer 0: the LM head then runs on ``logits_at`` only, never on
    # every position of every row ([rows, pos, vocab] is most of a pass's memory)
    skip = v.can_skip and shortcut_exact(v, tokens, start)
    with v.bridge.hooks(fwd_hooks=list(hooks)):
        if skip:
            if resid is None:
                if start > 0:
                    raise InputError("run_rows: a start layer needs the residual entering it")
                resid = v.hf.get_input_embeddings()(tokens)
            with _only_layers(v, start, stop):
                out = v.base(inputs_embeds=resid, use_cache=False)
            if logits_at is None:
                return None
            return unembed(v, out.last_hidden_state.index_select(1, logits_at))
        if logits_at is None and stop < v.n_layers:
            from transformer_lens.model_bridge.exceptions import StopAtLayerException

            def halt(x, hook):
                raise StopAtLayerException(x)

            with v.bridge.hooks(fwd_hooks=[(f"blocks.{stop}.hook_resid_pre", halt)]):
                try:
                    v.bridge(tokens, return_type=None)
                except StopAtLayerException:
                    pass
            return None
        logits = v.bridge(tokens, return_type="logits")
        return None if logits_at is None else logits.index_select(1, logits_at)


def nll_at(
    logits: Float[Tensor, "row at vocab"], targets: Int[Tensor, "row at"]
) -> Float[Tensor, " row"]:
    """Per row, mean NLL of ``targets`` ``[rows, P]`` under ``logits`` ``[rows, P, vocab]``."""
    lp = logits.float().log_softmax(-1)
    return -lp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).mean(-1)


# --------------------------------------------------------------------------- clean pass


@dataclass
class Clean:
    """One clean pass: residual entering every layer, every layer's ``hook_z``, the loss."""

    resid: dict[int, Float[Tensor, "batch pos d_model"]]  # by layer
    z: dict[int, Float[Tensor, "batch pos head d_head"]]  # by layer
    loss: Float[Tensor, " batch"] | None  # mean NLL at the loss positions


@torch.no_grad()
def clean_pass(
    v: View,
    tokens: Int[Tensor, "batch pos"],
    logits_at: Int[Tensor, " at"] | None = None,
    targets: Int[Tensor, "batch at"] | None = None,
    layers: Sequence[int] | None = None,
    stop: int | None = None,
) -> Clean:
    """Residual entering and ``hook_z`` of each of ``layers`` (default all), and the loss at
    ``logits_at`` when given; without logits the pass stops before layer ``stop``."""
    layers = range(v.n_layers if stop is None else stop) if layers is None else layers
    resid: dict[int, torch.Tensor] = {}
    zs: dict[int, torch.Tensor] = {}

    def grab_resid(x, hook):
        resid[int(hook.name.split(".")[1])] = x.detach().clone()

    def grab_z(z, hook):
        zs[int(hook.name.split(".")[1])] = z.detach().clone()

    hooks = [(f"blocks.{layer}.hook_resid_pre", grab_resid) for layer in layers]
    hooks += [(z_hook(layer), grab_z) for layer in layers]
    if logits_at is None:
        run_rows(v, tokens, stop=stop, hooks=hooks)
        return Clean(resid, zs, None)
    if targets is None:
        raise InputError("clean_pass: a loss at logits_at needs the targets")
    logits = run_rows(v, tokens, logits_at=logits_at, hooks=hooks)
    return Clean(resid, zs, nll_at(logits, targets))


# --------------------------------------------------------------------------- replacements


@dataclass
class Replacement:
    """What an ablated head's ``hook_z`` becomes: zero, a mean, or resampled activations."""

    mode: str
    means: dict[int, Float[Tensor, "head d_head"]] = field(default_factory=dict)  # by layer
    resampled: dict[int, Float[Tensor, "batch pos head d_head"]] = field(default_factory=dict)

    def for_rows(self, layer: int, n_copies: int, like: torch.Tensor) -> torch.Tensor | None:
        """Replacement for ``n_copies`` stacked copies of the batch (None for zero)."""
        if self.mode == "zero":
            return None
        if self.mode == "mean":
            return self.means[layer].to(like.dtype)
        r = self.resampled[layer].to(like.dtype)
        return r.repeat(n_copies, 1, 1, 1)


def random_reference(
    info: ModelInfo, tokens: Int[Tensor, "row pos"], seed: int = 10_000
) -> Int[Tensor, "row pos"]:
    """Random-token prompts shaped like ``tokens``: the same prefix token, then distinct
    random ordinary ids with no repetition (Yin and Steinhardt 2025's reference for means)."""
    from induction.scores.prompts import token_pool

    pool = token_pool(info)
    n_rows, length = tokens.shape
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    body = length - 1
    if body <= len(pool):
        picks = torch.multinomial(torch.ones(n_rows, len(pool)), body, generator=gen)
    else:  # a vocabulary smaller than the prompt: draw with replacement
        picks = torch.randint(len(pool), (n_rows, body), generator=gen)
    out = torch.cat([tokens[:, :1].cpu(), pool.ids[picks]], dim=1)
    return out.to(tokens.device)


@torch.no_grad()
def make_replacement(
    v: View,
    mode: str,
    reference: str,
    tokens: torch.Tensor,
    clean: Clean | None,
    info: ModelInfo,
) -> Replacement:
    """Build the replacement for ``mode`` from the ``reference`` distribution."""
    check_mode(mode, reference)
    if mode == "zero":
        return Replacement("zero")
    ref = tokens if reference == "task" else random_reference(info, tokens)
    if mode == "mean":
        from ablation.hooks import head_means

        ones = torch.ones_like(ref)
        means = head_means(v.bridge, [(ref, ones)], range(v.n_layers))
        return Replacement("mean", means={k: t.to(v.device) for k, t in means.overall.items()})
    if reference == "task" and clean is not None:
        zs = clean.z
    else:
        zs = clean_pass(v, ref).z
    shift = 1 if reference == "task" else 0
    return Replacement(
        "resample", resampled={k: torch.roll(z, -shift, dims=0) for k, z in zs.items()}
    )


def mask_hook(keep: Float[Tensor, "row head"], repl: Float[Tensor, "row pos head d_head"] | None):
    """``z * keep + repl * (1 - keep)`` (``keep`` 1 keeps the head, 0 replaces it)."""

    def fn(z: Float[Tensor, "row pos head d_head"], hook) -> Float[Tensor, "row pos head d_head"]:
        k = keep.to(z.dtype)[:, None, :, None]
        if repl is None:
            return z * k
        return z * k + repl * (1 - k)

    return fn


def chunks_by_layer(heads: Sequence[Head], max_heads: int) -> list[tuple[int, list[Head]]]:
    """Heads grouped by layer, at most ``max_heads`` per group: ``[(layer, heads), ...]``."""
    by_layer: dict[int, list[Head]] = {}
    for head in sorted(heads):
        by_layer.setdefault(head[0], []).append(head)
    out = []
    for layer, hs in sorted(by_layer.items()):
        for i in range(0, len(hs), max_heads):
            out.append((layer, hs[i : i + max_heads]))
    return out
