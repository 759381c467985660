"""Induction circuits: each induction head's partners among earlier heads, found two ways
(Elhage et al. 2021; Olsson et al. 2022; docs/research.md, "Circuits and per-head causality").

For every induction head B (stripe score >= ``threshold``, or the ``top`` n) and every head A
in an earlier layer:

- **weights**: K-composition of A into B (:mod:`induction.scores.composition`: RoPE ignored, GQA
  query heads use their group's ``W_K`` / ``W_V``, input-norm gains folded), with the mean
  score of random matrices of the same shapes as the baseline;
- **activations, total**: the drop of B's induction score when A's ``hook_z`` is ablated
  (zero, mean or resample: :mod:`induction.circuits.patching`), many candidates per forward pass;
- **activations, key path**: the drop when A's output is removed only from the residual
  stream entering B's keys. The pass starts at B's layer from the clean residual ``r``; a hook
  on the key projection's input (``blocks.{l}.attn.k.hook_in``, ``[batch, pos, d_model]``)
  replaces it with ``ln1(r - (z_A - z'_A) W_O^A)`` (the direct path A -> B.keys), while the
  queries, values and residual keep ``r``. The key projection serves every key/value group,
  so on a grouped-query model the patch reaches the keys of every query head of the layer;
  only B's pattern is read. (TransformerLens's per-head ``hook_k_input`` would do the same
  through a copy of the residual per query and key/value head, which was most of the job's
  peak memory.) Where the bridge has no such hook the column is NaN and the result says so.

A head's **partners** are the candidates with the largest key-path drop (the total drop when
the key path is unavailable).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from induction.models.specs import ModelLike

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from induction.circuits.config import CircuitsConfig
from induction.circuits.effects import Setup, setup
from induction.circuits.patching import (
    Clean,
    Replacement,
    chunks_by_layer,
    clean_pass,
    make_replacement,
    mask_hook,
    run_rows,
    z_hook,
)
from induction.errors import InputError
from induction.heads import Head, head_label
from induction.jobs import job_config
from induction.models.specs import inputs_of
from induction.store.io import guards_inputs

DEFAULT_PARTNERS = 3


def label(head: Head) -> str:
    return head_label(*head)


class _Reader:
    """Hooks on ``hook_pattern`` that store the stripe induction score of chosen heads."""

    def __init__(self, s: Setup, heads: Sequence[Head]):
        layout = s.prompts.layout
        q, k, _ = layout.pairs("induction")
        self.flat = (q * layout.length + k).to(s.v.device)
        self.heads = list(heads)
        self.by_layer: dict[int, list[int]] = {}
        for j, (layer, h) in enumerate(self.heads):
            self.by_layer.setdefault(layer, []).append(j)
        self.out = torch.empty(0, len(self.heads))  # [rows, heads]: filled by hooks()' passes

    def hooks(self, n_rows: int, layers: Sequence[int] | None = None):
        self.out = torch.full((n_rows, len(self.heads)), float("nan"))
        wanted = self.by_layer if layers is None else {x: self.by_layer[x] for x in layers}

        def make(layer: int):
            cols = wanted[layer]
            idx = torch.tensor([self.heads[j][1] for j in cols])

            def fn(pattern, hook):
                p = pattern[:, idx.to(pattern.device)]  # [rows, n, q, k]
                vals = p.flatten(2).index_select(2, self.flat).float().mean(-1)
                self.out[:, cols] = vals.cpu()
                return None

            return fn

        return [(f"blocks.{layer}.attn.hook_pattern", make(layer)) for layer in wanted]


@dataclass
class CircuitResult:
    """Induction heads, their candidate partners and both kinds of evidence."""

    model: str
    table: Any  # DataFrame, one row per (induction head, earlier head)
    heads: list[Head]
    threshold: float
    top: int | None
    baseline: tuple[float, float]  # K-composition of random matrices: mean, std
    key_path: bool  # whether the key-path column was measured
    key_path_note: str
    settings: dict[str, Any] = field(default_factory=dict)
    lineage: Any = None  # induction.circuits.history.CircuitLineage, when the model was grown
    #: what the run read (the model's folder): :meth:`save`/:meth:`plot` never write there
    inputs: tuple[Path, ...] = field(default=(), repr=False)

    def to_frame(self):
        df = self.table.copy()
        df.attrs.update(self.summary())
        return df

    def partners(self, n: int = DEFAULT_PARTNERS):
        """The ``n`` strongest partners of each induction head."""
        df = self.table
        if df.empty:
            return df
        return df[df["partner_rank"] <= n].sort_values(["induction_head_score", "partner_rank"],
                                                        ascending=[False, True])  # fmt: skip

    def circuits(self) -> list[tuple[Head, Head]]:
        """(partner, induction head) pairs: each induction head with its strongest partner."""
        df = self.table
        if df.empty:
            return []
        best = df[df["partner_rank"] == 1]
        return [
            (Head(int(r.partner_layer), int(r.partner_head)), Head(int(r.layer), int(r.head)))
            for r in best.itertuples(index=False)
        ]

    def summary(self) -> dict[str, Any]:
        out = {
            "model": self.model,
            "induction_heads": [label(h) for h in self.heads],
            "threshold": self.threshold,
            "top": self.top,
            "k_comp_baseline": self.baseline[0],
            "k_comp_baseline_std": self.baseline[1],
            "key_path": self.key_path,
            "key_path_note": self.key_path_note,
            **self.settings,
        }
        if self.lineage is not None:
            out["lineage"] = self.lineage.summary()
        return out

    @guards_inputs
    def save(self, path: str | Path) -> Path:
        """The table (.csv/.parquet/.jsonl/.json, as ``induction scan --out``)."""
        from induction.store.io import write_table

        path = Path(path)
        write_table(self.to_frame(), path)
        return path

    @guards_inputs
    def plot(self, path: str | Path | None = None):
        """K-composition above baseline against the causal drop, one point per pair; saved if
        a path (.html or .png, as :meth:`induction.circuits.effects.EffectsResult.plot`)."""
        import plotly.express as px

        df = self.table
        ycol = "drop_key" if self.key_path else "drop"
        fig = px.scatter(
            df,
            x="k_comp_excess",
            y=ycol,
            color="partner_prev_token",
            color_continuous_scale="Viridis",
            facet_col="induction_head" if 0 < len(self.heads) <= 6 else None,
            hover_data=["induction_head", "partner", "k_comp", "drop"],
            title=f"{self.model}: induction heads and their earlier partners",
            labels={
                "k_comp_excess": "K-composition above baseline",
                "drop_key": "drop of the induction score, key path",
                "drop": "drop of the induction score",
                "partner_prev_token": "partner's previous-token score",
                "induction_head": "induction head",
            },
            template="plotly_white",
        )
        # facet titles read "L5H1", not "induction head=L5H1"
        fig.for_each_annotation(lambda a: a.update(text=a.text.rsplit("=", 1)[-1]))
        if path is not None:
            from induction.figures.plots import save_figure

            note = save_figure(fig, Path(path))
            if note:  # nothing written: say so, never a silent skip (CLI: exit 2)
                raise InputError(note)
        return fig


def _pick_heads(df, threshold: float, top: int | None) -> list[Head]:
    ranked = df.sort_values("induction", ascending=False)
    if top is not None:
        ranked = ranked.head(top)
    else:
        ranked = ranked[ranked["induction"] >= threshold]
    return [Head(int(r.layer), int(r.head)) for r in ranked.itertuples(index=False)]


def _no_advance() -> None:
    pass


def _passes(heads: Sequence[Head], candidates: Sequence[Head], per: int, key_path: bool) -> int:
    """Forward passes of :func:`_total_drops` (and :func:`_key_path_drops`): the progress
    total."""
    n = len(chunks_by_layer(candidates, per))
    if key_path:
        for lb in {h[0] for h in heads}:
            n += -(-sum(c[0] < lb for c in candidates) // per)
    return n


@torch.no_grad()
def _total_drops(
    s: Setup,
    heads: list[Head],
    candidates: list[Head],
    repl: Replacement,
    clean: Clean,
    max_rows: int,
    advance: Callable[[], None] = _no_advance,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Induction score of each head with each candidate ablated, ``[cands, heads, B]``, and
    the null baseline of the same passes, ``[cands, heads, B]``: each pass carries one more
    block of rows in which nothing is patched (the candidate's own pass, so the null shares
    its start layer and replacement hook); ``advance()`` after each forward pass."""
    v, B = s.v, s.tokens.shape[0]
    reader = _Reader(s, heads)
    stop = max(h[0] for h in heads) + 1
    index = {c: i for i, c in enumerate(candidates)}
    out = torch.full((len(candidates), len(heads), B), float("nan"))
    null = torch.full_like(out, float("nan"))
    for layer, cs in chunks_by_layer(candidates, max(1, max_rows // B - 1)):
        c = len(cs) + 1  # the last block patches nothing
        keep = torch.ones(c, v.n_heads, device=v.device)
        for i, (_, h) in enumerate(cs):
            keep[i, h] = 0
        keep = keep.repeat_interleave(B, dim=0)
        later = [x for x in reader.by_layer if x > layer]
        hooks = [(z_hook(layer), mask_hook(keep, repl.for_rows(layer, c, clean.z[layer])))]
        hooks += reader.hooks(c * B, later)
        run_rows(
            v,
            s.tokens.repeat(c, 1),
            start=layer,
            resid=clean.resid[layer].repeat(c, 1, 1),
            stop=stop,
            hooks=hooks,
        )
        vals = reader.out.view(c, B, len(heads)).permute(0, 2, 1)
        for i, cand in enumerate(cs):
            out[index[cand]] = vals[i]
            null[index[cand]] = vals[-1]
        advance()
    return out, null


@torch.no_grad()
def _key_path_drops(
    s: Setup,
    heads: list[Head],
    candidates: list[Head],
    repl: Replacement,
    clean: Clean,
    max_rows: int,
    advance: Callable[[], None] = _no_advance,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Induction score of each head with each candidate removed from its key input only, and
    the null baseline of the same passes (one more block of rows whose key input gets a zero
    difference through the same hook), both ``[cands, heads, B]``; ``advance()`` after each
    forward pass."""
    v, B = s.v, s.tokens.shape[0]
    bridge = v.bridge
    out = torch.full((len(candidates), len(heads), B), float("nan"))
    null = torch.full_like(out, float("nan"))
    index = {c: i for i, c in enumerate(candidates)}
    reader = _Reader(s, heads)
    W_O = {}
    for lb, cols in sorted(reader.by_layer.items()):
        earlier = [c for c in candidates if c[0] < lb]
        per = max(1, max_rows // B - 1)
        norm = bridge.blocks[lb].ln1
        for start in range(0, len(earlier), per):
            cs = earlier[start : start + per]
            c = len(cs) + 1  # the last block patches nothing
            resid = clean.resid[lb]
            keys_in = []
            for la, ha in cs:
                if la not in W_O:
                    W_O[la] = bridge.blocks[la].attn.W_O.detach()
                z = clean.z[la][:, :, ha]  # [B, pos, dh]
                r = repl.for_rows(la, 1, clean.z[la])
                zr = torch.zeros_like(z) if r is None else r.expand_as(clean.z[la])[:, :, ha]
                keys_in.append(norm(resid - (z - zr) @ W_O[la][ha].to(z.dtype)))
            keys_in.append(norm(resid))  # the null block: the same hook, nothing removed
            k_in = torch.cat(keys_in)  # [c*B, pos, d_model]

            def patch(x, hook, k_in=k_in):
                return k_in.to(x.dtype)

            hooks = [(f"blocks.{lb}.attn.k.hook_in", patch)] + reader.hooks(c * B, [lb])
            run_rows(
                v,
                s.tokens.repeat(c, 1),
                start=lb,
                resid=resid.repeat(c, 1, 1),
                stop=lb + 1,
                hooks=hooks,
            )
            vals = reader.out.view(c, B, len(heads)).permute(0, 2, 1)
            for i, cand in enumerate(cs):
                out[index[cand], cols] = vals[i, cols]
                null[index[cand], cols] = vals[-1, cols]
            advance()
    return out, null


def find_circuits(
    model: ModelLike, config: CircuitsConfig | Mapping[str, Any] | None = None, /, **overrides
) -> CircuitResult:
    """Find each induction head's partners among earlier heads, by weights and activations
    (:func:`induction.circuits.job.run` adds the circuits' lineage; ``config.lineage`` is
    not read here).

    Returns a :class:`CircuitResult`; its table has one row per (induction head, earlier
    head): ``induction_head``, ``layer``, ``head``, ``induction_head_score``, ``partner``,
    ``partner_layer``, ``partner_head``, ``partner_prev_token``, ``k_comp``,
    ``k_comp_baseline``, ``k_comp_excess``, ``clean_score``, ``drop``, ``drop_se``,
    ``drop_key``, ``drop_key_se``, ``partner_rank`` (1 = largest key-path drop), and the null
    baselines ``drop_null`` / ``drop_key_null``: the drop measured in the same forward pass on
    rows where nothing is patched (0 within float tolerance when the path is exact).
    """
    import pandas as pd

    from induction.progress import progress as progress_reporter
    from induction.scores.composition import composition_scores, head_weights, random_baseline
    from induction.scores.scan import induction_scores

    cfg = job_config(CircuitsConfig, config, overrides, "circuits")
    s = setup(model, seq_len=cfg.seq_len, batch=cfg.batch, seeds=cfg.seeds)
    v = s.v
    inputs = inputs_of(model, s)
    scores = induction_scores(
        s.loaded,
        seq_len=s.prompts.seq_len,
        batch=cfg.batch,
        seeds=cfg.seeds,
        scores=("induction", "previous_token"),
        progress=cfg.progress,
    )
    heads = [h for h in _pick_heads(scores, cfg.threshold, cfg.top) if h[0] > 0]
    weights = head_weights(s.loaded)
    d_model, d_head = weights.W_Q.shape[2], weights.W_Q.shape[3]
    baseline = random_baseline(int(d_model), int(d_head), "k")
    settings = {
        "seq_len": s.prompts.seq_len,
        "batch": cfg.batch,
        "seeds": list(s.prompts.seeds),
        "mode": cfg.mode,
        "reference": cfg.reference,
    }
    note = "measured on the key projection's input (direct path into the keys)"
    if weights.n_kv_heads != v.n_heads:
        note += "; grouped-query model: the patch reaches every key/value group of the layer"
    if not heads:
        empty = pd.DataFrame(columns=["induction_head", "partner", "partner_rank"])
        result = CircuitResult(
            s.name, empty, [], cfg.threshold, cfg.top, baseline, False, note, settings
        )
        result.inputs = inputs
        return result
    kcomp = composition_scores(weights, "k", readers=heads)
    candidates = [Head(la, ha) for la in range(max(h[0] for h in heads)) for ha in range(v.n_heads)]
    has_key = cfg.key_path and all(
        f"blocks.{lb}.{name}" in v.bridge.hook_dict
        for lb in {h[0] for h in heads}
        for name in ("attn.k.hook_in", "ln1.hook_in")
    )
    if cfg.key_path and not has_key:
        note = "the bridge exposes no key-projection input hook: key-path drop not measured"
    per = max(1, cfg.max_rows // s.tokens.shape[0] - 1)  # each pass adds a null block
    with progress_reporter(cfg.progress) as bar:
        task = f"circuits of {s.name}: ablating partners"
        advance = bar.task(2 + _passes(heads, candidates, per, has_key), task)
        stop = max(h[0] for h in heads) + 1  # nothing at or after it is read
        clean = clean_pass(v, s.tokens, stop=stop)
        repl = make_replacement(v, cfg.mode, cfg.reference, s.tokens, clean, s.info)
        advance()
        reader = _Reader(s, heads)
        with torch.no_grad():
            run_rows(v, s.tokens, stop=stop, hooks=reader.hooks(len(s.tokens)))
        clean_scores = reader.out.T.clone()  # [heads, B]
        advance()
        total, total_null = _total_drops(s, heads, candidates, repl, clean, cfg.max_rows, advance)
        key = None  # key-path drops and their null baseline
        if has_key:
            key = _key_path_drops(s, heads, candidates, repl, clean, cfg.max_rows, advance)
    at = list(zip(scores["layer"].astype(int), scores["head"].astype(int), strict=True))
    prev = dict(zip(at, scores["previous_token"].astype(float), strict=True))
    ind = dict(zip(at, scores["induction"].astype(float), strict=True))
    rows = []
    n = s.tokens.shape[0]
    for j, b in enumerate(heads):
        for i, a in enumerate(candidates):
            if a[0] >= b[0]:
                continue
            drop = clean_scores[j] - total[i, j]
            row = {
                "induction_head": label(b),
                "layer": b[0],
                "head": b[1],
                "induction_head_score": ind[b],
                "partner": label(a),
                "partner_layer": a[0],
                "partner_head": a[1],
                "partner_prev_token": prev[a],
                "k_comp": float(kcomp[a[0], a[1], b[0], b[1]]),
                "k_comp_baseline": baseline[0],
                "k_comp_excess": float(kcomp[a[0], a[1], b[0], b[1]]) - baseline[0],
                "clean_score": float(clean_scores[j].mean()),
                "drop": float(drop.mean()),
                "drop_se": float(drop.std() / n**0.5) if n > 1 else float("nan"),
                "drop_null": float((clean_scores[j] - total_null[i, j]).mean()),
            }
            if key is not None:
                dk = clean_scores[j] - key[0][i, j]
                row["drop_key"] = float(dk.mean())
                row["drop_key_se"] = float(dk.std() / n**0.5) if n > 1 else float("nan")
                row["drop_key_null"] = float((clean_scores[j] - key[1][i, j]).mean())
            else:
                row["drop_key"] = row["drop_key_se"] = row["drop_key_null"] = float("nan")
            rows.append(row)
    df = pd.DataFrame(rows)
    by = "drop_key" if key is not None else "drop"
    df["partner_rank"] = df.groupby("induction_head")[by].rank(ascending=False, method="first")
    df["partner_rank"] = df["partner_rank"].astype(int)
    df["k_comp_rank"] = df.groupby("induction_head")["k_comp"].rank(ascending=False, method="first")
    df["k_comp_rank"] = df["k_comp_rank"].astype(int)
    df = df.sort_values(["induction_head_score", "induction_head", "partner_rank"],
                        ascending=[False, True, True]).reset_index(drop=True)  # fmt: skip
    result = CircuitResult(
        s.name, df, heads, cfg.threshold, cfg.top, baseline, key is not None, note, settings
    )
    result.inputs = inputs
    return result
