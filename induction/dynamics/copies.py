"""What a head copied by growth becomes (issue #41 item 6; docs/dynamics.md, "Copied heads").

A depth-growth event (MIDAS/LIDAS, Saunshi et al. 2024; Kapl et al. 2025) duplicates layers:
every head of a copied layer starts as two (or more) identical heads. This module follows each
of them through the rest of training, from a sweep dataset of the model's checkpoint series
(``induction sweep RUN --scores induction,previous_token,fv``) and its duplication log:

- **At the copy**: the copied layer's head in the checkpoint written just before the event
  (``step-N-pre``; its copies have the same weights, so the same scores).
- **After it**: each descendant's own scores at every later checkpoint, where a descendant is a
  head of the final network whose layer, followed back through the later events, is one of
  the event's copies of that layer (:func:`layer_at_stage`).

A head's **role** at a checkpoint is the first that holds of: ``induction`` (induction score
>= 0.4), ``previous-token`` (previous-token score >= 0.4), ``FV`` (FV score in the model's
top 10% at that checkpoint and more than two prompt-seed sds above 0), else ``none``. Each
descendant is then classified by its role at the copy against its role at the end:

- ``keeps its role``: the same role, not ``none``;
- ``loses it``: a role at the copy, ``none`` at the end;
- ``turns FV``: ``FV`` at the end, another role (or none) at the copy;
- ``specialises``: another role at the end than at the copy (not FV, not none), e.g. a copy
  with no role that becomes an induction head;
- ``no role``: ``none`` at both ends.

No published work measures this; the rule above was written before any table was read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from induction.errors import InputError
from induction.heads import INDUCTION_THRESHOLD, head_label
from induction.store.io import guards_inputs

if TYPE_CHECKING:
    import pandas as pd

    from lineage.log import DuplicationLog

#: The scores a role reads, in the order roles are tried.
ROLE_SCORES = ("induction", "previous_token", "fv")
#: A head counts as an FV head when its FV score is in this top share of its checkpoint's heads.
FV_TOP_SHARE = 0.10
CLASSES = ("keeps its role", "loses it", "turns FV", "specialises", "no role")
_PLURAL: dict[str, str] = dict(
    zip(CLASSES, ("keep their role", "lose it", "turn FV", "specialise", "have none"))
)
_SINGULAR: dict[str, str] = dict(
    zip(CLASSES, ("keeps its role", "loses it", "turns FV", "specialises", "has none"))
)


def _heads(n: int, verb_class: str) -> str:
    """``n`` descendants and what they did, the verb agreeing with ``n``."""
    return f"{n} {(_SINGULAR if n == 1 else _PLURAL)[verb_class]}"


def layer_at_stage(log: DuplicationLog, layer: int, stage: int) -> int:
    """The layer at ``stage`` (0 = the initial network) that final ``layer`` descends from,
    following the events after ``stage`` back (copy-only growth: one parent per layer)."""
    for event in reversed(log.events[stage:]):
        parents = event.layer_map[layer]
        if len(parents) != 1:
            raise InputError(
                f"layer {layer} mixes several parents at {event.step}: copied heads are "
                "defined for copy-only growth (MIDAS/LIDAS), not for mixed layers"
            )
        layer = parents[0][0]
    return layer


def copied_layers(log: DuplicationLog) -> list[tuple[int, int, list[int]]]:
    """Per event (index), each layer before it that has several children after it:
    ``(event, parent layer, children)``."""
    out = []
    for e, event in enumerate(log.events):
        children: dict[int, list[int]] = {}
        for child, parents in enumerate(event.layer_map):
            if len(parents) == 1:
                children.setdefault(parents[0][0], []).append(child)
        out += [(e, p, kids) for p, kids in sorted(children.items()) if len(kids) > 1]
    return out


def roles(wide: pd.DataFrame) -> pd.Series:
    """The role of each row of a (checkpoint, layer, head) x score table (module docstring);
    ``wide`` holds ``induction``, ``previous_token``, ``fv``, ``fv_std`` and ``checkpoint``."""
    import numpy as np

    role = np.full(len(wide), "none", dtype=object)
    if "fv" in wide:
        cut = wide.groupby("checkpoint")["fv"].transform(lambda s: s.quantile(1 - FV_TOP_SHARE))
        spread = wide["fv_std"].fillna(0) if "fv_std" in wide else 0.0
        fv = (wide["fv"] >= cut) & (wide["fv"] > 2 * spread) & (wide["fv"] > 0)
        role[fv.to_numpy()] = "FV"
    if "previous_token" in wide:
        role[(wide["previous_token"] >= INDUCTION_THRESHOLD).to_numpy()] = "previous-token"
    role[(wide["induction"] >= INDUCTION_THRESHOLD).to_numpy()] = "induction"
    import pandas as pd

    return pd.Series(role, index=wide.index, name="role")


def classify(at_copy: str, at_end: str) -> str:
    """The class of a descendant from its role at the copy and at the end (module docstring)."""
    if at_end == at_copy:
        return "no role" if at_end == "none" else "keeps its role"
    if at_end == "none":
        return "loses it"
    if at_end == "FV":
        return "turns FV"
    return "specialises"


@dataclass
class CopiedHeads:
    """Every head copied by growth in one model: ``table`` (one row per descendant: the event,
    the copied head, its final head, scores and role at the copy and at the end, its class) and
    ``series`` (each descendant's scores at every checkpoint from the copy on)."""

    model: str
    table: pd.DataFrame
    series: pd.DataFrame
    inputs: list[Path] = field(default_factory=list)

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def counts(self) -> pd.DataFrame:
        """Descendants per event, role at the copy and class."""
        t = self.table
        return (
            t.groupby(["event_step", "role_at_copy", "class"]).size().rename("heads").reset_index()
        )

    def sentence(self) -> str:
        """One sentence: how many heads were copied and what their copies became."""
        t = self.table
        if t.empty:
            return f"{self.model}: no growth event copied a layer"
        events = t["event_step"].nunique()
        copied = t.drop_duplicates(["event_step", "parent_layer", "head"]).shape[0]
        by = t["class"].value_counts()
        kept = t[t["class"] == "keeps its role"]["role_at_end"].value_counts()
        kept_text = (
            " ("
            + ", ".join(
                f"{n} as {'an' if str(r)[0] in 'aeiouF' else 'a'} {r} head"
                if n == 1
                else f"{n} as {r} heads"
                for r, n in kept.items()
            )
            + ")"
        )
        parts = [
            _heads(int(by.get(c, 0)), c) + (kept_text if c == "keeps its role" else "")
            for c in CLASSES
            if by.get(c, 0)
        ]
        became = int(((t["role_at_end"] == "induction") & (t["role_at_copy"] != "induction")).sum())
        return (
            f"{self.model}: {events} growth event{'s' if events > 1 else ''} copied {copied} "
            f"heads; of their {len(t)} "
            f"descendants in the final network (a head copied twice counts once per event), "
            f"{', '.join(parts)}{self._in_place_text()}; {became} became "
            f"{'an induction head' if became == 1 else 'induction heads'} after the copy."
        )

    def _in_place_text(self) -> str:
        """Where a copied head had a role: how often the copy left in the source's place
        (``copy_index`` 0) keeps it against the copies added above it."""
        had = self.table[self.table["role_at_copy"] != "none"]
        if had.empty:
            return ""
        return (
            "; of the descendants of heads with a role at the copy, the copy left in place "
            f"keeps it in {_in_place_vs_added(had)}"
        )

    @guards_inputs
    def save(self, path: str | Path) -> Path:
        """The table (.csv/.parquet/.json), atomically; never over the sweep it was read from."""
        from induction.store.io import write_table

        return write_table(self.table, path)

    @guards_inputs
    def plot(self, path: str | Path | None = None):
        """Induction and previous-token score of every descendant from its copy on, one panel
        per score, coloured by class (saved when a path is given: .html or .png)."""
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots

        colors = dict(zip(CLASSES, ("#1f77b4", "#d62728", "#9467bd", "#2ca02c", "#bbbbbb")))
        panels = [s for s in ("induction", "previous_token") if s in self.series]
        fig = make_subplots(
            rows=1,
            cols=len(panels),
            subplot_titles=[f"{s.replace('_', '-')} score" for s in panels],
        )
        shown: set[str] = set()
        for key, rows in self.series.groupby("descendant", sort=False):
            cls = rows["class"].iloc[0]
            for i, score in enumerate(panels, start=1):
                fig.add_trace(
                    go.Scatter(
                        x=rows["step"],
                        y=rows[score],
                        mode="lines",
                        line={"color": colors[cls], "width": 1.2},
                        name=cls,
                        legendgroup=cls,
                        showlegend=cls not in shown and i == 1,
                        hovertemplate=f"{key}<br>step %{{x}}<br>{score} %{{y:.3f}}<extra></extra>",
                    ),
                    row=1,
                    col=i,
                )
            shown.add(cls)
        for i in range(1, len(panels) + 1):
            fig.add_hline(
                y=INDUCTION_THRESHOLD,
                line_dash="dash",
                line_color="gray",
                row=1,  # pyright: ignore[reportArgumentType]  (plotly types row/col as str)
                col=i,  # pyright: ignore[reportArgumentType]
            )
            fig.update_xaxes(title_text="training step", row=1, col=i)
            fig.update_yaxes(title_text="score", range=[0, 1], row=1, col=i)
        fig.update_layout(
            title=f"{self.model}: heads copied by growth, from the copy to the end",
            template="plotly_white",
            legend={"title": {"text": "class"}},
            width=520 * len(panels) + 160,
            height=460,
        )
        if path is not None:
            from induction.figures.plots import save_figure

            note = save_figure(fig, Path(path))
            if note:
                raise InputError(note)
        return fig


def copied_heads(rows: pd.DataFrame, log: DuplicationLog, model: str | None = None) -> CopiedHeads:
    """:class:`CopiedHeads` of one model from its sweep rows (``induction.dynamics.dataset``
    rows of its checkpoint series, one settings hash) and its duplication log."""
    import pandas as pd

    from induction.dynamics.timeline import checkpoint_order

    if model is None:
        names = rows["model"].unique()
        if len(names) != 1:
            raise InputError(f"the rows hold {len(names)} models; pass model=")
        model = str(names[0])
    rows = rows[rows["model"] == model]
    if rows.empty:
        raise InputError(f"no sweep rows of {model!r}")
    missing = [s for s in ("induction", "previous_token") if s not in set(rows["score"])]
    if missing:
        raise InputError(
            f"the sweep of {model} lacks {', '.join(missing)}: rerun `induction sweep` with "
            "--scores induction,previous_token,fv"
        )
    if rows["settings_hash"].nunique() > 1:
        raise InputError(
            f"the sweep of {model} mixes {rows['settings_hash'].nunique()} settings; sweep it "
            "into a folder of its own"
        )
    wide = rows.pivot_table(
        index=["checkpoint", "layer", "head"], columns="score", values="value"
    ).reset_index()
    if "fv" in set(rows["score"]):
        std = rows[rows["score"] == "fv"].set_index(["checkpoint", "layer", "head"])["std"]
        wide = wide.join(std.rename("fv_std"), on=["checkpoint", "layer", "head"])
    wide["role"] = roles(wide)
    order = checkpoint_order(rows)
    at = wide.set_index(["checkpoint", "layer", "head"])
    final = order.iloc[-1]
    if int(final["depth"]) != log.final_depth:
        raise InputError(
            f"the last checkpoint of {model} has {int(final['depth'])} layers but its "
            f"duplication log ends at {log.final_depth}: pass the run's own log"
        )
    n_heads = int(rows["head"].max()) + 1
    table, series = [], []
    for e, parent, children in copied_layers(log):
        event = log.events[e]
        pre = order[(order["step"] == event.step) & (order["growth"] == "before")]
        if pre.empty:
            raise InputError(
                f"{model} has no checkpoint step-{event.step}-pre: the scores at the copy "
                "need the checkpoint written just before the growth event"
            )
        pre_name = pre["checkpoint"].iloc[0]
        later = order[order["position"] > pre["position"].iloc[0]]
        for final_layer in range(log.final_depth):
            copy = layer_at_stage(log, final_layer, e + 1)
            if copy not in children:
                continue
            for h in range(n_heads):
                # (pandas-stubs lacks a MultiIndex row's tuple key in .loc)
                start = at.loc[(pre_name, parent, h)]  # pyright: ignore[reportCallIssue, reportArgumentType]
                end = at.loc[(final["checkpoint"], final_layer, h)]  # pyright: ignore[reportCallIssue, reportArgumentType]
                key = f"{head_label(parent, h)}@{event.step} -> {head_label(final_layer, h)}"
                cls = classify(start["role"], end["role"])
                table.append(
                    {
                        "model": model,
                        "event_step": event.step,
                        "parent_layer": parent,
                        "head": h,
                        "copy_layer": copy,
                        "copy_index": children.index(copy),
                        "final_layer": final_layer,
                        "descendant": key,
                        **{f"{s}_at_copy": start.get(s) for s in ROLE_SCORES if s in at},
                        **{f"{s}_at_end": end.get(s) for s in ROLE_SCORES if s in at},
                        "role_at_copy": start["role"],
                        "role_at_end": end["role"],
                        "class": cls,
                    }
                )
                points = [(event.step, start)] + [
                    (
                        ck.step,
                        at.loc[(ck.checkpoint, layer_at_stage(log, final_layer, ck.stage), h)],  # pyright: ignore[reportCallIssue, reportArgumentType]
                    )
                    for ck in later.itertuples(index=False)
                ]
                series += [
                    {"descendant": key, "class": cls, "step": step,
                     **{s: point.get(s) for s in ROLE_SCORES if s in at}}
                    for step, point in points
                ]  # fmt: skip
    return CopiedHeads(model, pd.DataFrame(table), pd.DataFrame(series))


def copied_heads_of_sweep(
    folder: str | Path, log: DuplicationLog, model: str | None = None
) -> CopiedHeads:
    """:func:`copied_heads` of a sweep dataset folder (``induction sweep --out FOLDER``)."""
    from induction.dynamics.dataset import read_dataset

    rows = read_dataset(folder)
    result = copied_heads(rows, log, model)
    result.inputs = [Path(folder)]
    return result


def summary_table(results: Sequence[CopiedHeads]) -> pd.DataFrame:
    """Descendants per model, role at the copy and class: the per-arm-and-seed table."""
    import pandas as pd

    frames = [r.counts().assign(model=r.model) for r in results if not r.table.empty]
    if not frames:
        return pd.DataFrame(columns=["model", "event_step", "role_at_copy", "class", "heads"])
    return pd.concat(frames, ignore_index=True)[
        ["model", "event_step", "role_at_copy", "class", "heads"]
    ]


def _in_place_vs_added(rows: pd.DataFrame) -> str:
    """ "k of n, the added copies in k' of n'": how many descendants keep their role in the copy
    left in place (``copy_index`` 0) and in the copies added above it."""
    kept = rows["class"] == "keeps its role"
    in_place = rows["copy_index"] == 0
    return (
        f"{int((kept & in_place).sum())} of {int(in_place.sum())}, the added copies in "
        f"{int((kept & ~in_place).sum())} of {int((~in_place).sum())}"
    )


def arm_sentences(results: Sequence[CopiedHeads]) -> list[str]:
    """One sentence per arm (the family of ``<family>-s<seed>``), its seeds pooled: for the
    heads that had a role at the copy, how often the copy left in place keeps it against the
    added copies, per role, and how many copies became induction heads (issue #41 item 6: per
    arm and seed; the seeds' own sentences are :meth:`CopiedHeads.sentence`)."""
    import pandas as pd

    arms: dict[str, list[CopiedHeads]] = {}
    for r in results:
        family, _, seed = r.model.rpartition("-s")
        arms.setdefault(family if seed.isdigit() else r.model, []).append(r)
    out = []
    for arm, runs in arms.items():
        seeds = ", ".join(r.model.rpartition("-s")[2] for r in runs)
        head = f"{arm} ({len(runs)} seed{'s' if len(runs) > 1 else ''}: {seeds})"
        tables = [r.table for r in runs if not r.table.empty]
        if not tables:
            out.append(f"{head}: no growth event copied a layer")
            continue
        t = pd.concat(tables, ignore_index=True)
        parts = [
            f"{role} heads: the copy left in place keeps the role in {_in_place_vs_added(rows)}"
            for role in ("induction", "previous-token", "FV")
            if not (rows := t[t["role_at_copy"] == role]).empty
        ]
        became = int(((t["role_at_end"] == "induction") & (t["role_at_copy"] != "induction")).sum())
        roles_text = "; ".join(parts) if parts else "no copied head had a role at the copy"
        out.append(
            f"{head}: {len(t)} descendants of copied heads; {roles_text}; {became} "
            f"{'copy' if became == 1 else 'copies'} became induction heads after the copy."
        )
    return out
