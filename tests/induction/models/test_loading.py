"""Model loading: good specs load into a bridge that matches transformers; bad specs fail in
one line (library: ModelLoadError; CLI: exit 2, ``error: ...`` on stderr, no traceback)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from induction.commands.main import app
from induction.errors import LineageError, ModelLoadError
from induction.models.loading import LoadedModel, load_model, ordinary_token_range
from lineage.log import duplication_log

runner = CliRunner()


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


# --------------------------------------------------------------------------- good specs


def test_folder_loads_with_facts(tiny_llama_dir):
    loaded = load_model(str(tiny_llama_dir), device="cpu")
    assert isinstance(loaded, LoadedModel)
    info = loaded.info
    assert (info.source, info.architecture) == ("folder", "LlamaForCausalLM")
    assert (info.n_layers, info.n_heads, info.n_kv_heads) == (2, 4, 2)
    assert info.is_gqa and info.d_model == 32 and info.d_head == 8
    assert info.vocab_size == 128 and info.n_ctx == 256
    assert info.bos_token_id == 1 and info.special_token_ids == (0, 1, 2, 3)
    assert info.ordinary_token_range == (4, 128)  # zoo vocabulary
    assert info.zoo_vocabulary and info.default_repeat_len == 50
    assert (info.device, info.dtype) == ("cpu", "float32")
    assert loaded.duplication_log_path is None and loaded.loop_plan is None and loaded.card is None
    assert loaded.hf_model is loaded.bridge.original_model
    assert loaded.tokenizer is loaded.bridge.tokenizer


def test_bridge_logits_equal_transformers(tiny_llama_dir):
    from transformers import AutoModelForCausalLM

    loaded = load_model(tiny_llama_dir, device="cpu")  # a Path works too
    raw = AutoModelForCausalLM.from_pretrained(str(tiny_llama_dir), attn_implementation="eager")
    tokens = loaded.bridge.to_tokens("a = 3 , b = a , b ?")
    assert tokens[0, 0].item() == 1  # BOS
    with torch.no_grad():
        ours = loaded.bridge(tokens)
        theirs = raw(tokens).logits
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)


def test_model_object_is_copied_not_mutated(tiny_llama_dir):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_llama_dir))
    layer_types = [type(m) for m in model.model.layers]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    loaded = load_model(model, device="cpu", dtype="float32")
    assert loaded.info.source == "object" and loaded.info.zoo_vocabulary
    assert [type(m) for m in model.model.layers] == layer_types
    assert loaded.hf_model is not model
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    tokens = torch.tensor([[1, 22, 23, 24, 22, 23]])
    with torch.no_grad():
        torch.testing.assert_close(loaded.bridge(tokens), model(tokens).logits, atol=1e-5, rtol=0)


def test_dtype_option(tiny_llama_dir):
    loaded = load_model(str(tiny_llama_dir), device="cpu", dtype="bf16")
    assert loaded.info.dtype == "bfloat16"
    assert next(loaded.hf_model.parameters()).dtype == torch.bfloat16


def test_card_sets_repeat_len(tiny_llama_dir, tmp_path):
    folder = _copy(tiny_llama_dir, tmp_path / "with-card")
    (folder / "card.json").write_text(json.dumps({"repeat_len": 32, "family": "dense"}))
    loaded = load_model(str(folder), device="cpu")
    assert loaded.card["family"] == "dense" and loaded.info.default_repeat_len == 32


def test_loop_plan_is_unrolled(tiny_llama_dir, tmp_path):
    from induction.models.looped import LoopPlan

    folder = _copy(tiny_llama_dir, tmp_path / "looped")
    LoopPlan(block=1, loops=3, prelude=1).save(folder)  # stored 2 layers -> 4 unrolled
    loaded = load_model(str(folder), device="cpu")
    assert loaded.info.n_layers == 4 and loaded.loop_plan.loops == 3


def test_duplication_log_is_found_and_lineage_checks_it(tiny_llama_dir, tmp_path):
    from lineage.log import DuplicationLog

    folder = _copy(tiny_llama_dir, tmp_path / "grown")
    log = DuplicationLog(initial_depth=1)
    log.record_copy(step=10, operator="copy", source=(0, 1), insert_at=1)
    log.save(folder / "duplication_log.json")
    loaded = load_model(str(folder), device="cpu")
    assert duplication_log(loaded).final_depth == 2

    log.record_copy(step=20, operator="copy", source=(0, 1), insert_at=1)  # now 3 layers
    log.save(folder / "duplication_log.json")
    loaded = load_model(str(folder), device="cpu")  # loading does not read the log
    assert loaded.duplication_log_path == folder / "duplication_log.json"
    with pytest.raises(LineageError, match="3 layers"):
        duplication_log(loaded)


def test_ordinary_token_range_rules():
    smollm_specials = tuple(range(17))
    assert ordinary_token_range(49152, smollm_specials) == (100, 20000)
    assert ordinary_token_range(50257, (50256,)) == (100, 20000)  # GPT-2
    assert ordinary_token_range(151936, (151643, 151644)) == (100, 20000)  # Qwen
    assert ordinary_token_range(32000, (0, 1, 2, 5000)) == (100, 5000)  # special in band
    assert ordinary_token_range(32000, (0, 1, 2, 300)) == (301, 20000)  # near band start
    assert ordinary_token_range(500, (0, 1, 2)) == (3, 500)  # tiny vocabulary


# --------------------------------------------------------------------------- bad specs


def _bad_specs(tiny: Path, tmp: Path) -> dict[str, tuple[str, str]]:
    """name -> (spec, a word the one-line message must contain)."""
    specs: dict[str, tuple[str, str]] = {}
    specs["missing path"] = (str(tmp / "no" / "such" / "model"), "no such file")
    empty = tmp / "empty"
    empty.mkdir()
    specs["no config.json"] = (str(empty), "config.json")

    bad_json = _copy(tiny, tmp / "bad-json")
    (bad_json / "config.json").write_text("{not json")
    specs["config not JSON"] = (str(bad_json), "not valid JSON")

    vision = tmp / "vision"
    vision.mkdir()
    (vision / "config.json").write_text(json.dumps({"model_type": "vit"}))
    specs["not a causal LM"] = (str(vision), "not a causal language model")

    ctrl = tmp / "ctrl"
    ctrl.mkdir()
    (ctrl / "config.json").write_text(
        json.dumps({"model_type": "ctrl", "architectures": ["CTRLLMHeadModel"]})
    )
    specs["unsupported by the bridge"] = (str(ctrl), "not supported by TransformerLens")

    truncated = _copy(tiny, tmp / "truncated")
    weights = truncated / "model.safetensors"
    with open(weights, "r+b") as f:
        f.truncate(weights.stat().st_size - 100)
    specs["truncated safetensors"] = (str(truncated), "corrupt or truncated")

    garbage = _copy(tiny, tmp / "garbage")
    (garbage / "model.safetensors").write_bytes(os.urandom(4096))
    specs["garbage safetensors"] = (str(garbage), "corrupt or truncated")

    no_weights = _copy(tiny, tmp / "no-weights")
    (no_weights / "model.safetensors").unlink()
    specs["no weights"] = (str(no_weights), "no *.safetensors")

    pickled = _copy(tiny, tmp / "pickled")
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    specs["pickle weights only"] = (str(pickled), "safetensors only")

    no_tok = _copy(tiny, tmp / "no-tokenizer")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (no_tok / name).unlink()
    specs["no tokenizer"] = (str(no_tok), "no tokenizer")

    missing_tensor = _copy(tiny, tmp / "missing-tensor")
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(missing_tensor / "model.safetensors"))
    del tensors["model.layers.0.mlp.up_proj.weight"]
    save_file(tensors, str(missing_tensor / "model.safetensors"), metadata={"format": "pt"})
    specs["tensor missing"] = (str(missing_tensor), "do not match")

    specs["a file that is not .gguf"] = (str(tiny / "config.json"), "not a .gguf")
    corrupt_gguf = tmp / "corrupt.gguf"
    corrupt_gguf.write_bytes(b"GGUF" + os.urandom(2000))
    specs["corrupt gguf"] = (str(corrupt_gguf), "GGUF")
    specs["missing gguf"] = (str(tmp / "nothing.gguf"), "no such file")
    specs["unknown zoo seed"] = ("dense-s99", "zoo model")
    specs["empty spec"] = ("", "empty model spec")
    return specs


BAD_NAMES = [
    "missing path",
    "no config.json",
    "config not JSON",
    "not a causal LM",
    "unsupported by the bridge",
    "truncated safetensors",
    "garbage safetensors",
    "no weights",
    "pickle weights only",
    "no tokenizer",
    "tensor missing",
    "a file that is not .gguf",
    "corrupt gguf",
    "missing gguf",
    "unknown zoo seed",
    "empty spec",
]


@pytest.fixture(scope="module")
def bad_specs(tiny_llama_dir, tmp_path_factory):
    return _bad_specs(tiny_llama_dir, tmp_path_factory.mktemp("bad"))


def _assert_one_line_cli_error(args: list[str], word: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert word.lower() in lines[0].lower()
    assert "Traceback" not in result.output


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_spec(name, bad_specs):
    spec, word = bad_specs[name]
    with pytest.raises(ModelLoadError) as err:
        load_model(spec, device="cpu")
    message = str(err.value)
    assert "\n" not in message and word.lower() in message.lower(), message
    _assert_one_line_cli_error(["info", spec, "--device", "cpu"], word)


def test_gguf_without_gguf_package(bad_specs, tmp_path, monkeypatch):
    gguf_file = tmp_path / "model.gguf"
    gguf_file.write_bytes(b"GGUF" + bytes(100))
    monkeypatch.setitem(sys.modules, "gguf", None)  # makes `import gguf` raise ImportError
    with pytest.raises(ModelLoadError, match="pip install gguf"):
        load_model(str(gguf_file), device="cpu")
    _assert_one_line_cli_error(["info", str(gguf_file)], "pip install gguf")


@pytest.mark.parametrize(
    ("option", "value", "word"),
    [("--dtype", "float13", "unknown dtype"), ("--device", "tpu7", "device")],
)
def test_bad_options(tiny_llama_dir, option, value, word):
    with pytest.raises(ModelLoadError, match=word):
        load_model(str(tiny_llama_dir), **{option.strip("-"): value})
    _assert_one_line_cli_error(["info", str(tiny_llama_dir), option, value], word)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_cuda(tiny_llama_dir):
    with pytest.raises(ModelLoadError, match="CUDA is not available"):
        load_model(str(tiny_llama_dir), device="cuda")
    _assert_one_line_cli_error(["info", str(tiny_llama_dir), "--device", "cuda"], "CUDA")


@pytest.mark.parametrize("offline_env", [True, False])
def test_hub_name_fails_fast(monkeypatch, tmp_path, offline_env):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty hub cache
    if offline_env:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    name = "no-such-org-3141/no-such-model-2718"
    start = time.monotonic()
    with pytest.raises(ModelLoadError) as err:
        load_model(name, device="cpu")
    assert time.monotonic() - start < 15
    message = str(err.value)
    assert "\n" not in message
    if offline_env:
        assert "unreachable" in message and "local checkpoint folder" in message
    else:  # offline here; with a network the repository does not exist
        assert "unreachable" in message or "no such repository" in message
    _assert_one_line_cli_error(["info", name], name)


def test_cli_info_prints_facts(tiny_llama_dir):
    result = runner.invoke(app, ["info", str(tiny_llama_dir), "--device", "cpu", "--json"])
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)
    assert facts["n_kv_heads"] == 2 and facts["ordinary_token_range"] == [4, 128]


def test_device_map_auto_loads(tiny_llama_dir):
    """device_map goes through accelerate (one CPU here; several GPUs where present)."""
    loaded = load_model(str(tiny_llama_dir), device_map="auto")
    tokens = torch.tensor([[1, 22, 23, 22]])
    with torch.no_grad():
        assert loaded.bridge(tokens).shape == (1, 4, 128)
    with pytest.raises(ModelLoadError, match="not both"):
        load_model(str(tiny_llama_dir), device="cpu", device_map="auto")


def test_a_folder_whose_name_is_not_utf8_loads(tiny_llama_dir, tmp_path):
    """LD_badbytes: the Rust tokenizer and safetensors refuse non-UTF-8 paths; the loader
    reads through plainly named links and keeps the real path."""
    import os
    import shutil

    from induction import load_model

    odd = Path(os.fsdecode(bytes(tmp_path) + b"/bad\xffname"))
    shutil.copytree(tiny_llama_dir, odd)
    loaded = load_model(str(odd), device="cpu")
    assert loaded.info.path == str(odd)
    ids = loaded.tokenizer("a b")["input_ids"]
    assert loaded.bridge(torch.tensor([ids])).shape[:2] == (1, len(ids))
