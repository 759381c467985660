"""Seals: the small pieces every cache check is built from, below the file-hash index.

A sealed record carries a ``seal`` field, the SHA-256 of its other fields (:func:`seal_record`,
:func:`open_record`); a cache entry's own hash sits at :func:`hash_path`; a damaged entry is
noted on stderr (:func:`note_damaged`) and deleted (:func:`discard`). The entry checks that
hash content (:func:`induction.store.cache_integrity.intact`) sit above the remembered file hashes
(:mod:`induction.store.fingerprint`), which seal their own records with these. See docs/safety.md.
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
MISMATCH = "content hash mismatch"
MISSING = "no content hash"


def hash_path(entry: str | Path, folder: bool | None = None) -> Path:
    """Where ``entry``'s hash lives: ``.NAME.sha256`` beside a file, ``.sha256`` inside a folder
    (``folder`` None: whatever ``entry`` is now)."""
    entry = Path(entry)
    if folder is None:
        folder = entry.is_dir()
    return entry / _INSIDE if folder else entry.parent / f".{entry.name}.sha256"


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
