"""Train a zoo model from its family or preset name: the one entry point of both trainers.

``zoo_config("lidas8", seed=1)`` builds the config of a fixed-protocol preset
(:mod:`induction.training.protocol`, the zoo the replication measures) or of a first-zoo
family (:mod:`induction.training.first_zoo`, the shipped record models); :func:`train` hands
it to its trainer. ``induction zoo train`` and ``benchmarks/build_zoo.py`` both call these.
"""

from __future__ import annotations

from pathlib import Path

from induction.errors import InputError
from induction.training.first_zoo import FAMILIES, VARIANTS, ZooTrainConfig, train_first_zoo
from induction.training.model import zoo_model_name
from induction.training.protocol import PRESETS, FixedTrainConfig, preset_config, train_fixed

__all__ = ["train", "zoo_config", "zoo_model_name"]


def zoo_config(family: str, seed: int = 0, **overrides) -> ZooTrainConfig | FixedTrainConfig:
    """The training config of ``family`` for ``seed``: a fixed-protocol preset of
    :data:`induction.training.protocol.PRESETS` (a :class:`FixedTrainConfig`), or a first-zoo
    family (``dense``, ``grown``, ``looped``) or variant (``grown12``; a
    :class:`ZooTrainConfig`); ``overrides`` replace fields."""
    if family in PRESETS:
        return preset_config(family, seed, **overrides)
    if family in VARIANTS:
        fields = {**VARIANTS[family], **overrides}
    elif family in FAMILIES:
        fields = {"family": family, **overrides}
    else:
        raise InputError(
            f"unknown zoo family {family!r}; use one of "
            + ", ".join(FAMILIES + tuple(VARIANTS) + tuple(PRESETS))
        )
    return ZooTrainConfig(seed=seed, **fields)


def train(
    cfg: ZooTrainConfig | FixedTrainConfig,
    out: Path | None = None,
    progress: bool = True,
    **kwargs,
) -> tuple[object, dict]:
    """Train one zoo model; returns ``(model, card)``, writing the checkpoint folder to ``out``
    when given. A :class:`FixedTrainConfig` goes to :func:`train_fixed` (with its ``resume``
    and ``stop_at`` keywords), a :class:`ZooTrainConfig` to :func:`train_first_zoo`."""
    if isinstance(cfg, FixedTrainConfig):
        return train_fixed(cfg, out=out, progress=progress, **kwargs)
    if kwargs:
        raise InputError(
            f"{', '.join(sorted(kwargs))}: only fixed-protocol presets take these; "
            f"{cfg.family} is a first-zoo family"
        )
    return train_first_zoo(cfg, out=out, progress=progress)
