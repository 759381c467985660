"""Per-head ancestry: which head of an earlier network every head of the final model descends from.

A grown model's history is a chain of *stages*: stage 0 is the initial network, stage ``k``
the network right after the ``k``-th growth event of its duplication log
(:class:`lineage.log.DuplicationLog`). A looped model adds one more transition: its stored
layers (the block, plus any prelude/coda) are the earlier stage and the unrolled layers the
final one, every pass of the block mapping to the stored layer it runs.

Head rule (docs/research.md, "Depth growth"): a copied layer's head ``j`` inherits head ``j`` of
its source layer, so a head's ancestors are its layer's ancestor layers, same head index. Layers
that mix several parents (LiGO-like) have weighted ancestor sets; the weight of an ancestor is
the sum over paths of the product of edge weights along the path (as in
:meth:`DuplicationLog.ancestors`).

Every edge of a transition has a *kind*:

- ``keep``: the layer continues in the new stage (for a span copy, every layer outside the
  inserted copies; for other single-parent maps, the first child that names a parent);
- ``copy``: a new duplicate (the inserted span, or a later child naming an already used
  parent, as in a mergekit passthrough stack);
- ``mix``: one of several weighted parents, or a single parent with a weight other than 1;
- ``loop``: a later pass of a looped block (pass 0 and prelude/coda layers are ``keep``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from induction.errors import LineageError
from induction.heads import head_label
from lineage.log import SPAN_OPERATORS, DuplicationLog

if TYPE_CHECKING:
    from induction.models.looped import LoopPlan

KINDS = ("keep", "copy", "mix", "loop")


@dataclass(frozen=True)
class Transition:
    """How the layers of stage ``stage`` descend from those of stage ``stage - 1``."""

    stage: int
    operator: str
    step: int | None  # training step of the growth event; None for a loop unroll
    layer_map: tuple[tuple[tuple[int, float], ...], ...]
    kinds: tuple[str, ...]  # one per child layer
    note: str = ""


@dataclass(frozen=True)
class Lineage:
    """The stages of a model's history and the transitions between them."""

    depths: tuple[int, ...]  # layers per stage, stage 0 first
    transitions: tuple[Transition, ...]
    n_heads: int
    source: str  # "log", "loop", "log+loop" or "none"
    loop_plan: LoopPlan | None = field(default=None, compare=False)

    # ---------------------------------------------------------------- constructors
    @classmethod
    def build(
        cls,
        log: DuplicationLog | None = None,
        loop_plan: LoopPlan | None = None,
        n_heads: int | None = None,
        n_layers: int | None = None,
    ) -> Lineage:
        """Lineage from a duplication log and/or a loop plan (either may be None).

        With a loop plan, the log (if any) describes the stored layers. ``n_layers`` (the
        model's depth, unrolled for looped models) is checked against the final stage.
        Without either, every layer is its own ancestor (a dense model: one stage).
        """
        if n_heads is None or not isinstance(n_heads, int) or n_heads < 1:
            raise LineageError(f"n_heads must be a positive integer, got {n_heads!r}")
        depths: list[int] = []
        transitions: list[Transition] = []
        if log is not None:
            log.validate()
            depths = list(log.depths())
            for k, event in enumerate(log.events, start=1):
                transitions.append(
                    Transition(
                        stage=k,
                        operator=event.operator,
                        step=event.step,
                        layer_map=tuple(
                            tuple((p, float(w)) for p, w in ps) for ps in event.layer_map
                        ),
                        kinds=_event_kinds(event),
                        note=event.note,
                    )
                )
        if loop_plan is not None:
            loop_plan.validate()
            if depths and depths[-1] != loop_plan.stored_layers:
                raise LineageError(
                    f"duplication log ends at {depths[-1]} layers but the loop plan stores "
                    f"{loop_plan.stored_layers}"
                )
            if not depths:
                depths = [loop_plan.stored_layers]
            unrolled = loop_plan.unrolled_layers
            depths.append(len(unrolled))
            transitions.append(
                Transition(
                    stage=len(depths) - 1,
                    operator="loop",
                    step=None,
                    layer_map=tuple(((stored, 1.0),) for stored, _ in unrolled),
                    kinds=tuple("loop" if r > 0 else "keep" for _, r in unrolled),
                    note=f"{loop_plan.block}-layer block x {loop_plan.loops} loops",
                )
            )
        if not depths:
            if n_layers is None:
                raise LineageError("a model without lineage needs n_layers")
            depths = [n_layers]
        if n_layers is not None and depths[-1] != n_layers:
            what = "loop plan unrolls to" if loop_plan is not None else "duplication log ends at"
            raise LineageError(
                f"{what} {depths[-1]} layers but the model has {n_layers}; pass the log "
                "written when this model was grown"
            )
        source = "+".join(
            s for s, on in (("log", log is not None), ("loop", loop_plan is not None)) if on
        )
        return cls(tuple(depths), tuple(transitions), n_heads, source or "none", loop_plan)

    # ---------------------------------------------------------------- queries
    @property
    def n_stages(self) -> int:
        return len(self.depths)

    @property
    def final_stage(self) -> int:
        return len(self.depths) - 1

    @property
    def final_depth(self) -> int:
        return self.depths[-1]

    def stage_step(self, stage: int) -> int | None:
        """Training step at which ``stage`` began (None for stage 0 and loop unrolls)."""
        return None if stage == 0 else self.transitions[stage - 1].step

    def check_stage(self, stage: int | None, name: str = "stage") -> int:
        if stage is None:
            return self.final_stage
        if not isinstance(stage, int) or not 0 <= stage <= self.final_stage:
            raise LineageError(
                f"{name} {stage!r} is outside the lineage's stages 0..{self.final_stage}"
            )
        return stage

    def layer_ancestors(
        self, layer: int, stage: int | None = None, to_stage: int = 0
    ) -> dict[int, float]:
        """Weighted ancestor layers at ``to_stage`` of ``layer`` at ``stage`` (default final)."""
        stage = self.check_stage(stage)
        to_stage = self.check_stage(to_stage, "to_stage")
        if to_stage > stage:
            raise LineageError(f"to_stage {to_stage} comes after stage {stage}")
        if not 0 <= layer < self.depths[stage]:
            raise LineageError(
                f"layer {layer} out of range for stage {stage} ({self.depths[stage]} layers)"
            )
        weights = {layer: 1.0}
        for t in reversed(self.transitions[to_stage:stage]):
            nxt: dict[int, float] = {}
            for child, w in weights.items():
                for parent, pw in t.layer_map[child]:
                    nxt[parent] = nxt.get(parent, 0.0) + w * pw
            weights = nxt
        return dict(sorted(weights.items()))

    def layer_paths(
        self, stage: int | None = None, to_stage: int = 0
    ) -> list[dict[int, tuple[float, int, tuple[int, ...], tuple[str, ...]]]]:
        """For every layer of ``stage``: ancestor layer at ``to_stage`` -> (weight, number of
        paths, best path, kinds along the best path). The best path is the one with the largest
        product of weights (ties: lowest layer indices), listed from ``to_stage`` to ``stage``;
        kinds are the edge kinds along it, one per transition."""
        stage = self.check_stage(stage)
        to_stage = self.check_stage(to_stage, "to_stage")
        if to_stage > stage:
            raise LineageError(f"to_stage {to_stage} comes after stage {stage}")
        # state per layer of the current stage: ancestor -> [weight, n_paths, best_w, path, kinds]
        table: list[dict[int, list]] = [
            {i: [1.0, 1, 1.0, (i,), ()]} for i in range(self.depths[to_stage])
        ]
        for t in self.transitions[to_stage:stage]:
            new: list[dict[int, list]] = []
            for child, parents in enumerate(t.layer_map):
                acc: dict[int, list] = {}
                for parent, pw in parents:
                    kind = t.kinds[child]
                    for anc, (w, n, bw, path, kinds) in table[parent].items():
                        cand = (bw * pw, path + (child,), kinds + (kind,))
                        if anc not in acc:
                            acc[anc] = [w * pw, n, *cand]
                            continue
                        entry = acc[anc]
                        entry[0] += w * pw
                        entry[1] += n
                        if cand[0] > entry[2] + 1e-12:
                            entry[2:] = cand
                new.append(acc)
            table = new
        return [{a: (v[0], v[1], v[3], v[4]) for a, v in sorted(entry.items())} for entry in table]


def _event_kinds(event) -> tuple[str, ...]:
    kinds = []
    if event.operator in SPAN_OPERATORS and event.source is not None:
        a, b = event.source
        lo, hi = event.insert_at, event.insert_at + (b - a)
        for i, parents in enumerate(event.layer_map):
            kinds.append("copy" if lo <= i < hi else "keep")
        return tuple(kinds)
    seen: set[int] = set()
    for parents in event.layer_map:
        if len(parents) != 1 or abs(parents[0][1] - 1.0) > 1e-9:
            kinds.append("mix")
            continue
        p = parents[0][0]
        kinds.append("copy" if p in seen else "keep")
        seen.add(p)
    return tuple(kinds)


def as_lineage(
    lineage: Lineage | DuplicationLog | None,
    n_heads: int | None = None,
    loop_plan: LoopPlan | None = None,
    n_layers: int | None = None,
) -> Lineage:
    """Accept a :class:`Lineage`, or build one from a log and/or loop plan."""
    if isinstance(lineage, Lineage):
        if n_layers is not None and lineage.final_depth != n_layers:
            raise LineageError(
                f"lineage ends at {lineage.final_depth} layers but the model has {n_layers}"
            )
        return lineage
    return Lineage.build(lineage, loop_plan=loop_plan, n_heads=n_heads, n_layers=n_layers)


def head_ancestry(
    lineage: Lineage | DuplicationLog | None,
    n_heads: int | None = None,
    *,
    loop_plan: LoopPlan | None = None,
    n_layers: int | None = None,
    stage: int | None = None,
    to_stage: int = 0,
):
    """One row per (head, ancestor): every head of ``stage`` (default: the final model) and
    its ancestor heads at ``to_stage`` (default: the initial network).

    Columns: ``layer``, ``head``, (``block_layer``, ``pass`` for looped models), ``stage``,
    ``ancestor_stage``, ``ancestor_layer``, ``ancestor_head``, ``ancestor`` (label ``L1H3``),
    ``weight`` (sum over paths of products of edge weights; 1 for pure copies), ``share``
    (``weight`` over the head's total weight), ``n_paths``, ``path`` (layer indices of the
    strongest path from the ancestor to the head, ``"1>1>5"``), ``kinds`` (edge kinds along it,
    ``"copy>keep"``), ``copies`` (copy edges on it), ``born_step`` (step of the last copy event
    on it; missing when the head's layer was never a fresh copy), ``primary`` (the ancestor
    with the largest weight, ties to the lowest layer).
    """
    import pandas as pd

    lin = as_lineage(lineage, n_heads=n_heads, loop_plan=loop_plan, n_layers=n_layers)
    stage = lin.check_stage(stage)
    to_stage = lin.check_stage(to_stage, "to_stage")
    paths = lin.layer_paths(stage, to_stage)
    unrolled = None
    if lin.loop_plan is not None and stage == lin.final_stage:
        unrolled = lin.loop_plan.unrolled_layers
    rows = []
    for layer, ancestors in enumerate(paths):
        total = sum(v[0] for v in ancestors.values())
        best = max(ancestors.items(), key=lambda kv: (kv[1][0], -kv[0]))[0]
        for anc, (w, n, path, kinds) in ancestors.items():
            copy_steps = [
                lin.transitions[to_stage + i].step
                for i, k in enumerate(kinds)
                if k == "copy" and lin.transitions[to_stage + i].step is not None
            ]
            for h in range(lin.n_heads):
                row: dict[str, Any] = {"layer": layer, "head": h}
                if unrolled is not None:
                    row["block_layer"], row["pass"] = unrolled[layer]
                row.update(
                    stage=stage,
                    ancestor_stage=to_stage,
                    ancestor_layer=anc,
                    ancestor_head=h,
                    ancestor=head_label(anc, h),
                    weight=w,
                    share=w / total if total else float("nan"),
                    n_paths=n,
                    path=">".join(map(str, path)),
                    kinds=">".join(kinds),
                    copies=sum(k == "copy" for k in kinds),
                    born_step=copy_steps[-1] if copy_steps else None,
                    primary=anc == best,
                )
                rows.append(row)
    df = pd.DataFrame(rows)
    df["born_step"] = df["born_step"].astype("Int64")
    df = df.sort_values(["layer", "head", "ancestor_layer"], kind="stable").reset_index(drop=True)
    df.attrs.update(
        {"source": lin.source, "depths": list(lin.depths), "stage": stage, "to_stage": to_stage}
    )
    return df
