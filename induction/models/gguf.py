"""GGUF files as safetensors checkpoints: dequantized once through transformers' GGUF support
and cached under ``<cache root>/gguf/<stem>-<content hash>-<dtype>/`` (the cache root is
:func:`induction.store.fingerprint.cache_root`), so later loads read plain safetensors.

Each cached folder holds the hash of its own content (:mod:`induction.store.cache_integrity`),
checked before every use: a damaged copy (a changed byte, a truncated file) is noted on
stderr, deleted and dequantized again.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from induction.errors import ModelLoadError, one_line


def gguf_cache_root() -> Path:
    """``<cache root>/gguf`` (:func:`induction.store.fingerprint.cache_root`)."""
    from induction.store.fingerprint import cache_root

    return cache_root() / "gguf"


def gguf_cache_key(path: Path, dtype: torch.dtype) -> str:
    """``<stem>-<hash>-<dtype>``; the hash is of the whole file's content
    (:func:`induction.store.fingerprint.file_hash`, remembered per file stat)."""
    from induction.store.fingerprint import file_hash

    return f"{path.stem}-{file_hash(path)[:16]}-{str(dtype).removeprefix('torch.')}"


def gguf_checkpoint(path: str | Path, dtype: torch.dtype = torch.float32) -> Path:
    """The cached safetensors checkpoint folder of a .gguf file, dequantizing it on first use.

    Half-precision requests are cached in that dtype; everything else in float32 (exactly the
    dequantized values).
    """
    path = Path(path).expanduser().resolve()
    try:
        import gguf  # noqa: F401
    except ImportError:
        raise ModelLoadError(
            f"reading {path.name} needs the gguf package: pip install gguf"
        ) from None
    _check_gguf(path)  # before hashing it: a bad file leaves nothing in the cache
    from induction.store.cache_integrity import hash_path, intact, seal

    cache_dtype = dtype if dtype in (torch.bfloat16, torch.float16) else torch.float32
    folder = gguf_cache_root() / gguf_cache_key(path, cache_dtype)
    if intact(folder):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    tmp.chmod(0o755)
    try:
        _dequantize(path, cache_dtype, tmp)
        stamp = {"source": str(path), "size": path.stat().st_size, "created": time.time()}
        (tmp / "complete.json").write_text(json.dumps(stamp, indent=2) + "\n")
        seal(folder, tmp)  # the hash moves in with the folder
        try:
            os.replace(tmp, folder)
        except OSError:  # another process finished first, or a stale unsealed folder
            if not hash_path(folder, folder=True).is_file():
                shutil.rmtree(folder, ignore_errors=True)
                os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _dequantize(path: Path, dtype: torch.dtype, dest: Path) -> None:
    """Dequantize the GGUF file ``path`` and save it as a safetensors checkpoint in ``dest``
    (weights in ``dtype``, config, tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        with _gguf_progress_quiet():
            tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
            model = AutoModelForCausalLM.from_pretrained(
                str(path.parent), gguf_file=path.name, dtype=torch.float32
            )
    except Exception as e:
        raise ModelLoadError(f"cannot dequantize {path}: {one_line(e)}") from None
    model.to(dtype)  # pyright: ignore[reportArgumentType]  (transformers types .to() for generation)
    model.config.architectures = [type(model).__name__]
    # The tensors are plain dequantized floats now; drop the GGUF quantizer marks, which make
    # save_pretrained refuse ("quantized with gguf and is not serializable").
    marks: Any = model  # plain attributes, not submodules (nn.Module's __setattr__ types them)
    marks.hf_quantizer = None
    marks.is_quantized = False
    marks.quantization_method = None
    if hasattr(model.config, "quantization_config"):
        config: Any = model.config
        del config.quantization_config
    model.save_pretrained(str(dest), safe_serialization=True)
    tok.save_pretrained(str(dest))


def _check_gguf(path: Path) -> None:
    import gguf

    try:
        reader = gguf.GGUFReader(str(path))
        arch_field = reader.fields.get("general.architecture")
        if arch_field is None:
            raise ValueError("no general.architecture field")
    except Exception as e:
        raise ModelLoadError(f"{path} is not a readable GGUF file ({one_line(e)})") from None


class _gguf_progress_quiet:
    """Hide the "de-quantizing GGUF tensors" bar when progress bars are disabled."""

    def __enter__(self):
        self._saved = None
        if os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS", "").lower() not in ("1", "true"):
            return self
        from functools import partial

        import transformers.modeling_gguf_pytorch_utils as mod

        self._mod, self._saved = mod, mod.tqdm  # pyright: ignore[reportPrivateImportUsage]
        mod.tqdm = partial(mod.tqdm, disable=True)  # pyright: ignore
        return self

    def __exit__(self, *exc):
        if self._saved is not None:
            self._mod.tqdm = self._saved  # pyright: ignore[reportAttributeAccessIssue]
        return False
