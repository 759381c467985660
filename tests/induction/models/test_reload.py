"""Loading a checkpoint series with one bridge (induction.models.reload): a swapped model
computes exactly what a fresh load of the same folder computes, and anything the swap cannot
take (a grown depth) is loaded afresh."""

from __future__ import annotations

import torch

from induction.models.loading import load_model
from induction.models.registry import MODELS_DIR
from induction.models.reload import Reloader

SERIES = MODELS_DIR / "grown8c-s0" / "checkpoints"


def _logits(loaded, tokens: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return loaded.bridge(tokens).detach().clone()


def test_a_swapped_checkpoint_computes_what_a_fresh_load_computes():
    tokens = torch.randint(5, 60, (2, 24), generator=torch.Generator().manual_seed(0))
    reloader = Reloader(device="cpu")
    first = reloader.load(str(SERIES / "step-1600"))
    before = _logits(first, tokens)
    swapped = reloader.load(str(SERIES / "step-1800-pre"))  # same depth (5): weights swapped in
    assert (reloader.fresh, reloader.swaps) == (1, 1)
    assert swapped.bridge is first.bridge and swapped.info.path.endswith("step-1800-pre")
    fresh = load_model(str(SERIES / "step-1800-pre"), device="cpu")
    assert torch.equal(_logits(swapped, tokens), _logits(fresh, tokens))
    assert not torch.equal(before, _logits(swapped, tokens))  # the weights did change

    grown = reloader.load(str(SERIES / "step-1800"))  # one layer more: loaded afresh
    assert (reloader.fresh, reloader.swaps) == (2, 1) and grown.info.n_layers == 6
    assert torch.equal(
        _logits(grown, tokens), _logits(load_model(str(SERIES / "step-1800")), tokens)
    )
