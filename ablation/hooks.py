"""Head ablation through ``blocks.{l}.attn.hook_z``.

``hook_z`` is the per-head input of the attention output projection, shaped
``[batch, pos, head, d_head]`` (one slot per *query* head, so grouped-query models need no
special case). Zeroing a head's slice there removes exactly that head's contribution to the
residual stream, which is what the test against raw ``transformers`` checks. Editing
``hook_pattern`` is never used: many architectures discard edits to it.

Modes
-----
- ``zero``: the head's slice is set to 0.
- ``mean``: the head's slice is replaced by its mean over a *reference batch* (by default the
  task's own prompts), computed once by :func:`head_means`:

  * ``mean_over="all"`` (default): one ``d_head`` vector per head, the mean over every real
    (non-padding) token of the reference batch;
  * ``mean_over="position"``: one vector per head and absolute position (position counted from
    the first real token of the sequence); positions past the longest reference sequence fall
    back to the overall mean.

Looped models
-------------
A looped model is loaded unrolled, so a head is addressed per unrolled layer. With
``tied=True`` and a loop plan (``[(block_layer, pass), ...]`` per unrolled layer), ablating
head ``(L, H)`` ablates head ``H`` in every unrolled layer that runs the same block layer as
``L`` (:func:`tie_heads`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from jaxtyping import Float, Int
from torch import Tensor

from ablation.config import MEAN_OVER, MODES, AblationMode, MeanOver  # noqa: F401  (re-exported)
from induction.errors import InputError


def hook_name(layer: int) -> str:
    return f"blocks.{layer}.attn.hook_z"


def tie_heads(
    heads: Iterable[tuple[int, int]], unrolled_layers: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Expand heads to every unrolled layer that shares their block layer (looped models).

    ``unrolled_layers[i] = (block_layer, pass)`` for unrolled layer ``i``.
    """
    block_of = [blk for blk, _ in unrolled_layers]
    out: set[tuple[int, int]] = set()
    for layer, head in heads:
        out.update((i, head) for i, blk in enumerate(block_of) if blk == block_of[layer])
    return sorted(out)


@dataclass
class HeadMeans:
    """Mean ``hook_z`` per head over a reference batch.

    ``overall[layer]`` is ``[n_heads, d_head]``; ``per_position[layer]`` is
    ``[n_pos, n_heads, d_head]``.
    """

    overall: dict[int, Float[Tensor, "head d_head"]]
    per_position: dict[int, Float[Tensor, "pos head d_head"]] = field(default_factory=dict)


@torch.no_grad()
def head_means(
    model,
    batches: Iterable[tuple[Int[Tensor, "batch seq"], Int[Tensor, "batch seq"]]],
    layers: Iterable[int],
    per_position: bool = False,
) -> HeadMeans:
    """Mean ``hook_z`` of every head in ``layers`` over the real tokens of ``batches``.

    ``model`` is a TransformerLens bridge; ``batches`` yields ``(input_ids, attention_mask)``
    pairs (left or right padded; padding is excluded from the means). The forward runs through
    the bridge's HF module so the bridge's hooks fire.
    """
    layers = sorted(set(layers))
    sums: dict[int, torch.Tensor] = {}
    pos_sums: dict[int, torch.Tensor] = {}
    pos_counts: torch.Tensor | None = None
    count = 0
    state: dict[str, torch.Tensor] = {}

    def grab(
        z: Float[Tensor, "batch seq head d_head"], hook
    ) -> Float[Tensor, "batch seq head d_head"]:
        layer = int(hook.name.split(".")[1])
        mask = state["mask"].to(z.dtype)[:, :, None, None]
        zf = (z * mask).float()
        sums[layer] = sums.get(layer, 0) + zf.sum(dim=(0, 1))
        if per_position:
            # scatter each token to its absolute position (first real token = 0)
            pos = state["pos"]
            n_pos = int(pos.max()) + 1
            acc = torch.zeros(n_pos, z.shape[2], z.shape[3], dtype=torch.float32, device=z.device)
            acc.index_add_(0, pos.reshape(-1), zf.reshape(-1, z.shape[2], z.shape[3]))
            prev = pos_sums.get(layer)
            if prev is not None and prev.shape[0] < n_pos:
                prev = torch.cat([prev, acc.new_zeros(n_pos - prev.shape[0], *prev.shape[1:])])
            if prev is not None and prev.shape[0] > n_pos:
                acc = torch.cat([acc, acc.new_zeros(prev.shape[0] - n_pos, *acc.shape[1:])])
            pos_sums[layer] = acc if prev is None else prev + acc
        return z

    hf = model.original_model
    with model.hooks(fwd_hooks=[(hook_name(layer), grab) for layer in layers]):
        for ids, mask in batches:
            ids, mask = ids.to(model.cfg.device), mask.to(model.cfg.device)
            pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
            state["mask"], state["pos"] = mask, pos
            hf(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False)
            count += int(mask.sum())
            if per_position:
                flat = torch.zeros(int(pos.max()) + 1, device=mask.device)
                flat.index_add_(0, pos.reshape(-1), mask.reshape(-1).float())
                if pos_counts is None:
                    pos_counts = flat
                else:
                    n = max(len(pos_counts), len(flat))
                    pos_counts = torch.nn.functional.pad(pos_counts, (0, n - len(pos_counts)))
                    pos_counts = pos_counts + torch.nn.functional.pad(flat, (0, n - len(flat)))
    if count == 0:
        raise InputError("head_means needs at least one real token")
    overall = {layer: s / count for layer, s in sums.items()}
    per_pos = {}
    if per_position and pos_counts is not None:
        for layer, s in pos_sums.items():
            c = pos_counts[: s.shape[0], None, None].clamp(min=1)
            per_pos[layer] = s / c
    return HeadMeans(overall=overall, per_position=per_pos)


class HeadAblation:
    """Hook builder: which heads to ablate and how. Use :func:`ablate_heads` to apply it.

    ``positions`` may be set by the caller before each forward (a ``[batch, seq]`` tensor of
    absolute positions) so per-position mean ablation knows where each token sits; without it
    positions are assumed to be ``0..seq-1``.
    """

    def __init__(
        self,
        heads: Iterable[tuple[int, int]],
        mode: AblationMode = "zero",
        means: HeadMeans | None = None,
        mean_over: MeanOver = "all",
    ):
        if mode not in MODES:
            raise InputError(f"unknown ablation mode {mode!r}; use one of {MODES}")
        if mean_over not in MEAN_OVER:
            raise InputError(f"unknown mean_over {mean_over!r}; use one of {MEAN_OVER}")
        if mode == "mean" and means is None:
            raise InputError("mean ablation needs head means (see head_means)")
        self.heads = sorted(set((int(a), int(b)) for a, b in heads))
        self.mode: AblationMode = mode
        self.means = means
        self.mean_over: MeanOver = mean_over
        self.positions: Int[Tensor, "batch seq"] | None = None
        self.by_layer: dict[int, list[int]] = {}
        for layer, head in self.heads:
            self.by_layer.setdefault(layer, []).append(head)

    def _hook(self, layer: int):
        idx = self.by_layer[layer]

        def fn(
            z: Float[Tensor, "batch seq head d_head"], hook
        ) -> Float[Tensor, "batch seq head d_head"]:
            z = z.clone()
            if self.mode == "zero":
                z[:, :, idx, :] = 0
                return z
            assert self.means is not None
            overall = self.means.overall[layer][idx].to(z.dtype)  # [h, d]
            table = self.means.per_position.get(layer) if self.mean_over == "position" else None
            if table is None:
                z[:, :, idx, :] = overall
                return z
            pos = self.positions
            if pos is None or pos.shape[1] != z.shape[1]:
                pos = torch.arange(z.shape[1], device=z.device).expand(z.shape[0], -1)
            table = table[:, idx].to(z.dtype)  # [n_pos, h, d]
            padded = torch.cat([table, overall[None]], dim=0)
            safe = pos.clamp(max=table.shape[0]).to(z.device)  # out of range -> overall row
            z[:, :, idx, :] = padded[safe]
            return z

        return fn

    def fwd_hooks(self) -> list[tuple[str, object]]:
        return [(hook_name(layer), self._hook(layer)) for layer in sorted(self.by_layer)]


class HeadSetsAblation:
    """``K`` head sets ablated in one batched forward, one set per block of rows (issue #42,
    "many head sets, one forward pass"): the prompts are repeated once per set and row ``r``
    carries set ``row_sets[r]``'s head mask, so each row sees exactly what
    :class:`HeadAblation` of its own set does (the same values written into ``hook_z``; a set
    may be empty: the clean run). As in :mod:`induction.circuits.patching`, the mask is
    ``[rows, heads]`` per layer; here it selects, never blends, so zero and mean replacements
    are bit-identical to one set per pass.

    ``row_sets`` (a ``[rows]`` tensor of set indices) and ``positions`` are set by the caller
    before each forward; every set shares ``mode``, ``means`` and ``mean_over``.
    """

    def __init__(
        self,
        sets: Sequence[Iterable[tuple[int, int]]],
        n_heads: int,
        mode: AblationMode = "zero",
        means: HeadMeans | None = None,
        mean_over: MeanOver = "all",
    ):
        self.sets = [HeadAblation(heads, mode, means, mean_over) for heads in sets]
        self.mode, self.means, self.mean_over = mode, means, mean_over
        self.heads = sorted({h for s in self.sets for h in s.heads})  # any head of any set
        self.positions: Int[Tensor, "batch seq"] | None = None
        self.row_sets: Int[Tensor, " batch"] | None = None
        layers = sorted({layer for layer, _ in self.heads})
        # per layer, which heads each set ablates: [sets, heads]
        self.masks: dict[int, torch.Tensor] = {}
        self._on_device: dict[tuple, torch.Tensor] = {}
        for layer in layers:
            mask = torch.zeros(len(self.sets), n_heads, dtype=torch.bool)
            for k, s in enumerate(self.sets):
                mask[k, s.by_layer.get(layer, [])] = True
            self.masks[layer] = mask

    def _hook(self, layer: int):
        def fn(
            z: Float[Tensor, "batch seq head d_head"], hook
        ) -> Float[Tensor, "batch seq head d_head"]:
            if self.row_sets is None or len(self.row_sets) != z.shape[0]:
                raise RuntimeError("HeadSetsAblation.row_sets must name each row's head set")
            masks = self._on_device.get((layer, z.device))
            if masks is None:  # moved once per device: no copy on every forward
                masks = self._on_device[(layer, z.device)] = self.masks[layer].to(z.device)
            where = masks[self.row_sets.to(z.device)][:, None, :, None]  # [batch, 1, head, 1]
            if self.mode == "zero":
                return torch.where(where, torch.zeros((), dtype=z.dtype, device=z.device), z)
            assert self.means is not None
            overall = self.means.overall[layer].to(z.device, z.dtype)  # [head, d]
            table = self.means.per_position.get(layer) if self.mean_over == "position" else None
            if table is None:
                return torch.where(where, overall, z)
            pos = self.positions
            if pos is None or pos.shape[1] != z.shape[1]:
                pos = torch.arange(z.shape[1], device=z.device).expand(z.shape[0], -1)
            padded = torch.cat([table.to(z.device, z.dtype), overall[None]], dim=0)
            safe = pos.clamp(max=table.shape[0]).to(z.device)  # out of range -> overall row
            return torch.where(where, padded[safe], z)

        return fn

    def fwd_hooks(self) -> list[tuple[str, object]]:
        return [(hook_name(layer), self._hook(layer)) for layer in sorted(self.masks)]


@contextmanager
def ablate_heads(
    model,
    heads: Iterable[tuple[int, int]] | HeadAblation,
    mode: AblationMode = "zero",
    means: HeadMeans | None = None,
    mean_over: MeanOver = "all",
) -> Iterator[HeadAblation]:
    """Context manager: inside it every forward of ``model`` (bridge or its HF module, any
    call path including ``generate``) runs with ``heads`` ablated.

    >>> with ablate_heads(bridge, [(3, 1), (5, 0)]):
    ...     logits = bridge(tokens)
    """
    abl = heads if isinstance(heads, HeadAblation) else HeadAblation(heads, mode, means, mean_over)
    n_layers, n_heads = model.cfg.n_layers, model.cfg.n_heads
    for layer, head in abl.heads:
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise InputError(
                f"head {layer}.{head} out of range (model has {n_layers} layers x {n_heads} heads)"
            )
    if not abl.heads:
        yield abl
        return
    with model.hooks(fwd_hooks=abl.fwd_hooks()):
        yield abl
