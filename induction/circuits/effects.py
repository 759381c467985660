"""Per-head effects on the in-context loss: true single-head ablation, batched, and
attribution patching (docs/research.md, "Circuits and per-head causality").

The metric is the in-context loss of repeated random tokens: the mean next-token NLL on the
second copy (tokens 2..T of it; :meth:`induction.scores.prompts.PromptLayout.repeat_targets`). A
head's **effect** is the loss with the head ablated minus the clean loss (positive: the head
helps in-context copying), averaged over the prompts.

- **Ablation** (:func:`ablate_each_head`): every head alone, many heads per forward pass
  (:mod:`induction.circuits.patching`: per-row head mask, shared clean prefix, logits on the read
  positions only).
- **Attribution patching** (Nanda 2023, "Attribution patching: activation patching at
  industrial scale"): ``effect ≈ Σ (z' - z) · ∂loss/∂z`` over prompts, positions and
  ``d_head``, for every head from one forward and one backward pass. Its first-order
  estimate misjudges heads whose attention saturates or whose removal is far from linear
  (Kramár et al. 2024, "AtP*: an efficient and scalable method for localizing LLM behaviour
  to components", fix part of that with QK-fix and GradDrop; not done here), so the result
  reports its Pearson and Spearman correlation with true ablation before any ranking is
  trusted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ablation.config import AblationMode
    from induction.models.model_types import ModelInfo
    from induction.models.specs import ModelLike

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from induction.circuits.config import DEFAULT_MAX_ROWS, EffectsConfig, PatchMode, Reference
from induction.circuits.patching import (
    Clean,
    Head,
    Replacement,
    View,
    chunks_by_layer,
    clean_pass,
    make_replacement,
    mask_hook,
    nll_at,
    run_rows,
    shortcut_exact,
    unembed,
    view,
    z_hook,
)
from induction.errors import InputError
from induction.jobs import job_config
from induction.models.model_types import LoadedModel
from induction.models.specs import inputs_of
from induction.store.io import guards_inputs


@dataclass
class Setup:
    """Model, prompts and the positions the loss reads."""

    v: View
    info: ModelInfo
    name: str
    tokens: torch.Tensor  # [B, pos] on the model's device
    logits_at: torch.Tensor  # positions whose next token is scored
    targets: torch.Tensor  # [B, P]
    prompts: Any
    loaded: LoadedModel


def setup(
    model: ModelLike,
    *,
    seq_len: int | None = None,
    batch: int = 8,
    seeds: int | Sequence[int] = 1,
    loaded: LoadedModel | None = None,
) -> Setup:
    """Load (if a spec) and build the scan's repeated-token prompts (all seeds stacked)."""
    from induction.scores.prompts import make_prompts

    if loaded is None:
        if isinstance(model, str | Path):
            from induction.models.loading import load_model

            loaded = load_model(str(model))
        elif isinstance(model, LoadedModel):
            loaded = model
        else:
            raise InputError("circuits needs a LoadedModel (induction.load_model) or a model spec")
    info = loaded.info
    v = view(loaded)
    tok = getattr(v.bridge, "tokenizer", None)
    prompts = make_prompts(
        info,
        seq_len=seq_len,
        batch=batch,
        seeds=seeds,
        eos_token_id=getattr(tok, "eos_token_id", None),
    )
    tokens = prompts.tokens.to(v.device)
    _, rep = prompts.layout.repeat_targets()
    rep = rep.to(v.device)
    targets = tokens.index_select(1, rep + 1)
    return Setup(v, info, info.name, tokens, rep, targets, prompts, loaded)


def _no_advance() -> None:
    pass


@torch.no_grad()
def ablate_each_head(
    s: Setup,
    heads: Sequence[Head],
    repl: Replacement,
    clean: Clean,
    max_rows: int = DEFAULT_MAX_ROWS,
    advance: Callable[[], None] = _no_advance,
    null: torch.Tensor | None = None,
) -> torch.Tensor:
    """Loss of every prompt with each head ablated alone: ``[len(heads), B]`` (input order);
    ``advance()`` after each forward pass (``len(chunks_by_layer(heads, max_rows // B))``).

    ``null`` (``[len(heads), B]``), when given, is filled with the null baseline: the loss of
    one more block of rows in each pass in which nothing is ablated (the head's own pass, so
    the same start layer and hook); it equals the clean loss within float tolerance."""
    v = s.v
    B = s.tokens.shape[0]
    extra = int(null is not None)
    per_chunk = max(1, max_rows // B - extra)
    index = {h: i for i, h in enumerate(heads)}
    out = torch.empty(len(heads), B)
    for layer, hs in chunks_by_layer(heads, per_chunk):
        c = len(hs) + extra
        keep = torch.ones(c, v.n_heads, device=v.device)
        for i, (_, h) in enumerate(hs):
            keep[i, h] = 0
        keep = keep.repeat_interleave(B, dim=0)  # row block i = head hs[i]
        tokens = s.tokens.repeat(c, 1)
        resid = clean.resid[layer].repeat(c, 1, 1) if layer in clean.resid else None
        hook = mask_hook(keep, repl.for_rows(layer, c, clean.z[layer]))
        logits = run_rows(
            v,
            tokens,
            start=layer if resid is not None else 0,
            resid=resid,
            logits_at=s.logits_at,
            hooks=[(z_hook(layer), hook)],
        )
        loss = nll_at(logits, s.targets.repeat(c, 1)).view(c, B).cpu()
        for i, h in enumerate(hs):
            out[index[h]] = loss[i]
            if null is not None:
                null[index[h]] = loss[-1]
        advance()
    return out


def ablate_loop(
    s: Setup, heads: Sequence[Head], mode: AblationMode = "zero", means=None
) -> torch.Tensor:
    """The reference: one ablated forward per head (``ablation.hooks.ablate_heads``), full
    logits. ``[len(heads), B]``. Used by the tests and the benchmark's baseline."""
    from ablation.hooks import HeadMeans, ablate_heads

    out = torch.empty(len(heads), s.tokens.shape[0])
    hm = HeadMeans(overall=means) if means is not None else None
    with torch.no_grad():
        for i, head in enumerate(heads):
            with ablate_heads(s.v.bridge, [head], mode=mode, means=hm):
                logits = s.v.bridge(s.tokens, return_type="logits")
            out[i] = nll_at(logits.index_select(1, s.logits_at), s.targets).cpu()
    return out


def attribution(s: Setup, repl: Replacement, clean: Clean) -> torch.Tensor:
    """Attribution-patching estimate of every head's effect: ``[L, H]`` (Nanda 2023).

    One forward with a zero "delta" leaf added to every ``hook_z`` (so gradients reach every
    layer through the whole graph) and one backward of the mean second-copy loss; weights
    get no gradient. Estimate for head h: ``Σ_{prompt,pos,d} (z'_h - z_h) ∂loss/∂z_h``.
    """
    v = s.v
    deltas: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def leaf(z, hook):
        d = torch.zeros_like(z, requires_grad=True)
        deltas[int(hook.name.split(".")[1])] = (z.detach(), d)
        return z + d

    short = v.can_skip and shortcut_exact(v, s.tokens, 0)  # checked before any hook is on
    params = [p for p in v.bridge.parameters() if p.requires_grad]
    for p in params:
        p.requires_grad_(False)
    try:
        with (
            torch.enable_grad(),
            v.bridge.hooks(fwd_hooks=[(z_hook(i), leaf) for i in range(v.n_layers)]),
        ):
            if short:  # unembed the scored positions only (forward and backward)
                hidden = v.base(input_ids=s.tokens, use_cache=False).last_hidden_state
                logits = unembed(v, hidden.index_select(1, s.logits_at))
            else:
                logits = v.bridge(s.tokens, return_type="logits").index_select(1, s.logits_at)
            loss = nll_at(logits, s.targets).mean()
            grads = torch.autograd.grad(loss, [deltas[i][1] for i in range(v.n_layers)])
    finally:
        for p in params:
            p.requires_grad_(True)
    est = torch.zeros(v.n_layers, v.n_heads)
    for layer, g in enumerate(grads):
        z = deltas[layer][0]
        r = repl.for_rows(layer, 1, z)
        target = torch.zeros_like(z) if r is None else r.expand_as(z)
        # loss is a mean over prompts: the sum over prompts of (z'-z).grad estimates the change
        # of that mean; per head, sum over prompts, positions and d_head
        est[layer] = ((target - z) * g).sum(dim=(0, 1, 3)).float().cpu()
    return est


def correlations(x: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
    """Pearson and Spearman correlation of two flat tensors (average ranks for ties)."""
    x, y = x.double().flatten(), y.double().flatten()

    def pearson(a, b):
        a, b = a - a.mean(), b - b.mean()
        den = (a.norm() * b.norm()).item()
        return float((a @ b).item() / den) if den > 0 else float("nan")

    def ranks(a):
        import pandas as pd

        return torch.tensor(pd.Series(a.numpy()).rank().to_numpy())

    return {"pearson": pearson(x, y), "spearman": pearson(ranks(x), ranks(y))}


@dataclass
class EffectsResult:
    """Per-head effect of ablating each head alone on the in-context loss, and AtP."""

    model: str
    mode: PatchMode
    reference: Reference
    clean_loss: float
    effect: torch.Tensor  # [L, H]: mean ablated loss - clean loss
    effect_se: torch.Tensor  # [L, H]: standard error over prompts
    atp: torch.Tensor | None  # [L, H]
    corr: dict[str, float] | None
    timing: dict[str, float] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    scores: Any = None  # optional scan table (induction, previous_token) for the report
    effect_null: torch.Tensor | None = None  # [L, H]: same passes, nothing ablated (about 0)
    #: what the run read (the model's folder): :meth:`save`/:meth:`plot` never write there
    inputs: tuple[Path, ...] = field(default=(), repr=False)

    def to_frame(self):
        import pandas as pd

        L, H = self.effect.shape
        rows = []
        for layer in range(L):
            for head in range(H):
                row = {
                    "layer": layer,
                    "head": head,
                    "effect": float(self.effect[layer, head]),
                    "effect_se": float(self.effect_se[layer, head]),
                }
                if self.effect_null is not None:
                    row["effect_null"] = float(self.effect_null[layer, head])
                if self.atp is not None:
                    row["atp"] = float(self.atp[layer, head])
                rows.append(row)
        df = pd.DataFrame(rows)
        if self.scores is not None:
            cols = [c for c in ("induction", "previous_token") if c in self.scores.columns]
            df = df.merge(self.scores[["layer", "head", *cols]], on=["layer", "head"], how="left")
        df["rank"] = df["effect"].rank(ascending=False, method="first").astype(int)
        df.attrs.update(self.summary())
        return df

    def summary(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "mode": self.mode,
            "reference": self.reference,
            "clean_loss": self.clean_loss,
            "correlation": self.corr,
            "timing": self.timing,
            **self.settings,
        }

    @guards_inputs
    def save(self, path: str | Path) -> Path:
        from induction.store.io import write_table

        path = Path(path)
        write_table(self.to_frame(), path)
        return path

    @guards_inputs
    def plot(self, path: str | Path | None = None):
        """Layer x head heatmap of the ablation effect (and AtP beside it), layer 0 at the top
        as in the scan heatmap (:func:`induction.figures.plots.heatmap`); each panel has its own
        colour bar, beside it, titled with its unit. Saved if a path (.html, or .png:
        :func:`induction.figures.plots.save_figure`; InputError when no PNG can be made)."""
        import plotly.graph_objects as go
        from plotly.subplots import SubplotXY, make_subplots

        panels = [("ablation effect", self.effect, "Δ loss (nats)")]
        if self.atp is not None:
            panels.append(("attribution patching", self.atp, "AtP estimate of Δ loss (nats)"))
        fig = make_subplots(
            rows=1,
            cols=len(panels),
            subplot_titles=[p[0] for p in panels],
            horizontal_spacing=0.2,  # room for the left panel's colour bar, ticks and title
        )
        n_layers, n_heads = self.effect.shape
        layers = [str(i) for i in range(n_layers)]
        heads = [str(h) for h in range(n_heads)]
        for i, (name, m, unit) in enumerate(panels, start=1):
            axes = fig.get_subplot(1, i)
            assert isinstance(axes, SubplotXY)  # make_subplots' cells default to x-y axes
            right = axes.xaxis.domain[1]
            fig.add_trace(
                go.Heatmap(
                    z=m.numpy(),
                    x=heads,
                    y=layers,
                    colorscale="RdBu_r",
                    zmid=0,
                    colorbar={
                        "title": {"text": unit, "side": "right"},
                        "x": right + 0.01,
                        "xanchor": "left",
                        "thickness": 14,
                    },
                    hovertemplate=f"layer %{{y}}, head %{{x}}<br>{name} %{{z:.3f}} nats"
                    + "<extra></extra>",
                ),
                row=1,
                col=i,
            )
            fig.update_xaxes(title_text="head", type="category", row=1, col=i)
            fig.update_yaxes(
                title_text="layer", type="category", autorange="reversed", row=1, col=i
            )
        fig.update_layout(
            title=f"{self.model}: per-head effect on the in-context loss ({self.mode})",
            template="plotly_white",
            width=520 * len(panels) + 120,
            height=max(420, 26 * n_layers + 200),
        )
        if path is not None:
            from induction.figures.plots import save_figure

            note = save_figure(fig, Path(path))
            if note:  # nothing written: say so, never a silent skip (CLI: exit 2)
                raise InputError(note)
        return fig


def run(
    model: ModelLike, config: EffectsConfig | Mapping[str, Any] | None = None, /, **overrides
) -> EffectsResult:
    """Ablate every head alone and estimate every head by attribution patching.

    ``model``: any spec or a LoadedModel; ``config``/``overrides``: :class:`EffectsConfig`
    fields. ``head_effects`` is the job's established name.
    """
    from induction.progress import progress as progress_reporter

    cfg = job_config(EffectsConfig, config, overrides, "effects")
    s = setup(model, seq_len=cfg.seq_len, batch=cfg.batch, seeds=cfg.seeds)
    v = s.v
    timing: dict[str, float] = {}
    heads = [Head(layer, h) for layer in range(v.n_layers) for h in range(v.n_heads)]
    passes = len(chunks_by_layer(heads, max(1, cfg.max_rows // s.tokens.shape[0] - 1)))
    with progress_reporter(cfg.progress) as bar:
        advance = bar.task(1 + passes + int(cfg.atp), f"effects of {s.name}: ablating each head")
        t0 = time.perf_counter()
        clean = clean_pass(v, s.tokens, s.logits_at, s.targets)
        clean_loss = clean.loss  # [B]
        assert clean_loss is not None  # clean_pass with logits_at and targets measures it
        timing["clean_s"] = time.perf_counter() - t0
        repl = make_replacement(v, cfg.mode, cfg.reference, s.tokens, clean, s.info)
        advance()
        t0 = time.perf_counter()
        null = torch.empty(len(heads), s.tokens.shape[0])
        losses = ablate_each_head(s, heads, repl, clean, cfg.max_rows, advance, null=null)
        timing["ablation_s"] = time.perf_counter() - t0
        diff = losses - clean_loss.cpu()[None]
        effect_null = (null - clean_loss.cpu()[None]).mean(1).view(v.n_layers, v.n_heads)
        n = diff.shape[1]
        effect = diff.mean(1).view(v.n_layers, v.n_heads)
        se = diff.std(1) / n**0.5 if n > 1 else torch.full((len(heads),), float("nan"))
        se = se.view(v.n_layers, v.n_heads)
        est = corr = None
        if cfg.atp:
            t0 = time.perf_counter()
            est = attribution(s, repl, clean)
            timing["atp_s"] = time.perf_counter() - t0
            corr = correlations(est, effect)
            advance()
    table = None
    if cfg.scores:
        from induction.scores.scan import induction_scores

        table = induction_scores(
            s.loaded,
            seq_len=s.prompts.seq_len,
            batch=cfg.batch,
            seeds=cfg.seeds,
            scores=("induction", "previous_token"),
            progress=cfg.progress,
        )
    return EffectsResult(
        model=s.name,
        mode=cfg.mode,
        reference=cfg.reference,
        clean_loss=float(clean_loss.mean()),
        effect=effect,
        effect_se=se,
        effect_null=effect_null,
        atp=est,
        corr=corr,
        timing=timing,
        settings={"seq_len": s.prompts.seq_len, "batch": cfg.batch, "seeds": list(s.prompts.seeds)},
        scores=table,
        inputs=inputs_of(model, s),
    )


head_effects = run
