"""Which models the replication measures: the shipped zoo (``induction/zoo/models``) or any
folder of ``<family>-s<seed>`` model folders (``--models-dir runs/zoo2``).

A model's family is its folder name minus the seed (``lidas8-s1`` -> ``lidas8``); each family
maps to one of the source's families (docs/zoo.md: the first zoo's ``dense``/``grown``/
``looped``/``grown12`` and the fixed-protocol presets ``dense8``/``lidas8``/``looped8``/
``looped8p``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .config import SOURCE_FAMILIES

#: Zoo family -> the source's family (Kapl et al. 2025: dense, LIDAS-grown, looped).
SOURCE_FAMILY = {
    "dense": "dense",
    "grown": "lidas",
    "grown12": "lidas",
    "looped": "looped",
    "dense8": "dense",
    "lidas8": "lidas",
    "looped8": "looped",
    "looped8p": "looped",
}
#: Families measured by default: round 4 (docs/zoo.md, "Round 4"; docs/replication.md, the R
#: rules): dense, top growth after heads form (``grown8rt``) and its twin before they form
#: (``grown8rte``), middle growth (``grown8r``) and looped, six seeds each on one data stream and
#: schedule. The earlier zoos' families (``dense8c grown8c grown8ce looped8c looped8cp``, the
#: record in ``benchmarks/results/zoo3``; ``dense8 lidas8 looped8 looped8p`` in ``zoo2``;
#: ``dense grown looped``) can still be named with ``--families``.
FAMILIES = ("dense8r", "grown8rt", "grown8rte", "grown8r", "looped8r")
_NAME = re.compile(r"^(?P<family>[a-z][a-z0-9_]*)-s(?P<seed>\d+)$")


def source_family(family: str) -> str | None:
    """The source's family of a zoo family: the table above, else by name prefix
    (``dense*``, ``lidas*``/``grown*``, ``looped*``), else None."""
    if family in SOURCE_FAMILY:
        return SOURCE_FAMILY[family]
    for prefix, fam in (("dense", "dense"), ("lidas", "lidas"), ("grown", "lidas")):
        if family.startswith(prefix):
            return fam
    return "looped" if family.startswith("looped") else None


@dataclass(frozen=True)
class ModelRef:
    family: str  # zoo family (preset name minus seed)
    seed: int
    spec: str  # zoo name or folder

    @property
    def name(self) -> str:
        return f"{self.family}-s{self.seed}"

    @property
    def source_family(self) -> str | None:
        return source_family(self.family)


#: Round 4's declared drop claims (docs/replication.md, rule R8): one Holm family of three arms
#: against ``dense8r``; the twin ``grown8rte`` is read on the lineage only.
ROUND4_DROP_CLAIMS = ("grown8r", "grown8rt", "looped8r")
#: Round 4's one growth-timing question (R4-lineage): heads first, then growth first. The
#: middle-growth arm ``grown8r`` copies a layer without heads, so it is no timing arm.
ROUND4_TIMING_PAIR = ("grown8rt", "grown8rte")


def is_round4(families: Iterable[str]) -> bool:
    """Every family is a round-4 arm (``induction.models.registry.ROUND4``)."""
    from induction.models.registry import ROUND4

    found = set(families)
    return bool(found) and found <= set(ROUND4)


def drop_claim_families(families: Iterable[str]) -> list[str]:
    """The families whose drop against dense is a claim of the Holm family, in the source's
    order: round 4's declared three where every family is a round-4 arm (R8), else every LIDAS
    and looped family (the second zoo's rule, A9)."""
    found = family_order(families)
    if is_round4(found):
        return [f for f in found if f in ROUND4_DROP_CLAIMS]
    return [f for f in found if source_family(f) in ("lidas", "looped")]


def family_order(families: Iterable[str]) -> list[str]:
    """Families in the source's order (dense, LIDAS, looped), then by name."""

    def key(f: str):
        src = source_family(f)
        return (SOURCE_FAMILIES.index(src) if src in SOURCE_FAMILIES else 9, f)

    return sorted(dict.fromkeys(families), key=key)


def _finished(folder: Path) -> bool:
    """A loadable model folder; a fixed-protocol run writes ``card.json`` last, so a run
    still training (``train_config.json`` without ``card.json``) is skipped."""
    if not (folder / "config.json").is_file():
        return False
    return (folder / "card.json").is_file() or not (folder / "train_config.json").is_file()


def discover(
    families: Iterable[str] | None = None,
    seeds: Iterable[int] | None = None,
    models_dir: str | Path | None = None,
    one_per_family: bool = False,
) -> list[ModelRef]:
    """The models present, in the source's family order, then seed order.

    ``families`` (default: :data:`FAMILIES` for the shipped zoo, every family with a source
    counterpart in ``models_dir``); ``models_dir`` reads ``<family>-s<seed>`` folders from
    another folder (e.g. ``runs/zoo2``); ``one_per_family`` keeps the lowest seed of each.
    """
    wanted = None if seeds is None else {int(s) for s in seeds}
    if models_dir is None:
        from induction.models.registry import zoo_models

        names = [(n, n) for n in zoo_models()]
        families = FAMILIES if families is None else families
    else:
        root = Path(models_dir)
        names = [(p.name, str(p)) for p in sorted(root.iterdir()) if p.is_dir() and _finished(p)]
    keep = None if families is None else set(families)
    refs = []
    for name, spec in names:
        m = _NAME.match(name)
        if not m or source_family(m["family"]) is None:
            continue
        if keep is not None and m["family"] not in keep:
            continue
        if wanted is not None and int(m["seed"]) not in wanted:
            continue
        refs.append(ModelRef(m["family"], int(m["seed"]), spec))
    order = family_order(r.family for r in refs)
    refs.sort(key=lambda r: (order.index(r.family), r.seed))
    if one_per_family:
        seen: set[str] = set()
        refs = [r for r in refs if not (r.family in seen or seen.add(r.family))]
    return refs
