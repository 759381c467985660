"""The zoofacts suite: the zoo world's relations as pair tasks (FV heads on the zoo)."""

from __future__ import annotations

from ablation.tasks import load_suite, zoofacts
from induction.zoo.world import world


def test_each_relation_is_a_task_of_all_its_facts():
    for name, relation in zip(zoofacts.NAMES, world().relations, strict=True):
        examples = zoofacts.examples(name)
        assert [(e.prompt, e.golds[0]) for e in examples] == list(relation.facts)


def test_prompts_show_demonstrations_without_the_relation_word():
    (task,) = zoofacts.load(shots=3, n_items=8, seed=0, names=["fact_letter"])
    item = task.items[0]
    parts = item.prompt.split(" . ")
    assert len(parts) == 4 and len(parts[-1].split()) == 1  # 3 demos, then the entity
    assert all(len(p.split()) == 2 for p in parts[:-1])
    assert not any(w in item.prompt.split() for w in ("w84", "w85", "w86", "w87"))
    again = zoofacts.load(shots=3, n_items=8, seed=0, names=["fact_letter"])[0]
    assert [i.prompt for i in again.items] == [i.prompt for i in task.items]


def test_the_suite_is_registered():
    tasks = load_suite("zoofacts", n_items=4)
    assert [t.name for t in tasks] == list(zoofacts.NAMES)
    assert {t.suite for t in tasks} == {"zoofacts"}
