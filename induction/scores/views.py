"""Attention-pattern views: each chosen head's ``[query, key]`` attention as an interactive
plotly heatmap, with readable token labels and the induction stripe marked (docs/views.md).

:func:`show_patterns` is what ``induction show`` writes and what the notebooks display.
The default prompt is one seeded repeated-random-token prompt ``[P] + r + r``
(:mod:`induction.scores.prompts`), whose induction stripe is the cells ``(q, q - (T - 1))`` of the
second copy (Olsson et al. 2022: attend to the token after the earlier occurrence of the
current one). For a prompt of your own the stripe is every cell ``(q, k)`` with ``k <= q``
whose key's previous token equals the query's token.

Patterns come from one forward pass whose cache holds only the needed
``blocks.{l}.attn.hook_pattern`` activations (``[batch, head, query, key]``).

Token labels: each id is decoded on its own and whitespace made visible (a space shows as
``·``, a newline as ``\\n``, a tab as ``\\t``); ids that decode to nothing readable (a lone
byte of a multi-byte character) fall back to the raw vocabulary entry with the byte-level BPE
markers (``Ġ`` space, ``Ċ`` newline) and SentencePiece's ``▁`` mapped the same way. Each label
is prefixed by its position, so repeated tokens stay distinct axis categories.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from induction.errors import InputError
from induction.heads import head_label, parse_heads

if TYPE_CHECKING:
    import torch

    from induction.models.model_types import LoadedModel

LAYOUTS: Final = ("dropdown", "grid")  # Final: the type keeps the literals
#: Longest token label (characters) before it is cut with an ellipsis.
MAX_LABEL = 14
_VISIBLE = {" ": "·", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_MARKERS = {"Ġ": "·", "Ċ": "\\n", "ĉ": "\\t", "č": "\\r", "▁": "·"}


# --------------------------------------------------------------------------- heads


# --------------------------------------------------------------------------- tokens


def token_label(tokenizer: Any, token_id: int) -> str:
    """One token, readable: decoded with whitespace made visible (see the module docstring)."""
    text = ""
    if tokenizer is not None:
        try:
            text = str(tokenizer.decode([int(token_id)]))
        except Exception:  # a tokenizer that cannot decode one id: use the raw entry
            text = ""
    if text and "\ufffd" not in text:
        label = "".join(_VISIBLE.get(c, c) for c in text)
    else:
        raw = None
        if tokenizer is not None:
            try:
                raw = tokenizer.convert_ids_to_tokens(int(token_id))
            except Exception:
                raw = None
        raw = str(raw) if raw else f"<{int(token_id)}>"
        label = "".join(_MARKERS.get(c, _VISIBLE.get(c, c)) for c in raw)
    if len(label) > MAX_LABEL:
        label = label[: MAX_LABEL - 1] + "…"
    return label


def token_labels(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    """``"<position>:<token>"`` for every id: unique even when tokens repeat."""
    return [f"{i}:{token_label(tokenizer, t)}" for i, t in enumerate(ids)]


def user_prompt_ids(loaded: LoadedModel, prompt: str) -> list[int]:
    """Token ids of ``prompt`` with the model's BOS in front (added when the tokenizer does
    not add it); refuses an empty prompt or one longer than the context."""
    if prompt is None or not str(prompt).strip():
        raise InputError("empty prompt: pass some text to --prompt, or leave --prompt out")
    tok = loaded.tokenizer
    if tok is None:
        raise InputError(f"{loaded.info.name} has no tokenizer to read --prompt with")
    # verbose=False: the length is checked below, in one line, instead of transformers'
    # "Token indices sequence length ..." warning (SH06)
    ids = [int(i) for i in tok(str(prompt), verbose=False)["input_ids"]]
    bos = loaded.info.bos_token_id
    if bos is not None and (not ids or ids[0] != int(bos)):
        ids = [int(bos), *ids]
    n_ctx = int(loaded.info.n_ctx)
    if len(ids) > n_ctx:
        raise InputError(
            f"the prompt is {len(ids)} tokens but {loaded.info.name}'s context is {n_ctx}; "
            "shorten it"
        )
    return ids


def stripe_cells_repeated(seq_len: int, n_repeats: int = 2) -> list[tuple[int, int]]:
    """Induction stripe of ``[P] + r * n_repeats``: ``(q, q - (T - 1))`` for every query in
    the later copies (:meth:`induction.scores.prompts.PromptLayout.pairs`)."""
    from induction.scores.prompts import PromptLayout

    q, k, _ = PromptLayout(seq_len=seq_len, n_repeats=n_repeats).pairs("induction")
    return list(zip(q.tolist(), k.tolist()))


def stripe_cells_matching(ids: Sequence[int]) -> list[tuple[int, int]]:
    """Induction cells of any prompt: ``(q, k)``, ``1 <= k <= q``, where token ``k - 1``
    equals token ``q`` (the key is the token after an earlier occurrence of the query's)."""
    where: dict[int, list[int]] = {}
    cells = []
    for q, t in enumerate(ids):
        cells += [(q, p + 1) for p in where.get(int(t), []) if p + 1 <= q]
        where.setdefault(int(t), []).append(q)
    return cells


# --------------------------------------------------------------------------- patterns


def capture_patterns(
    loaded: LoadedModel, ids: Sequence[int], layers: Iterable[int]
) -> dict[int, Any]:
    """``{layer: [head, query, key] tensor}`` from one forward pass that caches only those
    layers' ``hook_pattern``."""
    import torch

    from induction.models.target import model_device

    bridge = loaded.bridge
    layers = sorted(set(int(x) for x in layers))
    names = [f"blocks.{lay}.attn.hook_pattern" for lay in layers]
    tokens = torch.tensor([list(ids)], dtype=torch.long, device=model_device(bridge))
    with torch.no_grad():
        _, cache = bridge.run_with_cache(tokens, names_filter=names)
    return {lay: cache[name][0].float().cpu() for lay, name in zip(layers, names)}


def stripe_score(pattern: torch.Tensor, cells: Sequence[tuple[int, int]]) -> float | None:
    """Mean over queries with stripe cells of their attention on those cells."""
    if not cells:
        return None
    per_q: dict[int, float] = {}
    for q, k in cells:
        per_q[q] = per_q.get(q, 0.0) + float(pattern[q, k])
    return sum(per_q.values()) / len(per_q)


def show_patterns(
    loaded: LoadedModel,
    heads: str | Iterable[str | tuple[int, int]],
    prompt: str | None = None,
    *,
    seq_len: int | None = None,
    seed: int = 0,
    layout: Literal["dropdown", "grid"] = "dropdown",
    mark_stripe: bool = True,
    title: str | None = None,
):
    """Interactive attention patterns of ``heads`` on one prompt (a plotly figure).

    Args:
        loaded: a :class:`induction.models.loading.LoadedModel`.
        heads: ``"L5H1,L11H2"`` or a list of names or ``(layer, head)`` pairs.
        prompt: text; None uses one repeated-random-token prompt (``seq_len``, ``seed``).
        seq_len: length ``T`` of the random block (default: the model's repeat length).
        layout: ``"dropdown"`` (one heatmap, a menu picks the head) or ``"grid"`` (subplots).
        mark_stripe: overlay the induction stripe cells (open squares).

    The title of each head gives its stripe attention: the mean, over queries that have
    stripe cells, of the attention they put there.
    """
    info = loaded.info
    if layout not in LAYOUTS:
        raise InputError(f"unknown layout {layout!r}; use dropdown or grid")
    head_list = parse_heads(heads, int(info.n_layers), int(info.n_heads))
    if prompt is None:
        from induction.scores.prompts import make_prompts

        tok = loaded.tokenizer
        prompts = make_prompts(
            info,
            seq_len=seq_len,
            batch=1,
            seeds=[int(seed)],
            eos_token_id=getattr(tok, "eos_token_id", None) if tok is not None else None,
        )
        ids = prompts.tokens[0].tolist()
        cells = stripe_cells_repeated(prompts.seq_len)
        what = f"repeated random tokens (T={prompts.seq_len}, seed {seed})"
    else:
        if seq_len is not None:
            raise InputError("--seq-len sets the repeated random prompt; drop it with --prompt")
        ids = user_prompt_ids(loaded, prompt)
        cells = stripe_cells_matching(ids)
        what = f"prompt of {len(ids)} tokens"
    patterns = capture_patterns(loaded, ids, {lay for lay, _ in head_list})
    labels = token_labels(loaded.tokenizer, ids)
    panels = []
    for lay, h in head_list:
        pat = patterns[lay][h]
        score = stripe_score(pat, cells)
        sub = head_label(lay, h) + (f": stripe attention {score:.2f}" if score is not None else "")
        panels.append((lay, h, pat, sub))
    head_title = title or f"{info.name}: attention patterns on {what}"
    if layout == "grid" and len(panels) > 1:
        fig = _grid(panels, labels, cells if mark_stripe else [], head_title)
    else:
        fig = _dropdown(panels, labels, cells if mark_stripe else [], head_title)
    fig.update_layout(meta={"heads": [head_label(a, b) for a, b in head_list], "tokens": len(ids)})
    return fig


def _traces(pat, labels, cells, name: str, show_scale: bool, show_legend: bool):
    import plotly.graph_objects as go

    heat = go.Heatmap(
        z=pat.numpy(),
        x=labels,
        y=labels,
        zmin=0,
        zmax=1,
        colorscale="Viridis",
        showscale=show_scale,
        colorbar={"title": "attention"},
        name=name,
        hovertemplate="query %{y}<br>key %{x}<br>attention %{z:.3f}<extra>" + name + "</extra>",
    )
    out: list[Any] = [heat]
    if cells:
        qs, ks = zip(*cells)
        out.append(
            go.Scatter(
                x=[labels[k] for k in ks],
                y=[labels[q] for q in qs],
                mode="markers",
                marker={"symbol": "square-open", "color": "red", "size": 7, "line": {"width": 1}},
                name="induction stripe",
                legendgroup="stripe",
                showlegend=show_legend,
                hoverinfo="skip",
            )
        )
    return out


def _axes(n: int) -> dict:
    tick = {"size": _tick_size(n)}
    return {
        "xaxis": {
            "type": "category",
            "tickfont": tick,
            "title": "key",
            "tickangle": -90,
            "automargin": True,
        },
        "yaxis": {
            "type": "category",
            "tickfont": tick,
            "title": "query",
            "autorange": "reversed",
            "automargin": True,
        },
    }


def _tick_size(n: int) -> int:
    return 8 if n > 60 else 10


def _margins(labels: Sequence[str], top: int) -> dict:
    """Margins that hold the longest token label (below the keys, left of the queries) and
    the axis title beyond it, so no label is cut (plotly's automargin may only add to them)."""
    longest = max((len(s) for s in labels), default=1)
    room = round(0.62 * _tick_size(len(labels)) * longest) + 50  # ~0.6 em a character
    return {"l": room + 10, "b": room, "t": top, "r": 40}


#: The legend inside the plot, top right: the causal pattern leaves that corner (keys after
#: the query) empty, and below the plot it would sit among the rotated key labels.
_LEGEND = {
    "x": 0.99,
    "xanchor": "right",
    "y": 0.99,
    "yanchor": "top",
    "bgcolor": "rgba(255,255,255,0.85)",
    "bordercolor": "#bbbbbb",
    "borderwidth": 1,
}


def _dropdown(panels, labels, cells, title: str):
    import plotly.graph_objects as go

    fig: Any = go.Figure()
    spans = []
    for i, (_lay, _h, pat, sub) in enumerate(panels):
        start = len(fig.data)
        for tr in _traces(pat, labels, cells, sub.split(":")[0], True, True):
            tr.visible = i == 0
            fig.add_trace(tr)
        spans.append((start, len(fig.data), sub))
    n_traces = len(fig.data)
    buttons = []
    for start, stop, sub in spans:
        visible = [start <= j < stop for j in range(n_traces)]
        buttons.append(
            {
                "label": sub.split(":")[0],
                "method": "update",
                "args": [{"visible": visible}, {"title.text": f"{title}<br><sup>{sub}</sup>"}],
            }
        )
    size = min(1100, max(520, 11 * len(labels) + 220))
    fig.update_layout(
        title={"text": f"{title}<br><sup>{spans[0][2]}</sup>"},
        template="plotly_white",
        width=size + 120,
        height=size,
        legend=_LEGEND,
        margin=_margins(labels, top=110),
        **_axes(len(labels)),
    )
    if len(panels) > 1:
        fig.update_layout(
            updatemenus=[
                {"buttons": buttons, "direction": "down", "x": 1.0, "xanchor": "right", "y": 1.12}
            ]
        )
    return fig


def _grid(panels, labels, cells, title: str):
    import math

    from plotly.subplots import make_subplots

    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[p[3] for p in panels],
        horizontal_spacing=0.12,
        vertical_spacing=0.1,
    )
    for i, (_lay, _h, pat, sub) in enumerate(panels):
        r, c = divmod(i, cols)
        for tr in _traces(pat, labels, cells, sub.split(":")[0], i == 0, i == 0):
            fig.add_trace(tr, row=r + 1, col=c + 1)
    axes = _axes(len(labels))
    fig.update_xaxes(**{k: v for k, v in axes["xaxis"].items() if k != "title"})
    fig.update_yaxes(**{k: v for k, v in axes["yaxis"].items() if k != "title"})
    panel = min(520, max(300, 8 * len(labels) + 120))
    fig.update_layout(
        title={"text": title},
        template="plotly_white",
        width=cols * panel + 120,
        height=rows * panel + 120,
        legend=_LEGEND,
        margin=_margins(labels, top=90),
    )
    return fig


__all__ = [
    "LAYOUTS",
    "capture_patterns",
    "parse_heads",
    "show_patterns",
    "stripe_cells_matching",
    "stripe_cells_repeated",
    "stripe_score",
    "token_label",
    "token_labels",
    "user_prompt_ids",
]
