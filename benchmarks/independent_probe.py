"""An independent check of the zoo models' in-context gates, on prompts the project never made.

    python benchmarks/independent_probe.py MODEL [MODEL ...] [--n 400] [--seed 7] [--out FILE]

The prompts are built here from the format description in docs/zoo.md alone, as text strings
tokenized with each model's own tokenizer; nothing is imported from ``induction.zoo.corpus``
or ``induction.zoo.probe`` (the project's probe), so a bug shared with the project's
generators cannot hide here. Three measures, ``--n`` prompts each, one scored position per
prompt (the last one: greedy argmax of the next token):

- ``lookup``: a fresh map of 6-12 distinct word keys to distinct word values (``w0``-``w87``),
  shown as 12-29 pairs ``k > v , k > v , ...`` with keys recurring, then a shown key and
  ``>``; the answer is its value. Chance: 1 / (distinct keys shown).
- ``lookup_far`` (a variation, not a gate): the same, but the queried key is shown exactly
  once, followed by at least 8 other pairs before the query.
- ``varassign``: 2-4 digit assignments ``a = 3`` (distinct letters ``a``-``r``, distinct
  digits) in random order, at depth 1 followed by 1-2 aliases ``x = y`` (y digit-assigned);
  statements joined by `` , ``, the last one ends with `` ;``, then the queried variable and
  ``?``. Half the prompts are depth 0 (a digit-assigned variable, uniformly), half depth 1
  (an alias). Chance: 1 / (digit assignments). ``first`` / ``others``: whether the answer is
  the value of the first digit assignment; the gap is accuracy(first) - accuracy(others).

Gates (as documented): lookup >= 0.6 and >= 3x its mean chance; varassign >= 0.5; gap <= 0.2.

Dense and grown models load with plain ``transformers`` (``AutoModelForCausalLM`` and
``AutoTokenizer`` on the folder). Looped models (a folder with ``loop_plan.json``) store one
block that must be unrolled, so for those only the project's loader
(``induction.models.loading.load_model``) is used for the weights; the prompts stay independent.
``LoadedModel`` has no ``.model`` attribute: the looped path calls ``loaded.bridge(ids)``,
which returns the logits tensor (an HF-style output with ``.logits`` is accepted too).

Prompts are right-padded into batches (sorted by length): with causal attention, pad tokens
after a prompt cannot change the logits at its last real position, which is the one scored.
The same seed gives the same prompts for every model and the same numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "induction" / "zoo" / "models"

WORDS = [f"w{i}" for i in range(88)]
LETTERS = [chr(ord("a") + i) for i in range(18)]  # a-r
DIGITS = [str(d) for d in range(10)]

LOOKUP_KEYS = (6, 12)  # map size, inclusive
LOOKUP_PAIRS = (12, 29)  # pairs shown, inclusive
FAR_GAP = 8  # lookup_far: at least this many pairs between the key's one showing and the query
VAR_ASSIGNS = (2, 4)
VAR_ALIASES = (1, 2)

LOOKUP_MIN, LOOKUP_X_CHANCE, VARASSIGN_MIN, GAP_MAX = 0.6, 3.0, 0.5, 0.2
BATCH = 64


@dataclass
class Prompt:
    text: str  # without <bos>; the tokenizer prepends it
    answer: str  # the correct next token
    chance: float
    meta: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- prompt building


def lookup_prompt(pairs: list[tuple[str, str]], query: str) -> Prompt:
    """``k > v , k > v , ... , query >``; the answer is ``query``'s value in ``pairs``."""
    shown = dict(pairs)
    if query not in shown:
        raise ValueError(f"query {query} was not shown")
    text = " , ".join(f"{k} > {v}" for k, v in pairs) + f" , {query} >"
    return Prompt(text, shown[query], 1.0 / len(shown))


def varassign_prompt(
    assigns: list[tuple[str, str]], aliases: list[tuple[str, str]], query: str
) -> Prompt:
    """``a = 3 , b = 7 , c = a ; c ?``; the answer is the digit ``query`` resolves to."""
    values = dict(assigns)
    for x, y in aliases:
        values[x] = values[y]
    statements = [f"{x} = {v}" for x, v in assigns] + [f"{x} = {y}" for x, y in aliases]
    text = " , ".join(statements) + f" ; {query} ?"
    first = values[query] == assigns[0][1]
    return Prompt(text, values[query], 1.0 / len(assigns), {"first": first})


def _randint(rng, lo_hi: tuple[int, int]) -> int:
    return int(rng.integers(lo_hi[0], lo_hi[1] + 1))


def make_lookup(rng) -> Prompt:
    n_keys, n_pairs = _randint(rng, LOOKUP_KEYS), _randint(rng, LOOKUP_PAIRS)
    words = rng.permutation(WORDS)
    keys, values = list(words[:n_keys]), list(words[n_keys : 2 * n_keys])
    value = dict(zip(keys, values))
    shown_keys = [keys[int(i)] for i in rng.integers(0, n_keys, n_pairs)]
    distinct = sorted(set(shown_keys), key=shown_keys.index)
    query = distinct[int(rng.integers(0, len(distinct)))]
    return lookup_prompt([(k, value[k]) for k in shown_keys], query)


def make_lookup_far(rng) -> Prompt:
    n_keys, n_pairs = _randint(rng, LOOKUP_KEYS), _randint(rng, LOOKUP_PAIRS)
    words = rng.permutation(WORDS)
    keys, values = list(words[:n_keys]), list(words[n_keys : 2 * n_keys])
    value = dict(zip(keys, values))
    query, others = keys[0], keys[1:]
    at = int(rng.integers(0, n_pairs - FAR_GAP))  # pairs after it: n_pairs - 1 - at >= FAR_GAP
    shown_keys = [others[int(i)] for i in rng.integers(0, len(others), n_pairs)]
    shown_keys[at] = query
    prompt = lookup_prompt([(k, value[k]) for k in shown_keys], query)
    prompt.meta["gap_pairs"] = n_pairs - 1 - at
    return prompt


def make_varassign(rng, depth: int) -> Prompt:
    n_assign = _randint(rng, VAR_ASSIGNS)
    n_alias = _randint(rng, VAR_ALIASES) if depth == 1 else 0
    names = list(rng.permutation(LETTERS)[: n_assign + n_alias])
    digits = list(rng.permutation(DIGITS)[:n_assign])
    assigns = list(zip(names[:n_assign], digits))
    aliases = [(x, names[int(rng.integers(0, n_assign))]) for x in names[n_assign:]]
    pool = names[n_assign:] if depth == 1 else names[:n_assign]
    query = pool[int(rng.integers(0, len(pool)))]
    prompt = varassign_prompt(assigns, aliases, query)
    prompt.meta["depth"] = depth
    return prompt


def build_prompts(n: int, seed: int) -> dict[str, list[Prompt]]:
    """``n`` prompts per measure, the same for every model (one seeded stream)."""
    rng = np.random.default_rng(seed)
    return {
        "lookup": [make_lookup(rng) for _ in range(n)],
        "lookup_far": [make_lookup_far(rng) for _ in range(n)],
        "varassign": [make_varassign(rng, i % 2) for i in range(n)],
    }


# --------------------------------------------------------------------------- models


class Scorer:
    """Next-token argmax at the last position of each prompt, for one model."""

    def __init__(self, name_or_folder: str):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        folder = Path(name_or_folder)
        if not folder.is_dir():
            folder = ZOO / name_or_folder
        if not (folder / "config.json").is_file():
            raise SystemExit(f"error: no model at {name_or_folder} (looked in {folder})")
        self.folder = folder
        self.looped = (folder / "loop_plan.json").is_file()
        if self.looped:
            from induction.models.loading import load_model

            loaded = load_model(str(folder), device="cpu")
            self._loaded = loaded
            self.tokenizer = loaded.tokenizer
            self.model = loaded.bridge
        else:
            self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
            self.model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
        self.model.eval()
        vocab = self.tokenizer.get_vocab()
        self.unk_id, self.bos_id = vocab["<unk>"], vocab["<bos>"]
        self.pad_id = vocab["<pad>"]
        self.id_to_token = {i: t for t, i in vocab.items()}

    def encode(self, prompt: Prompt) -> list[int]:
        """The prompt's ids (``<bos>`` first), checked: one id per word, no ``<unk>``."""
        ids = list(self.tokenizer(prompt.text)["input_ids"])
        words = prompt.text.split()
        if ids[0] != self.bos_id or len(ids) != len(words) + 1 or self.unk_id in ids:
            raise ValueError(f"prompt does not tokenize cleanly: {prompt.text!r} -> {ids}")
        if [self.id_to_token[i] for i in ids[1:]] != words:
            raise ValueError(f"prompt tokens differ from its words: {prompt.text!r}")
        return ids

    def answer_id(self, prompt: Prompt) -> int:
        ids = self.tokenizer(prompt.answer, add_special_tokens=False)["input_ids"]
        if len(ids) != 1 or ids[0] == self.unk_id:
            raise ValueError(f"answer {prompt.answer!r} is not one token: {ids}")
        return ids[0]

    def logits(self, ids, mask):
        import torch

        with torch.no_grad():
            if self.looped:
                out = self.model(ids)  # causal: right padding cannot reach the scored position
            else:
                out = self.model(input_ids=ids, attention_mask=mask)
        return out.logits if hasattr(out, "logits") else out

    def predict(self, prompts: list[Prompt]) -> list[int]:
        """Greedy next-token id at each prompt's last position (batched, right-padded)."""
        import torch

        encoded = [self.encode(p) for p in prompts]
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        preds = [0] * len(encoded)
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            width = max(len(encoded[i]) for i in chunk)
            ids = torch.full((len(chunk), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, i in enumerate(chunk):
                ids[row, : len(encoded[i])] = torch.tensor(encoded[i])
                mask[row, : len(encoded[i])] = 1
            logits = self.logits(ids, mask)
            last = mask.sum(1) - 1
            top = logits[torch.arange(len(chunk)), last].argmax(-1)
            for row, i in enumerate(chunk):
                preds[i] = int(top[row])
        return preds

    def correct(self, prompts: list[Prompt]) -> np.ndarray:
        preds = self.predict(prompts)
        return np.array([p == self.answer_id(q) for p, q in zip(preds, prompts)], dtype=bool)


# --------------------------------------------------------------------------- measuring


def _mean(x) -> float | None:
    x = np.asarray(x)
    return float(x.mean()) if x.size else None


def measure(scorer: Scorer, prompts: dict[str, list[Prompt]]) -> dict:
    res: dict = {}
    for name in ("lookup", "lookup_far"):
        ok = scorer.correct(prompts[name])
        res[name] = _mean(ok)
        res[f"{name}_chance"] = _mean([p.chance for p in prompts[name]])
        res[f"{name}_n"] = int(ok.size)
    va = prompts["varassign"]
    ok = scorer.correct(va)
    depth = np.array([p.meta["depth"] for p in va])
    first = np.array([p.meta["first"] for p in va], dtype=bool)
    res["varassign"] = _mean(ok)
    res["varassign_n"] = int(ok.size)
    for d in (0, 1):
        res[f"varassign_depth{d}"] = _mean(ok[depth == d])
        res[f"varassign_depth{d}_n"] = int((depth == d).sum())
    res["varassign_chance"] = _mean([p.chance for p in va])
    res["first"], res["first_n"] = _mean(ok[first]), int(first.sum())
    res["others"], res["others_n"] = _mean(ok[~first]), int((~first).sum())
    res["gap"] = res["first"] - res["others"] if None not in (res["first"], res["others"]) else None
    res["gates"] = gates(res)
    return res


def gates(res: dict) -> dict:
    lookup = res["lookup"] >= LOOKUP_MIN and res["lookup"] >= LOOKUP_X_CHANCE * res["lookup_chance"]
    varassign = res["varassign"] >= VARASSIGN_MIN
    gap = res["gap"] is not None and res["gap"] <= GAP_MAX
    passed = lookup and varassign and gap
    return {"lookup": lookup, "varassign": varassign, "gap": gap, "all": passed}


def table(results: dict) -> str:
    head = (
        f"{'model':<14} {'lookup':>6} {'chance':>6} {'far':>5} {'va':>5} {'va d0':>5} "
        f"{'va d1':>5} {'chance':>6} {'first':>5} {'other':>5} {'gap':>6}  gates"
    )
    lines = [head]
    for name, r in results.items():
        g = r["gates"]
        failed = [k for k in ("lookup", "varassign", "gap") if not g[k]]
        verdict = "pass" if g["all"] else "FAIL " + ",".join(failed)
        lines.append(
            f"{name:<14} {r['lookup']:>6.3f} {r['lookup_chance']:>6.3f} {r['lookup_far']:>5.3f} "
            f"{r['varassign']:>5.3f} {r['varassign_depth0']:>5.3f} {r['varassign_depth1']:>5.3f} "
            f"{r['varassign_chance']:>6.3f} {r['first']:>5.3f} {r['others']:>5.3f} "
            f"{r['gap']:>+6.3f}  {verdict}"
        )
    return "\n".join(lines)


def write_json_atomic(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run(models: list[str], n: int = 400, seed: int = 7) -> dict:
    prompts = build_prompts(n, seed)
    results = {}
    for name in models:
        results[name] = measure(Scorer(name), prompts)
    return {"n": n, "seed": seed, "models": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="zoo model names or model folders")
    parser.add_argument("--n", type=int, default=400, help="prompts per measure")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    args = parser.parse_args(argv)
    if args.n < 2:
        parser.error("--n must be at least 2")
    result = run(args.models, args.n, args.seed)
    print(table(result["models"]))
    if args.out is not None:
        write_json_atomic(args.out, result)
    return 0


if __name__ == "__main__":
    from induction.commands.main import run_script

    run_script(main)
