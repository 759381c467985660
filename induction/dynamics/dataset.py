"""The sweep dataset: a folder of Parquet files, one per (model content, settings, label).

Every file has the schema :data:`SCHEMA`, one row per model x head x score (model-level scores
such as the in-context loss have no layer and head; per-layer scores such as the depth angles
no head). File names are ``<content16>-<settings>-<label>.parquet``: the model's content hash
(:func:`induction.store.fingerprint.model_content_hash`, first 16 hex digits), the settings hash and
a hash of the row labels (model key, checkpoint, spec, revision). The content hash covers
every file of the model folder that changes a row, its ``card.json`` and
``duplication_log.json`` included. Only the sweep driver writes, each file atomically
(:func:`induction.store.io.atomic_path`) with the SHA-256 of its bytes beside it in
``.NAME.sha256`` (:mod:`induction.store.cache_integrity`); readers skip hidden files, and refuse a
file that does not match its hash. Format reference: docs/dynamics.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from induction.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

#: (column, arrow type name, meaning)
COLUMNS = (
    ("model", "string", "series key: the run folder's name, the spec's name or the hub name"),
    ("checkpoint", "string", "label within the series: step-N, step-N-pre, final, a revision"),
    ("spec", "string", "what load_model was given"),
    ("revision", "string", "hub revision (null for local models)"),
    ("step", "int64", "training step (card, folder name or revision); null when unknown"),
    ("growth", "string", "before / after for the pair around a growth event, else null"),
    ("stage", "int64", "growth events so far (duplication log); 0 for models that never grew"),
    ("depth", "int64", "layers the hooks see (unrolled for looped models)"),
    ("content_hash", "string", "SHA-256 of the model's files (or state dict)"),
    ("settings_hash", "string", "hash of the sweep settings and the scoring code"),
    ("layer", "int64", "null for model-level scores"),
    ("head", "int64", "null for model- and layer-level scores"),
    ("score", "string", "score name (induction, loss_first, depth_state_angle, ...)"),
    ("value", "float64", "mean over seeds (or tokens)"),
    ("std", "float64", "spread across seeds (or tokens); null when not defined"),
)
IDENTITY = ("model", "checkpoint", "spec", "revision", "step")
_NAME = re.compile(r"^([0-9a-f]{16})-([0-9a-f]{12})-([0-9a-f]{8})\.parquet$")


def schema():
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind, _ in COLUMNS])


def file_name(content_hash: str, settings_hash: str, label_hash: str) -> str:
    return f"{content_hash[:16]}-{settings_hash}-{label_hash}.parquet"


def parse_name(name: str) -> tuple[str, str, str] | None:
    """``(content16, settings, label)`` of a dataset file name, None for other files."""
    m = _NAME.match(name)
    return (m.group(1), m.group(2), m.group(3)) if m else None


def to_table(columns: dict[str, list[Any]]):
    """A pyarrow Table with :func:`schema` from a dict of equal-length column lists."""
    import pyarrow as pa

    sch = schema()
    n = len(next(iter(columns.values())))
    arrays = [pa.array(columns.get(f.name, [None] * n), type=f.type) for f in sch]
    return pa.Table.from_arrays(arrays, schema=sch)


def write_part(folder: Path, name: str, table) -> Path:
    """Write one dataset file atomically, its content hash first."""
    import pyarrow.parquet as pq

    from induction.store.cache_integrity import seal
    from induction.store.io import atomic_path

    path = folder / name
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
        seal(path, tmp)
    return path


def read_part(path: Path):
    import pyarrow.parquet as pq

    return pq.read_table(path, schema=schema())


def drop_other_settings(folder: str | Path, settings_hash: str) -> list[Path]:
    """Remove the parts of a dataset folder written under settings other than
    ``settings_hash`` (with their hash files) and return them: after a sweep under new
    settings or new scoring code, the folder then holds one consistent record instead of two
    (a reader such as :func:`induction.dynamics.copies.copied_heads` refuses a mix)."""
    from induction.store.cache_integrity import hash_path

    if not settings_hash:
        raise ValueError("drop_other_settings needs the settings hash to keep")
    gone = []
    for part in sorted(Path(folder).iterdir()):
        parsed = parse_name(part.name)
        if parsed is None or settings_hash.startswith(parsed[1]):
            continue
        hash_path(part).unlink(missing_ok=True)
        part.unlink()
        gone.append(part)
    return gone


def read_dataset(path: str | Path) -> pd.DataFrame:
    """Every row of a sweep dataset (a folder of files, or one file), sorted by model,
    step, checkpoint, score, layer and head."""
    import pyarrow as pa

    path = Path(path)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.iterdir() if parse_name(p.name))
    else:
        raise InputError(f"no sweep dataset at {path} (write one with `induction sweep`)")
    if not files:
        raise InputError(f"{path} holds no sweep results (write them with `induction sweep`)")
    from induction.store.cache_integrity import MISMATCH, hash_path, problem

    for f in files:  # a file copied without its hash is read as it is
        if hash_path(f).is_file() and problem(f) == MISMATCH:
            raise InputError(
                f"{f} is damaged ({MISMATCH}); rerun the sweep that wrote it to rebuild it"
            )
    try:
        table = pa.concat_tables([read_part(f) for f in files])
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"cannot read the sweep dataset {path}: {e}") from None
    df = table.to_pandas(types_mapper=_types)
    keys = ["model", "step", "checkpoint", "score", "layer", "head"]
    return df.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)


def _types(arrow_type):
    import pandas as pd
    import pyarrow as pa

    if arrow_type == pa.int64():
        return pd.Int64Dtype()
    return None
