"""The zoo's training corpus has no shortcut: rules that ignore which entry is queried score at
chance, and the queried entry's position is uniform.

Method (for every generator, on N = 3,000 seeded items):

- *Chance* is computed per item from the generator's parameters under the null "the queried
  entry is uniform over the ``n`` candidate entries, whatever the rest of the item": a rule
  that answers value ``b`` is then right with probability ``count(b among the entries'
  values) / n`` (``1 / n`` when ``b`` is one of the distinct values shown, 0 otherwise). For
  bigram text, where nothing is queried, chance is the fixed table's ``T[previous word, b]``
  (the text is a Markov chain, so no rule reading the text does better on average).
- *Tolerance*: ``|mean hits - mean chance| <= 3 * SE + 0.01`` with ``SE = sqrt(sum p_i (1 -
  p_i)) / N`` (the binomial standard error of a sum of independent Bernoulli(p_i) hits)
  plus a 0.01 margin. Content-reading rules whose exact chance does not follow from the
  generator are bounded one-sided (``<= chance + tolerance``).
- *Fixed choices* (a fixed position, a fixed value) are the best one on a separate seeded
  sample, then scored on the test sample, so the search does not inflate the score.
- *Position*: the queried entry's rank ``r`` among ``n`` is mapped to ``(r + U) / n`` with
  seeded ``U ~ Uniform(0, 1)`` (uniform on [0, 1] exactly when ``r`` is uniform), binned in
  10 and tested with ``scipy.stats.chisquare`` at ``p > 0.001``.

Rules: the first value, the last value, the most frequent value (ties: earliest), the value
right after the first ``=`` or ``>``, the last value token seen, a fixed position, a fixed
value. Copying a repeated span is induction by construction (Olsson et al. 2022): it is a
positive control, tested for uniform values, not for chance.
"""

from collections import Counter

import numpy as np
import pytest
from scipy.stats import chisquare

from ablation.baselines import UNIFORM_P, chance_check, mode, position_uniformity
from induction.zoo import corpus
from induction.zoo import vocab as V

N = 3000
_EQ, _SEP, _SEMI, _Q, _BAR, _ARROW = (V.VOCAB[t] for t in ("=", ",", ";", "?", "|", ">"))


def assert_chance(name: str, hits, chance, one_sided: bool = False) -> None:
    check = chance_check(name, hits, chance, one_sided)
    assert check.ok, str(check)


def assert_uniform_rank(name: str, ranks, sizes, seed: int = 0) -> None:
    p, counts = position_uniformity(ranks, sizes, seed)
    assert p > UNIFORM_P, f"{name}: queried position not uniform (chi-square p = {p:.2g}, {counts})"


def value_rules(shown: list[int], first_after: int | None = None) -> dict[str, int]:
    """The content-ignoring rules over the values shown, in order."""
    rules = {"first value": shown[0], "last value": shown[-1], "most frequent": mode(shown)}
    if first_after is not None:
        rules["after first '=' / '>'"] = first_after
    return rules


def check_rules(items, fixed_train, name: str) -> None:
    """``items``: dicts with ``values`` (entry values, the queried one uniform among them),
    ``answer``, ``rules`` (name -> answered value), ``slots`` (values at fixed positions).
    ``fixed_train``: items from another seed, to choose the fixed position and value."""
    names = list(items[0]["rules"])
    for rule in names:
        hits = [it["rules"][rule] == it["answer"] for it in items]
        chance = [it["values"].count(it["rules"][rule]) / len(it["values"]) for it in items]
        assert_chance(f"{name}, {rule}", hits, chance)
    # the best fixed slot / fixed value on the training sample
    n_slots = max(len(it["slots"]) for it in fixed_train)
    slot_acc = [
        np.mean([it["slots"][min(k, len(it["slots"]) - 1)] == it["answer"] for it in fixed_train])
        for k in range(n_slots)
    ]
    k = int(np.argmax(slot_acc))
    value = Counter(it["answer"] for it in fixed_train).most_common(1)[0][0]
    for rule, pick in [
        (f"fixed position {k}", lambda it: it["slots"][min(k, len(it["slots"]) - 1)]),
        (f"fixed value {V.TOKENS[value]}", lambda it: value),
    ]:
        hits = [pick(it) == it["answer"] for it in items]
        chance = [it["values"].count(pick(it)) / len(it["values"]) for it in items]
        assert_chance(f"{name}, {rule}", hits, chance)


# ----------------------------------------------------------------------------- var-assign
def parse_program(seg: list[int]) -> dict:
    """A ``varassign_segment``: statements, the queried name and the answer."""
    semi = seg.index(_SEMI)
    body, query, answer = seg[:semi], seg[semi + 1], seg[semi + 3]
    stmts = [body[i : i + 3] for i in range(0, len(body), 4)]
    direct = [(n, v) for n, _, v in stmts if v in V.DIGIT_IDS]
    aliases = [(n, v) for n, _, v in stmts if v not in V.DIGIT_IDS]
    return {"direct": direct, "aliases": aliases, "query": query, "answer": answer}


def varassign_items(seed: int, depth: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(N):
        seg = corpus.varassign_segment(rng, depth)
        p = parse_program(seg)
        names = [n for n, _ in p["direct"]]
        values = [v for _, v in p["direct"]]
        if depth == 0:
            rank, n = names.index(p["query"]), len(names)
        else:
            alias_names = [a for a, _ in p["aliases"]]
            src = dict(p["aliases"])[p["query"]]
            rank, n = names.index(src), len(names)
            p["alias_rank"] = (alias_names.index(p["query"]), len(alias_names))
        assert values[rank] == p["answer"]
        digits = [t for t in seg[: seg.index(_SEMI)] if t in V.DIGIT_IDS]
        p.update(
            values=values,
            rank=(rank, n),
            slots=values,
            rules={
                **value_rules(values, seg[seg.index(_EQ) + 1]),
                "last digit seen": digits[-1],
            },
        )
        items.append(p)
    return items


@pytest.mark.parametrize("depth", [0, 1])
def test_varassign_has_no_shortcut(depth):
    items = varassign_items(0, depth)
    assert {len(it["values"]) for it in items} == {2, 3, 4}
    assert all(len(set(it["values"])) == len(it["values"]) for it in items)  # distinct digits
    check_rules(items, varassign_items(1, depth), f"varassign depth {depth}")
    assert_uniform_rank(
        f"depth {depth} queried statement", *zip(*(it["rank"] for it in items), strict=True)
    )
    if depth == 1:
        assert_uniform_rank("queried alias", *zip(*(it["alias_rank"] for it in items), strict=True))


def test_varassign_first_statement_rule_is_at_chance():
    """The reviewer's shortcut: at depth 0 the query used to be the first statement (score 1)."""
    items = varassign_items(2, 0)
    hits = [it["values"][0] == it["answer"] for it in items]
    chance = [1 / len(it["values"]) for it in items]
    assert_chance("first statement", hits, chance)
    assert np.mean(hits) < 0.45  # E[1/n] = 0.36 over n in {2, 3, 4}; the old generator gave 1


# ----------------------------------------------------------------------------- lookup
def lookup_items(seed: int) -> list[dict]:
    """The query is the segment's last pair, kept when its key was shown before (the pairs the
    corpus lets a model predict); its value must be read from the earlier pairs."""
    rng = np.random.default_rng(seed)
    items = []
    while len(items) < N:
        seg = corpus.lookup_segment(rng, int(rng.integers(6, 13)), int(rng.integers(12, 30)))
        pairs = [tuple(seg[i : i + 3]) for i in range(0, len(seg), 4)]
        *context, (key, _, answer) = pairs
        shown = {k: v for k, _, v in context}
        if key not in shown:
            continue
        assert shown[key] == answer
        keys = list(shown)
        ctx_values = [v for _, _, v in context]
        items.append(
            {
                "values": list(shown.values()),
                "answer": answer,
                "rank": (keys.index(key), len(keys)),
                "slots": ctx_values,
                "rules": {**value_rules(ctx_values), "the key itself": key},
            }
        )
    return items


def test_lookup_has_no_shortcut():
    items = lookup_items(0)
    assert all(len(set(it["values"])) == len(it["values"]) for it in items)  # distinct values
    check_rules(items, lookup_items(1), "lookup")
    assert_uniform_rank("lookup queried key", *zip(*(it["rank"] for it in items), strict=True))


# ----------------------------------------------------------------------------- copy
def test_copy_span_values_are_uniform_positive_control():
    """Copying is the positive control; what it must not have is a preferred token at a
    position: each span position holds any ordinary token equally often."""
    rng = np.random.default_rng(0)
    spans = [corpus.copy_segment(rng, 8) for _ in range(N)]
    for j in (0, 4, 7):
        counts = np.bincount([s[j] - V.FIRST_ORDINARY_ID for s in spans], minlength=124)
        assert chisquare(counts).pvalue > 0.001, j
    # second copy = first; no token repeats inside a span (so "last token" is never right)
    assert all(s[:8] == s[8:] and len(set(s[:8])) == 8 for s in spans)


# ----------------------------------------------------------------------------- RegBench
def regbench_items(seed: int) -> list[dict]:
    """One evaluated position per segment: its last letter, predicted from what precedes."""
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(N):
        dfa = corpus.sample_dfa(rng, training=True)
        seg = corpus.regbench_segment(rng, dfa, 40)
        letters_before, state, last = [], 0, None
        for t in seg[:-1]:
            if t == _BAR:
                state = 0
                continue
            valid = dfa.valid_next(state)
            last = {"valid": valid, "state_letter": t, "before": list(letters_before)}
            letters_before.append(t)
            state = dfa.step(state, t)
        support = sorted({a for edges in dfa.edges for a, _ in edges})
        last.update(
            support=support,
            rank=(sorted(last["valid"]).index(last["state_letter"]), len(last["valid"])),
        )
        items.append(last)
    return items


def test_regbench_has_no_fixed_letter_shortcut():
    """Accuracy = the rule's letter is a valid next letter. Letters are exchangeable in the
    generator, so a rule that ignores the string (a fixed letter, a fixed rank in the
    support) is valid with probability ``|valid| / |support|`` (for a fixed letter, 0 when it
    is not in the support). The last letter seen cannot repeat through a self-loop, so it is
    bounded one-sided. (The most frequent letter of the context is an in-context unigram
    statistic of the automaton, a legitimate partial solution; Akyurek et al. 2024.)"""
    items, train = regbench_items(0), regbench_items(1)
    letter = Counter(it["state_letter"] for it in train).most_common(1)[0][0]
    rank_acc = [np.mean([it["support"][min(r, len(it["support"]) - 1)] in it["valid"]
                         for it in train]) for r in range(8)]  # fmt: skip
    r = int(np.argmax(rank_acc))
    for name, pick in [
        (f"fixed letter {V.TOKENS[letter]}", lambda it: letter),
        (f"support rank {r}", lambda it: it["support"][min(r, len(it["support"]) - 1)]),
        ("first support letter (greedy tie-break)", lambda it: it["support"][0]),
    ]:
        hits = [pick(it) in it["valid"] for it in items]
        chance = [
            (pick(it) in it["support"]) * len(it["valid"]) / len(it["support"]) for it in items
        ]
        assert_chance(f"regbench, {name}", hits, chance)
    with_prev = [it for it in items if it["before"]]
    hits = [it["before"][-1] in it["valid"] for it in with_prev]
    chance = [len(it["valid"]) / len(it["support"]) for it in with_prev]
    assert_chance("regbench, last letter seen", hits, chance, one_sided=True)
    # the letter taken is uniform over the valid ones (uniform transitions)
    assert_uniform_rank("regbench next letter", *zip(*(it["rank"] for it in items), strict=True))


# ----------------------------------------------------------------------------- bigram text
def test_bigram_text_has_no_in_context_structure():
    """Background text is a fixed Markov chain: given the previous word, no rule reading the
    text (its first word, the most frequent word so far, the word that followed the previous
    word's last occurrence: an induction guess) beats the table: each is at ``T[prev, b]``."""
    rng = np.random.default_rng(0)
    table = corpus.bigram_table()
    idx = {w: i for i, w in enumerate(V.WORD_IDS)}
    rules = {
        "first word": lambda ctx: ctx[0],
        "last word": lambda ctx: ctx[-1],
        "most frequent": lambda ctx: mode(ctx),
        "induction guess": lambda ctx: next(
            (ctx[i + 1] for i in range(len(ctx) - 2, -1, -1) if ctx[i] == ctx[-1]), ctx[0]
        ),
    }
    hits = {r: [] for r in rules}
    chance = {r: [] for r in rules}
    starts = []
    for _ in range(N):
        text = corpus.bigram_text(rng, int(rng.integers(16, 65)))
        ctx, answer = text[:-1], text[-1]
        starts.append(idx[text[0]])
        for r, rule in rules.items():
            b = rule(ctx)
            hits[r].append(b == answer)
            chance[r].append(table[idx[ctx[-1]], idx[b]])
    for r in rules:
        assert_chance(f"bigram, {r}", hits[r], chance[r])
    assert chisquare(np.bincount(starts, minlength=len(V.WORD_IDS))).pvalue > 0.001


def test_generators_are_seeded():
    cfg = corpus.CorpusConfig()
    a = corpus.make_batch(np.random.default_rng(5), cfg, 8)
    assert (a == corpus.make_batch(np.random.default_rng(5), cfg, 8)).all()
    assert not (a == corpus.make_batch(np.random.default_rng(6), cfg, 8)).all()
