"""Facts read from a checkpoint folder's ``config.json`` without loading the model.

The one reader of a checkpoint's config facts (depth, heads, loop plan): ``induction lineage``
traces a folder with it, and ``induction grow`` (``lineage.checkpoint.read_checkpoint``) reads
the config it rewrites through it. Depth and head keys come from :mod:`induction.models.layers`.
Nothing here imports torch unless a loop plan is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from induction.errors import InputError
from induction.models.layers import DEPTH_KEYS, config_depth, config_heads

if TYPE_CHECKING:
    from induction.models.looped import LoopPlan

CONFIG_FILE = "config.json"
LOOP_PLAN_FILE = "loop_plan.json"  # induction.models.looped.PLAN_FILE, named here without torch


@dataclass(frozen=True)
class ConfigFacts:
    """A checkpoint folder's config: depth as stored, query heads, and whether it is looped."""

    folder: Path
    config: dict  # config.json as read
    depth_key: str  # the config key that holds the depth
    depth: int  # stored decoder layers
    n_heads: int | None  # query heads; None when the config names none

    @property
    def looped(self) -> bool:
        """The folder stores one block run several times (``loop_plan.json``)."""
        return (self.folder / LOOP_PLAN_FILE).is_file()

    @cached_property
    def loop_plan(self) -> LoopPlan | None:
        """The folder's loop plan (read on first use), or None."""
        if not self.looped:
            return None
        from induction.models.looped import LoopPlan

        return LoopPlan.load(self.folder)

    @property
    def n_layers(self) -> int:
        """Layers the model runs: the unrolled depth of a looped model, else the stored one."""
        plan = self.loop_plan
        return plan.unrolled_depth if plan is not None else self.depth


def read_config(folder: str | Path) -> dict:
    """``config.json`` of a checkpoint folder as a dict (one-line :class:`InputError` if not)."""
    path = Path(folder) / CONFIG_FILE
    if not path.is_file():
        raise InputError(f"{folder} has no config.json; expected a Hugging Face checkpoint folder")
    from induction.store.io import read_json

    config = read_json(path, "config")
    if not isinstance(config, dict):
        raise InputError(f"{path} is not a JSON object")
    return config


def read_config_facts(folder: str | Path) -> ConfigFacts:
    """Depth, heads and loop plan of a checkpoint folder, read from its files only."""
    folder = Path(folder)
    config = read_config(folder)
    found = config_depth(config)
    if found is None:
        raise InputError(f"{folder / CONFIG_FILE} gives no depth ({', '.join(DEPTH_KEYS)})")
    depth_key, depth = found
    return ConfigFacts(folder, config, depth_key, depth, config_heads(config))
