"""The scan on every architecture family users bring (issue #45 item 1; docs/specs.md,
"Architectures"): its induction and previous-token scores equal the same scores recomputed in
the test from transformers' eager attention patterns (conftest ``PlainArch``)."""

from __future__ import annotations

import pytest
import torch

from induction.circuits.effects import setup
from induction.models.loading import load_model
from induction.scores.scan import induction_scores

FAMILIES = ["llama", "gemma2", "gemma3", "qwen2", "qwen3", "mistral", "gpt2", "gpt_neox", "phi"]
SEQ_LEN, BATCH = 8, 3


@pytest.mark.parametrize("family", FAMILIES)
def test_scan_scores_match_eager_patterns(tiny_arch_dirs, plain_arch, family):
    folder = tiny_arch_dirs(family)
    loaded = load_model(str(folder))
    table = induction_scores(loaded, seq_len=SEQ_LEN, batch=BATCH, seeds=1,
                             scores=("induction", "previous_token"), progress=False)  # fmt: skip
    s = setup(loaded, seq_len=SEQ_LEN, batch=BATCH, seeds=1)  # the scan's prompts
    patterns = plain_arch.patterns(plain_arch.load(folder), s.tokens)
    start = s.prompts.layout.copy_start(1)
    for layer, p in enumerate(patterns):
        induction = plain_arch.stripe(p, start, SEQ_LEN).mean(0)  # [head]
        q = torch.arange(2, p.shape[-1])  # previous token: from position 2 (not the prefix)
        previous = p[:, :, q, q - 1].mean((0, 2))
        rows = table[table.layer == layer].sort_values("head")
        torch.testing.assert_close(
            torch.tensor(rows.induction.values, dtype=induction.dtype), induction, atol=1e-5, rtol=0
        )
        torch.testing.assert_close(
            torch.tensor(rows.previous_token.values, dtype=previous.dtype),
            previous,
            atol=1e-5,
            rtol=0,
        )
