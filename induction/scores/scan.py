"""The scan pipeline: score every attention head on repeated random tokens, as a typed result.

::

    import induction
    from induction.scores.scan import scan

    result = scan(induction.load_model("grown8c"), seeds=3, rank_by="induction")
    result.top(5)                      # DataFrame of the five best heads
    result.induction_heads()           # [(layer, head), ...] at or above 0.4
    result.save("scan.parquet")        # csv / parquet / json / jsonl by suffix, atomic
    result.plot("heatmap", "scan.html")
    df = result.to_frame()             # the tidy table of ``induction_scores``

Steps, one module each: the model argument (:mod:`induction.models.target`), the prompts
(:mod:`induction.scores.prompts`), forward passes (:mod:`induction.scores.passes`, sized by
:mod:`induction.scores.chunking`) with the hook that reads only the needed (query, key) pairs
(:mod:`induction.scores.stripe`), the weights-only copying score (:mod:`induction.scores.copying`),
the
in-context loss (:mod:`induction.scores.loss`) and the spread over seeds (:mod:`induction.stats`).

Attention scores (definitions in :meth:`induction.scores.prompts.PromptLayout.pairs`), convention
``"stripe"`` (default):

- ``induction``: mean attention from second- (and later-) copy queries to the token right
  after the query token's most recent earlier occurrence; only later-copy queries count
  (ARENA's ``diagonal(offset=1-T)`` also picks up first-copy queries).
- ``prefix_matching``: Olsson et al.; attention to the token after *every* earlier copy,
  summed (equals ``induction`` with two copies; use ``n_repeats=4, seq_len=25`` for their
  setting).
- ``duplicate_token``: attention to earlier occurrences of the query token.
- ``previous_token``: attention to the previous token, queries from position 2.

Convention ``"tl_mul"`` computes ``induction``, ``duplicate_token`` and ``previous_token`` as
TransformerLens ``head_detector.detect_head(..., error_measure="mul")`` does: the head's mask
(their ``induction_head`` mask marks the key after every earlier occurrence) over the whole
pattern, divided by the sum of the whole pattern, per prompt, then averaged. Rows without a
match dilute it, so on two copies it is about ``T / (2T + 1)`` of the stripe score.
``prefix_matching`` has no TransformerLens counterpart and keeps the stripe form.

``copying`` is weights-only (Olsson et al.'s OV-circuit test, direct path), see
:func:`induction.scores.copying.copying_scores`. Spread: each prompt seed gives one batch;
scores are the mean over seeds of the batch means, ``<score>_std`` the standard deviation
across seeds and ``<score>_ci_lo`` / ``<score>_ci_hi`` a 95% Student-t interval for the mean
(NaN with a single seed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from induction.errors import InputError
from induction.jobs import as_loaded, job_config
from induction.models.specs import inputs_of
from induction.models.target import check_layers, eos_token_id, place, resolve_target
from induction.progress import progress as progress_reporter
from induction.scores.copying import copying_scores
from induction.scores.loss import loss_summary
from induction.scores.passes import run_passes
from induction.scores.prompts import make_prompts
from induction.scores.query_chunks import choose_mode
from induction.scores.score_names import (
    ATTENTION_SCORES,
    DEFAULT_COPYING_TOKENS,
    DEFAULT_SEEDS,
    HEAD_SCORES,
    INDUCTION_THRESHOLD,
    SCORES,
    Convention,
    ScanConfig,
    check_convention,
    check_rank_by,
    check_scores,
)
from induction.stats import Spread, spread
from induction.store.io import guards_inputs

if TYPE_CHECKING:
    import pandas as pd
    from jaxtyping import Float
    from torch import Tensor

    from induction.models.specs import ModelLike


@dataclass(frozen=True, eq=False)  # tensors inside: compare fields, not results
class ScanResult:
    """Per-head scores of one scan, with the settings that produced them.

    ``stats[score]`` holds the mean over seeds and its spread as ``[layer, head]`` float64
    tensors (rows in the order of :attr:`layers`); ``per_seed[score]`` the per-seed means
    ``[seed, layer, head]`` (a single row for the weights-only ``copying``).
    """

    model: str
    scores: tuple[str, ...]
    rank_by: str
    layers: tuple[int, ...]
    n_heads: int
    stats: Mapping[str, Spread] = field(repr=False)
    per_seed: Mapping[str, Float[Tensor, "seed layer head"]] = field(repr=False)
    seq_len: int = 0
    n_repeats: int = 2
    batch: int = 0
    seeds: tuple[int, ...] = ()
    convention: Convention = "stripe"
    token_range: tuple[int, int] = (0, 0)
    prefix_token: int | None = None
    prefix_kind: str = "bos"
    copying_tokens: int | None = None
    in_context_loss: dict[str, Any] | None = None
    #: ``(block_layer, pass)`` of every scored layer of a looped model, else None.
    loop_layers: tuple[tuple[int, int], ...] | None = None
    #: The files and folders the scan read (the model's): :meth:`save` and :meth:`plot`
    #: refuse to write over or inside them (:func:`induction.store.io.guards_inputs`).
    inputs: tuple[Path, ...] = field(default=(), repr=False, compare=False)

    # ------------------------------------------------------------------ tables

    def grid(self, score: str = "induction") -> Float[Tensor, "layer head"]:
        """Mean ``score`` as a ``[layer, head]`` tensor (rows follow :attr:`layers`)."""
        self._check_score(score)
        return self.stats[score].mean

    def to_frame(self) -> pd.DataFrame:
        """The tidy table: one row per head sorted by (layer, head).

        Columns: ``layer``, ``head`` (plus ``block_layer`` and ``pass`` for looped models),
        then per score ``<score>``, ``<score>_std``, ``<score>_ci_lo``, ``<score>_ci_hi``, and
        ``rank`` (1 = highest :attr:`rank_by`). ``df.attrs`` records the settings and the
        in-context loss (None unless measured).
        """
        import pandas as pd

        n_heads = self.n_heads
        cols: dict[str, Any] = {
            "layer": [lay for lay in self.layers for _ in range(n_heads)],
            "head": [h for _ in self.layers for h in range(n_heads)],
        }
        if self.loop_layers is not None:
            cols["block_layer"] = [b for b, _ in self.loop_layers for _ in range(n_heads)]
            cols["pass"] = [p for _, p in self.loop_layers for _ in range(n_heads)]
        for name in self.scores:
            s = self.stats[name]
            cols[name] = s.mean.flatten().tolist()
            cols[f"{name}_std"] = s.std.flatten().tolist()
            cols[f"{name}_ci_lo"] = s.ci_lo.flatten().tolist()
            cols[f"{name}_ci_hi"] = s.ci_hi.flatten().tolist()
        df = pd.DataFrame(cols)
        df["rank"] = df[self.rank_by].rank(ascending=False, method="first").astype(int)
        df.attrs.update(self.attrs())
        return df

    def attrs(self) -> dict[str, Any]:
        """The settings as stored in ``to_frame().attrs`` (plain JSON-able values)."""
        return {
            "model": self.model,
            "seq_len": self.seq_len,
            "n_repeats": self.n_repeats,
            "batch": self.batch,
            "seeds": list(self.seeds),
            "convention": self.convention,
            "scores": list(self.scores),
            "rank_by": self.rank_by,
            "token_range": list(self.token_range),
            "prefix_token": self.prefix_token,
            "prefix_kind": self.prefix_kind,
            "copying_tokens": self.copying_tokens,
            "in_context_loss": self.in_context_loss,
        }

    def top(self, n: int = 10, by: str | None = None) -> pd.DataFrame:
        """The ``n`` best heads by ``by`` (default :attr:`rank_by`), best first."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"top needs n >= 1, got {n!r}")
        df = self.to_frame()
        if by is None or by == self.rank_by:
            best = df.sort_values("rank").head(n)
        else:
            self._check_score(by)
            best = df.sort_values(by, ascending=False, kind="stable").head(n)
        return best.reset_index(drop=True)

    def induction_heads(self, threshold: float = INDUCTION_THRESHOLD) -> list[tuple[int, int]]:
        """``(layer, head)`` of every head whose induction score is >= ``threshold``, best
        first."""
        self._check_score("induction")
        mean = self.stats["induction"].mean
        found = [
            (float(mean[i, h]), lay, h)
            for i, lay in enumerate(self.layers)
            for h in range(self.n_heads)
            if float(mean[i, h]) >= threshold
        ]
        found.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [(lay, h) for _, lay, h in found]

    # ------------------------------------------------------------------ output

    @guards_inputs
    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_frame` atomically; the suffix picks the format (.csv, .parquet,
        .json, .jsonl)."""
        from induction.store.io import write_table

        return write_table(self.to_frame(), path)

    @guards_inputs
    def plot(
        self,
        kind: str = "heatmap",
        path: str | Path | None = None,
        *,
        score: str | None = None,
        top: int = 20,
        title: str | None = None,
    ):
        """A plotly figure of ``score`` (default :attr:`rank_by`): ``kind="heatmap"`` (layer x
        head) or ``"bar"`` (the ``top`` heads with 95% intervals). With ``path`` (.html or
        .png) it is also written; when PNG export is unavailable nothing is written and a
        ``UserWarning`` says why."""
        from induction.figures import plots

        score = score or self.rank_by
        self._check_score(score)
        df = self.to_frame()
        if kind == "heatmap":
            fig = plots.heatmap(df, score, title=title)
        elif kind == "bar":
            fig = plots.ranked_bar(df, score, top=top, title=title)
        else:
            raise InputError(f"unknown plot kind {kind!r}; choose heatmap or bar")
        if path is not None:
            note = plots.save_figure(fig, path)
            if note:
                import warnings

                warnings.warn(note, UserWarning, stacklevel=2)
        return fig

    def _check_score(self, score: str) -> None:
        if score not in self.scores:
            raise InputError(f"this scan has no {score!r} score; scored: {', '.join(self.scores)}")


# --------------------------------------------------------------------------- the pipeline


def scan(
    model: ModelLike, config: ScanConfig | Mapping[str, Any] | None = None, /, **kwargs: Any
) -> ScanResult:
    """Score every head (layer, head) of ``model`` on repeated random tokens.

    Args:
        model: any model spec (``lidas8``, a folder, ...), a
            :class:`induction.models.loading.LoadedModel` or a TransformerBridge.
        config: a :class:`ScanConfig` or a dict of its fields (optional).
        **kwargs: :class:`ScanConfig` fields; they override ``config``.

    Returns:
        A :class:`ScanResult`; ``.to_frame()`` is the tidy table of :func:`induction_scores`.
    """
    cfg = job_config(ScanConfig, config, kwargs, "scan")
    target = resolve_target(as_loaded(model))
    names = check_scores(cfg.scores)
    rank_by = check_rank_by(cfg.rank_by, names)
    convention = check_convention(cfg.convention)
    info = target.info
    layer_list = check_layers(cfg.layers, int(info.n_layers))
    copying_tokens = cfg.copying_tokens
    if not isinstance(copying_tokens, int) or copying_tokens < 2:
        raise InputError(f"copying_tokens must be an integer >= 2, got {copying_tokens}")
    bridge = target.bridge
    dev = place(bridge, cfg.device)
    prompts = make_prompts(
        info,
        seq_len=cfg.seq_len,
        batch=cfg.batch,
        seeds=cfg.seeds,
        n_repeats=cfg.n_repeats,
        token_range=cfg.token_range,
        eos_token_id=eos_token_id(bridge),
    )
    attn_names = tuple(n for n in names if n in ATTENTION_SCORES)
    mode = choose_mode(cfg.patterns, bridge, prompts.layout.length)

    per_seed: dict[str, torch.Tensor] = {}  # score -> [n_seeds, n_layers_sel, n_heads]
    loss_per_seed = None
    with progress_reporter(cfg.progress) as bar:
        if attn_names or cfg.loss:
            out = run_passes(
                bridge,
                prompts,
                attn_names,
                convention,
                layer_list,
                dev,
                cfg.chunk,
                cfg.loss,
                bar,
                mode=mode,
            )
            n_seeds = len(prompts.seeds)
            if out.attention is not None:
                attn = out.attention
                by_seed = attn.reshape(n_seeds, prompts.batch, *attn.shape[1:]).mean(1)
                for j, name in enumerate(attn_names):
                    per_seed[name] = by_seed[..., j]
            if out.loss is not None:
                loss_per_seed = out.loss.reshape(n_seeds, prompts.batch, 2).mean(1)
        if "copying" in names:
            cp = copying_scores(
                target,
                layers=layer_list,
                token_ids=prompts.pool.ids,
                max_tokens=copying_tokens,
                progress=bar,
            )
            per_seed["copying"] = cp.unsqueeze(0)  # weights only: no spread

    loop_layers = None
    if target.loop_plan is not None:
        unrolled = list(target.loop_plan.unrolled_layers)
        loop_layers = tuple((int(unrolled[lay][0]), int(unrolled[lay][1])) for lay in layer_list)
    return ScanResult(
        model=target.name,
        scores=names,
        rank_by=rank_by,
        layers=tuple(layer_list),
        n_heads=int(info.n_heads),
        stats={
            n: spread(per_seed[n], deterministic=HEAD_SCORES[n].source == "weights") for n in names
        },
        per_seed=per_seed,
        seq_len=prompts.seq_len,
        n_repeats=prompts.n_repeats,
        batch=prompts.batch,
        seeds=tuple(prompts.seeds),
        convention=convention,
        token_range=(prompts.pool.token_range[0], prompts.pool.token_range[1]),
        prefix_token=prompts.pool.prefix_token,
        prefix_kind=prompts.pool.prefix_kind,
        copying_tokens=min(copying_tokens, len(prompts.pool)) if "copying" in names else None,
        in_context_loss=loss_summary(loss_per_seed) if loss_per_seed is not None else None,
        loop_layers=loop_layers,
        inputs=inputs_of(model, target),
    )


def induction_scores(
    model: ModelLike,
    *,
    seq_len: int | None = None,
    batch: int = 32,
    seeds: int | Sequence[int] = DEFAULT_SEEDS,
    scores: str | Sequence[str] = SCORES,
    convention: str = "stripe",
    n_repeats: int = 2,
    layers: Sequence[int] | None = None,
    token_range: tuple[int, int] | None = None,
    loss: bool = False,
    copying_tokens: int = DEFAULT_COPYING_TOKENS,
    device: str | torch.device | None = None,
    chunk: int | None = None,
    progress: bool = True,
    rank_by: str | None = None,
    patterns: str = "auto",
) -> pd.DataFrame:
    """:func:`scan` as a tidy DataFrame: ``scan(model, ...).to_frame()``.

    Arguments are the fields of :class:`ScanConfig`; the table is described in
    :meth:`ScanResult.to_frame`.
    """
    return scan(
        model,
        seq_len=seq_len,
        batch=batch,
        seeds=seeds,
        scores=scores,
        convention=convention,
        n_repeats=n_repeats,
        layers=layers,
        token_range=token_range,
        loss=loss,
        copying_tokens=copying_tokens,
        device=device,
        chunk=chunk,
        progress=progress,
        rank_by=rank_by,
        patterns=patterns,
    ).to_frame()


def in_context_loss(
    model: Any,
    *,
    seq_len: int | None = None,
    batch: int = 32,
    seeds: int | Sequence[int] = DEFAULT_SEEDS,
    n_repeats: int = 2,
    token_range: tuple[int, int] | None = None,
    device: str | torch.device | None = None,
    chunk: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Model-level sanity figure: mean loss on the first copy minus the later copies.

    Loss is next-token cross-entropy (nats) on tokens 2..T of each copy (the first token of a
    copy is unpredictable). An induction-capable model has ``loss_drop`` well above 0.
    Returns ``loss_first``, ``loss_repeat``, ``loss_drop`` (means over seeds), their ``_std``
    across seeds, and ``per_seed`` rows.
    """
    target = resolve_target(model, "in_context_loss")
    dev = place(target.bridge, device)
    prompts = make_prompts(
        target.info,
        seq_len=seq_len,
        batch=batch,
        seeds=seeds,
        n_repeats=n_repeats,
        token_range=token_range,
        eos_token_id=eos_token_id(target.bridge),
    )
    with progress_reporter(progress) as bar:
        out = run_passes(target.bridge, prompts, (), "stripe", [], dev, chunk, True, bar)
    n_seeds = len(prompts.seeds)
    assert out.loss is not None  # run_passes with want_loss=True
    return loss_summary(out.loss.reshape(n_seeds, prompts.batch, 2).mean(1), prompts.seeds)
