"""Per-model measurements kept beside the outputs (``<out-dir>/models/<model>.json``), so a
replication of many models spans sessions: each model's measurement is written as it lands
(and can be committed), and a rerun measures only the models whose inputs changed.

A stored measurement is served only under the same key (:func:`measurement_key`): the
model's content, the settings (all but ``cache``, which gives the same numbers), the scan's
scores that rank the heads, and the source of the code that turns them into the row (the
``ablation`` and ``lineage`` packages, the zoo's task data, this package's measuring code,
by their syntax trees: :func:`code_hash`).
Anything else read back is ignored and measured again (docs/safety.md: a cache never serves
results of inputs that changed).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from .config import Settings
from .measure import Measured

#: Code that decides a measured row (a package counts with every module below it, except
#: the presentation-only :data:`PRESENTATION` files).
MEASURE_CODE = (
    "ablation",
    "lineage",
    "induction.zoo",
    "induction.prompts",
    "zoo_replication.measure",
    "zoo_replication.config",
)
PRESENTATION = ("cli.py", "render.py")
STORE_VERSION = 2  # 2: the code counts by its syntax tree (docstrings, comments, layout apart)


def code_hash(modules: tuple[str, ...] = MEASURE_CODE) -> str:
    """Hash of what ``modules`` compute: each file's syntax tree with docstrings dropped, so
    rewording a docstring or comment or reformatting keeps the stored measurements, and any
    change to the code itself does not (cf. :func:`induction.fingerprint.source_hash`, which
    hashes the bytes)."""
    import ast
    import hashlib
    import importlib.util

    h = hashlib.sha256()
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            h.update(f"{name}:missing".encode())
            continue
        origin = Path(spec.origin)
        files = sorted(origin.parent.rglob("*.py")) if spec.submodule_search_locations else [origin]
        for f in files:
            if f.name in PRESENTATION:
                continue
            tree = ast.parse(f.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                body = getattr(node, "body", None)
                if (
                    isinstance(body, list)
                    and body
                    and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)
                ):
                    node.body = body[1:] or [ast.Pass()]
            h.update(f"{name}:{f.relative_to(origin.parent)}:".encode())
            h.update(ast.dump(tree, include_attributes=False).encode())
    return h.hexdigest()


def measurement_key(loaded, settings: Settings, scores: pd.DataFrame) -> str:
    """Content key of one model's measurement (hex)."""
    from induction.fingerprint import fingerprint, loaded_model_hash

    measured = {k: v for k, v in asdict(settings).items() if k != "cache"}
    ranking = scores[["layer", "head", "induction"]].to_numpy().tolist()
    return fingerprint(
        STORE_VERSION,
        loaded_model_hash(loaded),
        str(loaded.info.dtype),
        measured,
        ranking,
        code_hash(MEASURE_CODE),
        length=32,
    )


class MeasurementStore:
    """``root/<model>.json`` per measured model (atomic writes, :mod:`induction.io`)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, name: str) -> Path:
        return self.root / f"{name}.json"

    def get(self, name: str, key: str) -> Measured | None:
        """The stored measurement of ``name`` under ``key``, else None (missing, damaged,
        or measured from other inputs)."""
        path = self.path(name)
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("key") != key:
                return None
            measured = from_payload(data)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        measured.extra["reused"] = str(path)
        return measured

    def put(self, name: str, key: str, measured: Measured) -> Path:
        from induction.io import write_json

        self.root.mkdir(parents=True, exist_ok=True)
        return write_json(self.path(name), {"key": key, "model": name, **to_payload(measured)})


def to_payload(measured: Measured) -> dict:
    """A measurement as strict JSON (NaN -> null)."""
    from .results import _clean

    return _clean(
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
