"""The ``zoo4g`` suite (docs/replication.md, R4-suite): 19 tasks in the source's four groups,
in the round-4 corpus's formats, fresh in-context content, content-blind rules at chance."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from ablation.baselines import chance_check
from ablation.gates import chance_level
from ablation.tasks import default_suite, load_suite
from ablation.tasks import zoo4g as Z
from induction.zoo import vocab as V
from induction.zoo.corpus import MIX_R4
from induction.zoo.problems import KIND_PROBLEMS, MAKERS, problem_segment

IN_CONTEXT = [n for n in Z.MEASURED if n in MAKERS]


def test_nineteen_tasks_in_four_groups_with_copy_like_controls_apart():
    tasks = load_suite("zoo4g", n_items=8)
    measured = [t for t in tasks if not t.positive_control]
    assert len(measured) == 19
    groups = {g: sum(t.group == g for t in measured) for g in Z.GROUPS}
    assert groups == Z.GROUPS == {"closed_qa": 4, "open_qa": 5, "math": 5, "primitives": 5}
    assert sorted(t.name for t in tasks if t.positive_control) == ["copy", "lookup"]
    # every in-context task's problems are a kind the round-4 curriculum trains
    trained = {n for kind in KIND_PROBLEMS if MIX_R4.get(kind, 0) > 0 for n in KIND_PROBLEMS[kind]}
    assert set(IN_CONTEXT) == trained and len(IN_CONTEXT) == 15


def test_prompts_fit_the_training_length_and_answers_are_candidates():
    tok = V.build_tokenizer()
    for task in load_suite("zoo4g", n_items=32, tasks=IN_CONTEXT):
        for item in task.items:
            n = len(tok(item.prompt)["input_ids"]) + task.max_new_tokens
            assert n <= Z.CONTEXT, task.name
            assert V.UNK_ID not in tok(item.prompt)["input_ids"]
            assert item.golds[0] in item.candidates and len(set(item.candidates)) > 1
            assert len(tok(item.golds[0], add_special_tokens=False)["input_ids"]) <= (
                task.max_new_tokens
            )


def test_deterministic_per_seed_and_fresh_across_seeds():
    a = load_suite("zoo4g", n_items=8, tasks=["open_hops", "var_reassign"])
    b = load_suite("zoo4g", n_items=8, tasks=["open_hops", "var_reassign"])
    c = load_suite("zoo4g", n_items=8, tasks=["open_hops", "var_reassign"], seed=1)
    assert [i.prompt for t in a for i in t.items] == [i.prompt for t in b for i in t.items]
    assert not {i.prompt for t in a for i in t.items} & {i.prompt for t in c for i in t.items}


def _rules(prompt: str, cands: list[str]) -> dict[str, str]:
    """Answers of rules that read no content: the first or last candidate, the prompt's last
    token, the last / first candidate-type token of the prompt (one problem: ``shots=0``)."""
    toks = prompt.split()
    shown = [t for t in toks if t in cands]
    return {
        "first candidate": cands[0],
        "last candidate": cands[-1],
        "copy last token": toks[-1],
        "last shown candidate": shown[-1] if shown else cands[0],
        "first shown candidate": shown[0] if shown else cands[0],
    }


@pytest.mark.parametrize("name", IN_CONTEXT)
def test_content_blind_rules_score_at_chance(name):
    task = load_suite("zoo4g", n_items=600, tasks=[name], shots=0)[0]
    chance = [1.0 / len(it.candidates) for it in task.items]
    golds = [it.golds[0] for it in task.items]
    constant = max(set(golds), key=golds.count)  # the best constant answer, seen in hindsight
    checks = [chance_check("constant", [g == constant for g in golds], chance, one_sided=True)]
    per_rule: dict[str, list[bool]] = {}
    for it in task.items:
        for rule, answer in _rules(it.prompt, it.candidates).items():
            per_rule.setdefault(rule, []).append(answer == it.golds[0])
    checks += [chance_check(r, h, chance, one_sided=True) for r, h in per_rule.items()]
    bad = [str(c) for c in checks if not c.ok]
    assert not bad, f"{name}: {bad}"
    # the constant rule is the suite's chance level's upper side: it stays near 1 / candidates
    assert chance_level(task) <= float(np.mean(chance)) + 0.05


def test_the_corpus_trains_the_suite_format():
    """A training segment of a kind is problems of one type laid out as the suite's prompt."""
    rng = np.random.default_rng(0)
    for kind in KIND_PROBLEMS:
        ids = problem_segment(rng, kind, 96)
        assert len(ids) >= 96 and all(0 <= i < V.VOCAB_SIZE for i in ids)
        assert ids.count(V.VOCAB["|"]) + ids.count(V.VOCAB["."]) >= 2
    assert sum(MIX_R4.values()) == pytest.approx(1.0)


def test_math_asks_with_its_own_marker():
    """Pilot 8 (docs/replication.md): math's answer is never a number the problem shows, so
    it asks with ``w78`` (how many), never with the ``?`` that open-book and programs ask with
    for an answer the context shows (``open_passage`` asks in the facts' syntax, with neither)."""
    rng = np.random.default_rng(0)
    for kind, makers in KIND_PROBLEMS.items():
        for name, make in makers.items():
            for _ in range(20):
                query = make(rng).query
                if kind == "math":
                    assert "?" not in query and query.count("w78") == 1, name
                else:
                    assert ("?" in query) != (name == "open_passage") and "w78" not in query, name


def test_recall_math_is_trained_only_and_answers_a_shown_number():
    """Pilot 9: ``math_recall`` joins the corpus's math segments only when the corpus asks for
    it, is never a suite task, and its answer is one of the quantities it states (uniform)."""
    from induction.zoo.corpus import CorpusConfig, make_sequence
    from induction.zoo.problems import TRAINING_ONLY, math_recall

    assert "math_recall" not in MAKERS and "math_recall" not in Z.TASKS
    rng = np.random.default_rng(1)
    asked = [0, 0, 0]
    for _ in range(300):
        p = math_recall(rng)
        shown = [t for t in p.query if t.isdigit()]
        assert p.answer[0] in shown and set(p.candidates) == set(shown)
        assert "?" not in p.query and p.query[-3] == "w78"
        asked[shown.index(p.answer[0])] += 1
    assert min(asked[:2]) > 60  # the asked quantity is not always the first or the last
    # a recall problem is the one math problem with no operation word (gets, loses, more)
    ops = {V.VOCAB[w] for w in ("w74", "w75", "w77")}

    def starts_with_recall(ids: list[int]) -> bool:
        return not ops & set(ids[1 : ids.index(V.VOCAB["|"])])

    for recall, expected in ((False, False), (True, True)):
        cfg = CorpusConfig(seq_len=96, mix={"math": 1.0}, math_recall=recall)
        seqs = [make_sequence(np.random.default_rng(s), cfg)[0] for s in range(60)]
        assert any(starts_with_recall(ids) for ids in seqs) is expected
    assert TRAINING_ONLY["math"] == {"math_recall": math_recall}


def test_ablate_picks_zoo4g_from_the_card(tmp_path):
    from induction.training.protocol import preset_config

    def info(name, phases):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "card.json").write_text(json.dumps({"config": {"phases": phases}}))
        return SimpleNamespace(zoo_vocabulary=True, name=name, path=str(folder))

    assert default_suite(info("grown8rt-s0", preset_config("grown8rt").phases)) == "zoo4g"
    assert default_suite(info("pilot", preset_config("dense8r").phases)) == "zoo4g"
    assert default_suite(info("grown8c-s0", preset_config("grown8c").phases)) == "zootrain"
    assert default_suite(SimpleNamespace(zoo_vocabulary=True, name="x", path=None)) == "zoo19"
    # a checkpoint's card keeps no config: its run's train_config.json says
    run = tmp_path / "run"
    (run / "checkpoints" / "step-900").mkdir(parents=True)
    (run / "checkpoints" / "step-900" / "card.json").write_text('{"step": 900}')
    cfg = {"phases": preset_config("grown8rt").phases}
    (run / "train_config.json").write_text(json.dumps(cfg))
    ckpt = SimpleNamespace(zoo_vocabulary=True, name="c", path=str(run / "checkpoints/step-900"))
    assert default_suite(ckpt) == "zoo4g"


def test_open_book_states_and_asks_with_the_lookup_separator():
    """Pilot 13 (docs/replication.md): open-book's passages and questions use the ``lookup``
    kind's ``>``, never ``:``, which math keeps; ``open_passage`` is in the facts' syntax."""
    rng = np.random.default_rng(3)
    for name, make in KIND_PROBLEMS["openbook"].items():
        for _ in range(20):
            query = make(rng).query
            assert ":" not in query, name
            assert (">" in query) != (name == "open_passage"), name
    assert ":" in KIND_PROBLEMS["math"]["math_add"](rng).query
