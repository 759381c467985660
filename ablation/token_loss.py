"""The token-loss difference under head ablation: a second outcome beside few-shot scores.

Olsson et al. (2022, "In-context learning and induction heads") measure in-context learning as
the loss late in a sequence minus the loss early (token 500 minus token 50 of 512): a model
that uses its context predicts later tokens better, so the difference is negative, and it
turns negative when induction heads form. Yin and Steinhardt (2025, arXiv 2502.14010) find
that ablating induction heads moves it more than ablating function-vector heads, the reverse
of few-shot accuracy. Here the difference is the mean next-token loss over a late window
(the last ``w`` scored positions) minus the mean over an early window (the ``w`` positions
before 10% of the length), ``w = max(4, length // 16)``, per sequence; a head set's effect is
its ablated difference minus the clean one (positive: less in-context learning).

Text: held-out zoo text for zoo models (the zoo's training mix, ``induction.zoo.corpus.MIX_V2``,
drawn from a seed stream no training run uses); for other models natural English prose, the
Python documentation's topic pages that ship with every CPython (``pydoc_data.topics``),
tokenised and cut into windows of ``length`` tokens (say which Python: the text is that
version's documentation).

Cached (``cache=``, a folder; ``induction ablate`` uses one under the cache root unless
``--no-cache``): each head set's per-sequence differences are kept in a file named by the
model's fingerprint, the text and ablation settings, the head set and this module's source,
so a controls-heavy comparison (benchmarks/fv_comparison.py on SmolLM2 runs eight ablations
of eleven head sets) computes the clean pass once and resumes across sessions.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float, Int
from torch import Tensor

from ablation.config import AblationMode, MeanOver
from ablation.hooks import HeadAblation, head_means
from ablation.results import TARGET
from induction.errors import InputError
from induction.models.specs import inputs_of
from induction.models.target import model_device
from induction.store.io import guards_inputs

if TYPE_CHECKING:
    from ablation.run import HeadPlan
    from induction.models.model_types import LoadedModel

#: Seeds of held-out zoo text: far from any training run's data seeds (0..10^6).
HELD_OUT_SEED = 7_000_000_000


def windows(length: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """``(early, late)`` half-open ranges of *predicted* positions (position t predicts token
    t + 1, t in 0..length-2): ``w`` positions ending at 10% of the length, and the last ``w``."""
    if length < 24:
        raise InputError(f"the token-loss difference needs sequences of >= 24 tokens, got {length}")
    w = max(4, length // 16)
    end = max(w + 1, length // 10)
    return (end - w, end), (length - 1 - w, length - 1)


def zoo_text(n: int, length: int, seed: int = 0) -> Int[Tensor, "n length"]:
    """``n`` sequences of held-out zoo text (the training mix, a seed no run trains on)."""
    from induction.zoo import corpus as C

    rng = np.random.default_rng(HELD_OUT_SEED + seed)
    cfg = C.CorpusConfig(seq_len=length, mix=dict(C.MIX_V2), max_span=40)
    return torch.from_numpy(C.make_batch(rng, cfg, n))


def natural_text(tokenizer, n: int, length: int, seed: int = 0) -> Int[Tensor, "n length"]:
    """``n`` windows of ``length`` tokens of English prose (CPython's documentation topics,
    ``pydoc_data.topics``), starting at distinct random topics, BOS first when the tokenizer
    has one."""
    from pydoc_data.topics import topics

    bos = getattr(tokenizer, "bos_token_id", None)
    body = length - (bos is not None)
    pages = []
    for key in sorted(topics):
        ids = tokenizer(topics[key], add_special_tokens=False, verbose=False)["input_ids"]
        if len(ids) >= body:
            pages.append(ids)
    if len(pages) < n:
        raise InputError(
            f"the documentation has {len(pages)} pages of >= {body} tokens; ask for at most "
            f"{len(pages)} sequences or shorter ones"
        )
    rng = np.random.default_rng(seed)
    rows = []
    for i in rng.choice(len(pages), size=n, replace=False):
        page = pages[int(i)]
        start = int(rng.integers(0, len(page) - body + 1))
        rows.append(([bos] if bos is not None else []) + page[start : start + body])
    return torch.tensor(rows, dtype=torch.long)


def text_source() -> str:
    v = sys.version_info
    return f"pydoc_data.topics (CPython {v.major}.{v.minor} documentation)"


@torch.inference_mode()
def loss_differences(
    loaded: LoadedModel,
    tokens: Int[Tensor, "n length"],
    ablation: HeadAblation | None = None,
    batch: int = 8,
) -> np.ndarray:
    """Per sequence: mean loss over the late window minus the early window, in nats."""
    bridge = loaded.bridge
    (e0, e1), (l0, l1) = windows(tokens.shape[1])
    device = model_device(bridge)
    hooks = ablation.fwd_hooks() if ablation is not None and ablation.heads else []
    out = []
    with bridge.hooks(fwd_hooks=hooks):
        for start in range(0, tokens.shape[0], batch):
            ids = tokens[start : start + batch].to(device)
            logits: Float[Tensor, "b pos vocab"] = bridge.original_model(
                input_ids=ids, use_cache=False
            ).logits
            nll = torch.nn.functional.cross_entropy(
                logits[:, :-1].float().transpose(1, 2), ids[:, 1:], reduction="none"
            )  # [b, pos - 1]: position t predicts token t + 1
            out.append((nll[:, l0:l1].mean(1) - nll[:, e0:e1].mean(1)).cpu().numpy())
    return np.concatenate(out).astype(np.float64)  # as a cached entry reads back


@dataclass
class TokenLossResult:
    """The token-loss difference clean and under each head set of an ablation plan.

    ``table``: one row per head set (``set``: the ablation report's labels, ``ablated`` for the
    target, ``control<i>``, ``shaped<i>``) with ``kind`` (target, control, shaped),
    ``n_heads``, ``diff`` (mean ablated difference), ``effect`` (ablated minus clean: positive
    means less in-context learning) and ``effect_se`` (over sequences, paired).
    """

    model: str
    clean: float
    clean_se: float
    table: pd.DataFrame
    settings: dict = field(default_factory=dict)
    #: what the run read (the model's folder): :meth:`save`/:meth:`plot` never write there
    inputs: tuple[Path, ...] = field(default=(), repr=False)

    def summary(self) -> dict:
        """The target's effect beside the controls': mean, sd, and the share of controls with
        an effect at least as large (the empirical p-value, ``(1 + k) / (1 + n)``)."""
        t = self.table
        target = t[t["kind"] == "target"]["effect"]
        controls = t[t["kind"] != "target"]["effect"].to_numpy()
        effect = float(target.iloc[0]) if len(target) else float("nan")
        k = int(np.sum(controls >= effect)) if len(controls) else 0
        return {
            "clean": self.clean,
            "target_effect": effect,
            "controls_mean": float(np.mean(controls)) if len(controls) else float("nan"),
            "controls_sd": float(np.std(controls, ddof=1)) if len(controls) > 1 else float("nan"),
            "p_controls": (1 + k) / (1 + len(controls)) if len(controls) else float("nan"),
            "n_controls": int(len(controls)),
        }

    def line(self) -> str:
        s = self.summary()
        return (
            f"token-loss difference (late - early, nats): clean {self.clean:+.3f}; ablating the "
            f"target changes it by {s['target_effect']:+.3f} (controls {s['controls_mean']:+.3f}"
            f" ± {s['controls_sd']:.3f}, p {s['p_controls']:.2f})"
        )

    def to_frame(self) -> pd.DataFrame:
        frame = self.table.copy()
        frame.insert(0, "model", self.model)
        frame["clean"] = self.clean
        return frame

    @guards_inputs
    def save(self, path: str | Path) -> None:
        from induction.store.io import write_table

        write_table(self.to_frame(), Path(path))

    @guards_inputs
    def plot(self, path: str | Path | None = None):
        """The target's effect against the controls' (a strip of controls, the target marked)."""
        import plotly.graph_objects as go

        t = self.table
        fig = go.Figure()
        colours = {"control": "#9aa5b1", "shaped": "#5b8def", "target": "#d1495b"}
        for kind in ("control", "shaped", "target"):
            rows = t[t["kind"] == kind]
            if len(rows):
                name = "target" if kind == "target" else f"{kind} sets"
                size = 14 if kind == "target" else 8
                marker = {"size": size, "color": colours[kind]}
                fig.add_trace(
                    go.Scatter(
                        x=[name] * len(rows),
                        y=rows["effect"],
                        mode="markers",
                        marker=marker,
                        name=name,
                    )  # fmt: skip
                )
        fig.update_layout(
            title=f"{self.model}: change of the token-loss difference when heads are ablated",
            yaxis_title="ablated - clean (nats; > 0: less in-context learning)",
            template="plotly_white",
        )
        if path is not None:
            from induction.figures.plots import save_figure

            note = save_figure(fig, Path(path))
            if note:
                raise InputError(note)
        return fig


def run(
    loaded: LoadedModel,
    plan: HeadPlan,
    *,
    mode: AblationMode = "zero",
    mean_over: MeanOver = "all",
    n: int = 32,
    length: int | None = None,
    seed: int = 0,
    batch: int = 8,
    cache: str | Path | None = None,
) -> TokenLossResult:
    """The token-loss difference clean and with each head set of ``plan`` ablated (the same
    sets as the few-shot run); ``length`` defaults to 96 for zoo models, else 256; ``cache``:
    a folder keeping each head set's differences (module docs)."""
    info = loaded.info
    length = length or (96 if info.zoo_vocabulary else min(256, int(info.n_ctx)))
    if info.zoo_vocabulary:
        tokens, source = zoo_text(n, length, seed), "held-out zoo text (MIX_V2)"
    else:
        tokens, source = natural_text(loaded.tokenizer, n, length, seed), text_source()
    store = _Store(cache, loaded, (n, length, seed, source, mode, mean_over)) if cache else None
    found_means: list = []
    reused: list[int] = []

    def means():
        if mode != "mean":
            return None
        if not found_means:
            mask = torch.ones_like(tokens)
            batches = [
                (tokens[i : i + batch], mask[i : i + batch]) for i in range(0, len(tokens), batch)
            ]
            per_position = mean_over == "position"
            layers = range(info.n_layers)
            found_means.append(head_means(loaded.bridge, batches, layers, per_position))
        return found_means[0]

    def differences(heads: list[tuple[int, int]]) -> np.ndarray:
        hit = store.get(heads) if store is not None else None
        if hit is not None and len(hit) == len(tokens):
            reused.append(1)
            return hit
        ablation = HeadAblation(heads, mode, means(), mean_over) if heads else None
        diff = loss_differences(loaded, tokens, ablation, batch)
        if store is not None:
            store.put(heads, diff)
        return diff

    clean = differences([])
    rows = []
    for label, heads in plan.head_sets():
        diff = differences(_expand(plan, heads))
        paired = diff - clean
        kind = "target" if label == TARGET else label.rstrip("0123456789")
        rows.append(
            {
                "set": label,
                "kind": kind,
                "n_heads": len(heads),
                "diff": float(diff.mean()),
                "effect": float(paired.mean()),
                "effect_se": float(paired.std(ddof=1) / np.sqrt(len(paired))),
            }
        )
    if reused and store is not None:  # docs/safety.md: reused results are announced
        print(
            f"reusing {len(reused)} cached token-loss result(s) from {store.folder} "
            "(--no-cache recomputes)",
            file=sys.stderr,
        )
    return TokenLossResult(
        model=info.name,
        clean=float(clean.mean()),
        clean_se=float(clean.std(ddof=1) / np.sqrt(len(clean))),
        table=pd.DataFrame(rows),
        settings={
            "n": n,
            "length": length,
            "seed": seed,
            "mode": mode,
            "text": source,
            "windows": windows(length),
        },  # fmt: skip
        inputs=inputs_of(loaded),
    )


def _expand(plan: HeadPlan, heads: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    # all passes of a tied looped model, as plain tuples
    return [(layer, head) for layer, head in plan.expand(heads)]


class _Store:
    """One JSON file per head set under ``folder/<model fingerprint>/``, named by a hash of the
    settings, the sorted heads and this module's source, sealed and written atomically. A file
    that does not parse, names another key or fails its seal is noted, recomputed and
    rewritten (docs/safety.md)."""

    def __init__(self, folder: str | Path, loaded: LoadedModel, settings: tuple):
        from ablation.run import model_fingerprint
        from induction.store.fingerprint import fingerprint, source_hash

        self.folder = Path(folder) / model_fingerprint(loaded)
        self.base = fingerprint(settings, source_hash(("ablation.token_loss",)))

    def _path(self, heads: list[tuple[int, int]]) -> tuple[Path, str]:
        from induction.store.fingerprint import fingerprint

        key = fingerprint(self.base, sorted(heads), length=24)
        return self.folder / f"{key}.json", key

    def get(self, heads: list[tuple[int, int]]) -> np.ndarray | None:
        import json

        from induction.store.seals import note_damaged, open_record

        path, key = self._path(heads)
        try:
            raw = path.read_text()
        except OSError:  # not cached yet
            return None
        try:
            data = open_record(json.loads(raw))
            if data is not None and data.get("key") == key:
                return np.asarray(data["diff"], dtype=float)
        except (ValueError, TypeError, KeyError):
            pass
        note_damaged(path, "content hash mismatch")
        return None

    def put(self, heads: list[tuple[int, int]], diff: np.ndarray) -> None:
        from induction.store.io import write_json
        from induction.store.seals import seal_record

        path, key = self._path(heads)
        try:
            record = {"key": key, "heads": sorted(heads), "diff": diff.tolist()}
            write_json(path, seal_record(record))
        except OSError:  # a read-only cache: computed again next time
            pass
