"""The ``zoo19`` suite: 19 measured tasks in the source's four groups plus two positive
controls, no shortcut in any generator, and no prompt format the models were trained on.

Baselines follow ``tests/ablation/test_task_baselines.py`` (N = 2,000 seeded items per task,
prompts as the suite builds them, ``|hits - chance| <= 3 SE + 0.01``; fixed choices are the
best on another prompt seed's items; rules whose chance does not follow from the generator, or
that are never right by construction, are bounded one-sided). Chance per item:

- closed-book QA: ``1 / len(values)`` of the relation for any value (the demonstrations'
  values are drawn independently of the queried value, so every prompt-only rule is at it);
- open-book QA, primitives: ``count(b among the candidates) / n`` (the query is uniform over
  ``n`` candidates with distinct values), as in the other suites;
- math: ``1 / len(range)`` for a value in the type's answer range, 0 otherwise (answers are
  uniform over the range). ``math_add``'s "sum of all numbers" is the task itself;
  ``math_distractor``'s "a fixed has-quantity plus the gain" is right half the time (the
  relevant statement is first or second uniformly): both are asserted as such.

The format test maps tokens to classes (word ``W``, digit ``D``, letter ``L``, symbols as
themselves) and checks that the class 3-gram ending at the answer (the last two prompt tokens
and the first answer token) never occurs in sampled training sequences of the corpus's
structured kinds (lookup, varassign, regbench, bigram, facts). The ``copy`` kind repeats spans
of uniformly random tokens, so every short class pattern occurs there at random; it is left
out.
"""

from collections import Counter

import numpy as np
import pytest

from ablation.baselines import UNIFORM_P, chance_check, mode, position_uniformity
from ablation.metrics import digits_match, get_metric, spelled_number
from ablation.tasks import SUITE_SPECS, default_suite, load_suite, zoo19
from induction.zoo import corpus
from induction.zoo import vocab as V
from induction.zoo.world import world

N = 2000
DIGITS = set(V.DIGITS)


def assert_chance(name: str, hits, chance, one_sided: bool = False) -> None:
    check = chance_check(name, hits, chance, one_sided)
    assert check.ok, str(check)


def assert_uniform(name: str, ranks, sizes, seed: int = 0) -> None:
    p, counts = position_uniformity(ranks, sizes, seed)
    assert p > UNIFORM_P, f"{name}: not uniform (chi-square p = {p:.2g}, {counts})"


def best_fixed(train: list[dict], key: str):
    return Counter(it[key] for it in train).most_common(1)[0][0]


def check(name, items, rules, chance, one_sided=()):
    """``rules``: rule -> function(item) -> answer; ``chance``: function(item, pick)."""
    for rule, pick in rules.items():
        picks = [pick(it) for it in items]
        hits = [p == it["answer"] for p, it in zip(picks, items)]
        probs = [chance(it, p) for p, it in zip(picks, items)]
        assert_chance(f"{name}, {rule}", hits, probs, one_sided=rule in one_sided)


# ----------------------------------------------------------------------------- the suite
def test_suite_has_19_measured_tasks_in_four_groups_and_two_controls():
    specs = SUITE_SPECS["zoo19"]()
    assert len(specs) == 21
    measured = [s for s in specs if not s.positive_control]
    assert len(measured) == 19
    assert Counter(s.group for s in measured) == zoo19.GROUPS
    assert zoo19.GROUPS == {"closed_qa": 4, "open_qa": 5, "math": 6, "primitives": 4}
    assert {s.name for s in specs if s.positive_control} == {"copy", "lookup"}
    assert all(s.suite == "zoo19" for s in specs)
    tasks = load_suite("zoo19", n_items=3, seed=0)
    assert [t.name for t in tasks] == [s.name for s in specs]
    for t, s in zip(tasks, specs):
        assert (t.group, t.metric, t.positive_control, t.suite) == (
            s.group,
            s.metric,
            s.positive_control,
            "zoo19",
        )
        assert len(t.items) == 3 and get_metric(t.metric).kind == "text"


def test_default_suite_for_zoo_vocabulary():
    """zootrain for the second zoo (it learns in context in its training formats, not in new
    ones), zoo19 for the other zoo families, words for a real tokenizer."""

    class Info:
        zoo_vocabulary = True
        name = "lidas8-s0"

    assert default_suite(Info()) == "zoo19"
    Info.name = "grown8c-s3"
    assert default_suite(Info()) == "zootrain"
    Info.name = "my-folder"
    assert default_suite(Info()) == "zoo19"
    Info.zoo_vocabulary = False
    assert default_suite(Info()) == "words"


def test_determinism_per_seed():
    a = load_suite("zoo19", n_items=4, seed=7)
    b = load_suite("zoo19", n_items=4, seed=7)
    c = load_suite("zoo19", n_items=4, seed=8)
    for x, y, z in zip(a, b, c):
        assert [i.prompt for i in x.items] == [i.prompt for i in y.items]
        assert [i.golds for i in x.items] == [i.golds for i in y.items]
        assert [i.prompt for i in x.items] != [i.prompt for i in z.items]


def test_prompts_fit_the_training_length_with_default_shots():
    """BOS + prompt + the answer budget fit 96 tokens; most items keep their default shots
    (closed-book 8, open-book 2, math 4 or 3, primitives 3)."""
    for name in zoo19.TASKS[:19]:
        spec = zoo19.BY_NAME[name]
        recs = zoo19.records(name, 300, seed=0)
        for r in recs:
            assert 1 + len(r.prompt.split()) + spec.max_new_tokens <= 96
            assert r.prompt.split()[-len(r.unit.query.split()) :] == r.unit.query.split()
        kept = np.mean([len(r.demos) == spec.shots for r in recs])
        at_least_one = np.mean([len(r.demos) >= 1 for r in recs])
        assert at_least_one == 1.0, name
        assert kept >= (0.5 if name.endswith("depth1") else 0.95), (name, kept)
        assert all(len(r.unit.answer.split()) <= spec.max_new_tokens for r in recs)
    for r in zoo19.records("math_add", 50, seed=0, max_tokens=48):
        assert 1 + len(r.prompt.split()) + 3 <= 48


def test_digits_metric_reads_spelled_numbers():
    assert spelled_number("1 2 | w3") == "12" and spelled_number("0 7") == "7"
    assert spelled_number("w3 :") is None
    assert digits_match("1 2", ["1 2"]) == 1.0
    assert digits_match("2", ["1 2"]) == 0.0 and digits_match("1", ["1 2"]) == 0.0
    assert digits_match("1 2 3", ["1 2"]) == 0.0 and digits_match("", ["3"]) == 0.0


# ----------------------------------------------------------------------------- closed-book
def closed_items(name: str, seed: int) -> list[dict]:
    rel = world().relations[zoo19.CLOSED_NAMES.index(name)]
    items = []
    for r in zoo19.records(name, N, seed=seed):
        entity = r.unit.meta["entity"]
        assert r.unit.answer == rel.value(entity)
        assert entity not in r.prompt.split()[: -len(r.unit.query.split())]
        shown = [d.answer for d in r.demos]
        unshown = [v for v in rel.values if v not in shown]
        items.append(
            {
                "answer": r.unit.answer,
                "values": list(rel.values),
                "first": shown[0],
                "last": shown[-1],
                "mode": mode(shown),
                "unshown": (unshown or list(rel.values))[0],
                "rank": rel.facts.index((entity, rel.value(entity))),
            }
        )
    return items


@pytest.mark.parametrize("name", zoo19.CLOSED_NAMES)
def test_closed_book_answer_is_not_in_the_prompt(name):
    items, train = closed_items(name, 0), closed_items(name, 1)
    fixed = best_fixed(train, "answer")
    rules = {
        "first demo value": lambda it: it["first"],
        "last demo value": lambda it: it["last"],
        "most frequent demo value": lambda it: it["mode"],
        "a value not shown": lambda it: it["unshown"],
        f"fixed value {fixed}": lambda it: fixed,
    }
    check(name, items, rules, lambda it, p: (p in it["values"]) / len(it["values"]))
    assert_uniform(f"{name} entity", [it["rank"] for it in items], [32] * len(items))


# ----------------------------------------------------------------------------- open-book
def parse_passage(query: str):
    passage, question = query.split(" . ")
    stmts = [s.split(" : ") for s in passage.split(" , ")]
    return stmts, question.split()


def open_items(name: str, seed: int) -> list[dict]:
    items = []
    for r in zoo19.records(name, N, seed=seed):
        stmts, question = parse_passage(r.unit.query)
        d = dict(stmts)
        vals = [v for _, v in stmts]
        meta = r.unit.meta
        it = {"answer": r.unit.answer, "candidates": meta["values"], "rank": meta["rank"]}
        it |= {"first": vals[0], "last": vals[-1], "mode": mode(vals)}
        if name == "open_fact":
            assert d[question[1]] == r.unit.answer
        elif name == "open_second":
            assert d[question[2]] == r.unit.answer
            it["named first"] = d[question[1]]
        elif name == "open_chain":
            assert d[d[question[2]]] == r.unit.answer
            it["one hop"] = d[question[2]]
        elif name == "open_count":
            counts = Counter(vals)
            assert str(counts[question[0]]) == r.unit.answer
            it |= {f: str(counts[it[f]]) for f in ("first", "last", "mode")}
        elif name == "open_yesno":
            e, v = question[0], question[1]
            assert (d[e] == v) == (r.unit.answer == zoo19.YES) and v in vals
        items.append(it)
    return items


@pytest.mark.parametrize("name", ["open_fact", "open_second", "open_chain", "open_count"])
def test_open_book_has_no_shortcut(name):
    items, train = open_items(name, 0), open_items(name, 1)
    fixed = best_fixed(train, "answer")
    rules = {
        "first statement": lambda it: it["first"],
        "last statement": lambda it: it["last"],
        "most frequent value": lambda it: it["mode"],
        f"fixed value {fixed}": lambda it: fixed,
    }
    one_sided = {"first statement", "last statement", "most frequent value"}
    if name == "open_second":
        rules["value of the entity named first"] = lambda it: it["named first"]
        one_sided.add("value of the entity named first")
    if name == "open_chain":
        rules["one hop"] = lambda it: it["one hop"]
        one_sided.add("one hop")
    if name == "open_count":  # counting a value the question did not pick: 1 in 3
        one_sided = set()

    def chance(it, p):
        return it["candidates"].count(p) / len(it["candidates"])

    check(name, items, rules, chance, one_sided)
    assert_uniform(f"{name} queried", *zip(*(it["rank"] for it in items)))


def test_open_yesno_is_balanced():
    items, train = open_items("open_yesno", 0), open_items("open_yesno", 1)
    fixed = best_fixed(train, "answer")
    check("open_yesno", items, {f"fixed {fixed}": lambda it: fixed}, lambda it, p: 0.5)
    assert_uniform("open_yesno queried", *zip(*(it["rank"] for it in items)))


# ----------------------------------------------------------------------------- math
MATH = ["math_add", "math_sub", "math_mul", "math_two_step", "math_compare", "math_distractor"]


def math_items(name: str, seed: int) -> list[dict]:
    items = []
    for r in zoo19.records(name, N, seed=seed):
        nums = [int(t) for t in r.unit.query.split() if t in DIGITS]
        assert nums == r.unit.meta["numbers"]
        first_in_prompt = next(int(t) for t in r.prompt.split() if t in DIGITS)
        it = {
            "answer": int(spelled_number(r.unit.answer)),
            "range": r.unit.meta["range"],
            "first number": nums[0],
            "last number": nums[-1],
            "largest number": max(nums),
            "sum of all numbers": sum(nums),
            "first number in prompt": first_in_prompt,
        }
        if name == "math_distractor":
            it["first + last"] = nums[0] + nums[-1]
            it["second + last"] = nums[1] + nums[-1]
            it["rank"] = r.unit.meta["rank"]
        items.append(it)
    return items


@pytest.mark.parametrize("name", MATH)
def test_math_has_no_format_shortcut(name):
    items, train = math_items(name, 0), math_items(name, 1)
    fixed = best_fixed(train, "answer")
    content = ["first number", "last number", "largest number", "sum of all numbers",
               "first number in prompt"]  # fmt: skip
    if name == "math_add":  # adding the two numbers is the task
        assert all(it["sum of all numbers"] == it["answer"] for it in items)
        content.remove("sum of all numbers")
    rules = {rule: (lambda it, rule=rule: it[rule]) for rule in content}
    rules[f"fixed value {fixed}"] = lambda it: fixed

    def chance(it, p):
        return (p in it["range"]) / len(it["range"])

    check(name, items, rules, chance, one_sided=set(content))
    answers = [it["answer"] for it in items]
    rng = items[0]["range"]
    assert_uniform(f"{name} answer", [rng.index(a) for a in answers], [len(rng)] * len(answers))
    if name == "math_distractor":
        half = {"first + last": lambda it: it["first + last"],
                "second + last": lambda it: it["second + last"]}  # fmt: skip
        check(name, items, half, lambda it, p: 0.5)
        assert_uniform("math_distractor relevant", *zip(*(it["rank"] for it in items)))


# ----------------------------------------------------------------------------- primitives
PRIMS = ["prim_math_depth0", "prim_math_depth1", "prim_code_depth0", "prim_code_depth1"]


def prim_items(name: str, seed: int) -> list[dict]:
    items = []
    for r in zoo19.records(name, N, seed=seed):
        values, tokens = r.unit.meta["values"], r.prompt.split()
        query_tokens = r.unit.query.split()
        digits = [t for t in tokens if t in DIGITS]
        stmt_values = [t for t in query_tokens if t in DIGITS]
        assert sorted(stmt_values) == sorted(values) and r.unit.answer in values
        items.append(
            {
                "answer": r.unit.answer,
                "values": values,
                "slots": stmt_values,
                "rank": r.unit.meta["rank"],
                "target_rank": r.unit.meta["target_rank"],
                "first digit in prompt": digits[0],
                "last digit seen": digits[-1],
                "most frequent digit": mode(digits),
                "first value of query program": stmt_values[0],
                "last value of query program": stmt_values[-1],
            }
        )
    return items


@pytest.mark.parametrize("name", PRIMS)
def test_primitives_have_no_shortcut(name):
    items, train = prim_items(name, 0), prim_items(name, 1)
    fixed = best_fixed(train, "answer")
    n_slots = max(len(it["slots"]) for it in train)

    def slot(it, k):
        return it["slots"][min(k, len(it["slots"]) - 1)]

    k = int(np.argmax([np.mean([slot(it, k) == it["answer"] for it in train])
                       for k in range(n_slots)]))  # fmt: skip
    rules = {rule: (lambda it, rule=rule: it[rule]) for rule in (
        "first digit in prompt", "last digit seen", "most frequent digit",
        "first value of query program", "last value of query program")}  # fmt: skip
    rules[f"fixed position {k}"] = lambda it: slot(it, k)
    rules[f"fixed value {fixed}"] = lambda it: fixed
    check(name, items, rules, lambda it, p: it["values"].count(p) / len(it["values"]))
    assert all(len(set(it["values"])) == len(it["values"]) for it in items)
    assert_uniform(f"{name} statement", *zip(*(it["target_rank"] for it in items)))
    if name.endswith("1"):
        assert_uniform(f"{name} alias", *zip(*(it["rank"] for it in items)))


# ----------------------------------------------------------------------------- formats
def token_class(tok: str) -> str:
    if tok in DIGITS:
        return "D"
    if tok in V.LETTERS:
        return "L"
    if tok in V.WORDS:
        return "W"
    return tok


def corpus_grams(n: int, per_kind: int = 300) -> set[tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    for kind in ("lookup", "varassign", "regbench", "bigram", "facts"):
        cfg = corpus.CorpusConfig(seq_len=96, mix={kind: 1.0})
        rng = np.random.default_rng(0)
        for _ in range(per_kind):
            seq, _ = corpus.make_sequence(rng, cfg)
            c = [token_class(V.TOKENS[i]) for i in seq[1:]]
            grams.update(tuple(c[i : i + n]) for i in range(len(c) - n + 1))
    return grams


def test_no_prompt_format_was_trained_on():
    """The answer's class 3-gram (two prompt tokens, the answer) of every zoo19 task never
    occurs in the structured training kinds, while the zoo suite's own var-assign and lookup
    formats (the training formats) do: the check can fail."""
    grams = corpus_grams(3)
    assert ("L", "?", "D") in grams and ("W", ">", "W") in grams  # the training formats
    for name in zoo19.TASKS[:19]:
        skeletons = {
            tuple(token_class(t) for t in r.prompt.split()[-2:] + r.unit.answer.split()[:1])
            for r in zoo19.records(name, 200, seed=0)
        }
        assert not skeletons & grams, f"{name}: trained format {skeletons & grams}"
