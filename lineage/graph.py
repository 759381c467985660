"""The head-ancestry graph: a networkx DiGraph with one node per head per growth stage.

Nodes are named ``s{stage}:L{layer}H{head}`` and carry ``stage``, ``layer``, ``head``,
``label`` (``L5H2``), ``final`` (in the last stage), ``ancestor`` (label of the head's primary
ancestor in stage 0), ``step`` (training step at which the stage began; absent for stage 0 and
loop unrolls), ``block_layer``/``pass`` (final nodes of looped models), and the score (e.g.
``induction``) where one is known for that stage. Edges run parent -> child between
consecutive stages and carry ``id`` (``e0``, ``e1``, ...; GEXF keeps it), ``kind``
(``keep``/``copy``/``mix``/``loop``, see :mod:`lineage.ancestry`), ``weight``, ``operator``,
``stage`` (the child's stage) and ``step`` (the growth event's step, absent for loop unrolls).
Graph attributes: ``name``, ``source``, ``depths`` (``"2,4,8"``), ``n_heads``, ``score``.

Every attribute is a plain int, float, bool or str, and unknown values are left out rather than
stored as None/NaN, so GraphML, GEXF and node-link JSON round-trip exactly.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from lineage.ancestry import Lineage, as_lineage, head_label

if TYPE_CHECKING:
    from induction.models.looped import LoopPlan


def node_id(stage: int, layer: int, head: int) -> str:
    return f"s{stage}:L{layer}H{head}"


def _score_map(df, score: str) -> dict[tuple[int, int], float]:
    if df is None:
        return {}
    out = {}
    for layer, head, value in zip(df["layer"], df["head"], df[score]):
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            out[(int(layer), int(head))] = float(value)
    return out


def lineage_graph(
    lineage: Lineage | Any,
    n_heads: int | None = None,
    *,
    loop_plan: LoopPlan | None = None,
    n_layers: int | None = None,
    scores=None,
    stage_scores: dict[int, Any] | None = None,
    score: str = "induction",
    name: str = "",
):
    """Build the ancestry DiGraph.

    Args:
        lineage: a :class:`lineage.ancestry.Lineage`, a DuplicationLog, or None (with
            ``loop_plan`` for a looped model).
        scores: score table of the final model (``layer``, ``head``, ``score``).
        stage_scores: score tables of earlier stages, ``{stage: table}`` (e.g. ``{0: ...}``
            for the initial network).
    """
    import networkx as nx

    lin = as_lineage(lineage, n_heads=n_heads, loop_plan=loop_plan, n_layers=n_layers)
    known = {k: _score_map(v, score) for k, v in (stage_scores or {}).items()}
    if scores is not None:
        known[lin.final_stage] = _score_map(scores, score)

    g = nx.DiGraph(
        name=name or "lineage",
        source=lin.source,
        depths=",".join(map(str, lin.depths)),
        n_heads=lin.n_heads,
        score=score,
    )
    unrolled = lin.loop_plan.unrolled_layers if lin.loop_plan is not None else None
    for stage, depth in enumerate(lin.depths):
        primary = [
            max(anc.items(), key=lambda kv: (kv[1], -kv[0]))[0]
            for anc in (lin.layer_ancestors(i, stage) for i in range(depth))
        ]
        step = lin.stage_step(stage)
        for layer in range(depth):
            for head in range(lin.n_heads):
                attrs: dict[str, Any] = {
                    "stage": stage,
                    "layer": layer,
                    "head": head,
                    "label": head_label(layer, head),
                    "final": stage == lin.final_stage,
                    "ancestor": head_label(primary[layer], head),
                }
                if step is not None:
                    attrs["step"] = int(step)
                if unrolled is not None and stage == lin.final_stage:
                    attrs["block_layer"], attrs["pass"] = unrolled[layer]
                value = known.get(stage, {}).get((layer, head))
                if value is not None:
                    attrs[score] = value
                g.add_node(node_id(stage, layer, head), **attrs)
    n = 0
    for t in lin.transitions:
        for child, parents in enumerate(t.layer_map):
            for parent, weight in parents:
                for head in range(lin.n_heads):
                    attrs = {
                        "id": f"e{n}",
                        "kind": t.kinds[child],
                        "weight": float(weight),
                        "operator": t.operator,
                        "stage": t.stage,
                    }
                    if t.step is not None:
                        attrs["step"] = int(t.step)
                    g.add_edge(
                        node_id(t.stage - 1, parent, head), node_id(t.stage, child, head), **attrs
                    )
                    n += 1
    return g


def roots_of(g, node: str) -> dict[str, float]:
    """Stage-0 ancestors of ``node`` with path weights, read off the graph (for checks)."""
    out: dict[str, float] = {}
    frontier = {node: 1.0}
    while frontier:
        nxt: dict[str, float] = {}
        for v, w in frontier.items():
            preds = list(g.predecessors(v))
            if not preds:
                out[v] = out.get(v, 0.0) + w
            for u in preds:
                nxt[u] = nxt.get(u, 0.0) + w * g.edges[u, v]["weight"]
        frontier = nxt
    return out
