"""mergekit passthrough configs: layer stacks as duplication logs.

A passthrough config (the real-world format for layer stacking, docs/research.md)::

    slices:
      - sources:
          - model: upstage/base-model
            layer_range: [0, 24]
      - sources:
          - model: upstage/base-model
            layer_range: [8, 32]
    merge_method: passthrough
    dtype: bfloat16

``layer_range`` is half-open and output layers are numbered consecutively in slice order, so
this (SOLAR 10.7B) gives 48 layers: 0..23 from source layers 0..23, 24..47 from 8..31.

:func:`parse_config` validates and returns a :class:`StackPlan`; :func:`mergekit_log` turns
it into a :class:`lineage.log.DuplicationLog` with one ``mergekit`` event (its ``layer_map``
gives every output layer its source layer, weight 1); :func:`apply_mergekit` applies it to a
local checkpoint and writes the stacked model plus its log (see :mod:`lineage.checkpoint`).

Rejected with a one-line :class:`LineageError`: a merge method other than ``passthrough``
(they average weights, no layer is a copy), a slice with several sources (a merge; sources of
unequal length are reported as such, as mergekit itself does), slices naming several source
models, empty or reversed ``layer_range`` s, ranges outside the source's layers, per-source
``parameters`` (e.g. ``scale``: the copies would not equal their sources) and configs without
``slices``. Applied to a checkpoint, the model named in the config is not fetched: the config's
layer plan is applied to the given checkpoint (the name is kept in the log's note).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from induction.errors import LineageError
from lineage.log import DuplicationLog

SUPPORTED_DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class StackPlan:
    """A validated passthrough config: one source model, slices of its layers."""

    model: str
    slices: tuple[tuple[int, int], ...]  # half-open [a, b) per slice, in output order
    dtype: str | None = None

    @property
    def order(self) -> list[int]:
        """Source layer of every output layer."""
        return [i for a, b in self.slices for i in range(a, b)]

    @property
    def depth(self) -> int:
        return sum(b - a for a, b in self.slices)

    @property
    def min_source_depth(self) -> int:
        return max(b for _, b in self.slices)

    def describe(self) -> str:
        return "+".join(f"[{a},{b})" for a, b in self.slices)

    def check_source_depth(self, depth: int) -> None:
        for k, (a, b) in enumerate(self.slices):
            if b > depth:
                raise LineageError(
                    f"mergekit slice {k}: layer_range [{a}, {b}] is outside the source model's "
                    f"layers 0..{depth - 1} (layer_range is half-open: at most [.., {depth}])"
                )


def load_config(config: str | Path | dict) -> dict:
    """Read a mergekit YAML file (or pass a parsed dict through)."""
    if isinstance(config, dict):
        return config
    import yaml

    path = Path(config)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise LineageError(f"mergekit config not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LineageError(f"cannot read mergekit config {path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise LineageError(f"mergekit config {path} is not valid YAML{where}") from None
    if not isinstance(data, dict):
        raise LineageError(f"mergekit config {path} must be a YAML mapping with slices")
    return data


def _layer_range(value: Any, where: str) -> tuple[int, int]:
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise LineageError(f"{where}: layer_range must be two integers [start, end], got {value!r}")
    a, b = value
    if a < 0:
        raise LineageError(f"{where}: layer_range [{a}, {b}] starts below 0")
    if b <= a:
        raise LineageError(
            f"{where}: layer_range [{a}, {b}] is empty (half-open: end must exceed start)"
        )
    return a, b


def parse_config(config: str | Path | dict, source_depth: int | None = None) -> StackPlan:
    """Validate a passthrough config; ``source_depth`` (if known) bounds the layer ranges."""
    data = load_config(config)
    method = data.get("merge_method")
    if method is None:
        raise LineageError(
            "mergekit config has no merge_method; layer stacking needs merge_method: passthrough"
        )
    if str(method).lower() != "passthrough":
        raise LineageError(
            f"mergekit merge_method {method!r} is not supported: only passthrough stacks layers "
            "(other methods average weights, so no layer is a copy)"
        )
    slices = data.get("slices")
    if slices is None:
        what = "models:" if "models" in data else "no slices"
        raise LineageError(
            f"mergekit config has {what}; a passthrough layer stack lists slices with "
            "sources and layer_range"
        )
    if not isinstance(slices, list) or not slices:
        raise LineageError("mergekit config: slices must be a non-empty list")
    models: list[str] = []
    spans: list[tuple[int, int]] = []
    for k, sl in enumerate(slices):
        where = f"mergekit slice {k}"
        if not isinstance(sl, dict) or not isinstance(sl.get("sources"), list):
            raise LineageError(f"{where} has no sources list")
        sources = sl["sources"]
        if not sources:
            raise LineageError(f"{where} has no sources")
        ranges = []
        for j, src in enumerate(sources):
            if not isinstance(src, dict) or "layer_range" not in src:
                raise LineageError(f"{where}, source {j}: needs model and layer_range")
            ranges.append(_layer_range(src["layer_range"], f"{where}, source {j}"))
        if len(sources) > 1:
            lengths = [b - a for a, b in ranges]
            if len(set(lengths)) > 1:
                raise LineageError(
                    f"{where}: sources have unequal layer counts "
                    f"({' vs '.join(map(str, lengths))}); a slice's sources must be equally long"
                )
            raise LineageError(
                f"{where} has {len(sources)} sources: combining models in a slice is a merge, "
                "not a passthrough stack"
            )
        src = sources[0]
        if "parameters" in src or "parameters" in sl:
            raise LineageError(
                f"{where}: per-slice parameters (e.g. scale) are not supported; the stacked "
                "layers would not be copies of their sources"
            )
        model = src.get("model")
        if not isinstance(model, str) or not model:
            raise LineageError(f"{where}: source model must be a name or path, got {model!r}")
        models.append(model)
        spans.append(ranges[0])
    distinct = list(dict.fromkeys(models))
    if len(distinct) > 1:
        raise LineageError(
            f"mergekit slices name several source models ({', '.join(distinct)}); a duplication "
            "log needs one source network"
        )
    dtype = data.get("dtype")
    if dtype is not None and str(dtype) not in SUPPORTED_DTYPES:
        raise LineageError(
            f"mergekit dtype {dtype!r} is not supported; use {', '.join(SUPPORTED_DTYPES)}"
        )
    plan = StackPlan(model=distinct[0], slices=tuple(spans), dtype=dtype)
    if source_depth is not None:
        plan.check_source_depth(source_depth)
    return plan


def mergekit_log(
    config: str | Path | dict | StackPlan,
    source_depth: int | None = None,
    *,
    base: DuplicationLog | None = None,
    step: int | None = None,
    note: str = "",
) -> DuplicationLog:
    """The duplication log of a passthrough stack.

    ``source_depth`` is the source model's depth; without it (and without ``base``) the log
    starts from the smallest depth consistent with the config (the largest range end). With
    ``base`` (the source model's own log) the event is appended to a copy of it. ``step``
    defaults to the base log's last step (0 without one).
    """
    plan = config if isinstance(config, StackPlan) else parse_config(config)
    if base is not None:
        if source_depth is not None and source_depth != base.final_depth:
            raise LineageError(
                f"source model has {source_depth} layers but its duplication log ends at "
                f"{base.final_depth}"
            )
        source_depth = base.final_depth
        log = DuplicationLog.from_json(base.to_json())
    else:
        source_depth = plan.min_source_depth if source_depth is None else source_depth
        log = DuplicationLog(initial_depth=source_depth)
    plan.check_source_depth(source_depth)
    if step is None:
        step = log.events[-1].step if log.events else 0
    text = note or f"mergekit passthrough of {plan.model}: slices {plan.describe()}"
    log.record_mix(step, [[(i, 1.0)] for i in plan.order], operator="mergekit", note=text)
    return log


def apply_mergekit(
    config: str | Path | dict,
    checkpoint: str | Path,
    out: str | Path,
    *,
    step: int | None = None,
    force: bool = False,
    allow_large: bool = False,
) -> DuplicationLog:
    """Apply a passthrough config to a local checkpoint folder; write the stacked checkpoint
    (weights, config, tokenizer files) and its ``duplication_log.json`` to ``out``.

    The output size is estimated first (:func:`lineage.checkpoint.write_restacked`): a stack
    filling more than half the free disk (or above ``$INDUCTION_LARGE_OUTPUT``) needs
    ``allow_large``."""
    from lineage.checkpoint import read_checkpoint, write_restacked

    src = read_checkpoint(checkpoint)
    plan = parse_config(config, source_depth=src.depth)
    log = mergekit_log(
        plan,
        src.depth,
        base=src.log,
        step=step,
        note=f"mergekit passthrough of {plan.model} applied to {src.folder.name}: "
        f"slices {plan.describe()}",
    )
    write_restacked(
        src, plan.order, log, out, dtype=plan.dtype, force=force, allow_large=allow_large
    )
    return log
