"""Grow a checkpoint on disk: restack its layers tensor by tensor and write the grown folder.

Used by ``induction grow`` for the presets (MIDAS/LIDAS, LLaMA-Pro) and mergekit passthrough
configs. LLaMA-Pro copies get zero output projections, found by tensor name
(:func:`lineage.growth.output_projection_names`; an unrecognised layout is refused).
Works on the safetensors files directly, as mergekit does: no model is instantiated, each
output layer's tensors are its source layer's tensors under the new index, and transformers
rebuilds per-layer state (``layer_idx``, caches) from the new ``config.json`` at load time.
Non-layer tensors (embeddings, final norm, head) are copied unchanged.

``config.json`` gets the new depth (``num_hidden_layers`` / ``n_layer`` / ``num_layers``) and
its per-layer lists (``layer_types``, ``no_rope_layers``) reordered like the layers. Tokenizer
and generation files are copied; ``card.json`` (the source's training card) is not. The new
``duplication_log.json`` extends the source's own log when it has one.

The output folder is assembled in a temporary sibling folder and renamed into place, so a
failed run leaves nothing half-written. An existing output folder is refused unless
``force``; the input checkpoint is never written to, and ``out`` may not contain it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from induction.errors import InputError, LineageError
from induction.models.checkpoint import read_config_facts
from induction.models.layers import LAYER_KEY, PER_LAYER_KEYS
from lineage.log import LOG_FILE, DuplicationLog, folder_log

WEIGHTS_INDEX = "model.safetensors.index.json"
SKIP_FILES = {"config.json", LOG_FILE, "card.json", "loop_plan.json", WEIGHTS_INDEX}
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
DEFAULT_SHARD_BYTES = 4 * 2**30


@dataclass
class Checkpoint:
    folder: Path
    config: dict
    depth_key: str
    depth: int
    weights: dict[str, Path]  # tensor name -> safetensors file
    layer_prefix: str
    log: DuplicationLog | None


def resolve_checkpoint(spec: str | Path) -> Path:
    """The checkpoint folder a spec names, by :func:`induction.models.specs.resolve_spec` (the same
    precedence as ``load_model``: ``grown`` is the zoo model, ``./grown`` a local folder)."""
    from induction.models.specs import SpecNotFoundError, resolve_spec

    text = os.fspath(spec) if isinstance(spec, str | os.PathLike) else type(spec).__name__
    try:
        ms = resolve_spec(spec)
    except SpecNotFoundError:
        raise InputError(f"no such checkpoint folder: {text}") from None
    if ms.kind in ("zoo", "folder") and ms.path is not None:  # (resolve_spec sets the path)
        return ms.path
    if ms.kind == "hub":
        raise InputError(
            f"{text} is not a zoo model or a local folder (a hub name?); `induction grow` needs "
            "a local checkpoint folder: download the model to a folder first"
        )
    what = {"object": "a model object", "packaged_gguf": "a packaged .gguf model"}
    raise InputError(
        f"{text} is {what.get(ms.kind, 'a .gguf file')}; `induction grow` needs a checkpoint folder"
    )


def read_checkpoint(spec: str | Path) -> Checkpoint:
    folder = resolve_checkpoint(spec)
    facts = read_config_facts(folder)
    if facts.looped:
        raise InputError(
            f"{folder} is a looped checkpoint (loop_plan.json): its stored block is run several "
            "times, so growing it is not supported"
        )
    weights = _weight_files(folder)
    prefix = _layer_prefix(weights, facts.depth, folder)
    log = folder_log(folder, facts.depth)
    return Checkpoint(folder, facts.config, facts.depth_key, facts.depth, weights, prefix, log)


def _weight_files(folder: Path) -> dict[str, Path]:
    """``{tensor name: safetensors file}``, with the checks ``induction info`` applies
    (truncated or empty files, an index naming a missing shard, a malformed weight map)."""
    from induction.models.loading import check_safetensors

    return check_safetensors(folder, InputError)


def _layer_prefix(weights: dict[str, Path], depth: int, folder: Path) -> str:
    found: dict[str, set[int]] = {}
    for name in weights:
        m = LAYER_KEY.match(name)
        if m:
            found.setdefault(m["prefix"], set()).add(int(m["i"]))
    for prefix, idx in found.items():
        if idx == set(range(depth)):
            return prefix
    raise InputError(
        f"cannot find the {depth} decoder layers in {folder}'s tensor names "
        f"(looked for <prefix>.layers.<i>. and similar; found {sorted(found) or 'none'})"
    )


def restacked_names(ck: Checkpoint, order: list[int]) -> list[tuple[str, str]]:
    """(output tensor name, source tensor name) pairs for the layer order ``order``."""
    by_layer: dict[int, list[tuple[str, str]]] = {}
    others = []
    for name in ck.weights:
        m = LAYER_KEY.match(name)
        if m and m["prefix"] == ck.layer_prefix:
            by_layer.setdefault(int(m["i"]), []).append((m["rest"], name))
        else:
            others.append((name, name))
    pairs = []
    for j, i in enumerate(order):
        if not 0 <= i < ck.depth:
            raise LineageError(f"layer order names layer {i}; the checkpoint has {ck.depth}")
        pairs += [(f"{ck.layer_prefix}.{j}.{rest}", name) for rest, name in by_layer[i]]
    return others + pairs


def _new_config(ck: Checkpoint, order: list[int], dtype: str | None) -> dict:
    config = dict(ck.config)
    config[ck.depth_key] = len(order)
    for key in PER_LAYER_KEYS:
        values = config.get(key)
        if isinstance(values, list) and len(values) == ck.depth:
            config[key] = [values[i] for i in order]
    if dtype is not None:
        for key in ("torch_dtype", "dtype"):
            if key in config:
                config[key] = dtype
        config.setdefault("torch_dtype", dtype)
    return config


def write_restacked(
    ck: Checkpoint,
    order: list[int],
    log: DuplicationLog,
    out: str | Path,
    *,
    dtype: str | None = None,
    force: bool = False,
    max_shard_bytes: int = DEFAULT_SHARD_BYTES,
    allow_large: bool = False,
    zero: set[str] | frozenset[str] = frozenset(),
) -> Path:
    """Write ``ck`` with its layers in ``order`` (source index per output layer) plus ``log``;
    output tensors named in ``zero`` are written as zeros (same shape and dtype).

    The output is claimed for the whole write (:func:`induction.store.io.claim_output`: a concurrent
    run to the same ``out`` fails at once) and its size is estimated from the safetensors
    headers first: more than the free disk space is refused, and more than
    filling more than half the free disk (or above ``$INDUCTION_LARGE_OUTPUT``) needs
    ``allow_large`` (``--yes``).
    """
    from induction.store.io import check_outputs, claim_output

    out = Path(out).expanduser()
    out_r, in_r = out.resolve(), ck.folder.resolve()
    if out_r in in_r.parents:
        raise InputError(f"refusing to write {out}: it contains the input checkpoint {ck.folder}")
    check_outputs({"--out": out}, [ck.folder])
    with claim_output(out):
        return _write_restacked(
            ck, order, log, out, dtype, force, max_shard_bytes, allow_large, zero
        )


def _write_restacked(
    ck,
    order,
    log,
    out: Path,
    dtype,
    force,
    max_shard_bytes,
    allow_large,
    zero: AbstractSet[str] = frozenset(),
):
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    from induction.store.io import check_output_size, note_written

    if out.exists() and not out.is_dir():
        raise InputError(f"output {out} exists and is not a folder")
    if out.exists() and any(out.iterdir()) and not force:
        raise InputError(f"output folder {out} exists and is not empty; pass --force to replace it")
    log.check_depth(len(order))
    torch_dtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
    cast = torch_dtype.get(dtype) if dtype else None

    pairs = restacked_names(ck, order)
    sizes: dict[str, int] = {}
    out_sizes: dict[str, int] = {}  # bytes written, where a cast changes them
    for f in set(ck.weights.values()):
        with safe_open(str(f), framework="pt") as fh:
            for name in fh.keys():
                sl = fh.get_slice(name)
                n = 1
                for d in sl.get_shape():
                    n *= d
                sizes[name] = n * _itemsize(sl.get_dtype())
                if cast is not None and sl.get_dtype() in ("F64", "F32", "F16", "BF16"):
                    out_sizes[name] = n * torch.tensor([], dtype=cast).element_size()
    shards: list[list[tuple[str, str]]] = [[]]
    used = 0
    for pair in pairs:
        if shards[-1] and used + sizes[pair[1]] > max_shard_bytes:
            shards.append([])
            used = 0
        shards[-1].append(pair)
        used += sizes[pair[1]]

    extra = sum(p.stat().st_size for p in ck.folder.iterdir() if p.is_file())  # small files
    total = sum(out_sizes.get(old, sizes[old]) for _, old in pairs)
    check_output_size(out, total + extra, confirmed=allow_large)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        names = (
            ["model.safetensors"]
            if len(shards) == 1
            else [f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors" for k in range(len(shards))]
        )
        weight_map = {}
        handles: dict[Path, Any] = {}  # safetensors' safe_open handles (untyped)
        try:
            for shard, fname in zip(shards, names):
                tensors = {}
                for new, old in shard:
                    f = ck.weights[old]
                    if f not in handles:
                        handles[f] = safe_open(str(f), framework="pt").__enter__()
                    t = handles[f].get_tensor(old)
                    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                        raise InputError(
                            f"{f}: weight {old} holds NaN or infinite values; the checkpoint "
                            "is damaged (or diverged): restore it before growing it"
                        )
                    if cast is not None and t.is_floating_point():
                        t = t.to(cast)
                    if new in zero:
                        t = torch.zeros_like(t)
                    tensors[new] = t.contiguous().clone()
                    weight_map[new] = fname
                save_file(tensors, str(tmp / fname), metadata={"format": "pt"})
                del tensors
        finally:
            for h in handles.values():
                h.__exit__(None, None, None)
        if len(shards) > 1:
            total = sum(sizes[old] for _, old in pairs)
            (tmp / WEIGHTS_INDEX).write_text(
                json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=1)
            )
        (tmp / "config.json").write_text(json.dumps(_new_config(ck, order, dtype), indent=2) + "\n")
        for p in ck.folder.iterdir():
            if (
                p.is_file()
                and p.name not in SKIP_FILES
                and not p.name.startswith(".")
                and p.suffix not in (".safetensors", *PICKLE_SUFFIXES)
            ):
                shutil.copy2(p, tmp / p.name)
        log.save(tmp / LOG_FILE)
        os.chmod(tmp, 0o755)
        old = None
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / "x")
        os.replace(tmp, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    note_written(out, replaced=old is not None)
    return out


def _itemsize(st_dtype: str) -> int:
    return {
        "F64": 8,
        "I64": 8,
        "U64": 8,
        "F32": 4,
        "I32": 4,
        "U32": 4,
        "F16": 2,
        "BF16": 2,
        "I16": 2,
        "U16": 2,
        "I8": 1,
        "U8": 1,
        "BOOL": 1,
        "F8_E4M3": 1,
        "F8_E5M2": 1,
    }.get(st_dtype, 4)


def grow_checkpoint(
    checkpoint: str | Path,
    out: str | Path,
    *,
    preset: str = "lidas",
    block: int = 4,
    every: int | None = None,
    step: int | None = None,
    force: bool = False,
    allow_large: bool = False,
) -> DuplicationLog:
    """Apply one MIDAS or LIDAS step, or LLaMA-Pro expansion (``preset="llama-pro"`` with
    ``every``), to a checkpoint folder (:mod:`lineage.growth` presets) and write the grown
    checkpoint plus its duplication log (extending the source's own log)."""
    from lineage.growth import OTHER_PRESETS, PRESETS

    if preset not in PRESETS and preset not in OTHER_PRESETS:
        raise InputError(
            f"unknown growth preset {preset!r}; use one of {', '.join([*PRESETS, *OTHER_PRESETS])}"
        )
    if preset == "llama-pro" and every is None:
        raise InputError("the llama-pro preset needs --every K (a copy after every K layers)")
    ck = read_checkpoint(checkpoint)
    log = (
        DuplicationLog.from_json(ck.log.to_json())
        if ck.log is not None
        else DuplicationLog(initial_depth=ck.depth)
    )
    if step is None:
        step = log.events[-1].step if log.events else 0
    if preset == "llama-pro" and every is not None:  # (checked above)
        return _grow_llama_pro(ck, out, log, every, step, force, allow_large)
    source, insert_at = PRESETS[preset](ck.depth, block)
    event = log.record_copy(
        step, preset, source, insert_at, note=f"{preset} block {block} applied to {ck.folder.name}"
    )
    order = [p for [(p, _)] in event.layer_map]
    write_restacked(ck, order, log, out, force=force, allow_large=allow_large)
    return log


def _grow_llama_pro(
    ck: Checkpoint,
    out: str | Path,
    log: DuplicationLog,
    every: int,
    step: int,
    force: bool,
    allow_large: bool = False,
) -> DuplicationLog:
    """LLaMA-Pro on disk: restack with a copy after every ``every``-th layer and write the
    copies' output projections (``o_proj``, ``down_proj`` or equivalents) as zeros."""
    from lineage.growth import llama_pro_layer_map, llama_pro_order, output_projection_names

    order, zeroed = llama_pro_order(ck.depth, every)
    rests: dict[int, list[str]] = {}
    for name in ck.weights:
        m = LAYER_KEY.match(name)
        if m and m["prefix"] == ck.layer_prefix:
            rests.setdefault(int(m["i"]), []).append(m["rest"])
    zero = set()
    for j in zeroed:
        src = order[j]
        for rest in output_projection_names(rests[src], where=f"layer {src} of {ck.folder}"):
            zero.add(f"{ck.layer_prefix}.{j}.{rest}")
    log.record_mix(
        step,
        llama_pro_layer_map(order),
        operator="llama-pro",
        note=f"llama-pro every {every} applied to {ck.folder.name}: zero-output copies at {zeroed}",
        zeroed=zeroed,
    )
    write_restacked(ck, order, log, out, force=force, allow_large=allow_large, zero=zero)
    return log
