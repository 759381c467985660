"""Circuit lineage: where the induction circuits of a grown model come from.

Every circuit (partner A, induction head B; :func:`induction.circuits.job.induction_circuits`) is
traced, head by head, to its primary ancestors in the initial network
(:func:`lineage.head_ancestry`: a copied layer's head ``j`` inherits head ``j`` of its
source, docs/research.md, "Depth growth"). Circuits that share an ancestor pair are counted
together ("k of n circuits descend from m ancestor pairs"). When the model ships its
pre-growth network (the first zoo: ``initial/`` beside the weights; a fixed-protocol zoo model:
``checkpoints/step-<N>-pre``, the checkpoint just before its first growth event), the circuit
finder runs there too, and each ancestor pair is marked as already a circuit before growth or
not (its B an induction head there, with A among its partners).

The circuit graph has one node per ancestor pair (stage 0) and per descendant circuit (the
final stage), with edges ancestor pair -> descendant pair, and is written with
:func:`lineage.export.export_graph` (GraphML, GEXF, JSON, DOT, HTML).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from induction.circuits.finder import (
    DEFAULT_PARTNERS,
    CircuitResult,
    CircuitsConfig,
    find_circuits,
    label,
)
from induction.heads import Head

if TYPE_CHECKING:
    from induction.models.model_types import LoadedModel


@dataclass
class CircuitLineage:
    """Circuits of the final model grouped by the ancestor pair they descend from."""

    model: str
    circuits: list[tuple[Head, Head]]  # (partner, induction head) in the final model
    ancestors: dict[tuple[Head, Head], tuple[Head, Head]]  # circuit -> ancestor pair
    initial_circuits: list[tuple[Head, Head]] | None  # found in the initial network
    initial_partners: dict[Head, list[Head]] | None  # its induction heads' top partners
    depths: list[int]
    n_heads: int
    scores: dict[Head, float] = field(default_factory=dict)  # induction score, final model

    def groups(self) -> dict[tuple[Head, Head], list[tuple[Head, Head]]]:
        out: dict[tuple[Head, Head], list[tuple[Head, Head]]] = {}
        for c in self.circuits:
            out.setdefault(self.ancestors[c], []).append(c)
        return out

    def was_circuit(self, pair: tuple[Head, Head]) -> bool | None:
        """Whether the ancestor pair was already a circuit before growth (None: unknown)."""
        if self.initial_partners is None:
            return None
        a, b = pair
        return a in self.initial_partners.get(b, [])

    def headline(self) -> str:
        groups = self.groups()
        n = len(self.circuits)
        if not n:
            return "no induction circuits to trace"
        shared = {p: cs for p, cs in groups.items() if len(cs) > 1}
        k = sum(len(cs) for cs in shared.values())
        text = (
            f"{n} circuit{'s' if n != 1 else ''} descend from {len(groups)} ancestor "
            f"pair{'s' if len(groups) != 1 else ''}"
        )
        partner_roots = sorted({p[0] for p in groups})
        text += (
            f"; their partners descend from {len(partner_roots)} ancestor head"
            f"{'s' if len(partner_roots) != 1 else ''} ({', '.join(map(label, partner_roots))})"
        )
        if shared:
            text += f"; {k} of {n} share an ancestor pair with another circuit"
        known = [self.was_circuit(p) for p in groups]
        if all(x is not None for x in known):
            yes = sum(bool(x) for x in known)
            text += f"; {yes} of {len(groups)} ancestor pairs were already a circuit before growth"
        else:
            text += "; the pre-growth network was not available"
        if self.initial_circuits == []:
            text += " (the initial network has no induction head at this threshold)"
        return text

    def summary(self) -> dict[str, Any]:
        return {
            "headline": self.headline(),
            "groups": [
                {
                    "ancestor_pair": f"{label(p[0])}>{label(p[1])}",
                    "was_circuit": self.was_circuit(p),
                    "circuits": [f"{label(a)}>{label(b)}" for a, b in cs],
                }
                for p, cs in self.groups().items()
            ],
            "initial_circuits": None
            if self.initial_circuits is None
            else [f"{label(a)}>{label(b)}" for a, b in self.initial_circuits],
        }

    def graph(self):
        """The circuit graph (networkx DiGraph): ancestor pair -> descendant circuits."""
        import networkx as nx

        final = len(self.depths) - 1
        g = nx.DiGraph(
            name=f"{self.model} circuits",
            source="circuits",
            depths=",".join(map(str, self.depths)),
            n_heads=self.n_heads,
            score="induction",
        )
        for e, (pair, cs) in enumerate(self.groups().items()):
            a, b = pair
            anc = f"s0:{label(a)}>{label(b)}"
            attrs = {
                "stage": 0,
                "layer": b[0],
                "head": b[1],
                "label": f"{label(a)}>{label(b)}",
                "ancestor": f"{label(a)}>{label(b)}",
                "final": final == 0,
                "partner": label(a),
                "induction_head": label(b),
            }
            known = self.was_circuit(pair)
            if known is not None:
                attrs["was_circuit"] = bool(known)
            g.add_node(anc, **attrs)
            for i, (ca, cb) in enumerate(cs):
                node = f"s{final}:{label(ca)}>{label(cb)}"
                attrs = {
                    "stage": final,
                    "layer": cb[0],
                    "head": cb[1],
                    "label": f"{label(ca)}>{label(cb)}",
                    "ancestor": f"{label(a)}>{label(b)}",
                    "final": True,
                    "partner": label(ca),
                    "induction_head": label(cb),
                }
                if cb in self.scores:
                    attrs["induction"] = self.scores[cb]
                g.add_node(node, **attrs)
                kind = "keep" if (ca, cb) == pair else "copy"
                g.add_edge(anc, node, id=f"e{e}_{i}", kind=kind, weight=1.0, stage=final)
        return g

    def export(self, path: str | Path) -> Path:
        from lineage.export import export_graph

        return export_graph(self.graph(), path, title=f"{self.model}: induction circuits")


def circuit_lineage(
    result: CircuitResult,
    loaded: LoadedModel,
    *,
    initial: Any = None,
    partners: int = DEFAULT_PARTNERS,
    config: CircuitsConfig | None = None,
) -> CircuitLineage | None:
    """Trace ``result``'s circuits to the initial network of ``loaded`` (a grown model).

    ``initial`` is the pre-growth network (a spec or LoadedModel); by default the one a zoo
    model ships, when it does (:func:`lineage.api.shipped_stage`: ``initial/``, or the
    ``checkpoints/step-<N>-pre`` of the first growth event). ``config``
    (:class:`~induction.circuits.finder.CircuitsConfig`, with the prompt length measured on
    ``loaded``) measures the initial network the same way. A pair counts as a
    circuit before growth when its partner is among the ``partners`` strongest of its
    induction head there. Returns None for a model without a duplication log.
    """
    import lineage

    log = lineage.duplication_log(loaded)
    if log is None:
        return None
    n_heads = int(loaded.info.n_heads)
    anc = lineage.head_ancestry(log, n_heads)
    primary = anc[anc["primary"]]
    root = {
        Head(int(r.layer), int(r.head)): Head(int(r.ancestor_layer), int(r.ancestor_head))
        for r in primary.itertuples(index=False)
    }
    circuits = result.circuits()
    ancestors = {(a, b): (root[a], root[b]) for a, b in circuits}
    init_circuits = init_partners = None
    if initial is None and loaded.info.path is not None:
        from lineage.api import shipped_stage

        initial = shipped_stage(Path(loaded.info.path), 0)
    if initial is not None:
        init = find_circuits(initial, config or CircuitsConfig())
        init_circuits = init.circuits()
        init_partners = {}
        for h in init.heads:
            rows = init.table[(init.table["layer"] == h[0]) & (init.table["head"] == h[1])]
            rows = rows[rows["partner_rank"] <= partners]
            init_partners[h] = [
                Head(int(r.partner_layer), int(r.partner_head))
                for r in rows.itertuples(index=False)
            ]
    scores = {}
    if not result.table.empty:
        for r in result.table.drop_duplicates("induction_head").itertuples(index=False):
            scores[(int(r.layer), int(r.head))] = float(r.induction_head_score)
    return CircuitLineage(
        model=result.model,
        circuits=circuits,
        ancestors=ancestors,
        initial_circuits=init_circuits,
        initial_partners=init_partners,
        depths=list(log.depths()),
        n_heads=n_heads,
        scores=scores,
    )
