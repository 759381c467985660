"""Content fingerprints for caches: a cache never serves results of inputs that changed.

A fingerprint is a SHA-256 over everything that changes a computation: the content of every
config, weight, tokenizer, loop-plan, card and duplication-log file of the model
(:func:`model_content_hash`; for a loaded model,
:func:`induction.models.model_types.model_fingerprint`), the source code of the modules that
compute (:func:`source_hash`), and the options. Hashing a large file once per run would be slow, so
:func:`file_hash` remembers each file's hash in ``<cache root>/file-hashes.json`` under its
(path, size, mtime, ctime, inode); the remembered value is a content hash, so the key itself
never depends on timestamps. Each remembered entry is sealed
(:func:`induction.store.seals.seal_record`): a damaged one is noted and the file hashed
again. See docs/safety.md.

The cache root is ``$INDUCTION_CACHE``, default ``~/.cache/induction-workbench``
(:func:`cache_root`); every cache of the workbench lives below it, one folder per kind
(:data:`CACHE_KINDS`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Entries of the cache root that ``induction cache`` reports and ``induction cache clear``
#: deletes (nothing else under the root is touched): name -> what it holds.
CACHE_KINDS = {
    "ablate": "ablation resume caches and head scores, one set per model fingerprint",
    "gguf": "GGUF files dequantized to safetensors checkpoints",
    "file-hashes.json": "content hashes of model files, keyed by path, size, times and inode",
}
HASH_INDEX = "file-hashes.json"

#: Files of a checkpoint folder that change a model's results: weights, configs, tokenizer,
#: loop plan, remote code, and also ``card.json`` (its ``repeat_len`` sets the detectors'
#: default sequence length, its ``steps`` a sweep's step) and ``duplication_log.json`` (the
#: lineage rows of a sweep).
_MODEL_SUFFIXES = (".json", ".safetensors", ".model", ".txt", ".jinja", ".py", ".tiktoken")
_CHUNK = 1 << 20
_lock = threading.Lock()


def cache_root() -> Path:
    """``$INDUCTION_CACHE`` or ``~/.cache/induction-workbench``; a root that is a file or a
    broken or looping symlink is refused in one line (every cache would fail under it)."""
    from induction.errors import InputError

    env = os.environ.get("INDUCTION_CACHE")
    root = Path(env).expanduser() if env else Path.home() / ".cache" / "induction-workbench"
    where = f"$INDUCTION_CACHE {root}" if env else f"the cache root {root}"
    if root.is_symlink() and not root.exists():
        raise InputError(f"{where} is a broken or looping symlink; point it at a folder")
    if root.exists() and not root.is_dir():
        raise InputError(f"{where} is a file, not a folder; point it at a folder")
    return root


def _stat_key(path: Path) -> list:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _read_index(index: Path) -> dict:
    """The index's entries; an index that is not a JSON object is noted and deleted."""
    from induction.store.seals import discard, note_damaged

    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except OSError:  # missing or unreadable: only costs speed
        return {}
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        note_damaged(index, "not a JSON object")
        discard(index)
        return {}
    return data


def file_hash(path: str | Path) -> str:
    """SHA-256 of a file's content, remembered by (resolved path, size, mtime, ctime, inode);
    ``ctime`` changes on every write and cannot be set back, unlike ``mtime``. A remembered
    entry whose seal does not match is noted on stderr and replaced."""
    from induction.store.seals import SEAL, note_damaged, open_record, seal_record

    path = Path(path).expanduser().resolve()
    key, stamp = str(path), _stat_key(path)
    index = cache_root() / HASH_INDEX
    with _lock:
        entry = _read_index(index).get(key)
    body = open_record(entry, key)
    if body is not None:
        if body.get("stat") == stamp and isinstance(body.get("sha256"), str):
            return body["sha256"]
    elif isinstance(entry, dict) and SEAL in entry:  # (an older version's entry has no seal)
        note_damaged(index, f"content hash mismatch in the entry of {path}")
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            h.update(block)
    digest = h.hexdigest()
    if _stat_key(path) == stamp:  # unchanged while reading: safe to remember
        _remember(index, key, seal_record({"stat": stamp, "sha256": digest}, key))
    return digest


def _remember(index: Path, key: str, entry: dict) -> None:
    from induction.store.io import replace_file

    with _lock:
        data = _read_index(index)
        data = {k: v for k, v in data.items() if Path(k).exists()} if len(data) > 5000 else data
        data[key] = entry
        try:
            replace_file(index, json.dumps(data, indent=0) + "\n")
        except OSError:  # a read-only cache root only costs speed
            pass


def model_files(folder: str | Path) -> list[Path]:
    """The files of a checkpoint folder that change the model's results (also its card and
    duplication log)."""
    folder = Path(folder)
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(".") and p.suffix in _MODEL_SUFFIXES
    )


def model_content_hash(path: str | Path) -> str:
    """Content hash of a model on disk: a ``.gguf`` file, or a checkpoint folder's
    :func:`model_files` (names and contents)."""
    path = Path(path).expanduser()
    if path.is_file():
        return file_hash(path)
    parts = [[p.name, file_hash(p)] for p in model_files(path)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def state_dict_hash(module: Any) -> str:
    """Content hash of a torch module's parameters and buffers (for models passed as objects)."""
    import torch

    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        t = tensor.detach().cpu().contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    config = getattr(module, "config", None)
    if config is not None and hasattr(config, "to_json_string"):
        h.update(config.to_json_string().encode())
    return h.hexdigest()


#: The workbench's own packages: imports among them are followed by :func:`code_packages`.
CODE_ROOTS = ("induction", "lineage", "ablation")


@lru_cache(maxsize=1024)
def _module_file(name: str) -> tuple[Path | None, bool]:
    """``(file, is_package)`` of module ``name`` found on disk without importing it."""
    root, _, rest = name.partition(".")
    spec = importlib.util.find_spec(root)
    if spec is None or spec.origin is None:
        return None, False
    if not spec.submodule_search_locations:
        return (Path(spec.origin), False) if not rest else (None, False)
    path = Path(spec.origin).parent.joinpath(*rest.split(".")) if rest else Path(spec.origin).parent
    if (path / "__init__.py").is_file():
        return path / "__init__.py", True
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py"), False
    return None, False


_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w. \t,]+)", re.M)
#: A provider named as an entry point, ``"package.module:function"`` (the score registry's):
#: imported at first use, so it counts as an import here.
_ENTRY_POINT = re.compile(r"""["']([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+):[A-Za-z_]\w*["']""")


def _imports(name: str, roots: tuple[str, ...]) -> set[str]:
    """Modules under ``roots`` that module ``name`` imports anywhere (also inside functions);
    read from the text (an import quoted in a docstring only adds a package)."""
    f, is_pkg = _module_file(name)
    if f is None:
        return set()
    text = f.read_text(encoding="utf-8", errors="replace")
    base = name if is_pkg else name.rpartition(".")[0]
    named: set[str] = set()
    for m in _IMPORT.finditer(text):
        named |= {part.split()[0] for part in m.group(1).split(",") if part.strip()}
    named |= {m.group(1) for m in _ENTRY_POINT.finditer(text)}
    for m in _FROM.finditer(text):
        mod, names = m.group(1), m.group(2).strip("() \t\n")
        level = len(mod) - len(mod.lstrip("."))
        if level:
            parts = base.split(".")[: len(base.split(".")) - level + 1]
            mod = ".".join(parts + ([mod[level:]] if mod[level:] else []))
        named.add(mod)
        named |= {
            f"{mod}.{n.split()[0]}" for n in re.split(r"[,\s]*\n[,\s]*|,", names) if n.strip()
        }
    found = set()
    for m in named:
        if m.split(".")[0] not in roots:
            continue
        while m and _module_file(m)[0] is None:  # ``from pkg import name``: the module pkg
            m = m.rpartition(".")[0]
        if m:
            found.add(m)
    return found


def _package_of(name: str) -> str:
    return name if _module_file(name)[1] else name.rpartition(".")[0] or name


def package_files(package: str) -> list[Path]:
    """The source files of ``package`` itself (its folder's ``.py`` files, sorted; a
    sub-package is a package of its own); a plain module is its one file."""
    f, is_pkg = _module_file(package)
    if f is None:
        return []
    return sorted(f.parent.glob("*.py")) if is_pkg else [f]


@lru_cache(maxsize=64)
def code_packages(entries: tuple[str, ...]) -> tuple[str, ...]:
    """Every package and sub-package whose code may decide what ``entries`` compute: the
    packages of the modules they import (anywhere, also inside functions), closed under the
    imports of every module of each such package. Derived from the source, so no list of
    modules is kept by hand and none can be forgotten (docs/safety.md)."""
    roots = tuple(dict.fromkeys([*CODE_ROOTS, *(e.split(".")[0] for e in entries)]))
    packages: set[str] = set()
    todo = [e for e in entries if _module_file(e)[0] is not None]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # parents run first
        todo += sorted(_imports(name, roots))
        package = _package_of(name)
        if package not in packages:
            packages.add(package)
            prefix = f"{package}." if _module_file(package)[1] else ""
            todo += [package if f.stem == "__init__" else prefix + f.stem
                     for f in package_files(package)]  # fmt: skip
    return tuple(sorted(packages))


def module_sources(modules: Iterable[str]) -> Iterator[tuple[str, Path | None, Path | None]]:
    """``(package, folder, file)`` for every source file of the whole packages that
    ``modules`` depend on (:func:`code_packages`), in order; ``(module, None, None)`` for a
    module not found."""
    modules = tuple(modules)
    for name in modules:
        if _module_file(name)[0] is None:
            yield name, None, None
    for package in code_packages(modules):
        for f in package_files(package):
            yield package, f.parent, f


@lru_cache(maxsize=64)
def source_hash(modules: tuple[str, ...]) -> str:
    """Hash of the source of every whole package the ``modules`` depend on
    (:func:`module_sources`): the code version of a computation, without version constants
    to forget to bump nor module lists to keep."""
    h = hashlib.sha256()
    for name, _, f in module_sources(modules):
        if f is None:
            h.update(f"{name}:missing".encode())
            continue
        h.update(f"{name}:{f.name}:".encode())
        h.update(read_source(f))
    return h.hexdigest()


def read_source(path: Path) -> bytes:
    """The bytes of one source file as the code hashes read them."""
    return path.read_bytes()


def fingerprint(*parts: Any, length: int = 16) -> str:
    """Short hex digest of JSON-serialisable ``parts`` (paths and sets become strings)."""
    text = json.dumps(list(parts), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]
