"""What a loaded model is: :class:`LoadedModel` (a TransformerLens bridge with its facts, loop
plan and card) and :class:`ModelInfo` (the facts), with the tokenizer facts they are built from.

Types only, beside the loader rather than inside it, so that the resolver
(:mod:`induction.models.specs`) and every job can name them without importing the loader, and the
loader (:mod:`induction.models.loading`) builds them. Nothing here imports torch or transformers at
import time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformer_lens.model_bridge import TransformerBridge

    from induction.models.looped import LoopPlan

#: Band of token ids used for random-token prompts on real tokenizers: TransformerLens's
#: induction eval draws from [100, 20000); clipped to the vocabulary and moved off any special
#: or added token inside it (see :func:`ordinary_token_range`).
REAL_TOKEN_BAND = (100, 20000)
DEFAULT_REPEAT_LEN = 50
#: Growth record written beside a grown checkpoint's weights (format: ``lineage.log``).
DUPLICATION_LOG = "duplication_log.json"


@dataclass(frozen=True)
class ModelInfo:
    """What the workbench needs to know about a loaded model."""

    name: str
    source: str  # "zoo" | "folder" | "gguf" | "hub" | "object"
    path: str | None  # folder, .gguf file, hub cache snapshot; None for objects
    architecture: str
    n_layers: int  # after unrolling a looped model
    n_heads: int
    n_kv_heads: int  # < n_heads under grouped-query attention
    d_model: int
    d_head: int
    vocab_size: int  # rows of the embedding matrix
    n_ctx: int
    bos_token_id: int | None
    special_token_ids: tuple[int, ...]  # specials and added tokens
    ordinary_token_range: tuple[int, int]  # [lo, hi) ids safe for random-token prompts
    default_repeat_len: int
    zoo_vocabulary: bool  # the zoo's 128-token word vocabulary (induction.zoo.vocab)
    device: str
    dtype: str

    @property
    def is_gqa(self) -> bool:
        return self.n_kv_heads < self.n_heads

    @classmethod
    def from_bridge(
        cls,
        bridge: TransformerBridge,
        *,
        name: str | None = None,
        source: str = "object",
        path: str | None = None,
        card: dict | None = None,
    ) -> ModelInfo:
        """The facts of any TransformerBridge, e.g. one not made by :func:`load_model`
        (:func:`model_info_from_bridge`, the one builder)."""
        return model_info_from_bridge(cls, bridge, name=name, source=source, path=path, card=card)

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        d = asdict(self)
        d["special_token_ids"] = list(self.special_token_ids)
        d["ordinary_token_range"] = list(self.ordinary_token_range)
        return d


@dataclass
class LoadedModel:
    """A bridge plus the facts, loop plan and card that came with the model."""

    bridge: TransformerBridge
    info: ModelInfo
    loop_plan: LoopPlan | None = None  # looped models: block layer and pass of each layer
    card: dict | None = field(default=None, repr=False)

    @property
    def duplication_log_path(self) -> Path | None:
        """The ``duplication_log.json`` shipped beside the weights (grown models), else None.

        Lineage reads and checks it (``lineage.duplication_log(loaded)``); the loader does not
        interpret it, so loading never depends on the lineage package.
        """
        if self.info.path is None or self.info.source not in ("zoo", "folder"):
            return None
        path = Path(self.info.path) / DUPLICATION_LOG
        return path if path.is_file() else None

    @property
    def tokenizer(self):
        return self.bridge.tokenizer

    @property
    def hf_model(self):
        """The wrapped transformers model (its layers are bridge components now)."""
        return self.bridge.original_model

    @property
    def name(self) -> str:
        return self.info.name


# --------------------------------------------------------------------------- tokenizer facts


def is_zoo_tokenizer(tokenizer) -> bool:
    from induction.zoo import vocab

    if len(tokenizer) != vocab.VOCAB_SIZE:
        return False
    return tokenizer.convert_ids_to_tokens(list(range(vocab.VOCAB_SIZE))) == vocab.TOKENS


def special_token_ids(tokenizer) -> tuple[int, ...]:
    ids = set(getattr(tokenizer, "all_special_ids", []) or [])
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    ids.update(int(i) for i in added)
    return tuple(sorted(i for i in ids if i is not None and i >= 0))


def ordinary_token_range(
    vocab_size: int, specials: tuple[int, ...], band: tuple[int, int] = REAL_TOKEN_BAND
) -> tuple[int, int]:
    """``[lo, hi)`` of ids for random-token prompts on a real tokenizer.

    Starts from TransformerLens's band [100, 20000) clipped to the vocabulary. If special or
    added tokens sit inside it, the band ends before the first of them, or, when that leaves
    under 1000 ids, starts after the last. When under 1000 ids remain (a small vocabulary),
    every id above the highest special token is used.
    """
    lo, hi = band[0], min(band[1], vocab_size)
    inside = [s for s in specials if lo <= s < hi]
    if inside:
        if min(inside) - lo >= 1000:
            hi = min(inside)
        else:
            lo = max(inside) + 1
    if hi - lo < 1000:
        lo = max((s for s in specials if s < vocab_size), default=-1) + 1
        hi = vocab_size
    return lo, hi


def model_info_from_bridge(
    cls: type[ModelInfo],
    bridge,
    *,
    name: str | None = None,
    source: str = "object",
    path: str | None = None,
    card: dict | None = None,
) -> ModelInfo:
    """The facts of a TransformerBridge (``ModelInfo.from_bridge``).

    ``name`` defaults to the bridge config's ``model_name``, else the wrapped model's class.
    A bridge without a tokenizer gets no special tokens, no BOS and the whole vocabulary as
    its ordinary range. ``card`` (a model card dict) may set ``default_repeat_len``.
    """
    from induction.zoo import vocab

    cfg = bridge.cfg
    tok = getattr(bridge, "tokenizer", None)
    hf_model = bridge.original_model
    n_vocab = int(cfg.d_vocab)
    if tok is None:
        specials: tuple[int, ...] = ()
        zoo, bos = False, None
        token_range = (0, n_vocab)
    else:
        specials = special_token_ids(tok)
        zoo, bos = is_zoo_tokenizer(tok), tok.bos_token_id
        if zoo:
            token_range = (vocab.FIRST_ORDINARY_ID, vocab.VOCAB_SIZE)
        else:
            token_range = ordinary_token_range(min(len(tok), n_vocab), specials)
    repeat = DEFAULT_REPEAT_LEN
    if card:
        repeat = int(card.get("default_repeat_len") or card.get("repeat_len") or repeat)
    n_ctx = int(cfg.n_ctx)
    repeat = max(1, min(repeat, (n_ctx - 1) // 2))
    param = next(hf_model.parameters())
    hf_archs = getattr(getattr(hf_model, "config", None), "architectures", None)
    arch = getattr(cfg, "architecture", None) or (hf_archs or ["?"])[0]
    if name is None:
        name = str(getattr(cfg, "model_name", None) or type(hf_model).__name__)
    n_heads = int(cfg.n_heads)
    return cls(
        name=name,
        source=source,
        path=path,
        architecture=str(arch),
        n_layers=int(cfg.n_layers),
        n_heads=n_heads,
        n_kv_heads=int(getattr(cfg, "n_key_value_heads", None) or n_heads),
        d_model=int(cfg.d_model),
        d_head=int(cfg.d_head),
        vocab_size=n_vocab,
        n_ctx=n_ctx,
        bos_token_id=bos,
        special_token_ids=specials,
        ordinary_token_range=token_range,
        default_repeat_len=repeat,
        zoo_vocabulary=zoo,
        device=str(getattr(cfg, "device", None) or param.device),
        dtype=str(param.dtype).removeprefix("torch."),
    )


def loaded_model_hash(loaded: LoadedModel) -> str:
    """Content hash of a loaded model: its files on disk (folder, zoo, hub snapshot, .gguf),
    else its state dict (:mod:`induction.store.fingerprint`)."""
    from induction.store.fingerprint import model_content_hash, state_dict_hash

    info = loaded.info
    if info.path is not None and Path(info.path).exists():
        return model_content_hash(info.path)
    return state_dict_hash(loaded.hf_model)


def model_fingerprint(loaded: LoadedModel, code: Iterable[str] = (), **options: Any) -> str:
    """Fingerprint of a computation on ``loaded``: model content, dtype, device type, the
    source of the ``code`` modules and ``options``."""
    from induction.store.fingerprint import fingerprint, source_hash

    info = loaded.info
    return fingerprint(
        loaded_model_hash(loaded),
        info.n_layers,
        info.n_heads,
        info.dtype,
        str(info.device).split(":")[0],
        source_hash(tuple(code)),
        options,
    )
