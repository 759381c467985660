"""Where a pilot's model puts its mass on a variable program's answer (docs/replication.md,
"Pilot 7"): on fresh ``var_depth0`` problems, the mean probability per digit of the gold digit,
of the other digits the program shows, and of the digits it does not show. With ``--open-book``
(pilot 11): where it puts its answer to ``zoo4g``'s ``open_lookup`` items (prompt seed 0, the
items the pilot rule reads): the keyed value, another value of the passage, a key, or a word
the passage does not show, on the suite of this commit (``:`` until pilot 12, ``>`` from 13).

    python benchmarks/digit_mass.py pilot2 pilot5a ... [--runs DIR] [--open-book]

A model that has taken binding's first step ("answer a digit the program shows") puts its mass
on the shown digits; one with no such rule spreads it evenly (0.1 each). Reads the pilots'
folders ``--runs/NAME/grown8rt-s0`` (``benchmarks/r4_pilot.py``), writes
``benchmarks/results/pilot4/digit_mass.json`` (one row per pilot, merged with earlier rows),
and with ``--open-book`` ``open_book_mass.json`` beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from induction.store.io import write_json  # noqa: E402
from induction.zoo import vocab as V  # noqa: E402
from induction.zoo.problems import SAYS, var_depth  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "pilot4" / "digit_mass.json"
OPEN_OUT = OUT.with_name("open_book_mass.json")
STREAM = [999, 1]  # no corpus, suite or probe stream uses 999


def digit_mass(folder: Path, n_problems: int = 256) -> dict:
    """Mean per-digit probability of gold, other shown and unshown digits, and accuracy."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    rng = np.random.default_rng(STREAM)
    digit_ids = [V.VOCAB[d] for d in V.DIGITS]
    gold_p, shown_p, unshown_p, hits = [], [], [], []
    for _ in range(n_problems):
        problem = var_depth(rng, 0)
        ids = [V.BOS_ID] + [V.VOCAB[t] for t in problem.query]
        with torch.no_grad():
            probs = model(torch.tensor([ids])).logits[0, -1].softmax(-1)
        shown = {V.VOCAB[t] for t in problem.query if t in V.DIGITS}
        gold = V.VOCAB[problem.answer[0]]
        gold_p.append(probs[gold].item())
        shown_p.append(np.mean([probs[i].item() for i in shown if i != gold]))
        unshown_p.append(np.mean([probs[i].item() for i in digit_ids if i not in shown]))
        hits.append(int(probs.argmax().item() == gold))
    return {
        "p_gold": round(float(np.mean(gold_p)), 4),
        "p_other_shown": round(float(np.mean(shown_p)), 4),
        "p_unshown": round(float(np.mean(unshown_p)), 4),
        "accuracy": round(float(np.mean(hits)), 4),
        "n_problems": n_problems,
    }


def open_book_mass(folder: Path, task: str = "open_lookup", n_items: int = 64) -> dict:
    """On ``task``'s suite items: the mean probability of the keyed value, of each other value
    of the passage and of each of its keys, and where the top token falls (counts)."""
    from transformers import AutoModelForCausalLM

    from ablation.tasks.zoo4g import problems

    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    gold_p, value_p, key_p = [], [], []
    top = {"gold": 0, "other_value": 0, "key": 0, "elsewhere": 0}
    for demos, query in problems(task, n_items, seed=0):
        tokens = [t for d in demos for t in d.tokens] + list(query.query)
        ids = [V.BOS_ID] + [V.VOCAB[t] for t in tokens]
        with torch.no_grad():
            probs = model(torch.tensor([ids])).logits[0, -1].softmax(-1)
        gold = V.VOCAB[query.answer[0]]
        values = {V.VOCAB[v] for v in query.candidates} - {gold}
        passage = query.query[: query.query.index("?")]
        keys = {V.VOCAB[passage[i - 1]] for i, t in enumerate(passage) if t == SAYS}
        gold_p.append(probs[gold].item())
        value_p.append(np.mean([probs[i].item() for i in values]))
        key_p.append(np.mean([probs[i].item() for i in keys]))
        best = int(probs.argmax().item())
        where = "gold" if best == gold else "other_value" if best in values else None
        top[where or ("key" if best in keys else "elsewhere")] += 1
    return {
        "task": task,
        "p_gold": round(float(np.mean(gold_p)), 4),
        "p_other_value": round(float(np.mean(value_p)), 4),
        "p_key": round(float(np.mean(key_p)), 4),
        "top_token": top,
        "n_items": n_items,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pilots", nargs="+")
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "r4-pilot")
    ap.add_argument("--open-book", action="store_true", help="open_lookup's answers instead")
    ap.add_argument(
        "--checkpoints", action="store_true", help="also each checkpoint (rows NAME@step-N)"
    )
    args = ap.parse_args(argv)
    out, measure = (OPEN_OUT, open_book_mass) if args.open_book else (OUT, digit_mass)
    rows = json.loads(out.read_text()) if out.is_file() else {}
    for name in args.pilots:
        run = args.runs / name / "grown8rt-s0"
        folders = {name: run}
        if args.checkpoints:
            series = [p for p in (run / "checkpoints").glob("step-*") if p.name[5:].isdigit()]
            folders |= {
                f"{name}@{p.name}": p for p in sorted(series, key=lambda p: int(p.name[5:]))
            }
        for row, folder in folders.items():
            rows[row] = measure(folder)
            print(row, rows[row])
    write_json(out, dict(sorted(rows.items())))
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
