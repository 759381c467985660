"""The ``zootrain`` suite (ablation/tasks/zootrain.py): the second zoo's measured suite, in the
training formats, with no prompt-only shortcut on its closed-book tasks."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from ablation.gates import chance_level
from ablation.tasks import load_suite, zoo, zootrain
from induction.zoo import corpus
from induction.zoo import vocab as V
from induction.zoo.world import world


def test_groups_controls_and_determinism():
    tasks = load_suite("zootrain", n_items=4, seed=3)
    groups = Counter(t.group for t in tasks if not t.positive_control)
    assert groups == {"closed_qa": 4, "primitives": 2}
    assert {t.name for t in tasks if t.positive_control} == {"lookup", "copy"}
    again = load_suite("zootrain", n_items=4, seed=3)
    assert [i.prompt for t in tasks for i in t.items] == [i.prompt for t in again for i in t.items]
    other = load_suite("zootrain", n_items=4, seed=4)
    assert [i.prompt for i in tasks[0].items] != [i.prompt for i in other[0].items]


def test_primitives_are_the_zoo_suites_fresh_programs():
    mine = load_suite("zootrain", n_items=8, seed=1, tasks=["var_depth1"])[0]
    theirs = zoo.load(n_items=8, seed=1, names=("var_depth1",))[0]
    assert [i.prompt for i in mine.items] == [i.prompt for i in theirs.items]


@pytest.mark.parametrize("name", zootrain.FACT_NAMES)
def test_closed_book_is_the_training_statement_and_has_no_shortcut(name):
    """Demonstrations are true statements ``e r v .`` of the world (the corpus's own format);
    the queried fact is never stated; the demonstrations' most frequent value, or the last
    one, is right no more often than a guess."""
    relation = world().relations[zootrain.FACT_NAMES.index(name)]
    facts = {(V.TOKENS[e], V.TOKENS[r], V.TOKENS[v]) for e, r, v in corpus.fact_ids()}
    task = zootrain.fact_task(name, n_items=400, seed=0)
    majority = last = 0
    for item in task.items:
        *demos, query = item.prompt.split(" . ")
        entity, word = query.split()
        assert word == relation.word and not any(d.startswith(entity + " ") for d in demos)
        triples = [tuple(d.split()) for d in demos]
        assert all(t in facts for t in triples) and len(triples) >= 6
        values = [t[2] for t in triples]
        majority += Counter(values).most_common(1)[0][0] == item.golds[0]
        last += values[-1] == item.golds[0]
    chance = chance_level(task)
    assert 1 / len(relation.values) <= chance < 1 / len(relation.values) + 0.1
    for hits in (majority, last):
        assert hits / len(task.items) < chance + 0.08
    assert np.all([set(i.candidates) == set(relation.values) for i in task.items])
