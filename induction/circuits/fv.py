"""Function-vector (FV) heads: which heads carry the task from the demonstrations to the answer.

Todd et al. 2024 ("Function vectors in large language models", arXiv 2310.15213): for a task,
take each head's output at the last position averaged over clean few-shot prompts (its *mean
activation*); patch it into the same position of prompts whose demonstration labels are
shuffled (the demonstrations no longer say what the task is); the increase in the probability
of the correct answer is the head's **causal indirect effect** (CIE). A head's **FV score** is
its mean CIE over tasks. Yin and Steinhardt 2025 ("Which attention heads matter for in-context
learning?", arXiv 2502.14010) compare these heads with induction heads.

Here:

- the head's output is ``blocks.{l}.attn.hook_z`` at the last prompt position (per query head,
  before the output projection; ``[batch, pos, head, d_head]``), so a patched head writes the
  mean through its own slice of ``o_proj``;
- the answer is the first token of the gold answer after the prompt (lm-eval's split of prompt
  and continuation); answers of several tokens are scored by their first token, as Todd et al.
  do;
- corrupted prompts keep each demonstration's input and draw its label from the other
  demonstrations of the same prompt (a random derangement), as Todd et al.'s shuffled labels;
  where a task's label set alone names the task (the zoo's relations: digits, letters and two
  disjoint word sets), shuffled labels still say what the task is and the model answers them
  as well as clean prompts, so no head can raise the answer's probability. ``foreign``
  corruption draws each label from the other tasks' answers instead, so neither the pairing
  nor the label set says which task holds;
- each task's clean and corrupted answer probabilities (without any patch) are kept
  (:attr:`FVResult.baselines`): the CIE can only be as large as their gap (the *headroom*),
  and a headroom near 0 says the scores are noise, whatever their ranking;
- batched: each corrupted prompt is repeated once per head of a chunk and one forward pass
  patches a different head in each copy (:func:`cie_batched`); the copies run only the last
  token, on the prompts' prefix KV cache (the patch is at the last position, so nothing
  earlier changes); :func:`cie_loop` (one full forward per head) is the reference both are
  tested against;
- the score's spread is over prompt seeds (each seed draws other queries, demonstrations and
  shuffles).
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch
from jaxtyping import Float
from torch import Tensor

from induction.circuits.config import DEFAULT_MAX_ROWS, FVConfig
from induction.errors import InputError
from induction.heads import Head
from induction.jobs import as_loaded, job_config
from induction.models.kv_cache import last_token_logits, prefix_cache
from induction.models.model_types import LoadedModel
from induction.models.specs import inputs_of
from induction.store.io import guards_inputs

if TYPE_CHECKING:
    from induction.models.specs import ModelLike


@dataclass(frozen=True)
class FVPrompt:
    """One query: its clean prompt, the same prompt with the demonstrations' labels shuffled,
    and the gold answer."""

    clean: str
    corrupted: str
    answer: str


def fv_prompts(
    examples: Sequence[Any],
    n_prompts: int,
    shots: int,
    seed: int,
    joiner: str = "\n\n",
    foreign: Sequence[str] | None = None,
) -> list[FVPrompt]:
    """``n_prompts`` few-shot prompts of ``shots`` demonstrations drawn from ``examples``
    (:class:`ablation.tasks.base.Example`: ``prompt``, ``golds``), each query's demonstrations
    never the query itself, seeded by ``seed``. The corrupted prompt shuffles the labels
    (a derangement), or with ``foreign`` labels (other tasks' answers) gives each
    demonstration one of those, drawn uniformly."""
    if foreign is not None and not foreign:
        raise InputError("foreign corruption needs other tasks' answers; the suite has none")
    if shots < 2:
        raise InputError(f"--shots must be >= 2 to shuffle labels, got {shots}")
    if len(examples) < shots + 1:
        raise InputError(
            f"a task has {len(examples)} examples; FV prompts need --shots + 1 = {shots + 1}"
        )
    rng = random.Random(seed)
    # its own stream, so the clean prompts are the same under either corruption
    foreign_rng = random.Random(f"foreign-{seed}")
    out = []
    for _ in range(n_prompts):
        query, *demos = rng.sample(list(examples), shots + 1)
        labels = [d.golds[0] for d in demos]
        order = _derangement(len(demos), rng)  # drawn either way: same clean prompts
        wrong = (
            [labels[j] for j in order] if foreign is None else foreign_rng.choices(foreign, k=shots)
        )
        clean = "".join(f"{d.prompt} {y}{joiner}" for d, y in zip(demos, labels, strict=True))
        shuffled = "".join(f"{d.prompt} {y}{joiner}" for d, y in zip(demos, wrong, strict=True))
        out.append(FVPrompt(clean + query.prompt, shuffled + query.prompt, query.golds[0]))
    return out


def _derangement(n: int, rng: random.Random) -> list[int]:
    while True:
        order = list(range(n))
        rng.shuffle(order)
        if all(i != j for i, j in enumerate(order)):
            return order


# --------------------------------------------------------------------------- model passes


@dataclass
class Batch:
    """Left-padded token ids of a prompt list (last position = the prediction)."""

    ids: Tensor
    mask: Tensor
    answer: Tensor  # [batch] first answer token


def encode(tok, prompts: Sequence[str], answers: Sequence[str], device) -> Batch:
    from ablation.readout import continuation

    rows, firsts = [], []
    for prompt, answer in zip(prompts, answers, strict=True):
        ids = tok(prompt)["input_ids"]
        rows.append(ids)
        firsts.append(continuation(tok, prompt, answer, ids)[0])
    width = max(len(r) for r in rows)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r) :] = torch.tensor(r)
        mask[i, width - len(r) :] = 1
    return Batch(ids.to(device), mask.to(device), torch.tensor(firsts, device=device))


def _forward(loaded, batch_ids: Tensor, mask: Tensor, hooks) -> Tensor:
    """Last-position logits under ``hooks`` (``[(hook name, fn)]``)."""
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode(), loaded.bridge.hooks(fwd_hooks=hooks):
        out = loaded.hf_model(
            input_ids=batch_ids, attention_mask=mask, position_ids=pos, use_cache=False
        )
    return out.logits[:, -1].float()


def z_name(layer: int) -> str:
    return f"blocks.{layer}.attn.hook_z"


def mean_activations(loaded, clean: Batch) -> Float[Tensor, "layer head d_head"]:
    """Each head's ``hook_z`` at the last position, averaged over the clean prompts."""
    n_layers = loaded.info.n_layers
    found: dict[int, Tensor] = {}

    def grab(layer):
        def fn(z, hook):
            found[layer] = z[:, -1].detach().float().mean(0)
            return z

        return fn

    _forward(loaded, clean.ids, clean.mask, [(z_name(la), grab(la)) for la in range(n_layers)])
    return torch.stack([found[la] for la in range(n_layers)])


def answer_prob(logits: Tensor, answer: Tensor) -> Tensor:
    return torch.softmax(logits, -1).gather(1, answer[:, None])[:, 0]


def cie_loop(loaded, corrupted: Batch, means, heads: Sequence[Head]) -> Tensor:
    """Reference: one forward per head; ``[len(heads)]`` mean CIE over the prompts."""
    base = answer_prob(_forward(loaded, corrupted.ids, corrupted.mask, []), corrupted.answer)
    out = []
    for layer, head in heads:

        def patch(z, hook, head=head, layer=layer):
            z = z.clone()
            z[:, -1, head] = means[layer, head].to(z.dtype)
            return z

        logits = _forward(loaded, corrupted.ids, corrupted.mask, [(z_name(layer), patch)])
        out.append((answer_prob(logits, corrupted.answer) - base).mean())
    return torch.stack(out)


def cie_batched(
    loaded,
    corrupted: Batch,
    means,
    heads: Sequence[Head],
    max_rows: int = DEFAULT_MAX_ROWS,
    reuse_prefix: bool = True,
    null: list[float] | None = None,
) -> Tensor:
    """:func:`cie_loop` with many heads per forward pass: each corrupted prompt repeated once per
    head of a chunk, copy ``j`` patched at head ``heads[j]`` only.

    With ``reuse_prefix`` the copies run the last token alone on the prompts' prefix KV cache
    (:mod:`induction.models.kv_cache`): exact, since the patch is at the last position and attention
    is causal, and about prompt-length times cheaper. A model whose cached last-token logits
    do not reproduce its full forward pass (checked once per batch) gets full passes.

    ``null``, when given, gets the null baseline appended: the mean CIE of a pass through the
    same path whose hook writes every head's own activation back (patches nothing; 0 within
    float tolerance)."""
    ids, mask, answer = corrupted.ids, corrupted.mask, corrupted.answer
    b = ids.shape[0]
    cache = None
    if reuse_prefix:
        full, cache = prefix_cache(loaded, ids, mask)
        cache = _checked(loaded, corrupted, full, cache)
    else:
        full = _forward(loaded, ids, mask, [])
    base = answer_prob(full, answer)
    if null is not None:

        def same(z, hook):
            z = z.clone()
            z[:, -1] = z[:, -1].clone()
            return z

        hooks = [(z_name(0), same)]
        if cache is not None:
            logits = last_token_logits(loaded, ids, mask, cache, hooks, 1)
        else:
            logits = _forward(loaded, ids, mask, hooks)
        null.append(float((answer_prob(logits, answer) - base).mean()))
    per_pass = max(1, max_rows // b)
    out = []
    for start in range(0, len(heads), per_pass):
        chunk = list(heads[start : start + per_pass])
        reps = len(chunk)
        by_layer: dict[int, list[tuple[int, int]]] = {}
        for j, (layer, head) in enumerate(chunk):
            by_layer.setdefault(layer, []).append((j, head))

        def make(layer):
            blocks = by_layer[layer]

            def fn(z, hook):
                z = z.clone()
                for j, head in blocks:  # row i * reps + j: prompt i, patched at heads[j]
                    z[j::reps, -1, head] = means[layer, head].to(z.dtype)
                return z

            return fn

        hooks = [(z_name(la), make(la)) for la in by_layer]
        if cache is not None:
            logits = last_token_logits(loaded, ids, mask, cache, hooks, reps)
        else:
            rows_ids, rows_mask = ids.repeat_interleave(reps, 0), mask.repeat_interleave(reps, 0)
            logits = _forward(loaded, rows_ids, rows_mask, hooks)
        probs = answer_prob(logits, answer.repeat_interleave(reps)).view(b, reps)
        out.append((probs - base[:, None]).mean(0))
    return torch.cat(out)


def _checked(loaded, batch: Batch, full_logits: Tensor, cache):
    """``cache`` (the prefix cache of ``batch``), or ``None`` (with a warning) when the last
    token run on it does not give ``full_logits``: a model whose cache is not exact falls back
    to full passes rather than giving other scores."""
    cached = last_token_logits(loaded, batch.ids, batch.mask, cache, [])
    fp32 = next(loaded.hf_model.parameters()).dtype == torch.float32
    tol = (1e-4 if fp32 else 2e-2) * float(full_logits.abs().max().clamp(min=1.0))
    gap = float((cached - full_logits).abs().max())
    if gap > tol:
        warnings.warn(
            f"{loaded.info.name}: logits from the KV cache differ from a full pass by {gap:.2g}; "
            "FV patching runs full passes (slower, same scores)",
            stacklevel=3,
        )
        return None
    return cache


# --------------------------------------------------------------------------- the pipeline


@dataclass
class FVResult:
    """FV scores per head: the mean CIE over tasks (``fv``), its spread over prompt seeds
    (``fv_std``), each task's CIE, and the induction score beside it when given."""

    model: str
    table: pd.DataFrame
    settings: dict = field(default_factory=dict)
    #: per task and prompt seed: ``p_clean``, ``p_corrupted`` (the answer's mean probability
    #: without a patch), ``headroom`` (their difference: the most a head's CIE can be) and
    #: ``cie_null`` (the null baseline: a pass through the patching path that patches nothing).
    baselines: pd.DataFrame | None = None
    #: what the run read (the model's folder): :meth:`save`/:meth:`plot` never write there
    inputs: tuple[Path, ...] = field(default=(), repr=False)

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    @property
    def headroom(self) -> float:
        """Mean over tasks of ``p_clean - p_corrupted``: near 0, the corrupted prompts still
        do the task and every CIE is noise (try ``corruption="foreign"``)."""
        if self.baselines is None or self.baselines.empty:
            return float("nan")
        return float(self.baselines.groupby("task")["headroom"].mean().mean())

    def top(self, frac: float) -> list[Head]:
        """The ``ceil(frac * heads)`` heads with the highest FV score."""
        from ablation.selection import top_frac

        return [Head(*h) for h in top_frac(self.table, frac, "fv")]

    @guards_inputs
    def save(self, path: str | Path) -> Path:
        from induction.store.io import write_table

        return write_table(self.table, path)

    @guards_inputs
    def plot(self, path: str | Path | None = None):
        """Layer x head heatmap of the FV score (saved when a path is given)."""
        import plotly.graph_objects as go

        t = self.table
        z = t.pivot(index="layer", columns="head", values="fv").sort_index()
        # the detector's heatmap style (induction.figures.plots.heatmap): numeric labels, layer 0
        # on top
        fig = go.Figure(
            go.Heatmap(
                z=z.to_numpy(),
                x=[str(h) for h in z.columns],
                y=[str(la) for la in z.index],
                colorscale="RdBu",
                zmid=0,
                colorbar={"title": {"text": "FV score (Δp)"}},
                hovertemplate="layer %{y}, head %{x}<br>FV %{z:.4f}<extra></extra>",
            )
        )
        fig.update_layout(
            title=f"Function-vector scores of {self.model} (mean CIE over "
            f"{self.settings.get('n_tasks', '?')} tasks)",
            xaxis_title="head",
            yaxis_title="layer",
            xaxis={"type": "category"},
            yaxis={"autorange": "reversed", "type": "category"},
            template="plotly_white",
            height=max(360, 28 * len(z.index) + 160),
        )
        if path is not None:
            from induction.figures.plots import save_figure

            note = save_figure(fig, Path(path))
            if note:
                raise InputError(note)
        return fig


def pair_tasks(suite: str):
    """The suite module of ``{input, output}`` pair tasks: ``words`` (English word tasks, for
    real tokenizers) or ``zoofacts`` (the zoo world's relations, for the zoo vocabulary)."""
    from ablation.tasks import words, zoofacts

    return {"words": words, "zoofacts": zoofacts}[suite]


def pair_examples(suite: str, name: str) -> tuple[list, str]:
    """``(examples, joiner)`` of one pair task: FV prompts are the demonstrations joined as
    the suite joins them, then the query."""
    if suite == "words":
        from ablation.tasks import words

        return words.load_examples(words.DATA / f"{name}.json")[1], "\n\n"
    from ablation.tasks import zoofacts

    return zoofacts.examples(name), zoofacts.JOINER


def run(
    model: ModelLike, config: FVConfig | Mapping[str, Any] | None = None, /, **overrides
) -> FVResult:
    """FV scores of every head of ``model`` (a spec or a loaded model) on a suite of
    ``{input, output}`` tasks; ``config``/``overrides``: :class:`FVConfig` fields.
    ``fv_scores`` is the job's established name."""
    cfg = job_config(FVConfig, config, overrides, "fv")
    from induction.progress import progress as reporter

    loaded = as_loaded(model)
    if not isinstance(loaded, LoadedModel):
        raise InputError(
            f"fv needs a model spec or a LoadedModel (induction.load_model), got "
            f"{type(loaded).__name__}"
        )
    info = loaded.info
    suite = cfg.suite or ("zoofacts" if info.zoo_vocabulary else "words")
    source = pair_tasks(suite)
    # a task named twice counts once in the mean, as in ``induction ablate``
    names = list(dict.fromkeys(cfg.tasks)) if cfg.tasks else source.task_names()
    unknown = sorted(set(names) - set(source.task_names()))
    if unknown:
        raise InputError(
            f"unknown {suite} task(s) {', '.join(unknown)}; see `induction tasks {suite}`"
        )
    from ablation.pipeline import refuse_unreadable

    demos = [ex.demo for n in names for ex in pair_examples(suite, n)[0][:16]]
    refuse_unreadable(demos, loaded.tokenizer, suite, "--suite zoofacts")
    heads = [Head(la, h) for la in range(info.n_layers) for h in range(info.n_heads)]
    device = next(loaded.hf_model.parameters()).device
    foreign = _foreign_labels(suite, source.task_names()) if cfg.corruption == "foreign" else {}
    per_seed, baselines = [], []
    with reporter(cfg.progress) as bar:
        advance = bar.task(len(names) * cfg.seeds, "fv")
        for seed in range(cfg.seeds):
            by_task = {}
            for name in names:
                examples, joiner = pair_examples(suite, name)
                prompts = fv_prompts(examples, cfg.n_prompts, cfg.shots, seed, joiner,
                                     foreign.get(name))  # fmt: skip
                tok = loaded.tokenizer
                answers = [p.answer for p in prompts]
                clean = encode(tok, [p.clean for p in prompts], answers, device)
                corrupted = encode(tok, [p.corrupted for p in prompts], answers, device)
                p_clean, p_corrupted = (
                    float(answer_prob(_forward(loaded, b.ids, b.mask, []), b.answer).mean())
                    for b in (clean, corrupted)
                )
                baselines.append({"task": name, "seed": seed, "p_clean": p_clean,
                                  "p_corrupted": p_corrupted,
                                  "headroom": p_clean - p_corrupted})  # fmt: skip
                means = mean_activations(loaded, clean)
                null: list[float] = []
                by_task[name] = cie_batched(
                    loaded, corrupted, means, heads, cfg.max_rows, null=null
                ).cpu()
                baselines[-1]["cie_null"] = null[0]
                advance()
            per_seed.append(by_task)
    rows = []
    for i, (layer, head) in enumerate(heads):
        seed_means = [float(np.mean([s[n][i] for n in names])) for s in per_seed]
        row = {"layer": layer, "head": head, "fv": float(np.mean(seed_means))}
        row["fv_std"] = float(np.std(seed_means, ddof=1)) if cfg.seeds > 1 else float("nan")
        for n in names:
            row[f"cie:{n}"] = float(np.mean([s[n][i] for s in per_seed]))
        rows.append(row)
    table = pd.DataFrame(rows)
    table.insert(2, "rank", table["fv"].rank(ascending=False, method="first").astype(int))
    settings = {"suite": suite, "tasks": names, "n_tasks": len(names),
                "n_prompts": cfg.n_prompts, "shots": cfg.shots, "seeds": cfg.seeds,
                "corruption": cfg.corruption}  # fmt: skip
    return FVResult(model=info.name, table=table, settings=settings,
                    baselines=pd.DataFrame(baselines), inputs=inputs_of(model, loaded))  # fmt: skip


def _foreign_labels(suite: str, names: Sequence[str]) -> dict[str, list[str]]:
    """Per task of the suite, the other tasks' answers that are not its own (sorted, so a
    seed draws the same labels in every run)."""
    answers = {n: {ex.golds[0] for ex in pair_examples(suite, n)[0]} for n in names}
    return {n: sorted(set().union(*(answers[m] for m in names if m != n)) - answers[n])
            for n in names}  # fmt: skip


fv_scores = run


def fv_table(loaded) -> pd.DataFrame:
    """The ``fv`` score for ``induction ablate --score fv`` / ``--exclude fv:FRAC`` (the
    defaults of :func:`fv_scores`)."""
    result = fv_scores(loaded)
    table = result.table[["layer", "head", "fv", "fv_std"]].copy()
    table.attrs["fv"] = result.settings
    return table
