"""Lineage fixtures: a tiny LIDAS-grown checkpoint (2 -> 4 -> 8 layers, like the zoo's
``grown`` family) with simulated training drift, plus the zoo's grown models when shipped."""

from __future__ import annotations

from pathlib import Path

import pytest


def make_grown(
    folder: Path,
    *,
    seed: int = 0,
    drift: float = 0.3,
    n_kv_heads: int = 4,
    d_model: int = 64,
    initial_folder: Path | None = None,
):
    """Grow a random 2-layer Llama by LIDAS (block 2, then block 4) to 8 layers, adding
    Gaussian noise of ``drift`` x each tensor's std before, between and after the growth
    steps (a stand-in for training); save weights, zoo tokenizer and duplication log."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from induction.zoo.vocab import BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE, save_tokenizer
    from lineage.growth import grow
    from lineage.log import DuplicationLog

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=d_model,
        intermediate_size=2 * d_model,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=n_kv_heads,
        max_position_embeddings=256,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
    )
    model = LlamaForCausalLM(cfg).eval()

    def add_drift():
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * p.std() * drift)

    if initial_folder is not None:
        model.save_pretrained(str(initial_folder))
        save_tokenizer(initial_folder)
    log = DuplicationLog(initial_depth=2)
    add_drift()
    grow(model, "lidas", block=2, log=log, step=100)
    add_drift()
    grow(model, "lidas", block=4, log=log, step=200)
    add_drift()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    save_tokenizer(folder)
    log.save(folder / "duplication_log.json")
    return folder, log


@pytest.fixture(scope="session")
def grown_dir(tmp_path_factory) -> Path:
    """A read-only tiny grown checkpoint folder (8 layers, 4 heads, d_model 64)."""
    base = tmp_path_factory.mktemp("grown")
    (base / "initial").mkdir()
    folder, _ = make_grown(base / "grown", initial_folder=base / "initial")
    return folder


@pytest.fixture(scope="session")
def grown_maker():
    return make_grown
