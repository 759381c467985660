"""Every generated task has no shortcut: rules that ignore which entry is queried score at
chance, and the queried entry's position is uniform. Positive controls (``copy``,
``lookup``: induction by construction, Olsson et al. 2022) are flagged and tested for a
uniform queried position too.

Method (every task, N = 2,000 seeded items, prompts as the suite builds them, demonstrations
included):

- *Chance* per item under the null "the queried entry is uniform over the ``n`` entries of the
  query program / map, whatever the rest of the prompt": a rule answering value ``b`` is right
  with probability ``count(b among the entries' values) / n``. The generators draw distinct
  values, so that is ``1 / n`` for a shown value (``n`` = 2-4 digit assignments for the zoo's
  var-assign, 3 / 2 for the paper19 primitives at depth 0 / 1, the distinct keys shown for
  lookup) and 0 otherwise; averaged over a fixed digit it is 1/10. For RegBench (scored by
  whether a letter is valid next), letters are exchangeable, so a rule ignoring the string is
  valid with probability ``|valid| / |support|``.
- *Tolerance*: ``|mean hits - mean chance| <= 3 * SE + 0.01``, ``SE = sqrt(sum p_i (1 - p_i))
  / N`` (binomial standard error of independent Bernoulli(p_i) hits) plus a 0.01 margin;
  content-reading rules without an exact chance are bounded one-sided.
- *Fixed choices* (position, value) are the best on another prompt seed's items.
- *Position*: rank ``r`` of the queried entry among ``n`` -> ``(r + U) / n``, ``U`` seeded
  uniform, 10 bins, ``scipy.stats.chisquare`` at ``p > 0.001``.

Rules: first value, last value, most frequent value (ties: earliest), the value right after
the first ``=`` / ``>``, the last digit seen, the query program's first value, a fixed
statement / pair position, a fixed value.
"""

import random
from collections import Counter

import numpy as np
import pytest

from ablation.baselines import UNIFORM_P, chance_check, mode, position_uniformity
from ablation.tasks import paper19, regbench, zoo
from induction.zoo import vocab

N = 2000
DIGITS = set("0123456789")


def assert_chance(name: str, hits, chance, one_sided: bool = False) -> None:
    check = chance_check(name, hits, chance, one_sided)
    assert check.ok, str(check)


def assert_uniform_rank(name: str, ranks, sizes, seed: int = 0) -> None:
    p, counts = position_uniformity(ranks, sizes, seed)
    assert p > UNIFORM_P, f"{name}: queried position not uniform (chi-square p = {p:.2g}, {counts})"


def check_rules(items, train, name: str) -> None:
    """``items``/``train``: dicts with ``values`` (the entries' values), ``answer``, ``rules``
    (rule -> value) and ``slots`` (values at fixed positions of the query program / map)."""
    for rule in items[0]["rules"]:
        hits = [it["rules"][rule] == it["answer"] for it in items]
        chance = [it["values"].count(it["rules"][rule]) / len(it["values"]) for it in items]
        assert_chance(f"{name}, {rule}", hits, chance)
    n_slots = max(len(it["slots"]) for it in train)

    def slot(it, k):
        return it["slots"][min(k, len(it["slots"]) - 1)]

    k = int(
        np.argmax([np.mean([slot(it, k) == it["answer"] for it in train]) for k in range(n_slots)])
    )
    value = Counter(it["answer"] for it in train).most_common(1)[0][0]
    for rule, pick in [
        (f"fixed position {k}", lambda it: slot(it, k)),
        (f"fixed value {value}", lambda it: value),
    ]:
        hits = [pick(it) == it["answer"] for it in items]
        chance = [it["values"].count(pick(it)) / len(it["values"]) for it in items]
        assert_chance(f"{name}, {rule}", hits, chance)


def prompt_rules(tokens: list[str], query_values: list[str]) -> dict[str, str]:
    """Rules over a whole prompt (demonstrations included) given as tokens."""
    digits = [t for t in tokens if t in DIGITS]
    first_eq = next(tokens[i + 1] for i, t in enumerate(tokens) if t == "=")
    return {
        "first value in prompt": digits[0],
        "after first '='": first_eq,
        "last digit seen": digits[-1],
        "most frequent digit": mode(digits),
        "first value of query program": query_values[0],
        "last value of query program": query_values[-1],
    }


# ----------------------------------------------------------------------------- zoo suite
def zoo_var_items(depth: int, seed: int) -> list[dict]:
    (task,) = zoo.load(n_items=N, seed=seed, names=[f"var_depth{depth}"])
    items = []
    for it in task.items:
        tokens = it.prompt.split()
        last_dot = max((i for i, t in enumerate(tokens) if t == "."), default=-1)
        program = tokens[last_dot + 1 :]
        semi = program.index(";")
        stmts = [program[i : i + 3] for i in range(0, semi, 4)]
        direct = [(a, b) for a, _, b in stmts if b in DIGITS]
        aliases = [(a, b) for a, _, b in stmts if b not in DIGITS]
        query = program[semi + 1]
        names, values = [a for a, _ in direct], [b for _, b in direct]
        target = query if depth == 0 else dict(aliases)[query]
        answer = it.golds[0]
        assert values[names.index(target)] == answer
        rec = {
            "values": values,
            "answer": answer,
            "slots": values,
            "rank": (names.index(target), len(names)),
            "rules": prompt_rules(tokens, values),
        }
        if depth == 1:
            rec["alias_rank"] = ([a for a, _ in aliases].index(query), len(aliases))
        items.append(rec)
    return items


@pytest.mark.parametrize("depth", [0, 1])
def test_zoo_var_assign_has_no_shortcut(depth):
    items = zoo_var_items(depth, 0)
    check_rules(items, zoo_var_items(depth, 1), f"var_depth{depth}")
    assert_uniform_rank(f"var_depth{depth} statement", *zip(*(it["rank"] for it in items)))
    if depth == 1:
        assert_uniform_rank("var_depth1 alias", *zip(*(it["alias_rank"] for it in items)))


def zoo_lookup_items(seed: int) -> list[dict]:
    (task,) = zoo.load(n_items=N, seed=seed, names=["lookup"])
    assert task.positive_control
    items = []
    for it in task.items:
        *pairs, query = it.prompt.split(" , ")
        pairs = [p.split(" > ") for p in pairs]
        key = query.removesuffix(" >")
        shown = {k: v for k, v in pairs}
        assert shown[key] == it.golds[0]
        pair_values = [v for _, v in pairs]
        items.append(
            {
                "values": list(shown.values()),
                "answer": it.golds[0],
                "slots": pair_values,
                "rank": (list(shown).index(key), len(shown)),
                "rules": {
                    "first value": pair_values[0],
                    "last value": pair_values[-1],
                    "most frequent value": mode(pair_values),
                    "the key itself": key,
                },
            }
        )
    return items


def test_zoo_lookup_positive_control_is_uniform_and_rules_at_chance():
    items = zoo_lookup_items(0)
    check_rules(items, zoo_lookup_items(1), "lookup")
    assert_uniform_rank("lookup key", *zip(*(it["rank"] for it in items)))


def test_zoo_copy_positive_control_is_uniform():
    (task,) = zoo.load(n_items=N, seed=0, names=["copy"])
    assert task.positive_control
    ranks, sizes, lengths = [], [], []
    for it in task.items:
        words = it.prompt.split()
        n = words.index(words[0], 1)  # the span length: r has distinct words
        shown = len(words) - n
        assert words[n:] == words[:shown] and it.golds[0] == " ".join(words[shown : shown + 4])
        ranks.append(shown - 1)  # shown is uniform over 1 .. n - 4
        sizes.append(n - 4)
        lengths.append(n - 12)
    assert_uniform_rank("copy shown", ranks, sizes)
    assert_uniform_rank("copy length", lengths, [9] * len(lengths))


def test_zoo_task_flags_and_determinism():
    tasks = {t.name: t for t in zoo.load(n_items=5, seed=3)}
    assert {n for n, t in tasks.items() if t.positive_control} == {"copy", "lookup"}
    again = {t.name: t for t in zoo.load(n_items=5, seed=3)}
    for name in ("lookup", "copy", "var_depth0", "var_depth1"):
        assert [i.prompt for i in tasks[name].items] == [i.prompt for i in again[name].items]


# ----------------------------------------------------------------------------- paper19
def primitive_items(name: str, seed: int) -> list[dict]:
    (task,) = paper19.load(shots=5, n_items=N, seed=seed, names=[name])
    depth, fmt = int(name[-1]), name.split("_")[1]
    items = []
    for it in task.items:
        program = it.prompt.rsplit("\n\n", 1)[-1]
        if fmt == "math":
            *stmts, q = program.removeprefix("Q: ").split("\nA:")[0].split(", ")
            stmts = [s.split("=") for s in stmts]
            query = q.removesuffix("=?")
        else:
            lines = program.split("\n")
            stmts = [s.split(" = ") for s in lines if " = " in s]
            query = lines[-2].removeprefix("print(").removesuffix(")")
        direct = [(a, b) for a, b in stmts if b in DIGITS]
        aliases = [(a, b) for a, b in stmts if b not in DIGITS]
        names, values = [a for a, _ in direct], [b for _, b in direct]
        target = query if depth == 0 else dict(aliases)[query]
        assert values[names.index(target)] == it.golds[0]
        tokens = it.prompt.replace("=", " = ").replace(",", " ").split()
        rec = {
            "values": values,
            "answer": it.golds[0],
            "slots": values,
            "rank": (names.index(target), len(names)),
            "rules": prompt_rules(tokens, values),
        }
        if depth == 1:
            rec["alias_rank"] = ([a for a, _ in aliases].index(query), len(aliases))
        items.append(rec)
    return items


@pytest.mark.parametrize("name", [s.name for s in paper19.SPECS if s.group == "primitives"])
def test_paper19_primitives_have_no_shortcut(name):
    items = primitive_items(name, 0)
    assert len(items) == N
    assert all(len(set(it["values"])) == len(it["values"]) for it in items)
    check_rules(items, primitive_items(name, 1), name)
    assert_uniform_rank(f"{name} statement", *zip(*(it["rank"] for it in items)))
    if name.endswith("1"):
        assert_uniform_rank(f"{name} alias", *zip(*(it["alias_rank"] for it in items)))


def test_paper19_primitives_are_seeded():
    a = paper19.primitive_task("var_math_depth0", 5, 10, 4)
    b = paper19.primitive_task("var_math_depth0", 5, 10, 4)
    assert [i.prompt for i in a.items] == [i.prompt for i in b.items]
    ex = paper19.var_assign_example(random.Random(0), 0, "math")
    assert ex == paper19.var_assign_example(random.Random(0), 0, "math")


# ----------------------------------------------------------------------------- RegBench
def last_positions(items) -> list[dict]:
    """One evaluated position per instance (its last), with the letters seen before it."""
    out = []
    for it in items:
        pos = it.positions[-1]
        support = list(it.support)
        out.append(
            {
                "valid": list(it.valid[-1]),
                "support": support,
                "next": it.ids[pos + 1],
                "before": [t for t in it.ids[: pos + 1] if t in support],
            }
        )
    return out


def regbench_sets(suite: str, seed: int, n: int = N) -> list[dict]:
    if suite == "zoo":
        return last_positions(zoo.regbench(n, seed, max_tokens=48).items)
    tok = vocab.build_tokenizer()
    (task,) = regbench.load(tok, vocab.BOS_ID, n_items=n, seed=seed, max_tokens=64)
    return last_positions(task.items)


@pytest.mark.parametrize(
    "suite",
    [
        "zoo",
        pytest.param("regbench", marks=pytest.mark.slow),
    ],  # ~1 min: test automata are 10% of draws
)
def test_regbench_has_no_fixed_letter_shortcut(suite):
    """A fixed letter, a fixed rank in the support (rank 0 is what a uniform model's greedy
    argmax picks) and a uniform guess are valid next with probability ``|valid| /
    |support|``; the last letter seen is bounded one-sided (no self-loops). The letter taken
    is uniform over the valid ones."""
    items, train = regbench_sets(suite, 0), regbench_sets(suite, 1, n=500)
    letter = Counter(it["next"] for it in train).most_common(1)[0][0]

    def rank(it, r):
        return it["support"][min(r, len(it["support"]) - 1)]

    r = int(np.argmax([np.mean([rank(it, r) in it["valid"] for it in train]) for r in range(12)]))
    rng = random.Random(0)
    for name, pick in [
        (f"fixed letter {letter}", lambda it: letter),
        (f"support rank {r}", lambda it: rank(it, r)),
        ("support rank 0", lambda it: it["support"][0]),
        ("uniform guess", lambda it: rng.choice(it["support"])),
    ]:
        picks = [pick(it) for it in items]
        hits = [p in it["valid"] for p, it in zip(picks, items)]
        chance = [
            (p in it["support"]) * len(it["valid"]) / len(it["support"])
            for p, it in zip(picks, items)
        ]
        assert_chance(f"{suite}, {name}", hits, chance)
    seen = [it for it in items if it["before"]]
    hits = [it["before"][-1] in it["valid"] for it in seen]
    chance = [len(it["valid"]) / len(it["support"]) for it in seen]
    assert_chance(f"{suite}, last letter seen", hits, chance, one_sided=True)
    ranks = [sorted(it["valid"]).index(it["next"]) for it in items]
    assert_uniform_rank(f"{suite} next letter", ranks, [len(it["valid"]) for it in items])
