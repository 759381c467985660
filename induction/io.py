"""Output files: atomic writes and table formats chosen by suffix.

Every writer goes through :func:`atomic_write`: the data is written to a temporary file in
the destination folder, flushed, and moved over the destination with ``os.replace``. A reader
never sees a half-written file, and a failed write leaves the old file (or nothing) in place.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from induction.errors import InputError

TABLE_SUFFIXES = (".csv", ".parquet", ".json", ".jsonl")


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it over ``path``.

    For writers that want a file name (``df.to_parquet(tmp)``, ``fig.write_html(tmp)``).
    On an exception the temporary file is removed and ``path`` is left untouched.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"output {path} is a folder; pass a file path")
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write(path: str | Path, write: Callable[[Any], None], mode: str = "w") -> Path:
    """Call ``write(fileobj)`` on a temp file opened with ``mode``, then rename it to ``path``."""
    path = Path(path)
    with atomic_path(path) as tmp:
        kwargs = {} if "b" in mode else {"encoding": "utf-8", "newline": ""}
        with open(tmp, mode, **kwargs) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
    return path


def write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda fh: fh.write(text))


def write_bytes(path: str | Path, data: bytes) -> Path:
    return atomic_write(path, lambda fh: fh.write(data), mode="wb")


def write_json(path: str | Path, obj: Any, indent: int = 2) -> Path:
    """JSON with a trailing newline; numpy scalars/arrays and paths are converted."""
    text = json.dumps(obj, indent=indent, default=_json_default) + "\n"
    return write_text(path, text)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "tolist"):  # numpy arrays and scalars, torch tensors
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def write_table(df, path: str | Path) -> Path:
    """Write a pandas DataFrame as CSV, Parquet, JSON (records) or JSON lines, by suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise InputError(
            f"cannot write a table to {path.name!r}: unknown suffix {suffix or '(none)'!r}; "
            f"use one of {', '.join(TABLE_SUFFIXES)}"
        )
    with atomic_path(path) as tmp:
        if suffix == ".csv":
            df.to_csv(tmp, index=False)
        elif suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        elif suffix == ".json":
            df.to_json(tmp, orient="records", indent=2)
        else:
            df.to_json(tmp, orient="records", lines=True)
    return path


def read_table(path: str | Path):
    """Read a table written by :func:`write_table` (suffix decides the format)."""
    import pandas as pd

    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        raise InputError(f"no such file: {path}")
    if suffix == ".csv":
        return pd.read_csv(path)
    if suffix == ".parquet":
        return pd.read_parquet(path)
    if suffix == ".json":
        return pd.read_json(path, orient="records")
    if suffix == ".jsonl":
        return pd.read_json(path, orient="records", lines=True)
    raise InputError(
        f"cannot read a table from {path.name!r}: unknown suffix {suffix or '(none)'!r}; "
        f"use one of {', '.join(TABLE_SUFFIXES)}"
    )


def refuse_overwrite_input(out: str | Path | None, *inputs: str | Path | None) -> None:
    """Raise InputError if ``out`` is (after resolving links and ``..``) one of ``inputs``.

    An input that is a folder also protects every file inside it (a checkpoint folder).
    """
    if out is None:
        return
    out_r = Path(out).expanduser().resolve()
    for inp in inputs:
        if inp is None:
            continue
        in_r = Path(inp).expanduser().resolve()
        if out_r == in_r or (in_r.is_dir() and in_r in out_r.parents):
            raise InputError(
                f"refusing to write {out}: it is an input ({inp}); choose another --out path"
            )


# --------------------------------------------------------------------------- input checks

#: Longest file name most file systems accept (bytes of one path component).
NAME_MAX = 255


def check_output_path(
    path: str | Path | None,
    allowed_suffixes: tuple[str, ...] | None = None,
    flag_name: str = "--out",
    *,
    folder: bool = False,
) -> None:
    """Raise :class:`InputError` unless ``path`` can be written, *before* any work is done.

    Checks the suffix (when ``allowed_suffixes`` is given), that a file output is not a
    folder, that every path component fits the file system, that the parent exists or can be
    created (the nearest existing ancestor is a writable folder) and that a probe file can
    actually be created there (read-only mounts, ``/proc``, ``/sys``). Creates nothing that
    stays: the probe is removed at once and no missing parent is made. ``folder=True`` checks
    an output *folder* (``grow --out``) the same way, without the suffix and folder checks.
    """
    if path is None:
        return
    raw = os.fspath(path)
    if not raw.strip():
        raise InputError(f"{flag_name} is empty; pass a file path")
    path = Path(raw).expanduser()
    for part in path.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise InputError(
                f"{flag_name}: the name {part[:24]}... is {len(os.fsencode(part))} bytes long; "
                f"file names may have at most {NAME_MAX}; pass a shorter name"
            )
    if not folder:
        if path.is_dir():
            raise InputError(f"{flag_name} {path} is a folder; pass a file path")
        if allowed_suffixes is not None and path.suffix.lower() not in allowed_suffixes:
            raise InputError(
                f"{flag_name} {path}: unknown suffix {path.suffix or '(none)'!r}; "
                f"use one of {', '.join(allowed_suffixes)}"
            )
    parent = path.parent
    existing = parent
    while not existing.exists():
        if existing.is_symlink():
            raise InputError(f"{flag_name} {path}: {existing} is a broken or looping symlink")
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(
            f"{flag_name} {path}: {existing} is a file, not a folder; choose another location"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(
            f"{flag_name} {path}: cannot write in {existing} (permission denied); "
            "choose a writable location"
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".induction-probe.", dir=existing)
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise InputError(
            f"{flag_name} {path}: cannot write in {existing} ({reason}); choose a writable location"
        ) from None
    os.close(fd)
    os.unlink(probe)


def read_json(path: str | Path, what: str = "JSON file") -> Any:
    """Parse a UTF-8 JSON file, turning every way it can be unreadable into one
    :class:`InputError` that names the file (missing, unreadable, not UTF-8, not JSON, nested
    too deeply)."""
    return parse_json(read_text(path, what), f"{what} {path}")


def read_text(path: str | Path, what: str = "file") -> str:
    """A UTF-8 text file's content; missing, unreadable or non-UTF-8 files raise one-line
    :class:`InputError` naming ``what`` and the path."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{what} {path} is not UTF-8 text (bad byte at offset {e.start}); re-save it as UTF-8"
        ) from None
    except OSError as e:
        raise InputError(f"cannot read {what} {path}: {_os_reason(e)}") from None


def parse_json(text: str, where: str) -> Any:
    """``json.loads`` with one-line :class:`InputError` for malformed or absurdly nested
    text; ``where`` names the source in the message."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(
            f"{where} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})"
        ) from None
    except RecursionError:
        raise InputError(f"{where} is nested too deeply to be read as JSON") from None


def _os_reason(e: OSError) -> str:
    if e.errno == errno.ELOOP:
        return "symlink loop; point it at a real file"
    return e.strerror or type(e).__name__


def model_inputs(spec: str | Path) -> list[Path]:
    """The paths a model spec reads (its folder or file; a zoo name's folder), for
    :func:`refuse_overwrite_input`. Empty for a hub name."""
    path = Path(os.fspath(spec)).expanduser()
    try:
        if path.exists():
            return [path]
    except OSError:  # name too long, symlink loop: the loader reports it
        return []
    from induction.zoo import registry

    text = os.fspath(spec)
    if registry.is_zoo_name(text):
        try:
            return [registry.zoo_path(text)]
        except Exception:  # an unknown seed of a zoo family: the loader reports it
            return []
    return []
