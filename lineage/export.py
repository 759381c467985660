"""Write the ancestry graph (:func:`lineage.graph.lineage_graph`) to files, by suffix.

- ``.graphml``: GraphML (Gephi, Cytoscape, yEd); ``networkx.read_graphml`` reads it back.
- ``.gexf``: GEXF 1.2 (Gephi); ``networkx.read_gexf`` reads it back.
- ``.json``: node-link JSON (``networkx.node_link_data(g, edges="edges")``); read it back with
  ``networkx.node_link_graph(data, edges="edges")``.
- ``.dot`` / ``.gv``: Graphviz DOT, written through pydot; every
  attribute is a quoted string, nodes are filled by score (viridis). Render with
  ``dot -Tsvg lineage.dot``; ``networkx.nx_pydot.read_dot`` reads it when pydot is installed.
- ``.html``: an interactive plotly figure laid out as a tree by stage (x: growth stage,
  y: layer, heads of a layer side by side), heads coloured by score, edges styled by kind.
  plotly.js is embedded, so the file works offline (about 4.7 MB).

All files are written atomically (:mod:`induction.store.io`).
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Any

from induction.errors import InputError

SUFFIXES = (".graphml", ".gexf", ".json", ".dot", ".gv", ".html")

# viridis at 0, 0.25, 0.5, 0.75, 1 (matplotlib's values)
_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
_EDGE_STYLE = {
    "keep": {"color": "rgba(120,120,120,0.55)", "dash": "solid", "width": 1.0},
    "copy": {"color": "rgba(31,119,180,0.85)", "dash": "solid", "width": 1.6},
    "mix": {"color": "rgba(255,127,14,0.85)", "dash": "dash", "width": 1.4},
    "loop": {"color": "rgba(44,160,44,0.85)", "dash": "dot", "width": 1.4},
}


def export_graph(
    g,
    path: str | Path,
    *,
    title: str | None = None,
    highlight: list[str] | None = None,
    include_plotlyjs: bool | str = True,
) -> Path:
    """Write ``g`` to ``path``; the suffix picks the format (see the module docstring).

    ``title`` and ``highlight`` (node ids drawn larger with a red outline, e.g. the top heads)
    only affect the HTML figure.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError(
            f"cannot export a graph to {path.name!r}: unknown suffix {suffix or '(none)'!r}; "
            f"use one of {', '.join(SUFFIXES)}"
        )
    if suffix == ".graphml":
        return write_graphml(g, path)
    if suffix == ".gexf":
        return write_gexf(g, path)
    if suffix == ".json":
        return write_node_link(g, path)
    if suffix in (".dot", ".gv"):
        return write_dot(g, path)
    return write_html(g, path, title=title, highlight=highlight, include_plotlyjs=include_plotlyjs)


def write_graphml(g, path: str | Path) -> Path:
    import networkx as nx

    from induction.store.io import atomic_path

    with atomic_path(path) as tmp:
        nx.write_graphml(g, tmp)
    return Path(path)


def write_gexf(g, path: str | Path) -> Path:
    import networkx as nx

    from induction.store.io import atomic_path

    with atomic_path(path) as tmp:
        nx.write_gexf(g, tmp)
    return Path(path)


def write_node_link(g, path: str | Path) -> Path:
    import networkx as nx

    from induction.store.io import write_text

    data = nx.node_link_data(g, edges="edges")
    return write_text(path, json.dumps(data, indent=1) + "\n")


def read_node_link(path: str | Path):
    import networkx as nx

    from induction.store.io import read_json

    return nx.node_link_graph(read_json(path, "node-link graph"), edges="edges")


# --------------------------------------------------------------------------- DOT


def _dot_id(value: Any) -> str:
    """A node id quoted for DOT: pydot reads a bare ``s0:L3H7`` as node ``s0``, port ``L3H7``."""
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def _dot_value(value: Any) -> str:
    """An attribute value as DOT text (pydot quotes it where the grammar needs)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def score_color(value: float | None, lo: float = 0.0, hi: float = 1.0) -> str:
    """Hex colour of ``value`` on viridis over [lo, hi]; light grey when unknown."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "#dddddd"
    t = 0.0 if hi <= lo else min(max((value - lo) / (hi - lo), 0.0), 1.0)
    pos = t * (len(_VIRIDIS) - 1)
    i = min(int(pos), len(_VIRIDIS) - 2)
    f = pos - i
    rgb = [round(a + (b - a) * f) for a, b in zip(_VIRIDIS[i], _VIRIDIS[i + 1])]
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def dot_graph(g):
    """The graph as a :class:`pydot.Dot` (every attribute of ``g`` kept, as strings), with
    viridis fill colours by score and edge styles by kind."""
    import pydot

    score = g.graph.get("score", "induction")
    graph_attrs = {k: _dot_value(v) for k, v in g.graph.items() if k != "name"}
    dot = pydot.Dot(
        graph_name=_dot_id(g.graph.get("name", "lineage")),
        graph_type="digraph" if g.is_directed() else "graph",
        **graph_attrs,
        rankdir="LR",
        ranksep="1.2",
    )
    dot.set_node_defaults(shape="circle", style="filled", fontsize="9", fixedsize="true")
    for n, attrs in g.nodes(data=True):
        value = attrs.get(score)
        extra = {"fillcolor": score_color(value)}
        if value is not None:
            extra["fontcolor"] = "black" if value > 0.6 else "white"
        merged: dict[str, Any] = {k: _dot_value(v) for k, v in {**attrs, **extra}.items()}
        dot.add_node(pydot.Node(_dot_id(n), **merged))
    for u, v, attrs in g.edges(data=True):
        style = {"mix": "dashed", "loop": "dotted"}.get(attrs.get("kind"), "solid")
        extra = {"style": style, "color": "#1f77b4" if attrs.get("kind") == "copy" else "#888888"}
        edge: dict[str, Any] = {k: _dot_value(x) for k, x in {**attrs, **extra}.items()}
        dot.add_edge(pydot.Edge(_dot_id(u), _dot_id(v), **edge))
    return dot


def dot_text(g) -> str:
    """The graph as Graphviz DOT text (:func:`dot_graph`, written by pydot)."""
    return dot_graph(g).to_string()


def write_dot(g, path: str | Path) -> Path:
    from induction.store.io import write_text

    return write_text(path, dot_text(g))


# --------------------------------------------------------------------------- HTML


#: Horizontal room a stage gives its layer's heads (fraction of the distance between stages).
HEAD_SPAN = 0.6
#: Colour of the top heads' outline (``highlight``).
TOP_OUTLINE = "#d62728"


def figure(g, *, title: str | None = None, highlight: list[str] | None = None):
    """A plotly Figure of the ancestry tree: x = stage, the heads of a layer side by side
    around it; y = layer. Top heads (``highlight``) have a red outline (in the legend)."""
    import plotly.graph_objects as go

    score = g.graph.get("score", "induction")
    n_heads = int(g.graph.get("n_heads", 1))
    step_x = HEAD_SPAN / max(n_heads - 1, 1)

    def xy(node):
        a = g.nodes[node]
        return a["stage"] + (a["head"] - (n_heads - 1) / 2) * step_x, a["layer"]

    fig = go.Figure()
    by_kind: dict[str, tuple[list, list]] = {}
    for u, v, a in g.edges(data=True):
        xs, ys = by_kind.setdefault(a.get("kind", "keep"), ([], []))
        (x0, y0), (x1, y1) = xy(u), xy(v)
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    for kind, (xs, ys) in by_kind.items():
        style = _EDGE_STYLE.get(kind, _EDGE_STYLE["keep"])
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                name=f"{kind} edge",
                line={"color": style["color"], "dash": style["dash"], "width": style["width"]},
                hoverinfo="skip",
            )
        )
    marked = set(highlight or [])
    scored = [n for n, a in g.nodes(data=True) if score in a]
    unscored = [n for n, a in g.nodes(data=True) if score not in a]

    def hover(n):
        a = g.nodes[n]
        parts = [
            f"stage {a['stage']}" + (f" (step {a['step']})" if "step" in a else ""),
            a["label"],
        ]
        if "block_layer" in a:
            parts.append(f"block layer {a['block_layer']}, pass {a['pass']}")
        if score in a:
            parts.append(f"{score} {a[score]:.3f}")
        parts.append(f"ancestor {a['ancestor']}")
        if n in marked:
            parts.append("top head")
        return "<br>".join(parts)

    def outline(nodes, color: str, width: float) -> dict:
        return {
            "color": [TOP_OUTLINE if n in marked else color for n in nodes],
            "width": [2.5 if n in marked else width for n in nodes],
        }

    if unscored:
        fig.add_trace(
            go.Scatter(
                x=[xy(n)[0] for n in unscored],
                y=[xy(n)[1] for n in unscored],
                mode="markers",
                name="no score",
                marker={
                    "color": "#dddddd",
                    "size": [14 if n in marked else 9 for n in unscored],
                    "line": outline(unscored, "#999999", 1),
                },
                text=[hover(n) for n in unscored],
                hoverinfo="text",
            )
        )
    if scored:
        values = [g.nodes[n][score] for n in scored]
        fig.add_trace(
            go.Scatter(
                x=[xy(n)[0] for n in scored],
                y=[xy(n)[1] for n in scored],
                mode="markers",
                name=f"head (colour: {score})",
                marker={
                    "color": values,
                    "colorscale": "Viridis",
                    "cmin": min(0.0, min(values)),
                    "cmax": max(1.0, max(values)),
                    "size": [15 if n in marked else 10 for n in scored],
                    "line": outline(scored, "#444444", 0.5),
                    "showscale": True,
                    "colorbar": {"title": {"text": score}},
                },
                text=[hover(n) for n in scored],
                hoverinfo="text",
            )
        )
    if marked & set(g.nodes):
        # a legend entry only: what the red outline means
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name="top head (red outline)",
                marker={"color": "white", "size": 15, "line": {"color": TOP_OUTLINE, "width": 2.5}},
                hoverinfo="skip",
            )
        )
    depths = [int(d) for d in str(g.graph.get("depths", "")).split(",") if d]
    steps = {}
    for _, a in g.nodes(data=True):
        if "step" in a:
            steps[a["stage"]] = a["step"]
    ticks = [
        f"stage {s}" + (f"<br>step {steps[s]}" if s in steps else "") + f"<br>{d} layers"
        for s, d in enumerate(depths)
    ]
    title_lines = textwrap.wrap(title or f"Head ancestry ({g.graph.get('name', '')})", 80)
    height = max(420, 60 * (max(depths) if depths else 8) + 200)
    # about 24 px per head within a stage, so a layer's heads do not overlap
    width = min(2400, 260 + max(1, len(depths)) * max(300, round(24 * n_heads / HEAD_SPAN)))
    top = 40 + 24 * len(title_lines)  # the title; the legend above the plot adds its height
    fig.update_layout(
        # plotly does not wrap titles; a summary sentence would run off the figure
        title={
            "text": "<br>".join(title_lines),
            "font": {"size": 14},
            "y": 1 - 15 / height,
            "yanchor": "top",
        },
        margin={"t": top},
        xaxis={
            "title": {"text": "growth stage"},
            "tickvals": list(range(len(depths))),
            "ticktext": ticks,
            "range": [-0.5, max(len(depths), 1) - 0.5],
            "zeroline": False,
            "showgrid": False,
        },
        # layer 0 on top, as in the scan heatmap (plots.heatmap)
        yaxis={"title": {"text": "layer"}, "dtick": 1, "zeroline": False, "autorange": "reversed"},
        template="plotly_white",
        width=width,
        height=height,
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1.01, "yanchor": "bottom"},
        hovermode="closest",
    )
    return fig


def write_html(
    g,
    path: str | Path,
    *,
    title: str | None = None,
    highlight: list[str] | None = None,
    include_plotlyjs: bool | str = True,
) -> Path:
    from induction.store.io import atomic_path

    fig = figure(g, title=title, highlight=highlight)
    with atomic_path(path) as tmp:
        fig.write_html(str(tmp), include_plotlyjs=include_plotlyjs, full_html=True)
    return Path(path)
