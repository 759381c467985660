"""Where the zoo models live and how names resolve to folders.

The wheel ships the default model only (with its checkpoint series); the rest of the zoo is
data beside the package. A name resolves through, in order (docs/zoo.md, "Where models live"):

1. the package's own ``induction/zoo/models/`` (in a repository checkout: the whole zoo);
2. the repository's data folder ``zoo/models/`` next to the package, where one exists;
3. each folder of ``$INDUCTION_ZOO`` (``os.pathsep``-separated), e.g. a clone's models folder;
4. the hub repository ``$INDUCTION_ZOO_HUB`` (one subfolder per model), the real loading
   path: offline it fails in one line that says how to get the model instead.

Each model is a folder ``<family>-s<seed>/`` holding a Hugging Face
checkpoint (``config.json``, ``model.safetensors``, tokenizer files) plus ``card.json``
(training config, time, FLOPs, measured scores). A grown model also holds
``duplication_log.json``; a looped model stores its block once with ``loop_plan.json`` and is
unrolled at load time (see ``induction.models.looped``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from induction.errors import ModelLoadError

#: The package's models folder: in a wheel the default model only, in a checkout every model.
#: ``induction zoo train`` never writes into it.
MODELS_DIR = Path(__file__).resolve().parents[1] / "zoo" / "models"
#: The repository's data folder for models kept outside the package.
REPOSITORY_MODELS = Path(__file__).resolve().parents[2] / "zoo" / "models"
#: Folders to search after the package and the repository (``os.pathsep``-separated).
ZOO_ENV = "INDUCTION_ZOO"
#: The hub repository that mirrors the zoo, one subfolder per model (the last resort).
ZOO_HUB_ENV = "INDUCTION_ZOO_HUB"
DEFAULT_ZOO_HUB = "induction-workbench/zoo"
#: The first zoo's families (growth gated on a measured head; docs/results.md says why they
#: cannot test the source's claim); ``grown12`` is grown by two LIDAS stages (4 -> 8 -> 12).
FIRST_ZOO = ("dense", "grown", "looped", "grown12")
#: The fixed-protocol families (docs/zoo.md), shipped as their seeds finish training; the
#: first seed of each ships its checkpoint series under ``checkpoints/``.
FIXED_PROTOCOL = ("dense8", "lidas8", "looped8", "looped8p")
#: The second fixed-protocol zoo (docs/zoo.md, "The second zoo"): 8 layers on the pilot's
#: in-context recipe; grown in four one-layer stages after (``grown8c``) or before
#: (``grown8ce``) the initial network forms induction heads.
SECOND_ZOO = ("dense8c", "grown8c", "grown8ce", "looped8c", "looped8cp")
#: The function-vector pair (docs/zoo.md): the second zoo's dense and late-grown recipes with
#: a tenth of the data as demonstration-defined relations (``pairs``), for FV heads.
FV_ZOO = ("dense8f", "grown8f")
#: The 12-layer zoo (a record): its recipe leaves variable assignment at chance at 12 layers.
TWELVE_LAYER_ZOO = ("dense12", "lidas12", "lidas12e", "looped12", "looped12p")
#: Round 4 (docs/replication.md, "Round 4"): the second zoo's recipe on the r4 curriculum,
#: measured on ``zoo4g``; ``grown8rt``/``grown8rte`` copy the top initial layer after/before
#: the induction heads form there. The recipe is pilot 13's (benchmarks/results/pilot4); five
#: arms train, 6 seeds each (benchmarks/build_zoo.py ROUND4_ORDER; docs/replication.md, R8).
ROUND4 = ("dense8r", "grown8r", "grown8re", "grown8rt", "grown8rte", "looped8r", "looped8rp")
FAMILIES = FIRST_ZOO + FIXED_PROTOCOL + SECOND_ZOO + FV_ZOO + TWELVE_LAYER_ZOO + ROUND4
#: What commands and API calls use when no model is named: round 4's top-growth arm (seed 0),
#: the replication's subject (docs/replication.md, R4-default): grown 4 -> 8 layers in four
#: one-layer stages, each copying the top initial layer after its induction heads formed
#: (initial L3 ends with 5 descendants), trained on the curriculum the ``zoo4g`` suite
#: measures, and passing every gate (docs/zoo.md, "The default model").
DEFAULT_MODEL = "grown8rt"
_NAME = re.compile(r"^(?P<family>[a-z]+\d*[a-z]*)-s(?P<seed>\d+)$")  # looped8cp-s0


def zoo_dirs() -> list[Path]:
    """The folders searched for zoo models, in precedence order (those that exist)."""
    extra = [Path(p).expanduser() for p in os.environ.get(ZOO_ENV, "").split(os.pathsep) if p]
    found: list[Path] = []
    for folder in (MODELS_DIR, REPOSITORY_MODELS, *extra):
        try:
            if folder.is_dir() and all(folder.resolve() != f.resolve() for f in found):
                found.append(folder)
        except OSError:  # a symlink loop or unreadable entry in $INDUCTION_ZOO: skip it
            continue
    return found


def _local_models() -> dict[str, Path]:
    """Model name -> folder over :func:`zoo_dirs`; the first folder that holds a name wins."""
    found: dict[str, Path] = {}
    for folder in zoo_dirs():
        for p in folder.iterdir():
            if p.name not in found and (p / "config.json").is_file():
                found[p.name] = p
    return found


def local_model_path(name: str) -> Path | None:
    """The local folder of zoo model ``name`` (``grown8c-s0``), None where no folder holds it
    (nothing is fetched)."""
    return _local_models().get(name)


def zoo_models() -> list[str]:
    """Names of the zoo models found locally, e.g. ``['dense8c-s0', ..., 'looped8cp-s4']``."""
    return sorted(_local_models(), key=_sort_key)


def _sort_key(name: str) -> tuple[str, int]:
    m = _NAME.match(name)
    return (m["family"], int(m["seed"])) if m else (name, -1)


def family_of(name: str) -> str | None:
    """The zoo family of a model name (``grown8c-s0`` and ``grown8c`` -> ``grown8c``), or None
    for a name that is not a zoo family's."""
    m = _NAME.match(name)
    family = m["family"] if m else name
    return family if family in FAMILIES else None


def is_zoo_name(spec: str) -> bool:
    m = _NAME.match(spec)
    return spec in FAMILIES or bool(m and m["family"] in FAMILIES)


def zoo_path(name: str) -> Path:
    """Folder of a zoo model; a bare family name (``grown``) resolves to its first seed found.
    A zoo name found in no local folder is fetched from the zoo's hub repository."""
    local = _local_models()
    if name in FAMILIES:
        of_family = sorted((n for n in local if family_of(n) == name), key=_sort_key)
        if not of_family:
            return _fetch_from_hub(f"{name}-s0")
        name = of_family[0]
    if name in local:
        return local[name]
    if family_of(name) is None:
        raise ModelLoadError(
            f"unknown zoo model {name!r}; found here: {', '.join(sorted(local, key=_sort_key))}"
            " (`induction models` lists them)"
        )
    return _fetch_from_hub(name)


def folder_or_zoo_path(spec: str) -> tuple[str, Path]:
    """``(name, folder)``: the model or run folder ``spec`` is (one with ``config.json`` or
    ``checkpoints/``; a build's own folder, which a shipped model of the same name must not
    stand in for), else the zoo model named ``spec`` (:func:`zoo_path`)."""
    path = Path(spec)
    if (path / "config.json").is_file() or (path / "checkpoints").is_dir():
        return path.name, path
    return spec, zoo_path(spec)


def _fetch_from_hub(name: str) -> Path:
    """``name``'s folder from the zoo's hub repository (cache first, then download); offline,
    one line naming every way to get the model."""
    from induction.models.hub import hub_offline_env, hub_reachable

    repo = os.environ.get(ZOO_HUB_ENV, DEFAULT_ZOO_HUB)
    how = (
        f"zoo model {name!r} is not in this install (searched "
        f"{', '.join(str(d) for d in zoo_dirs()) or 'no folder'}); set ${ZOO_ENV} to a folder "
        f"holding it (a clone's induction/zoo/models), rebuild it with `induction zoo train "
        f"{family_of(name)} --seed {name.rsplit('-s', 1)[-1]}`, or fetch it from the hub "
        f"repository {repo!r} online"
    )
    from huggingface_hub import snapshot_download

    patterns = [f"{name}/*", f"{name}/**"]
    try:
        snapshot = snapshot_download(repo, allow_patterns=patterns, local_files_only=True)
    except Exception:
        if hub_offline_env() or not hub_reachable():
            raise ModelLoadError(how + " (the hub is unreachable: offline)") from None
        try:
            snapshot = snapshot_download(repo, allow_patterns=patterns)
        except Exception as e:
            from induction.errors import one_line

            raise ModelLoadError(f"{how}: download failed: {one_line(e)}") from None
    folder = Path(snapshot) / name
    if not (folder / "config.json").is_file():
        raise ModelLoadError(f"{how}: the hub repository has no folder {name!r}")
    return folder


def model_card(name: str) -> dict:
    """The model's ``card.json`` (training config, cost, measured scores)."""
    from induction.store.io import read_json

    return read_json(zoo_path(name) / "card.json", "model card")
