"""Formation timeline of induction heads from a sweep dataset of a checkpoint series.

- Checkpoints are ordered by step, the ``-pre`` checkpoint of a growth event (``growth ==
  "before"``) before the one right after it.
- A head *forms* at the first checkpoint where its score is at or above the threshold
  (:data:`induction.INDUCTION_THRESHOLD`, 0.4) and stays there at every later checkpoint
  (:func:`formation_step`).
- For grown models a head of the final network is followed back through growth: before each
  growth event its series is the score of its primary ancestor at that stage
  (:func:`lineage.head_ancestry` of the final duplication log), after it its own. The table
  says whether the ancestor had formed before the first growth event and how the score moved
  across it (the ``-pre`` checkpoint against the one right after).
- The in-context loss (first copy against the repeated copy) is drawn when the sweep measured
  it (``induction sweep --loss``): the drop in the repeat loss is the phase change of Olsson et
  al. 2022.

Method notes: docs/dynamics.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from induction.errors import InputError
from induction.heads import head_label
from induction.scores.score_names import INDUCTION_THRESHOLD, default_threshold

if TYPE_CHECKING:
    import pandas as pd


def formation_step(
    steps: Sequence[Any], values: Sequence[float], threshold: float = INDUCTION_THRESHOLD
) -> Any:
    """The step of the first point at or above ``threshold`` after which no point falls below
    it; None when the last point is below (or there are none). NaN values count as below."""
    formed = None
    for step, value in zip(steps, values, strict=True):
        ok = value == value and value >= threshold
        if ok and formed is None:
            formed = step
        elif not ok:
            formed = None
    return formed


def checkpoint_order(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per checkpoint of one model, in training order: ``checkpoint``, ``step``,
    ``growth``, ``stage``, ``depth``, ``position`` (0, 1, ...)."""
    cols = ["checkpoint", "step", "growth", "stage", "depth"]
    ck = rows[cols].drop_duplicates("checkpoint").copy()
    ck["_pre"] = (ck["growth"] != "before").astype(int)
    ck["_step"] = ck["step"].astype("Float64").fillna(float("inf"))
    ck = ck.sort_values(["_step", "stage", "_pre", "checkpoint"], kind="stable")
    ck = ck.drop(columns=["_pre", "_step"]).reset_index(drop=True)
    ck["position"] = range(len(ck))
    return ck


def growth_steps(order: pd.DataFrame) -> list[int]:
    """Steps where the growth stage increases between consecutive checkpoints."""
    out = []
    stages = order["stage"].fillna(0).astype(int).tolist()
    for i in range(1, len(order)):
        if stages[i] > stages[i - 1]:
            step = order["step"].iloc[i]
            if step is not None and step == step:
                out.append(int(step))
    return out


@dataclass
class Timeline:
    """A model's head scores over training: ``series`` (one row per checkpoint x final head,
    lineage-aware), ``formed`` (one row per final head), ``loss`` (per checkpoint), ``growth``
    (growth-event steps); ``hint``: for a single checkpoint, how to sweep a series."""

    model: str
    score: str
    threshold: float
    order: pd.DataFrame
    series: pd.DataFrame
    formed: pd.DataFrame
    loss: pd.DataFrame
    growth: list[int]
    hint: str | None = None

    def sentence(self) -> str:
        f = self.formed
        n = int(f["formed_step"].notna().sum())
        c = len(self.order)
        text = (
            f"{self.model}: {c} checkpoint{'' if c == 1 else 's'}, {n} of {len(f)} heads formed "
            f"({self.score} >= {self.threshold:g} to the end)"
        )
        if n:
            # the earliest; among heads formed together, the strongest (f is in rank order)
            first = f.dropna(subset=["formed_step"]).sort_values("formed_step", kind="stable")
            first = first.iloc[0]
            text += f"; first L{first['layer']}H{first['head']} at step {first['formed_step']}"
        if self.growth:
            text += f"; growth at step {', '.join(map(str, self.growth))}"
            if "ancestor_formed_before_growth" in f and n:
                # out of the heads counted as formed above, not a fixed top few
                done = f[f["formed_step"].notna()]
                k = int(done["ancestor_formed_before_growth"].fillna(False).astype(bool).sum())
                text += f"; {k} of the {n} formed heads descend from a head formed before it"
        return text

    def figure(self, top: int = 8):
        """Plotly figure: the ``top`` strongest final heads' scores against step (growth
        events dashed, the threshold dotted), and the in-context loss when measured."""
        import pandas as pd
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        has_loss = not self.loss.empty
        fig = make_subplots(
            rows=2 if has_loss else 1,
            cols=1,
            shared_xaxes=True,
            subplot_titles=(
                f"{self.score} score per head (final heads"
                + ("; before growth: their ancestor)" if self.growth else ")"),
                *(["in-context loss: first copy vs repeated copy"] if has_loss else []),
            ),
        )
        best = self.formed.nsmallest(top, "rank")
        r: Any  # an itertuples row: a namedtuple of the columns (typed as scalars)
        for r in best.itertuples():
            s = self.series[(self.series["layer"] == r.layer) & (self.series["head"] == r.head)]
            label = head_label(r.layer, r.head)
            # formed_step is a nullable integer: a head that never formed holds <NA>
            formed = f", formed at {r.formed_step}" if pd.notna(r.formed_step) else ", not formed"
            fig.add_trace(
                go.Scatter(
                    x=s["step"].astype(float),
                    y=s["value"],
                    mode="lines+markers",
                    name=label + formed,
                    text=s["source"],
                    hovertemplate="step %{x}<br>%{y:.3f}<br>%{text}<extra>" + label + "</extra>",
                ),
                row=1,
                col=1,
            )
        fig.add_hline(
            y=self.threshold,
            line_dash="dot",
            line_color="gray",
            row=1,  # pyright: ignore[reportArgumentType]  (plotly types row/col as str)
            col=1,  # pyright: ignore[reportArgumentType]
        )
        for step in self.growth:
            fig.add_vline(x=step, line_dash="dash", line_color="firebrick")
        if has_loss:
            for name in ("loss_first", "loss_repeat"):
                part = self.loss[self.loss["score"] == name]
                fig.add_trace(
                    go.Scatter(
                        x=part["step"].astype(float),
                        y=part["value"],
                        mode="lines+markers",
                        name={"loss_first": "first copy", "loss_repeat": "repeated copy"}[name],
                    ),
                    row=2,
                    col=1,
                )
            fig.update_yaxes(title_text="loss (nats)", row=2, col=1)
        fig.update_xaxes(title_text="training step", row=2 if has_loss else 1, col=1)
        fig.update_yaxes(title_text=self.score, row=1, col=1)
        fig.update_layout(
            title=f"Formation timeline: {self.model}"
            + (f" (growth at {', '.join(map(str, self.growth))}, dashed)" if self.growth else ""),
            template="plotly_white",
            height=700 if has_loss else 450,
        )
        return fig


def build_timeline(
    rows: pd.DataFrame,
    *,
    model: str | None = None,
    score: str = "induction",
    threshold: float | None = None,
    duplication_log: Any = None,
    settings: str | None = None,
) -> Timeline:
    """The :class:`Timeline` of ``model`` (default: the dataset's only model) from sweep rows
    (:func:`induction.dynamics.dataset.read_dataset`). ``threshold``: the formation threshold,
    by default the score's convention (0.4; FV scores have none and need one given).
    ``duplication_log`` (a :class:`lineage.log.DuplicationLog`) overrides the final
    checkpoint's log. ``settings`` picks one sweep's rows (its settings hash) when the dataset
    holds several."""
    import pandas as pd

    if threshold is None:
        threshold = default_threshold(score)
    if threshold is None:
        raise InputError(
            f"--score {score} has no conventional formation threshold; pass --threshold, e.g. "
            "0.01 (FV scores are changes in the answer's probability)"
        )

    models = sorted(rows["model"].dropna().unique())
    if model is None:
        if len(models) != 1:
            raise InputError(
                f"the dataset holds {len(models)} models; pick one with --model "
                f"({', '.join(models[:8])}{', ...' if len(models) > 8 else ''})"
            )
        model = str(models[0])
    if model not in models:
        raise InputError(f"no model {model!r} in the dataset; it has {', '.join(models[:8])}")
    rows = rows[rows["model"] == model]
    rows = _one_settings(rows, model, settings)
    scores = rows[rows["score"] == score]
    if scores.empty:
        have = sorted(rows["score"].unique())
        raise InputError(f"{model} has no {score!r} rows; scored: {', '.join(have)}")
    if scores["layer"].isna().any():
        per_head = sorted(rows.loc[rows["layer"].notna(), "score"].unique())
        raise InputError(
            f"--score {score} is a model-level value (no heads to follow); use a head score: "
            f"{', '.join(per_head)} (the loss curve is drawn in every timeline)"
        )
    order = checkpoint_order(rows)
    final = order.iloc[-1]
    growth = growth_steps(order)
    heads = scores[scores["checkpoint"] == final["checkpoint"]][["layer", "head", "value"]]
    heads = heads.rename(columns={"value": "final"}).astype({"layer": int, "head": int})
    lookup = {
        (c, int(la), int(h)): float(v)
        for c, la, h, v in scores[["checkpoint", "layer", "head", "value"]].itertuples(index=False)
    }
    stages = order["stage"].fillna(0).astype(int).tolist()
    final_stage = stages[-1]
    ancestors = _ancestors(rows, final, heads, final_stage, duplication_log)

    series_rows = []
    for la, h in zip(map(int, heads["layer"]), map(int, heads["head"]), strict=True):
        for ck, step, stage in zip(order["checkpoint"], order["step"], stages, strict=True):
            src_layer = ancestors.get((stage, la, h), la) if stage < final_stage else la
            value = lookup.get((ck, src_layer, h), float("nan"))
            series_rows.append(
                {
                    "layer": la,
                    "head": h,
                    "checkpoint": ck,
                    "step": step,
                    "stage": stage,
                    "value": value,
                    "source": head_label(src_layer, h) + (" (ancestor)" if src_layer != la else ""),
                }
            )
    series = pd.DataFrame(series_rows)
    formed = heads.copy()
    formed.insert(0, "model", model)
    formed["rank"] = formed["final"].rank(ascending=False, method="first").astype(int)
    # checkpoints before the first growth event: positions 0 .. before - 1 of ``order``
    before = next((i for i in range(1, len(stages)) if stages[i] > stages[i - 1]), len(stages))
    formed_at = []  # position of the formation checkpoint in ``order``
    formed_pre = []  # whether the series (the ancestor's, there) had formed before growth
    for la, h in heads[["layer", "head"]].itertuples(index=False):
        s = series[(series["layer"] == la) & (series["head"] == h)]
        values = list(s["value"])
        formed_at.append(formation_step(list(range(len(s))), values, threshold))
        # judged on the checkpoints before growth alone: a dip after it (the grown network
        # settling) does not undo the ancestor's formation
        formed_pre.append(formation_step(range(before), values[:before], threshold) is not None)
    steps = order["step"].tolist()
    formed["formed_step"] = pd.array(
        [steps[p] if p is not None else None for p in formed_at], dtype="Int64"
    )
    formed["formed_checkpoint"] = [
        order["checkpoint"].iloc[p] if p is not None else None for p in formed_at
    ]
    if growth and final_stage > 0:
        first = growth[0]
        pre = order[(order["step"] == first) & (order["growth"] == "before")]
        post = order[(order["step"] == first) & (order["growth"] != "before")]
        anc_layers, pre_vals, post_vals = [], [], []
        for la, h in heads[["layer", "head"]].itertuples(index=False):
            a = ancestors.get((0, la, h))
            anc_layers.append(a)
            pre_vals.append(
                lookup.get((pre["checkpoint"].iloc[0], a, h))
                if len(pre) and a is not None
                else None
            )
            post_vals.append(lookup.get((post["checkpoint"].iloc[0], la, h)) if len(post) else None)
        formed["ancestor"] = [
            head_label(a, h) if a is not None else None for a, h in zip(anc_layers, formed["head"])
        ]
        formed["ancestor_formed_before_growth"] = formed_pre
        formed["score_pre_growth"] = pd.array(pre_vals, dtype="Float64")
        formed["score_post_growth"] = pd.array(post_vals, dtype="Float64")
        formed["growth_change"] = formed["score_post_growth"] - formed["score_pre_growth"]
    formed = formed.sort_values("rank").reset_index(drop=True)
    loss = rows[rows["score"].isin(["loss_first", "loss_repeat", "loss_drop"])].merge(
        order[["checkpoint", "position"]], on="checkpoint"
    )
    loss = loss.sort_values("position")[["checkpoint", "step", "score", "value", "std"]]
    hint = _single_checkpoint_hint(rows, final) if len(order) == 1 else None
    return Timeline(model, score, threshold, order, series, formed, loss, growth, hint)


def _one_settings(rows: pd.DataFrame, model: str, settings: str | None) -> pd.DataFrame:
    """The rows of one sweep's settings: ``settings`` (a hash or its prefix), else the only
    ones; a dataset swept twice with different settings holds both, and mixing them would
    put two values at each checkpoint."""
    if "settings_hash" not in rows.columns:  # rows built by hand, not read from a dataset
        return rows
    have = sorted(rows["settings_hash"].dropna().unique())
    if settings is not None:
        chosen = [h for h in have if h.startswith(settings)]
        if len(chosen) != 1:
            raise InputError(
                f"--settings {settings} matches {len(chosen)} of {model}'s sweep settings "
                f"({', '.join(have)}); pass one of them"
            )
        return rows[rows["settings_hash"] == chosen[0]]
    if len(have) > 1:
        counts = rows.groupby("settings_hash")["checkpoint"].nunique()
        listed = ", ".join(f"{h} ({counts[h]} checkpoints)" for h in have)
        raise InputError(
            f"{model} was swept with {len(have)} settings ({listed}); pick one with --settings"
        )
    return rows


def _single_checkpoint_hint(rows, final) -> str:
    """What to do about a one-checkpoint timeline: the command that sweeps the series the
    model ships (a seed-0 zoo model), else what a series is."""
    from induction.dynamics.series import shipped_series, sweep_command

    spec = rows[rows["checkpoint"] == final["checkpoint"]]["spec"].iloc[0]
    found = shipped_series(spec) if isinstance(spec, str) else None
    text = "one checkpoint, so nothing to follow over training"
    if found is not None:
        folder, n = found
        return (
            f"{text}; {spec} ships a series of {n} checkpoints: {sweep_command(folder)}, "
            "then `induction timeline DIR`"
        )
    return (
        f"{text}; sweep a checkpoint series: a run folder (its checkpoints/step-*) or a hub "
        "model's --revisions"
    )


def _ancestors(rows, final, heads, final_stage, log) -> dict[tuple[int, int, int], int]:
    """``{(stage, layer, head): ancestor layer at that stage}`` for the final heads, from the
    final duplication log (``log``, else the final checkpoint's folder)."""
    if final_stage == 0:
        return {}
    if log is None:
        log = _final_log(rows, final)
    if log is None:
        raise InputError(
            f"{final['checkpoint']} grew but its duplication log cannot be read; pass it"
        )
    from lineage.ancestry import head_ancestry

    n_heads = int(heads["head"].max()) + 1
    out = {}
    for stage in range(final_stage):
        anc = head_ancestry(log, n_heads=n_heads, to_stage=stage)
        r: Any  # an itertuples row: a namedtuple of the columns (typed as scalars)
        for r in anc[anc["primary"]].itertuples():
            out[(stage, int(r.layer), int(r.head))] = int(r.ancestor_layer)
    return out


def _final_log(rows, final):
    from pathlib import Path

    from induction.models.specs import resolve_spec
    from lineage.log import DuplicationLog

    spec = rows[rows["checkpoint"] == final["checkpoint"]]["spec"].iloc[0]
    try:
        folder = resolve_spec(spec).folder
    except Exception:
        return None
    path = Path(folder) / "duplication_log.json" if folder is not None else None
    if path is None or not path.is_file():
        return None
    return DuplicationLog.load(path)
