"""The duplication log: how a grown model's layers descend from the initial network's.

File format (JSON, ``format = "induction-workbench/duplication-log"``, ``version = 1``)::

    {
      "format": "induction-workbench/duplication-log",
      "version": 1,
      "initial_depth": 2,
      "events": [
        {"step": 600, "operator": "lidas", "source": [0, 2], "insert_at": 1,
         "depth_before": 2, "depth_after": 4,
         "layer_map": [[[0, 1.0]], [[0, 1.0]], [[1, 1.0]], [[1, 1.0]]],
         "note": "optional free text"}
      ]
    }

``layer_map[i]`` lists the parents of layer ``i`` after the event as ``[index_before, weight]``
pairs. A copy has one parent with weight 1; methods that mix layers (LiGO-like) give several
weighted parents. ``source`` is the half-open span that was copied and ``insert_at`` the index
(in the grown model) of the first copy; both are ``null`` for operators that are not a single
span copy (``mix``, ``mergekit``, ``llama-pro``, and ``inferred``: a log rebuilt from weights by
:mod:`lineage.infer`), whose ``layer_map`` alone defines the event.

``llama-pro`` is LLaMA-Pro block expansion (Wu et al. 2024; docs/research.md): after every
k-th layer a copy of it is inserted whose output projections (``o_proj``, ``down_proj``) are
zero, so the grown model computes the original function. Such an event lists the copies'
indices (in the grown model) under the optional key ``zeroed``; a copy's parent in
``layer_map`` is its source layer. ``zeroed`` is omitted when empty.
Because parents always index the previous stage, ancestry is acyclic by construction; a log
whose indices point outside the previous stage is rejected.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import cast

from induction.errors import InputError, LineageError
from induction.store.io import guards_inputs

#: The largest training step a duplication log or a sweep dataset records: far beyond any run,
#: and inside the int64 of the dataset's ``step`` column.
MAX_STEP = 10**12

FORMAT = "induction-workbench/duplication-log"
VERSION = 1
#: The log's file name beside a grown checkpoint's weights.
LOG_FILE = "duplication_log.json"
OPERATORS = ("copy", "midas", "lidas", "top", "mix", "mergekit", "inferred", "llama-pro")
SPAN_OPERATORS = ("copy", "midas", "lidas", "top")

Parents = list[tuple[int, float]]


def copy_layer_map(depth_before: int, source: tuple[int, int], insert_at: int) -> list[Parents]:
    """Layer map of copying layers ``source[0]:source[1]`` and inserting them at ``insert_at``."""
    old = list(range(depth_before))
    new = old[:insert_at] + list(range(*source)) + old[insert_at:]
    return [[(p, 1.0)] for p in new]


@dataclass
class GrowthEvent:
    step: int
    operator: str
    depth_before: int
    depth_after: int
    layer_map: list[Parents]
    source: tuple[int, int] | None = None
    insert_at: int | None = None
    note: str = ""
    #: Layers (in the grown model) whose output projections were zeroed (``llama-pro``).
    zeroed: list[int] = field(default_factory=list)

    def to_json(self) -> dict:
        d = asdict(self)
        d["layer_map"] = [[[p, w] for p, w in parents] for parents in self.layer_map]
        d["source"] = list(self.source) if self.source is not None else None
        if not self.zeroed:
            del d["zeroed"]
        return d


@dataclass
class DuplicationLog:
    initial_depth: int
    events: list[GrowthEvent] = field(default_factory=list)

    # ------------------------------------------------------------------ building
    def record_copy(
        self, step: int, operator: str, source: tuple[int, int], insert_at: int, note: str = ""
    ) -> GrowthEvent:
        before = self.final_depth
        event = GrowthEvent(
            step=step,
            operator=operator,
            depth_before=before,
            depth_after=before + source[1] - source[0],
            layer_map=copy_layer_map(before, source, insert_at),
            source=(source[0], source[1]),
            insert_at=insert_at,
            note=note,
        )
        self.events.append(event)
        self.validate()
        return event

    def record_mix(
        self,
        step: int,
        layer_map: list[Parents],
        operator: str = "mix",
        note="",
        zeroed: list[int] | None = None,
    ) -> GrowthEvent:
        event = GrowthEvent(
            step,
            operator,
            self.final_depth,
            len(layer_map),
            layer_map,
            note=note,
            zeroed=sorted(zeroed or []),
        )
        self.events.append(event)
        self.validate()
        return event

    # ------------------------------------------------------------------ queries
    @property
    def final_depth(self) -> int:
        return self.events[-1].depth_after if self.events else self.initial_depth

    def depths(self) -> list[int]:
        """Depth of every stage: the initial network, then after each event."""
        return [self.initial_depth] + [e.depth_after for e in self.events]

    def ancestors(self, layer: int, stage: int | None = None) -> dict[int, float]:
        """Ancestor layers in the initial network of ``layer`` at ``stage`` (default: the final
        model), with weights (products of edge weights along each path, summed over paths)."""
        stage = len(self.events) if stage is None else stage
        depth = self.depths()[stage]
        if not 0 <= layer < depth:
            raise LineageError(f"layer {layer} out of range for a {depth}-layer stage")
        weights = {layer: 1.0}
        for event in reversed(self.events[:stage]):
            nxt: dict[int, float] = {}
            for child, w in weights.items():
                for parent, pw in event.layer_map[child]:
                    nxt[parent] = nxt.get(parent, 0.0) + w * pw
            weights = nxt
        return dict(sorted(weights.items()))

    def ancestor_of(self, layer: int) -> int:
        """The single initial-network ancestor of a final layer (copy-only lineages)."""
        anc = self.ancestors(layer)
        if len(anc) != 1:
            raise LineageError(
                f"layer {layer} descends from several layers {sorted(anc)}; use ancestors()"
            )
        return next(iter(anc))

    def ancestor_map(self) -> list[dict[int, float]]:
        return [self.ancestors(i) for i in range(self.final_depth)]

    def check_depth(self, n_layers: int) -> None:
        if n_layers != self.final_depth:
            raise LineageError(
                f"duplication log ends at {self.final_depth} layers but the model has {n_layers}; "
                "pass the log written when this model was grown"
            )

    # ------------------------------------------------------------------ validation / IO
    def validate(self) -> None:
        if not isinstance(self.initial_depth, int) or self.initial_depth < 1:
            raise LineageError(
                f"initial_depth must be a positive integer, got {self.initial_depth!r}"
            )
        depth, last_step = self.initial_depth, None
        for k, e in enumerate(self.events):
            where = f"duplication log event {k}"
            if e.operator not in OPERATORS:
                raise LineageError(
                    f"{where}: unknown operator {e.operator!r} (known: {', '.join(OPERATORS)})"
                )
            if e.depth_before != depth:
                raise LineageError(
                    f"{where}: depth_before is {e.depth_before} but the previous stage "
                    f"has {depth} layers"
                )
            if last_step is not None and e.step < last_step:
                raise LineageError(
                    f"{where}: step {e.step} comes before the previous event's {last_step}"
                )
            if len(e.layer_map) != e.depth_after:
                raise LineageError(
                    f"{where}: layer_map has {len(e.layer_map)} entries for "
                    f"depth_after {e.depth_after}"
                )
            for i, parents in enumerate(e.layer_map):
                if not parents:
                    raise LineageError(f"{where}: layer {i} has no parent")
                for p, w in parents:
                    if not (isinstance(p, int) and 0 <= p < depth):
                        raise LineageError(
                            f"{where}: layer {i} names parent {p!r}, outside the previous "
                            f"stage's layers 0..{depth - 1}"
                        )
                    if not w > 0:
                        raise LineageError(f"{where}: layer {i} has non-positive weight {w!r}")
            bad = [z for z in e.zeroed if not (isinstance(z, int) and 0 <= z < e.depth_after)]
            if bad:
                raise LineageError(
                    f"{where}: zeroed names layer {bad[0]!r}, outside layers 0..{e.depth_after - 1}"
                )
            if e.operator in SPAN_OPERATORS:
                self._validate_span(where, e, depth)
            depth, last_step = e.depth_after, e.step

    @staticmethod
    def _validate_span(where: str, e: GrowthEvent, depth: int) -> None:
        if e.source is None or e.insert_at is None:
            raise LineageError(f"{where}: a {e.operator} event needs source and insert_at")
        a, b = e.source
        if not (0 <= a < b <= depth):
            raise LineageError(f"{where}: source span [{a}, {b}) is outside layers 0..{depth - 1}")
        if not 0 <= e.insert_at <= depth:
            raise LineageError(f"{where}: insert_at {e.insert_at} is outside 0..{depth}")
        if e.layer_map != copy_layer_map(depth, (a, b), e.insert_at):
            raise LineageError(
                f"{where}: layer_map does not match copying [{a}, {b}) to {e.insert_at}"
            )

    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "version": VERSION,
            "initial_depth": self.initial_depth,
            "events": [e.to_json() for e in self.events],
        }

    @guards_inputs
    def save(self, path: str | Path) -> None:
        """Write the log as JSON, atomically; a log read by :meth:`load` is not written back
        over the file it was read from (its ``inputs``)."""
        from induction.store.io import write_text

        write_text(Path(path), json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def from_json(cls, data: object) -> DuplicationLog:
        if not isinstance(data, dict):
            raise LineageError("duplication log must be a JSON object")
        if data.get("format") != FORMAT:
            raise LineageError(
                f"not a duplication log: format is {data.get('format')!r}, expected {FORMAT!r}"
            )
        if data.get("version") != VERSION:
            raise LineageError(
                f"duplication log version {data.get('version')!r} is not supported "
                f"(this workbench reads {VERSION})"
            )
        try:
            events = [
                GrowthEvent(
                    step=int(e["step"]),
                    operator=str(e["operator"]),
                    depth_before=int(e["depth_before"]),
                    depth_after=int(e["depth_after"]),
                    layer_map=[[(p, float(w)) for p, w in parents] for parents in e["layer_map"]],
                    source=tuple(e["source"]) if e.get("source") is not None else None,
                    insert_at=e.get("insert_at"),
                    note=str(e.get("note", "")),
                    zeroed=list(e.get("zeroed") or []),
                )
                for e in data.get("events", [])
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise LineageError(f"malformed duplication log event: {exc!r}") from None
        # a missing or non-integer depth is refused by validate(), in one line
        log = cls(initial_depth=cast(int, data.get("initial_depth")), events=events)
        log.validate()
        return log

    @classmethod
    def load(cls, path: str | Path) -> DuplicationLog:
        path = Path(path)
        if path.is_dir():
            path = path / LOG_FILE
        from induction.store.io import read_json

        if not path.exists() and not path.is_symlink():
            raise LineageError(f"duplication log not found: {path}")
        try:
            data = read_json(path, "duplication log")
        except InputError as exc:
            raise LineageError(str(exc)) from None
        log = cls.from_json(data)
        log.inputs = (path.absolute(),)  # type: ignore[attr-defined]  (not a field: not saved)
        return log


def folder_log(folder: str | Path, depth: int) -> DuplicationLog | None:
    """The ``duplication_log.json`` of a checkpoint folder, checked against its stored
    ``depth``; None when the folder has none."""
    path = Path(folder) / LOG_FILE
    if not path.is_file():
        return None
    log = DuplicationLog.load(path)
    log.check_depth(depth)
    return log


def duplication_log(model) -> DuplicationLog | None:
    """The duplication log that came with a loaded model (``induction.LoadedModel``), checked
    against its depth; None for a model that was not grown (no ``duplication_log.json``)."""
    path = getattr(model, "duplication_log_path", None)
    if path is None:
        return None
    log = DuplicationLog.load(path)
    log.check_depth(model.info.n_layers)
    return log
