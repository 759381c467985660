"""Load a series of checkpoints of one model without rebuilding the bridge for each.

Booting a TransformerLens bridge costs several times a tiny model's forward passes (most of a
zoo model's load time). Checkpoints of one training run share their architecture, so
:class:`Reloader` boots the bridge once and, for each later checkpoint with the same
``config.json``, the same tokenizer files and the same tensor names and shapes, copies the new
weights into the existing parameters in place (upcast like a fresh load). Anything else (a new
architecture, a grown depth, a looped model, a hub name, a ``.gguf``) is loaded afresh with
:func:`induction.models.loading.load_model`. A swapped model computes exactly what a fresh
load of the same folder computes (tested on a checkpoint series in
``tests/induction/models/test_reload.py``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from induction.errors import ModelLoadError
from induction.models.specs import resolve_spec

_ORIGINAL = "._original_component"
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


@dataclass(frozen=True)
class _Signature:
    """What must match for an in-place weight swap."""

    config: str
    tokenizer: str
    tensors: tuple[tuple[str, tuple[int, ...]], ...]


def _tensor_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.safetensors"))


def _signature(folder: Path) -> _Signature | None:
    """The folder's swap signature; None when it must be loaded afresh (looped, no weights)."""
    from safetensors import safe_open

    if (folder / "loop_plan.json").exists() or not (folder / "config.json").is_file():
        return None
    files = _tensor_files(folder)
    if not files:
        return None
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        config.pop("_name_or_path", None)
        config.pop("torch_dtype", None)  # stored dtype: the load upcasts either way
        config.pop("dtype", None)
        tok = hashlib.sha256()
        for name in _TOKENIZER_FILES:
            if (folder / name).is_file():
                tok.update(name.encode() + (folder / name).read_bytes())
        tensors = []
        for f in files:
            with safe_open(str(f), framework="pt") as fh:
                for key in fh.keys():
                    tensors.append((key, tuple(fh.get_slice(key).get_shape())))
    except (OSError, ValueError):
        return None
    return _Signature(json.dumps(config, sort_keys=True), tok.hexdigest(), tuple(sorted(tensors)))


def _param_index(hf_model: Any) -> dict[str, torch.Tensor]:
    """Parameters and buffers of the wrapped model under their transformers names."""
    out: dict[str, torch.Tensor] = {}
    named = list(hf_model.named_parameters(remove_duplicate=False))
    named += list(hf_model.named_buffers(remove_duplicate=False))
    for name, tensor in named:
        out.setdefault(name.replace(_ORIGINAL, ""), tensor)
    return out


class Reloader:
    """Loads specs one after another, reusing the bridge across compatible checkpoints.

    ``reloader.load(spec)`` returns a :class:`~induction.models.loading.LoadedModel`; the previous
    one returned shares its bridge when the swap applies, so use one model at a time.
    ``swaps`` and ``fresh`` count how each load was done.
    """

    def __init__(self, device: str = "auto", dtype: str | None = None, **load_kwargs: Any):
        self.device, self.dtype, self.load_kwargs = device, dtype, load_kwargs
        self._loaded = None
        self._signature: _Signature | None = None
        self._index: dict[str, torch.Tensor] | None = None
        self.swaps = 0
        self.fresh = 0

    def load(self, spec: Any, revision: str | None = None):
        from induction.models.loading import load_model

        folder = None
        if revision is None and isinstance(spec, str):
            ms = resolve_spec(spec)
            if ms.kind in ("zoo", "folder") and self.dtype in (None, "float32", "fp32"):
                folder = ms.path
        sig = _signature(folder) if folder is not None else None
        same = sig is not None and sig == self._signature
        if folder is not None and same and self._loaded is not None:
            try:
                return self._swap(spec, folder)
            except ModelLoadError:
                pass  # load it afresh below
        loaded = load_model(
            spec, device=self.device, dtype=self.dtype, revision=revision, **self.load_kwargs
        )
        self.fresh += 1
        self._loaded, self._signature = loaded, sig
        self._index = _param_index(loaded.hf_model) if sig is not None else None
        return loaded

    def _swap(self, spec: str, folder: Path):
        from safetensors import safe_open

        from induction.models.loading import LoadedModel, ModelInfo, _read_json

        index, old = self._index, self._loaded
        assert index is not None and old is not None  # set by the load this swap replaces
        with torch.no_grad():
            for f in _tensor_files(folder):
                with safe_open(str(f), framework="pt") as fh:
                    for key in fh.keys():
                        target = index.get(key)
                        if target is None:  # a name the first load did not place: start over
                            self._signature = None
                            raise ModelLoadError(f"cannot swap weights into {folder}: {key}")
                        target.copy_(fh.get_tensor(key))
        card = _read_json(folder / "card.json") if (folder / "card.json").is_file() else None
        ms = resolve_spec(spec)
        info = ModelInfo.from_bridge(
            old.bridge, name=ms.name, source=ms.kind, path=str(folder), card=card
        )
        self.swaps += 1
        self._loaded = LoadedModel(bridge=old.bridge, info=info, loop_plan=None, card=card)
        return self._loaded
