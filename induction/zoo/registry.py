"""Where the shipped zoo models live and how names resolve to folders.

Each model is a folder ``induction/zoo/models/<family>-s<seed>/`` holding a Hugging Face
checkpoint (``config.json``, ``model.safetensors``, tokenizer files) plus ``card.json``
(training config, time, FLOPs, measured scores). A grown model also holds
``duplication_log.json``; a looped model stores its block once with ``loop_plan.json`` and is
unrolled at load time (see ``induction.looped``).
"""

from __future__ import annotations

import re
from pathlib import Path

from induction.errors import ModelLoadError

MODELS_DIR = Path(__file__).parent / "models"
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
#: the induction heads form there. Not trained yet beyond the pilot (benchmarks/results/pilot4).
ROUND4 = ("dense8r", "grown8r", "grown8re", "grown8rt", "grown8rte", "looped8r", "looped8rp")
FAMILIES = FIRST_ZOO + FIXED_PROTOCOL + SECOND_ZOO + FV_ZOO + TWELVE_LAYER_ZOO + ROUND4
#: What commands and API calls use when no model is named: the second zoo's grown model
#: (seed 0), the replication's subject: grown 4 -> 8 layers in four one-layer LIDAS stages
#: after its 4-layer network formed induction heads (initial layer 1 has 5 descendants), and
#: passing the in-context gates (docs/zoo.md, "The second zoo").
DEFAULT_MODEL = "grown8c"
_NAME = re.compile(r"^(?P<family>[a-z]+\d*[a-z]*)-s(?P<seed>\d+)$")  # looped8cp-s0


def zoo_models() -> list[str]:
    """Names of the shipped zoo models, e.g. ``['dense-s0', ..., 'looped-s2']``."""
    if not MODELS_DIR.is_dir():
        return []
    names = [p.name for p in MODELS_DIR.iterdir() if (p / "config.json").is_file()]
    return sorted(names, key=_sort_key)


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
    """Folder of a zoo model; a bare family name (``grown``) resolves to its first seed."""
    shipped = zoo_models()
    if name in FAMILIES:
        of_family = [n for n in shipped if n.startswith(name + "-s")]
        if not of_family:
            raise ModelLoadError(
                f"no shipped zoo model of family {name!r}; train one with "
                f"`induction zoo train {name} --seed 0`"
            )
        name = of_family[0]
    if name not in shipped:
        raise ModelLoadError(
            f"unknown zoo model {name!r}; shipped: {', '.join(shipped) or 'none'} "
            "(`induction models` lists them)"
        )
    return MODELS_DIR / name


def model_card(name: str) -> dict:
    """The model's ``card.json`` (training config, cost, measured scores)."""
    from induction.io import read_json

    return read_json(zoo_path(name) / "card.json", "model card")
