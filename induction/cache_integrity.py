"""Content hashes of cache entries: a damaged entry is rebuilt, never served.

Every cache entry of the workbench carries a SHA-256 of its own content, written with the entry
and checked on every read (docs/safety.md):

- a file entry (cached head scores, a sweep dataset file) has its hash beside it, in
  ``.NAME.sha256``, written from the temporary file before that moves into place
  (``seal(entry, tmp)`` inside :func:`induction.io.atomic_path`), so a finished entry always
  has one;
- a folder entry (a dequantized GGUF copy) keeps its hash inside, in ``.sha256``, so the hash
  moves in with the folder; it covers every other file's name and content (each file hashed
  through :func:`induction.fingerprint.file_hash`, so a file is read again whenever a write
  touched it);
- a record inside a shared file (a line of the ablation resume cache, an entry of the
  file-hash index) carries a ``seal`` field: the SHA-256 of its other fields
  (:func:`seal_record`, :func:`open_record`).

:func:`intact` recomputes an entry's hash and compares. On a mismatch (a changed byte, a
truncation, an edit) or a missing hash it prints one ``note:`` line on stderr
(:func:`note_damaged`), deletes the entry and returns False; the caller then rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

#: The field of a sealed record that holds its hash.
SEAL = "seal"
_INSIDE = ".sha256"  # a folder entry's hash, inside the folder
_CHUNK = 1 << 20
MISMATCH = "content hash mismatch"
MISSING = "no content hash"


def hash_path(entry: str | Path, folder: bool | None = None) -> Path:
    """Where ``entry``'s hash lives: ``.NAME.sha256`` beside a file, ``.sha256`` inside a folder
    (``folder`` None: whatever ``entry`` is now)."""
    entry = Path(entry)
    if folder is None:
        folder = entry.is_dir()
    return entry / _INSIDE if folder else entry.parent / f".{entry.name}.sha256"


def content_hash(path: str | Path) -> str:
    """SHA-256 of a file's bytes; for a folder, of every file's relative name and content
    (its own ``.sha256`` left out)."""
    path = Path(path)
    if not path.is_dir():
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while block := fh.read(_CHUNK):
                h.update(block)
        return h.hexdigest()
    from induction.fingerprint import file_hash

    parts = [
        [p.relative_to(path).as_posix(), file_hash(p)]
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.relative_to(path).as_posix() != _INSIDE
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def seal(entry: str | Path, source: str | Path | None = None) -> str:
    """Write the hash of cache entry ``entry``, computed from ``source`` (the temporary file or
    folder about to be moved to ``entry``; default ``entry`` itself). Returns the hash."""
    from induction.io import replace_file

    src = Path(source if source is not None else entry)
    digest = content_hash(src)
    target = src / _INSIDE if src.is_dir() else hash_path(entry, folder=False)
    replace_file(target, digest + "\n")
    return digest


def problem(entry: str | Path) -> str | None:
    """None when ``entry`` matches its hash, else :data:`MISMATCH` or :data:`MISSING`
    (``entry`` must exist)."""
    entry = Path(entry)
    try:
        expected = hash_path(entry).read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return MISSING
    try:
        return None if content_hash(entry) == expected else MISMATCH
    except OSError:
        return MISMATCH


def intact(entry: str | Path) -> bool:
    """Whether cache entry ``entry`` exists and matches its hash. A damaged entry (or one
    without a hash) is noted on stderr and deleted, so the caller rebuilds it."""
    entry = Path(entry)
    if not entry.exists():
        return False
    found = problem(entry)
    if found is None:
        return True
    note_damaged(entry, found)
    discard(entry)
    return False


def discard(entry: str | Path) -> None:
    """Delete cache entry ``entry`` and its hash (a read-only cache is left as it is: its
    damaged entries are never served, only checked again)."""
    entry = Path(entry)
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
        return
    for path in (entry, hash_path(entry, folder=False)):
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass


def note_damaged(entry: str | Path, detail: str = MISMATCH) -> None:
    """One line on stderr: cache entry ``entry`` failed its check and is being rebuilt."""
    if detail == MISSING:
        what = "has no content hash (an older version or an interrupted write)"
    else:
        what = f"was damaged ({detail})"
    print(f"note: cache entry {entry} {what}; rebuilding it", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- records


def record_hash(record: Any, *context: Any) -> str:
    """SHA-256 of ``record`` (JSON types) and ``context`` (e.g. the record's key in its file),
    over canonical JSON, so it survives a write and a read."""
    text = json.dumps([list(context), record], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def seal_record(record: dict, *context: Any) -> dict:
    """``record`` with a :data:`SEAL` field over its other fields and ``context``."""
    return {**record, SEAL: record_hash(record, *context)}


def open_record(record: Any, *context: Any) -> dict | None:
    """``record`` without its seal when the seal matches, else None (damaged or unsealed)."""
    if not isinstance(record, dict) or not isinstance(record.get(SEAL), str):
        return None
    body = {k: v for k, v in record.items() if k != SEAL}
    try:
        return body if record_hash(body, *context) == record[SEAL] else None
    except (TypeError, ValueError, RecursionError):
        return None
