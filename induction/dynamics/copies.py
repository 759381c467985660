"""What a head copied by growth becomes (issue #41 item 6; docs/zoo.md "Round 4").

Growth deep-copies layers (:mod:`lineage.growth`), so right after a growth event every head of
a copied layer is an exact twin of its source. This module follows each copy through a
grown model's checkpoint series (``checkpoints/step-<N>[-pre]``, written by
:func:`induction.training.protocol.train_fixed`): its induction and previous-token stripe
scores (the trainer's monitor on ``[BOS] + r + r``, ``len(r)`` the card's ``repeat_len``;
:meth:`induction.prompts.PromptLayout.pairs`) at every checkpoint from its copy on, and a
class read from its role at the copy and at the last checkpoint:

- a head's *role* is ``induction`` (induction score >= 0.4), else ``previous-token``
  (previous-token score >= 0.4), else ``none``;
- ``keeps its role`` (same role, not none), ``loses it`` (a role, then none), ``specialises``
  (one role, then the other), ``gains a role`` (none, then a role), ``stays none``.

Function-vector scores need the FV sweep and are not read here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from induction.prompts import PromptLayout
from induction.zoo import vocab as V
from lineage.log import LOG_FILE, DuplicationLog

THRESHOLD = 0.4
SCORES = ("induction", "previous_token")


def _moved(index: int, event) -> int:
    """Where layer ``index`` sits after ``event`` inserts its copies."""
    width = event.source[1] - event.source[0]
    return index if index < event.insert_at else index + width


def copy_positions(log: DuplicationLog) -> list[dict]:
    """Every layer a growth event copied: ``event`` (its index), ``step``, ``source`` (the
    source layer at that stage) and ``layers``, its index at each later stage (stage ``s`` is
    the network after ``s`` events). Span-copy events only."""
    copies = []
    for e, event in enumerate(log.events):
        if event.source is None:
            continue
        a, b = event.source
        for k in range(b - a):
            here, layers = event.insert_at + k, {e + 1: event.insert_at + k}
            for s in range(e + 1, len(log.events)):
                here = layers[s + 1] = _moved(here, log.events[s])
            copies.append({"event": e, "step": event.step, "source": a + k, "layers": layers})
    return copies


def stripe_scores(
    model, distance: int, batch: int = 32, seed: int = 12345
) -> dict[str, np.ndarray]:
    """``{score: [layer, head]}`` of the induction and previous-token stripes on
    ``[BOS] + r + r`` (``len(r) = distance``), the training monitor's prompts."""
    rng = np.random.default_rng(seed)
    ids = np.arange(V.FIRST_ORDINARY_ID, V.VOCAB_SIZE)
    r = np.stack([rng.choice(ids, distance, replace=False) for _ in range(batch)])
    tokens = torch.tensor(np.concatenate([np.full((batch, 1), V.BOS_ID), r, r], axis=1))
    model.eval()
    model.set_attn_implementation("eager")
    with torch.no_grad():
        attentions = model(tokens, output_attentions=True).attentions
    layout = PromptLayout(seq_len=distance, n_repeats=2)
    out = {}
    for name in SCORES:
        q, k, n = layout.pairs(name)
        out[name] = torch.stack([a[:, :, q, k].sum(dim=2).mean(dim=0) / n for a in attentions])
        out[name] = out[name].numpy()
    return out


def _checkpoints(folder: Path) -> list[tuple[int, int, Path]]:
    """``(step, stage, folder)`` of the series, in training order (``-pre`` before its step)."""
    found = []
    for path in (folder / "checkpoints").iterdir():
        card = path / "card.json"
        if not card.is_file():
            continue
        step = int(json.loads(card.read_text())["step"])
        log = path / LOG_FILE
        stage = len(DuplicationLog.load(log).events) if log.is_file() else 0
        found.append((step, stage, path))
    return sorted(found, key=lambda t: (t[0], t[1]))


def copies_table(folder: str | Path) -> pd.DataFrame:
    """One row per (copied layer, head, checkpoint from the copy on): ``copy`` (event and
    source, ``e0:L1``), ``head``, ``step``, ``stage``, ``layer`` (its index then), each stripe
    score, and the source layer's same head's scores (``source_<score>``)."""
    from transformers import LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    folder = Path(folder)
    log = DuplicationLog.load(folder / LOG_FILE)
    distance = int(json.loads((folder / "card.json").read_text()).get("repeat_len", 32))
    copies = copy_positions(log)
    rows = []
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        for step, stage, path in _checkpoints(folder) + [(None, len(log.events), folder)]:
            live = [c for c in copies if stage in c["layers"]]
            if not live:
                continue
            model = LlamaForCausalLM.from_pretrained(str(path), torch_dtype=torch.float32)
            scores = stripe_scores(model, distance)
            if step is None:
                step = int(json.loads((folder / "card.json").read_text())["steps"])
            for c in live:
                layer = c["layers"][stage]
                src = _source_now(log, c, stage)
                for h in range(scores["induction"].shape[1]):
                    row = {"copy": f"e{c['event']}:L{c['source']}", "event": c["event"],
                           "head": h, "step": step, "stage": stage, "layer": layer}  # fmt: skip
                    for name in SCORES:
                        row[name] = round(float(scores[name][layer, h]), 4)
                        row[f"source_{name}"] = round(float(scores[name][src, h]), 4)
                    rows.append(row)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    return pd.DataFrame(rows)


def _source_now(log: DuplicationLog, copy: dict, stage: int) -> int:
    """Index at ``stage`` of the layer a copy was made from (moved by every insertion from
    the copy's own event on)."""
    here = copy["source"]
    for e in range(copy["event"], stage):
        here = _moved(here, log.events[e])
    return here


def role(induction: float, previous: float) -> str:
    if induction >= THRESHOLD:
        return "induction"
    return "previous-token" if previous >= THRESHOLD else "none"


def classify(table: pd.DataFrame) -> pd.DataFrame:
    """One row per copied head: its role at the copy and at the last checkpoint, and the class
    (module docstring)."""
    rows = []
    for (copy, head), g in table.sort_values(["step", "stage"]).groupby(["copy", "head"]):
        first, last = g.iloc[0], g.iloc[-1]
        before = role(first["induction"], first["previous_token"])
        after = role(last["induction"], last["previous_token"])
        if before == after:
            kind = "stays none" if before == "none" else "keeps its role"
        elif after == "none":
            kind = "loses it"
        elif before == "none":
            kind = "gains a role"
        else:
            kind = "specialises"
        rows.append({"copy": copy, "head": int(head), "copied_at": int(first["step"]),
                     "role_at_copy": before, "role_now": after, "class": kind,
                     "induction_now": last["induction"],
                     "previous_token_now": last["previous_token"]})  # fmt: skip
    return pd.DataFrame(rows)
