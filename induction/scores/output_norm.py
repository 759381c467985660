"""How much each attention head writes: its output norm on the scan prompts, and "silent" heads.

A head's output at a position is ``z_h W_O^h``: its ``hook_z`` vector (``[d_head]``, the
attention-weighted values) times its slice of the attention output projection
(``W_O[h]``, ``[d_head, d_model]``; ``o_proj`` in Llama). :func:`output_norms` reports, per
head, the mean over prompts and positions of ``‖z_h W_O^h‖`` (L2 over ``d_model``) on the
same seeded repeated-random-token prompts the induction scan uses (:mod:`induction.scores.prompts`).

A head whose output norm is below ``max(1e-6, 1e-3 x the median head's norm)`` is *silent*:
it may attend exactly like an induction head (a high induction score) and still write nothing
to the residual stream, so ablating it changes nothing. LLaMA-Pro block expansion (Wu et al.
2024; docs/research.md "Circuits and per-head causality") creates such heads on purpose: its
inserted copies have zero ``o_proj``. :func:`silent_heads` and :func:`silent_note` flag them
for the lineage and ablation reports (docs/views.md).

Hooks: one per layer on ``blocks.{l}.attn.hook_z`` (``[batch, pos, head, d_head]``), reduced
on the spot; nothing is cached.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch

from induction.errors import InputError
from induction.heads import head_label
from induction.models.target import model_device

#: A head is silent when its output norm is below max(SILENT_FLOOR, SILENT_REL x median).
SILENT_REL = 1e-3
SILENT_FLOOR = 1e-6
COLUMN = "output_norm"


def _parts(model: Any):
    bridge = getattr(model, "bridge", None)
    info = getattr(model, "info", None)
    if bridge is None or info is None:
        raise InputError(
            f"output_norms needs a LoadedModel (induction.load_model), got {type(model).__name__}"
        )
    return bridge, info


def output_norms(
    model: Any,
    *,
    seq_len: int | None = None,
    batch: int = 8,
    seeds: int | Sequence[int] = (0,),
    n_repeats: int = 2,
    token_range: tuple[int, int] | None = None,
    layers: Sequence[int] | None = None,
    chunk: int | None = None,
):
    """Each head's mean output norm ``‖z_h W_O^h‖`` on repeated-random-token prompts.

    Args:
        model: a :class:`induction.models.loading.LoadedModel`.
        seq_len, batch, seeds, n_repeats, token_range: the prompts, as in
            :func:`induction.scores.prompts.make_prompts` (pass the scan's values to measure on the
            scan's own prompts; :func:`add_output_norm` does that from a score table).
        layers: layers to measure (default all).
        chunk: prompts per forward pass (default ``batch``).

    Returns:
        A DataFrame ``layer, head, output_norm`` sorted by (layer, head); ``attrs`` records the
        prompt settings. The mean runs over every prompt of every seed and every position
        (the prefix token included).
    """
    import pandas as pd

    from induction.scores.prompts import make_prompts

    bridge, info = _parts(model)
    n_layers, n_heads = int(info.n_layers), int(info.n_heads)
    if layers is None:
        layer_list = list(range(n_layers))
    else:
        layer_list = sorted({int(x) for x in layers})
        if not layer_list or not all(0 <= x < n_layers for x in layer_list):
            raise InputError(f"layers must be in 0..{n_layers - 1}, got {list(layers)}")
    tok = getattr(bridge, "tokenizer", None)
    prompts = make_prompts(
        info,
        seq_len=seq_len,
        batch=batch,
        seeds=seeds,
        n_repeats=n_repeats,
        token_range=token_range,
        eos_token_id=getattr(tok, "eos_token_id", None) if tok is not None else None,
    )
    tokens = prompts.tokens
    chunk = batch if chunk is None else chunk
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise InputError(f"chunk must be a positive integer, got {chunk}")

    W_O = {lay: bridge.blocks[lay].attn.W_O.detach() for lay in layer_list}  # [H, dh, d]
    sums = torch.zeros(len(layer_list), n_heads, dtype=torch.float64)
    row = {lay: i for i, lay in enumerate(layer_list)}

    def hook(z, hook):
        lay = int(hook.name.split(".")[1])
        w = W_O[lay].to(device=z.device, dtype=torch.float32)
        out = torch.einsum("bphd,hde->bphe", z.float(), w)  # [batch, pos, head, d_model]
        sums[row[lay]] += out.norm(dim=-1).sum(dim=(0, 1)).double().cpu()
        return z

    hooks = [(f"blocks.{lay}.attn.hook_z", hook) for lay in layer_list]
    device = model_device(bridge)
    with torch.no_grad():
        for start in range(0, tokens.shape[0], chunk):
            part = tokens[start : start + chunk].to(device)
            bridge.run_with_hooks(part, fwd_hooks=hooks, return_type=None)
    mean = sums / float(tokens.numel())
    df = pd.DataFrame(
        {
            "layer": [lay for lay in layer_list for _ in range(n_heads)],
            "head": [h for _ in layer_list for h in range(n_heads)],
            COLUMN: mean.reshape(-1).tolist(),
        }
    )
    df.attrs.update(
        {
            "model": info.name,
            "seq_len": prompts.seq_len,
            "n_repeats": prompts.n_repeats,
            "batch": prompts.batch,
            "seeds": list(prompts.seeds),
            "token_range": list(prompts.pool.token_range),
            "definition": "mean over prompts and positions of ||z_h W_O^h||",
        }
    )
    return df


def add_output_norm(scores, model: Any, **options):
    """``scores`` (a scan table: ``layer``, ``head``, ...) with an ``output_norm`` column,
    measured on the scan's own prompts (its ``attrs``: seq_len, batch, seeds, n_repeats,
    token_range); ``options`` override them. Rows keep their order; attrs are kept."""
    a = scores.attrs
    kw: dict[str, Any] = {}
    for key in ("seq_len", "batch", "n_repeats"):
        if a.get(key) is not None:
            kw[key] = int(a[key])
    if a.get("seeds"):
        kw["seeds"] = [int(s) for s in a["seeds"]]
    if a.get("token_range"):
        kw["token_range"] = tuple(int(x) for x in a["token_range"])
    layers = sorted({int(x) for x in scores["layer"]})
    kw.update(options)
    kw.setdefault("layers", layers)
    norms = output_norms(model, **kw)
    attrs = dict(a)
    out = scores.drop(columns=[COLUMN], errors="ignore").merge(
        norms, on=["layer", "head"], how="left"
    )
    out.attrs = attrs
    return out


def silent_threshold(norms: Iterable[float], rel: float = SILENT_REL, floor: float = SILENT_FLOOR):
    """``max(floor, rel x median)`` of the heads' output norms."""
    import numpy as np

    values = np.asarray([float(x) for x in norms], dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return floor
    return max(floor, rel * float(np.median(values)))


def silent_heads(
    table, rel: float = SILENT_REL, floor: float = SILENT_FLOOR
) -> list[tuple[int, int]]:
    """Heads of ``table`` (``layer``, ``head``, ``output_norm``) that write nothing: output
    norm below :func:`silent_threshold` of all the table's heads. Sorted by (layer, head)."""
    if COLUMN not in table.columns:
        raise InputError(f"the table has no {COLUMN!r} column (induction.scores.output_norm)")
    thr = silent_threshold(table[COLUMN], rel, floor)
    quiet = table[table[COLUMN] < thr]
    return sorted((int(r.layer), int(r.head)) for r in quiet.itertuples(index=False))


def silent_note(
    heads: Sequence[tuple[int, int]],
    table,
    *,
    what: str | None = None,
    hint: str | None = None,
    rel: float = SILENT_REL,
    floor: float = SILENT_FLOOR,
) -> str | None:
    """One line naming which of ``heads`` (ranked or ablated) are silent in ``table``, or
    None when none is (or the table has no output norms).

    "4 of the top 12 heads write nothing (output norm 0): L5H0, L5H1, L9H0, L9H3 —
    zero-initialised copies (llama-pro?)"; ``what`` replaces "the top 12 heads", ``hint``
    the closing guess.
    """
    if table is None or COLUMN not in getattr(table, "columns", ()):
        return None
    silent = set(silent_heads(table, rel, floor))
    hit = [(int(a), int(b)) for a, b in heads if (int(a), int(b)) in silent]
    if not hit:
        return None
    norm_of = {(int(r.layer), int(r.head)): float(getattr(r, COLUMN)) for r in table.itertuples()}
    largest = max(norm_of[h] for h in hit)
    level = "output norm 0" if largest == 0 else f"output norm <= {largest:.1e}"
    what = what or f"the top {len(heads)} heads"
    names = ", ".join(head_label(a, b) for a, b in hit)
    hint = "zero-initialised copies (llama-pro?)" if hint is None else hint
    return f"{len(hit)} of {what} write nothing ({level}): {names}" + (f" — {hint}" if hint else "")


__all__ = [
    "COLUMN",
    "SILENT_FLOOR",
    "SILENT_REL",
    "add_output_norm",
    "output_norms",
    "silent_heads",
    "silent_note",
    "silent_threshold",
]
