"""Depth diagnostics: how much each layer turns the residual stream, and its update.

Liu et al. 2026 ("Inverse depth scaling from most layers being similar", arXiv 2602.05970)
read the similarity of consecutive layers off two angles, measured per token:

- ``state``: ``theta(h_l, h_{l+1})``, the angle between the residual stream before and after
  layer ``l`` (``h_l`` is ``blocks.l.hook_resid_pre``; ``h_L`` the last block's
  ``hook_resid_post``). Small angles: the layer barely changes the stream.
- ``update``: ``theta(dh_l, dh_{l+1})`` with ``dh_l = h_{l+1} - h_l``, the angle between the
  updates of consecutive layers. Small angles: consecutive layers push the same direction.

Angles are in degrees, computed per (prompt, position) and summarised per layer by their mean
and standard deviation over tokens. The first position (the BOS or prefix token, whose
residual norm is an outlier in most models) is left out. The residual states are read with
the TransformerLens bridge's hooks through a ``names_filter``, so nothing else is cached.
Methods and caveats: docs/dynamics.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from induction.errors import InputError
from induction.models.specs import inputs_of
from induction.models.target import model_device, resolve_target
from induction.store.io import guards_inputs

if TYPE_CHECKING:
    import pandas as pd

#: Tokens per forward pass when the prompts are text windows.
TEXT_WINDOW = 256
ANGLES = ("state", "update")


@dataclass(frozen=True)
class DepthAngles:
    """Per-layer angle statistics of one model (degrees).

    ``state_mean[l]`` / ``state_std[l]``: ``theta(h_l, h_{l+1})`` for ``l = 0..L-1``;
    ``update_mean[l]`` / ``update_std[l]``: ``theta(dh_l, dh_{l+1})`` for ``l = 0..L-2``.
    ``n_tokens``: tokens averaged over.
    """

    model: str
    state_mean: list[float]
    state_std: list[float]
    update_mean: list[float]
    update_std: list[float]
    n_tokens: int
    #: what the angles were measured from (the model's folder, a ``--text`` file):
    #: :meth:`save`/:meth:`plot` never write there
    inputs: tuple[Path, ...] = field(default=(), repr=False, compare=False)

    def to_frame(self) -> pd.DataFrame:
        """One row per (layer, angle): ``model``, ``layer``, ``angle`` (``state`` or
        ``update``), ``mean``, ``std``, ``n_tokens``."""
        import pandas as pd

        rows = []
        for angle in ANGLES:
            means, stds = getattr(self, f"{angle}_mean"), getattr(self, f"{angle}_std")
            for layer, (m, s) in enumerate(zip(means, stds, strict=True)):
                rows.append(
                    {
                        "model": self.model,
                        "layer": layer,
                        "angle": angle,
                        "mean": m,
                        "std": s,
                        "n_tokens": self.n_tokens,
                    }
                )
        return pd.DataFrame(rows)

    @guards_inputs
    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_frame` (``.csv``, ``.parquet``, ``.json``), atomically."""
        from induction.store.io import write_table

        return write_table(self.to_frame(), path)

    @guards_inputs
    def plot(self, path: str | Path | None = None):
        """The two angle profiles (:func:`depth_figure`), also written to ``path``."""
        fig = depth_figure([self])
        if path is not None:
            from induction.figures.plots import save_figure

            note = save_figure(fig, Path(path))
            if note:
                raise InputError(note)
        return fig


def angle_deg(a: torch.Tensor, b: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Angle in degrees between the last-axis vectors of ``a`` and ``b`` (float64)."""
    a, b = a.double(), b.double()
    cos = (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1)).clamp_min(eps)
    return torch.rad2deg(torch.arccos(cos.clamp(-1.0, 1.0)))


def residual_states(bridge: Any, tokens: torch.Tensor) -> torch.Tensor:
    """``[L + 1, batch, pos, d_model]``: every block's ``hook_resid_pre`` and the last
    block's ``hook_resid_post``, read through a names filter."""
    n_layers = int(bridge.cfg.n_layers)
    wanted = {f"blocks.{i}.hook_resid_pre" for i in range(n_layers)}
    last = f"blocks.{n_layers - 1}.hook_resid_post"
    wanted.add(last)
    with torch.inference_mode():
        _, cache = bridge.run_with_cache(
            tokens, names_filter=lambda name: name in wanted, return_type=None
        )
    missing = sorted(wanted - set(cache.keys()))
    if missing:
        raise InputError(f"the bridge has no hook {missing[0]}; cannot read the residual stream")
    states = [cache[f"blocks.{i}.hook_resid_pre"] for i in range(n_layers)] + [cache[last]]
    return torch.stack([s.detach().to("cpu", torch.float64) for s in states])


def text_tokens(tokenizer: Any, text: str, window: int = TEXT_WINDOW) -> torch.Tensor:
    """``text`` tokenized into rows of ``window`` tokens (a shorter text is one row)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) < 3:
        raise InputError("the text has fewer than 3 tokens; pass a longer --text file")
    bos = getattr(tokenizer, "bos_token_id", None)
    step = window - (1 if bos is not None else 0)
    rows = [ids[i : i + step] for i in range(0, len(ids), step)]
    if len(rows) > 1 and len(rows[-1]) < step:
        rows = rows[:-1]  # equal lengths, no padding
    if bos is not None:
        rows = [[bos, *r] for r in rows]
    return torch.tensor(rows, dtype=torch.long)


def depth_angles(
    model: Any,
    *,
    tokens: torch.Tensor | None = None,
    text: str | Path | None = None,
    batch: int = 8,
    seq_len: int | None = None,
    seed: int = 0,
    chunk: int = 8,
    progress: bool = False,
) -> DepthAngles:
    """Per-layer ``state`` and ``update`` angles of ``model`` (a LoadedModel or bridge).

    The prompts are ``tokens`` if given, else the tokens of ``text`` (a string or a path to a
    UTF-8 file) in windows of :data:`TEXT_WINDOW`, else ``batch`` of the scan's repeated
    random-token prompts (one seed). ``progress`` reports the passes of ``chunk`` prompts
    (:mod:`induction.progress`; ``induction depth`` turns it on).
    """
    from induction.progress import progress as progress_reporter

    target = resolve_target(model, "depth_angles")
    bridge = target.bridge
    inputs = inputs_of(target, text if isinstance(text, Path) else None)
    if tokens is None and text is not None:
        if isinstance(text, Path):
            from induction.store.io import read_text

            text = read_text(text, "--text file")
        tokens = text_tokens(bridge.tokenizer, text)
    if tokens is None:
        from induction.models.target import eos_token_id
        from induction.scores.prompts import make_prompts

        prompts = make_prompts(
            target.info,
            seq_len=seq_len,
            batch=batch,
            seeds=[seed],
            eos_token_id=eos_token_id(bridge),
        )
        tokens = prompts.tokens
    if tokens.ndim != 2 or tokens.shape[1] < 3:
        raise InputError("depth angles need prompts of at least 3 tokens")
    dev = model_device(bridge)
    n_layers = int(bridge.cfg.n_layers)
    state_sum = torch.zeros(n_layers, dtype=torch.float64)
    state_sq = torch.zeros(n_layers, dtype=torch.float64)
    upd_sum = torch.zeros(max(n_layers - 1, 0), dtype=torch.float64)
    upd_sq = torch.zeros(max(n_layers - 1, 0), dtype=torch.float64)
    n = 0
    starts = range(0, tokens.shape[0], chunk)
    with progress_reporter(progress) as bar:
        advance = bar.task(len(starts), f"depth angles of {target.name}")
        for start in starts:
            h = residual_states(bridge, tokens[start : start + chunk].to(dev))[:, :, 1:]
            state = angle_deg(h[:-1], h[1:]).flatten(1)  # [L, tokens]
            delta = h[1:] - h[:-1]
            update = angle_deg(delta[:-1], delta[1:]).flatten(1)  # [L - 1, tokens]
            state_sum += state.sum(1)
            state_sq += (state**2).sum(1)
            upd_sum += update.sum(1)
            upd_sq += (update**2).sum(1)
            n += state.shape[1]
            advance()

    def stats(total: torch.Tensor, sq: torch.Tensor) -> tuple[list[float], list[float]]:
        mean = total / n
        var = (sq / n - mean**2).clamp_min(0) * (n / max(n - 1, 1))
        return mean.tolist(), var.sqrt().tolist()

    s_mean, s_std = stats(state_sum, state_sq)
    u_mean, u_std = stats(upd_sum, upd_sq)
    return DepthAngles(target.name, s_mean, s_std, u_mean, u_std, n, inputs=inputs)


#: One colour per model (Okabe and Ito's colour-blind-safe set, its yellow left out: too pale
#: on white), ordered so the first five are far apart (CIELAB distance over 45); the last
#: two are near vermillion and blue, told apart by their lightness.
MODEL_COLORS = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#000000",  # black
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
)
_DASHES = ("solid", "dash", "dot")


def depth_figure(results: Sequence[DepthAngles], title: str | None = None):
    """Plotly figure: both angles per layer, one line (mean, with the spread as error bars)
    per model."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            "θ(h_l, h_l+1): residual state",
            "θ(Δh_l, Δh_l+1): consecutive updates",
        ),
    )
    for i, r in enumerate(results):
        color = MODEL_COLORS[i % len(MODEL_COLORS)]
        dash = _DASHES[i // len(MODEL_COLORS) % len(_DASHES)]  # colours repeat, dashed
        for col, angle in ((1, "state"), (2, "update")):
            means, stds = getattr(r, f"{angle}_mean"), getattr(r, f"{angle}_std")
            fig.add_trace(
                go.Scatter(
                    x=list(range(len(means))),
                    y=means,
                    mode="lines+markers",
                    name=r.model,
                    legendgroup=r.model,
                    showlegend=col == 1,
                    line={"color": color, "dash": dash},
                    marker={"color": color},
                    error_y={
                        "type": "data",
                        "array": stds,
                        "visible": True,
                        "thickness": 1,
                        "color": color,
                    },
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text="layer l")
    # one y title, on the left: the right panel's would crowd the left one
    fig.update_yaxes(title_text="angle (degrees, mean ± sd over tokens)", row=1, col=1)
    fig.update_layout(
        title=title or "Depth diagnostics (Liu et al. 2026)",
        template="plotly_white",
        width=1000,  # room for both panel titles side by side
        height=520,
    )
    return fig
