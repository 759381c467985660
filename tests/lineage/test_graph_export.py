"""Ancestry graph: structure, and exports that networkx reads back identically; the HTML figure
opens in headless Chromium without console errors (skipped where Chromium is absent)."""

from __future__ import annotations

import json
import re

import networkx as nx
import pandas as pd
import pytest

from induction.errors import InputError
from induction.models.looped import LoopPlan
from lineage.ancestry import head_ancestry
from lineage.export import dot_text, export_graph, read_node_link
from lineage.graph import lineage_graph, node_id, roots_of
from lineage.log import DuplicationLog
from tests.lineage.browser import browser_check, find_chromium

H = 2


def grown_log() -> DuplicationLog:
    log = DuplicationLog(initial_depth=2)
    log.record_copy(100, "lidas", (0, 2), 1)
    log.record_mix(150, [[(0, 1.0)], [(1, 0.5), (2, 0.5)], [(2, 1.0)], [(3, 1.0)]], note="ligo")
    log.record_copy(200, "lidas", (0, 4), 2)
    return log


def scored_graph():
    log = grown_log()
    sc = pd.DataFrame(
        [(lay, h, round(0.1 * lay + 0.05 * h, 3)) for lay in range(8) for h in range(H)],
        columns=["layer", "head", "induction"],
    )
    init = pd.DataFrame({"layer": [0, 1], "head": [0, 0], "induction": [0.5, 0.2]})
    return lineage_graph(log, H, scores=sc, stage_scores={0: init}, name="test"), log


def test_structure_and_weights_match_ancestry():
    g, log = scored_graph()
    assert g.number_of_nodes() == sum(log.depths()) * H
    assert g.number_of_edges() == H * sum(len(p) for e in log.events for p in e.layer_map)
    assert nx.is_directed_acyclic_graph(g)
    anc = head_ancestry(log, H)
    for (layer, head), rows in anc.groupby(["layer", "head"]):
        roots = roots_of(g, node_id(3, layer, head))
        expected = {
            node_id(0, a, h): w
            for a, h, w in rows[["ancestor_layer", "ancestor_head", "weight"]].itertuples(
                index=False
            )
        }
        assert roots == pytest.approx(expected)
    n = g.nodes[node_id(3, 5, 1)]
    assert (n["stage"], n["layer"], n["head"], n["final"], n["step"]) == (3, 5, 1, True, 200)
    assert n["induction"] == pytest.approx(0.55)
    assert g.nodes[node_id(0, 0, 0)]["induction"] == 0.5
    assert "induction" not in g.nodes[node_id(0, 0, 1)]  # unknown: left out, not NaN
    assert "induction" not in g.nodes[node_id(1, 0, 0)]
    kinds = {d["kind"] for _, _, d in g.edges(data=True)}
    assert kinds == {"keep", "copy", "mix"}
    mix = g.edges[node_id(1, 1, 0), node_id(2, 1, 0)]
    assert (mix["kind"], mix["weight"], mix["step"], mix["operator"]) == ("mix", 0.5, 150, "mix")


def test_looped_graph():
    plan = LoopPlan(block=2, loops=3)
    g = lineage_graph(None, 1, loop_plan=plan, n_layers=6)
    assert g.graph["source"] == "loop" and g.graph["depths"] == "2,6"
    assert [g.nodes[node_id(1, i, 0)]["pass"] for i in range(6)] == [0, 0, 1, 1, 2, 2]
    assert "step" not in g.edges[node_id(0, 1, 0), node_id(1, 5, 0)]


def _same(g, h, graph_keys=True):
    assert dict(g.nodes(data=True)) == dict(h.nodes(data=True))
    assert sorted(g.edges(data=True)) == sorted(h.edges(data=True))
    assert h.is_directed()
    if graph_keys:
        assert {k: h.graph[k] for k in g.graph} == g.graph


def test_graphml_round_trip(tmp_path):
    g, _ = scored_graph()
    export_graph(g, tmp_path / "g.graphml")
    _same(g, nx.read_graphml(tmp_path / "g.graphml"))


def test_gexf_round_trip(tmp_path):
    g, _ = scored_graph()
    export_graph(g, tmp_path / "g.gexf")
    h = nx.read_gexf(tmp_path / "g.gexf")
    _same(g, h, graph_keys=False)  # GEXF keeps no graph attributes but its name
    assert h.graph["name"] == "test"


def test_node_link_json_round_trip(tmp_path):
    g, _ = scored_graph()
    export_graph(g, tmp_path / "g.json")
    _same(g, read_node_link(tmp_path / "g.json"))
    data = json.loads((tmp_path / "g.json").read_text())
    assert data["directed"] is True and len(data["edges"]) == g.number_of_edges()


def _unquote(v):
    return v[1:-1] if isinstance(v, str) and v.startswith('"') else v


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pydot's pyparsing calls
def test_dot_round_trip_through_pydot(tmp_path):
    pytest.importorskip("pydot")
    g, _ = scored_graph()
    export_graph(g, tmp_path / "g.dot")
    h = nx.nx_pydot.read_dot(tmp_path / "g.dot")
    assert set(h.nodes) == set(g.nodes)
    assert {(u, v) for u, v, _ in h.edges} == set(g.edges)
    for n, attrs in g.nodes(data=True):
        got = {k: _unquote(v) for k, v in h.nodes[n].items()}
        for k, v in attrs.items():
            assert got[k] == (str(v).lower() if isinstance(v, bool) else str(v)), (n, k)
    for u, v, attrs in g.edges(data=True):
        got = {k: _unquote(x) for k, x in h.get_edge_data(u, v)[0].items()}
        assert {k: got[k] for k in attrs} == {k: str(x) for k, x in attrs.items()}


def test_dot_text_quotes_every_node_id():
    g, _ = scored_graph()
    text = dot_text(g)
    assert text.startswith('digraph "test" {') and text.rstrip().endswith("}")
    assert len(re.findall(r"^\s*\"s\d+:L\d+H\d+\" \[", text, re.M)) == g.number_of_nodes()
    assert len(re.findall(r" -> ", text)) == g.number_of_edges()
    assert text.count("{") == text.count("}")


def test_html_figure_has_every_node(tmp_path):
    g, _ = scored_graph()
    path = export_graph(g, tmp_path / "g.html", title="t", highlight=[node_id(3, 7, 1)])
    text = path.read_text()
    assert "plotly" in text and len(text) > 1_000_000  # plotly.js embedded: works offline
    from lineage.export import figure

    fig = figure(g)
    drawn = sum(len(t.x) for t in fig.data if t.mode == "markers")
    assert drawn == g.number_of_nodes()


def test_unknown_suffix_is_one_line_error(tmp_path):
    g, _ = scored_graph()
    with pytest.raises(InputError, match="unknown suffix '.svg'"):
        export_graph(g, tmp_path / "g.svg")


@pytest.mark.skipif(find_chromium() is None, reason="headless Chromium not installed")
def test_html_opens_in_headless_chromium_without_console_errors(tmp_path):
    g, _ = scored_graph()
    path = export_graph(g, tmp_path / "g.html", highlight=[node_id(3, 7, 1)])
    report = browser_check(path)
    assert report == {"errors": [], "plots": 1, "points": g.number_of_nodes()}
    # the probe does catch errors
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<html><head></head><body><script>throw new Error('boom')</script></body></html>"
    )
    assert any("boom" in e for e in browser_check(bad)["errors"])


def test_html_figure_spreads_a_layers_heads_and_names_the_outline():
    """A layer's 8 heads sit apart (further than the largest marker), and the top heads' red
    outline has a legend entry."""
    from lineage.export import HEAD_SPAN, TOP_OUTLINE, figure

    n_heads = 8
    log = grown_log()
    sc = pd.DataFrame(
        [(lay, h, 0.1 * h) for lay in range(8) for h in range(n_heads)],
        columns=["layer", "head", "induction"],
    )
    g = lineage_graph(log, n_heads, scores=sc, name="t")
    top = [node_id(3, 5, h) for h in range(3)]
    fig = figure(g, highlight=top)
    nodes = [t for t in fig.data if t.mode == "markers" and t.x[0] is not None]
    xs = [x for t in nodes for x in t.x]
    ys = [y for t in nodes for y in t.y]
    assert len(xs) == g.number_of_nodes()
    rows: dict[tuple, list[float]] = {}
    for x, y in zip(xs, ys):
        rows.setdefault((round(x), y), []).append(x)  # (stage, layer): its heads
    assert len(rows) == sum(log.depths()) and all(len(r) == n_heads for r in rows.values())
    # pixels between neighbouring heads: the x axis spans the stages over the plot's width
    lo, hi = fig.layout.xaxis.range
    plot_width = fig.layout.width - 80 - 80 - 100  # plotly's default margins, the colour bar
    gap = min(b - a for r in rows.values() for a, b in zip(sorted(r), sorted(r)[1:]))
    assert gap * plot_width / (hi - lo) >= 15  # the top heads' markers: 15 px
    assert max(max(r) - min(r) for r in rows.values()) == pytest.approx(HEAD_SPAN)
    legend = [t for t in fig.data if t.name == "top head (red outline)"]
    assert len(legend) == 1 and legend[0].showlegend is not False
    assert legend[0].marker.line.color == TOP_OUTLINE
    scored = next(t for t in fig.data if t.name == "head (colour: induction)")
    assert scored.marker.showscale and scored.marker.colorbar.title.text == "induction"
    assert not any(t.name == "top head (red outline)" for t in figure(g).data)  # none: no entry


def test_ancestry_figure_puts_layer_0_on_top_like_the_scan_heatmap():
    from induction.figures import plots
    from lineage.export import figure

    g, _ = scored_graph()
    scores = pd.DataFrame({"layer": [0, 1], "head": [0, 0], "induction": [0.1, 0.9]})
    assert figure(g).layout.yaxis.autorange == plots.heatmap(scores).layout.yaxis.autorange
    assert figure(g).layout.yaxis.autorange == "reversed"
