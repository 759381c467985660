"""Content hashes of cache entries: a damaged entry is rebuilt, never served.

Every cache entry of the workbench carries a SHA-256 of its own content, written with the entry
and checked on every read (docs/safety.md):

- a file entry (cached head scores, a sweep dataset file) has its hash beside it, in
  ``.NAME.sha256``, written from the temporary file before that moves into place
  (``seal(entry, tmp)`` inside :func:`induction.store.io.atomic_path`), so a finished entry always
  has one;
- a folder entry (a dequantized GGUF copy) keeps its hash inside, in ``.sha256``, so the hash
  moves in with the folder; it covers every other file's name and content (each file hashed
  through :func:`induction.store.fingerprint.file_hash`, so a file is read again whenever a write
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
from pathlib import Path

from induction.store.seals import (  # noqa: F401  (re-exported: one import for every cache check)
    _INSIDE,
    MISMATCH,
    MISSING,
    SEAL,
    discard,
    hash_path,
    note_damaged,
    open_record,
    record_hash,
    seal_record,
)

_CHUNK = 1 << 20


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
    from induction.store.fingerprint import file_hash

    parts = [
        [p.relative_to(path).as_posix(), file_hash(p)]
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.relative_to(path).as_posix() != _INSIDE
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def seal(entry: str | Path, source: str | Path | None = None) -> str:
    """Write the hash of cache entry ``entry``, computed from ``source`` (the temporary file or
    folder about to be moved to ``entry``; default ``entry`` itself). Returns the hash."""
    from induction.store.io import replace_file

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
