"""Lineage without a log: which layers are copies of which, read off the weights.

A copied layer starts identical to its source and drifts in training, while layers of
independent origin start from independent random draws, so their weights stay nearly
orthogonal. For every pair of layers ``(l, m)`` and every head ``j`` (a copy's head ``j``
inherits head ``j``) this module compares the head's query, key, value and output weights:

    sim(l, m) = mean over heads j and parts P in (Q, K, V, O) of cos(P_l[j], P_m[j])

(KV heads shared under grouped-query attention are compared through every query head that
uses them.) Averaging per-part cosines gives each part equal say whatever its scale.
Layers are then grouped by agglomerative clustering (average linkage by default) while the
similarity between groups stays at or above ``threshold``. The default ``"auto"`` calibrates
it on the model itself: head ``j`` of one layer against head ``g != j`` of another is never a
copy relation, so those cross-head similarities are a null distribution that includes whatever
structure training imposes on unrelated weights; the threshold is its mean plus 6 standard
deviations of a layer-level (head-averaged) similarity, kept within [0.05, 0.3]. An exact copy
is 1, independent random layers are near 0; a number fixes the threshold instead (the
``"layer"`` fallback uses 0.3). Each group is one ancestor of the
initial network; groups are numbered by their first layer, which reproduces the initial layer
indices of depth growth (MIDAS/LIDAS and mergekit stacks keep ancestors in depth order).

Per layer the result gives its family, its most similar other layer (``match``, the most
likely source or sibling), and a confidence: for a layer with siblings
``1 - best_outside / best_inside`` (how far the best alternative falls short of the best match
in its family), for a singleton ``1 - best_outside / threshold``; clipped to [0, 1].
:meth:`InferredLineage.to_log` gives a one-event ``inferred`` duplication log that the
ancestry, summary and graph code take like a real one.

Supported layouts: separate q/k/v/o projections (Llama, Mistral, Qwen, Gemma, OPT, Phi's
``dense``, ...), GPT-2
``c_attn``/``c_proj`` and GPT-NeoX ``query_key_value``/``dense``; other models fall back to
comparing every tensor of the layer (``mode = "layer"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from induction.errors import InputError
from induction.models.layers import LAYER_KEY
from induction.store.io import read_json
from lineage.log import DuplicationLog

DEFAULT_THRESHOLD = 0.3  # fixed threshold of the "layer" fallback and the auto cap
AUTO_FLOOR = 0.05
AUTO_SIGMAS = 6.0
_PARTS = {
    "q": ("q_proj.weight",),
    "k": ("k_proj.weight",),
    "v": ("v_proj.weight",),
    "o": ("o_proj.weight", "out_proj.weight", "self_attn.dense.weight"),  # dense: Phi
}


@dataclass
class InferredLineage:
    similarity: Any  # numpy [L, L]
    head_similarity: Any  # numpy [L, L, H] (mode "heads") or None
    families: list[int]  # family (ancestor) index per layer, numbered by first layer
    matches: list[int]  # most similar other layer per layer (-1 for a 1-layer model)
    confidence: list[float]
    threshold: float
    linkage: str
    mode: str  # "heads" or "layer"
    merges: list[tuple[list[int], list[int], float]] = field(default_factory=list)
    head_cross: Any = field(default=None, repr=False)  # [L, L, H, H]: head j of l vs head g of m

    @property
    def n_layers(self) -> int:
        return len(self.families)

    @property
    def n_families(self) -> int:
        return len(set(self.families))

    def table(self):
        """One row per layer: layer, family, match, similarity (to match), confidence, and
        ``head_match`` (share of heads whose best counterpart in ``match`` has the same index)."""
        import numpy as np
        import pandas as pd

        rows = []
        for i in range(self.n_layers):
            m = self.matches[i]
            row = {
                "layer": i,
                "family": self.families[i],
                "match": m,
                "similarity": float(self.similarity[i, m]) if m >= 0 else float("nan"),
                "confidence": self.confidence[i],
            }
            if self.head_cross is not None and m >= 0:
                cross = self.head_cross[i, m]  # [H, H]
                row["head_match"] = float(
                    np.mean(np.argmax(cross, axis=1) == np.arange(len(cross)))
                )
            rows.append(row)
        return pd.DataFrame(rows)

    def to_log(self) -> DuplicationLog:
        """A duplication log: ``n_families`` initial layers, one ``inferred`` event."""
        log = DuplicationLog(initial_depth=self.n_families)
        conf = min(self.confidence) if self.confidence else 1.0
        log.record_mix(
            0,
            [[(f, 1.0)] for f in self.families],
            operator="inferred",
            note=f"inferred from weights ({self.mode}, {self.linkage} linkage, threshold "
            f"{self.threshold:g}); minimum confidence {conf:.2f}",
        )
        return log


# --------------------------------------------------------------------------- weights


def _normalise(name: str) -> str:
    return name.replace("._original_component", "")


def _state_dict_from(source: Any) -> tuple[dict, dict]:
    """(tensor dict, config dict) from a folder, a model, or a state dict."""
    import torch

    if isinstance(source, str | Path):
        folder = Path(source)
        if not folder.is_dir() or not (folder / "config.json").is_file():
            raise InputError(f"{source} is not a checkpoint folder (config.json, *.safetensors)")
        from safetensors.torch import load_file

        files = sorted(folder.glob("*.safetensors"))
        if not files:
            raise InputError(f"{folder} has no *.safetensors weights")
        sd = {}
        for f in files:
            sd.update(load_file(str(f)))
        config = read_json(folder / "config.json", "config")
        return sd, config
    if isinstance(source, torch.nn.Module):
        config = getattr(source, "config", None)
        config = config.to_dict() if config is not None and hasattr(config, "to_dict") else {}
        sd = {}
        for name, t in source.state_dict().items():
            sd.setdefault(_normalise(name), t)
        return sd, config
    if isinstance(source, dict):
        return {_normalise(k): v for k, v in source.items()}, {}
    hf = getattr(source, "hf_model", None)  # a LoadedModel
    if hf is not None:
        return _state_dict_from(hf)
    raise InputError(f"cannot read weights from a {type(source).__name__}")


def _layers(sd: dict) -> tuple[str, dict[int, dict[str, Any]]]:
    groups: dict[str, dict[int, dict[str, Any]]] = {}
    for name, t in sd.items():
        m = LAYER_KEY.match(name)
        if m:
            groups.setdefault(m["prefix"], {}).setdefault(int(m["i"]), {})[m["rest"]] = t
    if not groups:
        raise InputError("cannot find decoder layers in the weights (<prefix>.layers.<i>.)")
    prefix = max(groups, key=lambda p: len(groups[p]))
    layers = groups[prefix]
    if sorted(layers) != list(range(len(layers))):
        raise InputError(f"layers under {prefix} are not numbered 0..{len(layers) - 1}")
    return prefix, layers


def _find(tensors: dict, suffixes: tuple[str, ...]):
    for rest, t in tensors.items():
        if rest.endswith(suffixes) and "." in rest:
            return t
    return None


def head_parts(tensors: dict, n_heads: int, n_kv: int, d_model: int | None = None):
    """Per-head Q, K, V, O weights of one layer as float tensors ``[n_heads, features]``
    each, or None when the layout is not recognised."""
    import torch

    q, k, v, o = (_find(tensors, _PARTS[p]) for p in "qkvo")
    if q is None or k is None or v is None or o is None:
        c_attn, c_proj = _find(tensors, ("attn.c_attn.weight",)), _find(tensors, ("c_proj.weight",))
        qkv = _find(tensors, ("query_key_value.weight",))
        dense = _find(tensors, ("attention.dense.weight",))
        if c_attn is not None and c_proj is not None and "attn.c_proj.weight" in tensors:
            c_proj = tensors["attn.c_proj.weight"]
            d = c_attn.shape[0]  # Conv1D: [d_in, 3 d]
            q, k, v = (c_attn[:, i * d : (i + 1) * d].T for i in range(3))
            o = c_proj.T  # [d_out, d_in]
            n_kv = n_heads
        elif qkv is not None and dense is not None:
            d = qkv.shape[1]
            per = qkv.view(n_heads, 3, -1, d)
            q, k, v = (per[:, i].reshape(-1, d) for i in range(3))
            o = dense
            n_kv = n_heads
        else:
            return None
    q, k, v, o = (t.detach().float().cpu() for t in (q, k, v, o))
    d_head = q.shape[0] // n_heads
    group = n_heads // n_kv
    qh = q.reshape(n_heads, d_head, -1).flatten(1)
    kh = k.reshape(n_kv, -1, k.shape[-1]).flatten(1).repeat_interleave(group, dim=0)
    vh = v.reshape(n_kv, -1, v.shape[-1]).flatten(1).repeat_interleave(group, dim=0)
    oh = o.reshape(o.shape[0], n_heads, d_head).permute(1, 0, 2).flatten(1)
    return torch.stack([_unit(qh), _unit(kh), _unit(vh), _unit(oh)], dim=1)  # [H, 4, F]


def _unit(x):
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _pad_stack(parts: list) -> Any:
    import torch

    width = max(p.shape[-1] for p in parts)
    return torch.stack([torch.nn.functional.pad(p, (0, width - p.shape[-1])) for p in parts])


# --------------------------------------------------------------------------- inference


def similarity_matrix(source: Any, n_heads: int | None = None, n_kv_heads: int | None = None):
    """(layer similarity [L, L], per-head similarity [L, L, H] or None, head cross-similarity
    [L, L, H, H] or None, mode)."""
    import torch

    sd, config = _state_dict_from(source)
    _, layers = _layers(sd)
    n_heads = n_heads or config.get("num_attention_heads") or config.get("n_head")
    n_kv = n_kv_heads or config.get("num_key_value_heads") or n_heads
    per_layer = None
    if n_heads:
        parts = [
            head_parts(layers[i], int(n_heads), int(n_kv or n_heads)) for i in range(len(layers))
        ]
        if all(p is not None for p in parts):
            per_layer = [p for p in parts if p is not None]
    if per_layer is not None:
        x = torch.stack(per_layer)  # [L, H, 4, F]
        # cos per (l, m, head j, part) then mean over parts: [L, L, H]
        head_sim = torch.einsum("lhpf,mhpf->lmh", x, x) / x.shape[2]
        cross = torch.einsum("lhpf,mgpf->lmhg", x, x) / x.shape[2]
        sim = head_sim.mean(-1)
        return sim.numpy(), head_sim.numpy(), cross.numpy(), "heads"
    # fallback: every tensor of the layer, same-name cosine averaged
    names = sorted(set.intersection(*(set(t) for t in layers.values())))
    names = [n for n in names if layers[0][n].dim() >= 1 and layers[0][n].numel() > 1]
    if not names:
        raise InputError("layers share no tensor names to compare")
    x = torch.stack(
        [
            _pad_stack([_unit(layers[i][n].detach().float().flatten()) for n in names])
            for i in range(len(layers))
        ]
    )  # [L, T, F]
    sim = torch.einsum("ltf,mtf->lm", x, x) / len(names)
    return sim.numpy(), None, None, "layer"


def _cluster(sim, threshold: float, linkage: str):
    import numpy as np

    n = sim.shape[0]
    clusters = [[i] for i in range(n)]
    merges = []

    def link(a, b):
        block = sim[np.ix_(a, b)]
        if linkage == "average":
            return float(block.mean())
        if linkage == "single":
            return float(block.max())
        return float(block.min())  # complete

    while len(clusters) > 1:
        best, pair = -np.inf, None
        for i in range(len(clusters)):
            for j in range(i + 1, len(clusters)):
                s = link(clusters[i], clusters[j])
                if s > best:
                    best, pair = s, (i, j)
        if best < threshold or pair is None:
            break
        i, j = pair
        merges.append((sorted(clusters[i]), sorted(clusters[j]), best))
        clusters[i] = sorted(clusters[i] + clusters[j])
        del clusters[j]
    clusters.sort(key=min)
    families = [0] * n
    for f, members in enumerate(clusters):
        for m in members:
            families[m] = f
    return families, merges


def auto_threshold(cross) -> float:
    """Threshold from the cross-head null (see the module docstring); 0.3 without heads."""
    import numpy as np

    if cross is None or cross.shape[0] < 2 or cross.shape[2] < 2:
        return DEFAULT_THRESHOLD
    n_layers, n_heads = cross.shape[0], cross.shape[2]
    off_layer = ~np.eye(n_layers, dtype=bool)
    off_head = ~np.eye(n_heads, dtype=bool)
    null = cross[off_layer][:, off_head]  # [pairs, off-diagonal head pairs]
    sigma_layer = float(null.std()) / np.sqrt(n_heads)
    value = float(null.mean()) + AUTO_SIGMAS * sigma_layer
    return float(min(max(value, AUTO_FLOOR), DEFAULT_THRESHOLD))


def infer_lineage(
    source: Any,
    *,
    threshold: float | str = "auto",
    linkage: str = "average",
    n_heads: int | None = None,
    n_kv_heads: int | None = None,
) -> InferredLineage:
    """Infer which layers share an ancestor from the weights of ``source`` (a checkpoint folder,
    a transformers model, a LoadedModel or a state dict)."""
    import numpy as np

    if linkage not in ("average", "single", "complete"):
        raise InputError(f"linkage must be average, single or complete, got {linkage!r}")
    if threshold != "auto" and not (isinstance(threshold, float | int) and 0 < threshold < 1):
        raise InputError(f"threshold must be 'auto' or in (0, 1), got {threshold!r}")
    sim, head_sim, cross, mode = similarity_matrix(source, n_heads, n_kv_heads)
    n = sim.shape[0]
    if threshold == "auto":
        threshold = auto_threshold(cross)
    families, merges = _cluster(sim, threshold, linkage)
    off = sim.copy()
    np.fill_diagonal(off, -np.inf)
    matches = [int(np.argmax(off[i])) if n > 1 else -1 for i in range(n)]
    conf = []
    for i in range(n):
        inside = [j for j in range(n) if j != i and families[j] == families[i]]
        outside = [j for j in range(n) if families[j] != families[i]]
        best_out = max((float(sim[i, j]) for j in outside), default=0.0)
        best_out = max(best_out, 0.0)
        if inside:
            best_in = max(float(sim[i, j]) for j in inside)
            c = 1.0 - best_out / best_in if best_in > 0 else 0.0
        else:
            c = 1.0 - best_out / threshold
        conf.append(float(min(max(c, 0.0), 1.0)))
    result = InferredLineage(
        similarity=sim,
        head_similarity=head_sim,
        families=families,
        matches=matches,
        confidence=conf,
        threshold=threshold,
        linkage=linkage,
        mode=mode,
        merges=merges,
        head_cross=cross,
    )
    return result


def compare_with_log(result: InferredLineage, log: DuplicationLog) -> dict:
    """How well an inferred lineage agrees with a real log's initial-network ancestors.

    ``partition_equal``: the same layers are grouped together; ``layer_agreement``: share of
    layers whose family number equals the log's ancestor layer (families are numbered by first
    layer, which matches depth growth); ``pair_agreement``: share of layer pairs on which both
    agree whether they share an ancestor (Rand index).
    """
    log.check_depth(result.n_layers)
    truth = []
    for i in range(result.n_layers):
        anc = log.ancestors(i)
        truth.append(max(anc.items(), key=lambda kv: (kv[1], -kv[0]))[0])
    fam = result.families
    n = len(fam)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    same = sum((fam[i] == fam[j]) == (truth[i] == truth[j]) for i, j in pairs)

    def canon(labels):
        seen: dict[int, int] = {}
        return [seen.setdefault(x, len(seen)) for x in labels]

    return {
        "partition_equal": canon(fam) == canon(truth),
        "layer_agreement": sum(a == b for a, b in zip(fam, truth)) / n,
        "pair_agreement": same / len(pairs) if pairs else 1.0,
        "truth": truth,
        "inferred": list(fam),
    }
