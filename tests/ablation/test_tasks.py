"""Task suites: shipped words data, few-shot splits, user JSONL, paper19 loaders on fixture
files in each dataset's released format, RegBench automata, zoo formats."""

import json
from pathlib import Path

import numpy as np
import pytest

from ablation.tasks import load_suite, paper19, regbench, words, zoo
from ablation.tasks.base import Example, make_gen_task, split_pool
from induction.errors import InputError
from induction.zoo import vocab

FIXTURES = Path(__file__).parent / "fixtures" / "data"


def test_words_suite_has_19_tasks_with_data():
    names = words.task_names()
    assert len(names) == 19
    small = {"next_letter", "month_successor", "day_successor"}
    for name in names:
        meta, exs = words.load_examples(words.DATA / f"{name}.json")
        assert meta["metric"] in ("f1", "em")
        assert len(exs) >= (7 if name in small else 40), name
        assert len({e.prompt for e in exs}) == len(exs)


def test_fewshot_demos_never_contain_the_evaluated_item():
    tasks = load_suite("words", shots=5, n_items=20, seed=3)
    assert len(tasks) == 19
    for t in tasks:
        for it in t.items:
            demos, query = it.prompt.rsplit("\n\n", 1)
            assert query.startswith("Q: ") and query.endswith("\nA:")
            assert query not in demos.split("\n\n")
            assert demos.count("Q: ") == 5
    again = load_suite("words", shots=5, n_items=20, seed=3)
    assert [i.prompt for i in again[0].items] == [i.prompt for i in tasks[0].items]


def test_split_pool_disjoint_and_leave_one_out():
    exs = [Example(f"Q: {i}\nA:", (str(i),), f"Q: {i}\nA: {i}") for i in range(60)]
    ev, pool = split_pool(exs, 30, 5, 0, "t")
    assert len(ev) == 30 and len(pool) == 20 and not set(ev) & set(pool)
    few = exs[:7]
    ev, pool = split_pool(few, 40, 5, 0, "t")
    assert len(ev) == 7 and pool == []  # leave-one-out
    task = make_gen_task("t", few, 5, 40, 0)
    for it, ex in zip(task.items, ev, strict=True):
        assert it.prompt.endswith(ex.prompt) and it.prompt.count(ex.prompt) == 1


def test_shots_larger_than_pool():
    with pytest.raises(InputError, match="--shots 7 is larger"):
        load_suite("words", shots=7, tasks=["day_successor"])


def test_unknown_suite_and_task():
    with pytest.raises(InputError, match="unknown suite"):
        load_suite("nope")
    with pytest.raises(InputError, match="unknown task"):
        load_suite("words", tasks=["antonym"])


def test_user_jsonl(tmp_path):
    f = tmp_path / "mine.jsonl"
    rows = [{"input": f"x{i}", "output": [f"y{i}", f"Y{i}"]} for i in range(12)]
    rows.append({"input": "solo", "output": "single"})
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    (t,) = load_suite(str(f), shots=3, n_items=5)
    assert t.name == "mine" and len(t.items) == 5 and t.suite == "user"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError, match="empty"):
        load_suite(str(empty))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input": "a", "output": ["b"]}\n{not json\n')
    with pytest.raises(InputError, match="bad.jsonl:2"):
        load_suite(str(bad))
    keys = tmp_path / "keys.jsonl"
    keys.write_text('{"question": "a", "answer": "b"}\n')
    with pytest.raises(InputError, match='"input" and "output"'):
        load_suite(str(keys))
    with pytest.raises(InputError, match="not found"):
        load_suite(str(tmp_path / "missing.jsonl"))


@pytest.mark.parametrize(
    "task, n, golds0",
    [
        ("triviaqa", 8, None),
        ("tydiqa_nocontext", 8, None),
        ("tydiqa_goldp", 8, None),
        ("nq_open", 8, None),
        ("webquestions", 8, None),
        ("squad_v2", 9, None),
        ("drop", 17, None),
        ("quac", 16, None),
        ("coqa", 16, None),
        ("asdiv", 8, None),
        ("mawps_addsub", 8, None),
        ("mawps_multiarith", 8, None),
        ("mawps_singleeq", 8, None),
        ("mawps_singleop", 8, None),
        ("svamp", 8, None),
        ("gsm8k", 12, None),
    ],
)
def test_paper19_loaders_on_fixtures(task, n, golds0):
    exs, pool = paper19.load_examples(task, FIXTURES)
    assert len(exs) == n and pool is None
    assert all(e.golds and e.prompt.rstrip().endswith(("A:", "Answer:")) for e in exs)


def test_paper19_answer_parsing_details():
    tq, _ = paper19.load_examples("triviaqa", FIXTURES)
    assert tq[0].golds[:2] == ("Paris", "Paris")
    wq, _ = paper19.load_examples("webquestions", FIXTURES)
    assert wq[0].golds == ("Paris", "Paris City")
    assert paper19.webq_answers('(list (description "Padm\\"e") (description Eclipse))') == [
        'Padm"e',
        "Eclipse",
    ]
    sq, _ = paper19.load_examples("squad_v2", FIXTURES)
    assert any(e.golds == ("unanswerable",) for e in sq)
    dr, _ = paper19.load_examples("drop", FIXTURES)
    assert ("10",) == dr[0].golds and dr[1].golds == ("France",)
    assert dr[-1].golds == ("4 July 1776",)
    qu, _ = paper19.load_examples("quac", FIXTURES)
    assert qu[1].golds == ("unanswerable",) and "Q: What is the capital" in qu[1].prompt
    co, _ = paper19.load_examples("coqa", FIXTURES)
    assert co[1].golds == ("yes", "yes, many")
    asd, _ = paper19.load_examples("asdiv", FIXTURES)
    assert asd[0].golds == ("5",)  # "5 (apples)" -> 5; the ratio item is skipped
    mw, _ = paper19.load_examples("mawps_multiarith", FIXTURES)
    assert mw[0].golds == ("10",)  # 10.0 -> "10"
    gs, _ = paper19.load_examples("gsm8k", FIXTURES)
    assert gs[0].golds == ("12",) and "####" in gs[0].demo
    ty, _ = paper19.load_examples("tydiqa_goldp", FIXTURES)
    assert all("Suomen" not in e.prompt for e in ty)  # English only


def test_paper19_suite_builds_all_19(tmp_path):
    tasks = load_suite("paper19", n_items=4, shots=2, data_dir=FIXTURES)
    assert [t.name for t in tasks] == list(paper19.TASKS) and len(tasks) == 19
    groups = [t.group for t in tasks]
    assert groups.count("closed_book_qa") == 4 and groups.count("open_book_qa") == 5
    assert groups.count("math") == 6 and groups.count("primitives") == 4
    (g,) = load_suite("gsm8k", n_items=3, shots=8, data_dir=FIXTURES)
    assert g.items[0].prompt.count("####") == 8 and g.max_new_tokens == 256


def test_missing_dataset_folder_names_the_layout(tmp_path):
    with pytest.raises(InputError, match=r"triviaqa/\*dev\*\.json"):
        load_suite("paper19", data_dir=tmp_path, tasks=["triviaqa"])
    # the generated primitives need no data
    (t,) = load_suite("paper19", data_dir=tmp_path, tasks=["var_code_depth1"], n_items=5)
    assert len(t.items) == 5


def test_var_assign_primitives_are_correct():
    import random

    rng = random.Random(0)
    for depth in (0, 1):
        for fmt in ("math", "code"):
            for _ in range(50):
                ex = paper19.var_assign_example(rng, depth, fmt)
                env = {}
                body = ex.prompt.split("print(")[0] if fmt == "code" else ex.prompt[3:]
                stmts = body.replace("\n", ",").split(",")
                for s in stmts:
                    if "=" in s and "?" not in s:
                        a, b = (x.strip() for x in s.split("="))
                        env[a] = env.get(b, b)
                q = (
                    ex.prompt.split("print(")[1].split(")")[0]
                    if fmt == "code"
                    else ex.prompt.split(", ")[-1].split("=")[0]
                )
                assert env[q] == ex.golds[0]


def test_regbench_automata_constraints_and_split():
    rng = np.random.default_rng(0)
    for _ in range(50):
        d = regbench.random_dfa(rng)
        assert 4 <= d.n_states <= 12 and len(d.alphabet) >= 4
        for s, edges in enumerate(d.edges):
            assert 1 <= len(edges) <= 3
            assert all(nxt != s for _, nxt in edges)
            assert len({a for a, _ in edges}) == len(edges)
    tok = vocab.build_tokenizer()
    (task,) = regbench.load(tok, vocab.BOS_ID, n_items=4, seed=0, max_tokens=200)
    for item in task.items:
        assert len(item.ids) <= 200 and item.ids[0] == vocab.BOS_ID
        for pos, valid in zip(item.positions, item.valid, strict=True):
            assert item.ids[pos + 1] in valid  # the observed next letter is always valid
            assert set(valid) <= set(item.support)


def test_regbench_eval_automata_are_held_out():
    rng = np.random.default_rng(regbench.SEED_OFFSET)
    assert all(regbench.dfa_split(regbench.random_test_dfa(rng)) == "test" for _ in range(5))
    assert not regbench.is_training_dfa(regbench.random_test_dfa(rng))


def test_zoo_suite_formats():
    from induction.zoo import corpus

    tasks = zoo.load(n_items=10, seed=0)
    assert [t.name for t in tasks] == list(zoo.TASKS)
    tok = vocab.build_tokenizer()
    for t in tasks:
        if t.kind == "gen":
            for it in t.items:
                ids = tok(it.prompt)["input_ids"]
                assert vocab.UNK_ID not in ids and len(ids) < zoo.CONTEXT
                assert all(g in vocab.VOCAB for gold in it.golds for g in gold.split())
        else:
            for it in t.items:
                assert len(it.ids) <= zoo.CONTEXT
    lookup = tasks[0]
    for it in lookup.items:  # the queried key was shown with its value
        key = it.prompt.split(" , ")[-1].split(" >")[0]
        assert f"{key} > {it.golds[0]}" in it.prompt
    # zoo RegBench uses held-out automata only
    rng = np.random.default_rng(0)
    assert not corpus.is_training_dfa(corpus.sample_dfa(rng, training=False))
    # fresh draws: a different seed gives different prompts
    assert zoo.load(n_items=3, seed=1)[0].items[0].prompt != lookup.items[0].prompt


def test_every_generator_source_names_a_function_that_exists():
    """A record's ``source: generator:<module>.<function>`` is documentation a reader follows:
    it must resolve to the callable that generates the task."""
    import importlib

    from ablation.tasks import catalog

    generated = [s for s in catalog() if s.source.startswith("generator:")]
    assert generated
    for spec in generated:
        module, _, name = spec.source.removeprefix("generator:").rpartition(".")
        assert callable(getattr(importlib.import_module(module), name, None)), spec.source
