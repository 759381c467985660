"""Where a model keeps its decoder layers: module paths, config depth keys, tensor names.

The one place that knows these layouts; growth (``lineage.growth``), checkpoint restacking
(``lineage.checkpoint``), lineage inference and the loader all read them from here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from induction.errors import InputError

if TYPE_CHECKING:
    from torch import nn

#: Attribute paths of the decoder's layer list (Llama, Qwen2, Gemma, GPT-NeoX, GPT-2, OPT).
LAYER_PATHS = ("model.layers", "gpt_neox.layers", "transformer.h", "model.decoder.layers")
#: config.json keys that give the depth, in the order architectures use them.
DEPTH_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
#: config.json keys that give the number of query heads.
HEAD_KEYS = ("num_attention_heads", "n_head", "num_heads")
#: config.json lists with one entry per layer (reordered with the layers on restacking).
PER_LAYER_KEYS = ("layer_types", "no_rope_layers")
#: A tensor name inside layer ``i``: ``<prefix>.<i>.<rest>``, e.g. ``model.layers.3.mlp...``.
LAYER_KEY = re.compile(
    r"^(?P<prefix>(?:[\w-]+\.)*?(?:layers|h|blocks|layer))\.(?P<i>\d+)\.(?P<rest>.+)$"
)


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The ModuleList holding a decoder's layers (one of :data:`LAYER_PATHS`)."""
    from torch import nn

    for path in LAYER_PATHS:
        obj = model
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if isinstance(obj, nn.ModuleList):
            return obj
    raise InputError(
        f"cannot find the decoder layers of {type(model).__name__}; supported layouts: "
        + ", ".join(LAYER_PATHS)
    )


def set_layers(model: nn.Module, new_layers: list[nn.Module]) -> None:
    """Replace the decoder's layers by ``new_layers`` (in that order), in place."""
    layers = decoder_layers(model)
    layers._modules.clear()
    for i, layer in enumerate(new_layers):
        layers.add_module(str(i), layer)


def config_depth(config: dict) -> tuple[str, int] | None:
    """``(key, depth)`` from a config.json dict, or None when no depth key is an int."""
    key = next((k for k in DEPTH_KEYS if isinstance(config.get(k), int)), None)
    return None if key is None else (key, config[key])


def config_heads(config: dict) -> int | None:
    """Number of query heads from a config.json dict, or None."""
    return next((config[k] for k in HEAD_KEYS if isinstance(config.get(k), int)), None)
