"""Per-model measurements kept beside the outputs (``<out-dir>/models/<model>-<settings>.json``),
so a replication of many models spans sessions: each model's measurement is written as it
lands (and can be committed), and a rerun measures only the models whose inputs changed.

A stored measurement is served only under the same key (:func:`measurement_key`):

- the model: every file of its folder (weights, configs, tokenizer, ``card.json`` with the
  training length and FLOPs, ``duplication_log.json``, the pre-growth networks lineage reads),
  or its weights when it has no folder;
- the settings (all but ``cache``, which gives the same numbers; the file name carries their
  hash, so runs with other settings, ``--fast`` say, keep their own files);
- the induction threshold, and the scan's ranking of the heads: the stored scan must list the
  heads in the same order, with the same heads at or above the threshold, and each induction
  score within :data:`SCORE_TOLERANCE` of the fresh scan's (a platform's float rounding moves
  the scores by about 1e-7 and changes no ranking; hashing them bit for bit made every stored
  measurement stale on another CPU);
- the code that turns them into the row, by syntax tree (:func:`code_hash`: docstrings,
  comments and layout apart): :data:`MEASURE_CODE`, hashed once when a run starts and checked
  again before each store, so an edit during a run never stores old code's numbers under the
  new code's key.

Every entry is sealed (:func:`induction.store.seals.seal_record`: a SHA-256 of its fields, checked
on every read): an entry that does not parse, has no seal or was edited is noted once on
stderr and measured again. Anything else read back is ignored and measured again
(docs/safety.md: a cache never serves results of inputs that changed).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from induction.errors import InputError
from induction.store.seals import SEAL, open_record, seal_record

from .config import Settings
from .measure import Measured

#: Code that decides a measured row: the measuring module and every whole package it depends
#: on (:func:`induction.store.fingerprint.code_packages`), except the presentation-only
#: :data:`PRESENTATION` files.
MEASURE_CODE = ("induction.replication.measure",)
PRESENTATION = ("cli.py", "render.py")
#: 3: whole model folder, threshold, file per settings; 4: ranking by tolerance; 5: sealed
STORE_VERSION = 5

#: The largest difference of one head's induction score between the stored scan and a fresh one
#: for the two to count as the same ranking (scores are in [0, 1]; float rounding is ~1e-7).
SCORE_TOLERANCE = 1e-5


def code_hash(modules: tuple[str, ...] = MEASURE_CODE) -> str:
    """Hash of what ``modules`` compute: each file's syntax tree with docstrings dropped, so
    rewording a docstring or comment or reformatting keeps the stored measurements, and any
    change to the code itself does not (cf. :func:`induction.store.fingerprint.source_hash`, which
    hashes the bytes)."""
    from induction.store.fingerprint import module_sources, read_source

    h = hashlib.sha256()
    for name, folder, f in module_sources(modules):
        if f is None or folder is None:  # (both None together: a module not found)
            h.update(f"{name}:missing".encode())
            continue
        if f.name in PRESENTATION:
            continue
        h.update(f"{name}:{f.relative_to(folder)}:".encode())
        h.update(_tree_hash(read_source(f)).encode())
    return h.hexdigest()


@lru_cache(maxsize=512)
def _tree_hash(source: bytes) -> str:
    """SHA-256 of a module's syntax tree without docstrings (kept per content: a run hashes
    the code twice, at its start and before each store)."""
    import ast

    tree = ast.parse(source.decode("utf-8"))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            setattr(node, "body", body[1:] or [ast.Pass()])  # noqa: B010 (any node with a body)
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def measured_settings(settings: Settings) -> dict:
    """The settings that decide the numbers: all but ``cache`` (which gives the same ones)."""
    return {k: v for k, v in asdict(settings).items() if k != "cache"}


def settings_hash(settings: Settings) -> str:
    """8 hex digits of :func:`measured_settings`."""
    from induction.store.fingerprint import fingerprint

    return fingerprint(measured_settings(settings), length=8)


def model_hash(loaded) -> str:
    """Every file of the model's folder (names and contents), else its loaded content."""
    from induction.models.model_types import loaded_model_hash
    from induction.store.fingerprint import file_hash

    folder = loaded.info.path
    if folder is None or not Path(folder).is_dir():
        return loaded_model_hash(loaded)
    root = Path(folder)
    parts = [
        [str(p.relative_to(root)), file_hash(p)] for p in sorted(root.rglob("*")) if p.is_file()
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def measurement_key(loaded, settings: Settings, code: str) -> str:
    """Content key of one model's measurement (hex): the model, its dtype, the settings, the
    induction threshold and the code (``code`` is :func:`code_hash`'s). The scan's ranking is
    checked beside it, by :func:`same_ranking`."""
    from induction import INDUCTION_THRESHOLD
    from induction.store.fingerprint import fingerprint

    return fingerprint(
        STORE_VERSION,
        model_hash(loaded),
        str(loaded.info.dtype),
        measured_settings(settings),
        INDUCTION_THRESHOLD,
        code,
        length=32,
    )


def same_ranking(stored: pd.DataFrame, fresh: pd.DataFrame) -> bool:
    """Whether two scans rank the heads alike: the same heads in the same order (by induction
    score, as the ablation picks them), the same heads at or above the induction threshold,
    and every score within :data:`SCORE_TOLERANCE`."""
    from induction import INDUCTION_THRESHOLD

    cols = ["layer", "head", "induction"]
    if not set(cols) <= set(stored.columns) or len(stored) != len(fresh):
        return False

    def ordered(scores: pd.DataFrame) -> pd.DataFrame:
        order = scores.sort_values(["induction", "layer", "head"], ascending=[False, True, True])
        return order[cols].reset_index(drop=True)

    a, b = ordered(stored), ordered(fresh)
    above_a, above_b = a["induction"] >= INDUCTION_THRESHOLD, b["induction"] >= INDUCTION_THRESHOLD
    return (
        a[["layer", "head"]].astype(int).equals(b[["layer", "head"]].astype(int))
        and bool((above_a == above_b).all())
        and bool((a["induction"] - b["induction"]).abs().max() <= SCORE_TOLERANCE)
    )


class MeasurementStore:
    """``root/<model>.json`` per measured model (atomic writes, :mod:`induction.store.io`)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, name: str, settings: Settings) -> Path:
        return self.root / f"{name}-{settings_hash(settings)}.json"

    def get(self, name: str, settings: Settings, key: str, scores: pd.DataFrame) -> Measured | None:
        """The stored measurement of ``name`` under ``key`` whose scan ranks the heads as
        ``scores`` does (:func:`same_ranking`), else None (missing, damaged, or measured from
        other inputs)."""
        path = self.path(name, settings)
        if not path.is_file():
            return None
        data = _open(path, key)
        if data is None:  # stale, or damaged or edited: measured again, the entry replaced
            return None
        try:
            measured = from_payload(data)
            if not same_ranking(measured.scores, scores):
                return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        measured.extra["reused"] = str(path)
        return measured

    def get_record(self, name: str) -> Measured | None:
        """The one stored measurement of ``name`` whatever settings, inputs and code it was
        measured with: a record (``--record``), reported as such, never mixed into a fresh
        measurement. Several stored settings of one model are refused (ambiguous)."""
        found = sorted(self.root.glob(f"{name}-*.json"))
        found = [p for p in found if p.stem.rsplit("-", 1)[0] == name]
        if not found:
            return None
        if len(found) > 1:
            raise InputError(
                f"{name} has {len(found)} stored measurements "
                f"({', '.join(p.name for p in found)}); a record reads one: move the others "
                "out of the folder"
            )
        path = found[0]
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if SEAL in data and open_record(data) is None:
                print(
                    f"note: stored measurement {path} fails its seal (edited or damaged); "
                    "it is not read as a record",
                    file=sys.stderr,
                )
                return None
            data.pop(SEAL, None)  # records written before seals have none
            measured = from_payload(data)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        measured.extra["reused"] = str(path)
        measured.extra["record"] = str(data.get("key", ""))
        return measured

    def put(self, name: str, settings: Settings, key: str, measured: Measured) -> Path:
        from induction.store.io import write_json

        self.root.mkdir(parents=True, exist_ok=True)
        payload = {"key": key, "model": name, **to_payload(measured)}
        return write_json(self.path(name, settings), seal_record(payload))


def _open(path: Path, key: str) -> dict | None:
    """A stored entry's fields when it is stored under ``key`` and its seal holds
    (:func:`induction.store.seals.open_record`), else None: silently for an entry of other inputs
    (stale), after one note on stderr for one that does not parse, has no seal or was edited
    (docs/safety.md: a store never serves a damaged entry)."""
    from induction.store.seals import MISMATCH, MISSING, note_damaged

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        note_damaged(path, "not JSON")
        return None
    if isinstance(data, dict) and data.get("key") != key:
        return None
    body = open_record(data)
    if body is None:
        note_damaged(path, MISSING if not isinstance(data, dict) or SEAL not in data else MISMATCH)
    return body


def to_payload(measured: Measured) -> dict:
    """A measurement as strict JSON (NaN -> null)."""
    return strict_json(
        {
            "seconds": round(measured.seconds, 1),
            "sentence": measured.sentence,
            "row": measured.row,
            "tasks": measured.tasks.to_dict(orient="records"),
            "scores": measured.scores.to_dict(orient="records"),
            "extra": {k: v for k, v in measured.extra.items() if k != "reused"},
        }
    )


def from_payload(data: dict) -> Measured:
    """:func:`to_payload` read back (null -> NaN in the row)."""
    return Measured(
        row={k: (math.nan if v is None else v) for k, v in data["row"].items()},
        tasks=pd.DataFrame(data["tasks"]),
        scores=pd.DataFrame(data["scores"]),
        sentence=str(data.get("sentence", "")),
        seconds=float(data.get("seconds", 0.0)),
        extra=dict(data.get("extra", {})),
    )


def as_stored(measured: Measured) -> Measured:
    """``measured`` exactly as the store would give it back, so a fresh measurement and a
    reused one make the same tables."""
    return from_payload(json.loads(json.dumps(to_payload(measured))))


def strict_json(obj: Any) -> Any:
    """NaN -> None, numpy scalars -> Python, recursively (strict JSON)."""
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [strict_json(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, str):
        obj = obj.item()
    if isinstance(obj, float) and math.isnan(obj):
        return None
    return obj
