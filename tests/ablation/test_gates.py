"""Validity gates (ablation.gates): chance from the task's answer set, the interval gate, the
saturation gate, heads before growth; a model that fails yields "untestable here"."""

import pytest

from ablation import ablate
from ablation.gates import (
    chance_level,
    heads_before_growth,
    interval,
    model_gates,
    suite_gate,
    task_gates,
)
from ablation.report import task_key
from ablation.results import EvalResult, TaskResults
from ablation.tasks.base import GenItem, GenTask


def _task(name="t", n=40):
    letters = ["a", "b", "c", "d"]
    items = [GenItem(f"q{i}", [letters[i % 4]], letters) for i in range(n)]
    return GenTask(name, items, metric="em", group="g")


def _results(task, clean_hits: int, ablated_hits: int) -> dict:
    n = len(task.items)

    def res(k):
        hits = [1.0] * k + [0.0] * (n - k)
        return EvalResult({"em": sum(hits) / n}, {"em": hits})

    tr = TaskResults()
    tr["clean"], tr["ablated"] = res(clean_hits), res(ablated_hits)
    return {task_key(task): tr}


def test_chance_is_the_best_right_type_guess():
    task = _task()
    assert chance_level(task) == pytest.approx(0.25)  # uniform answers over 4 candidates
    golds = ["a" if i < 30 else "b" for i in range(40)]
    skewed = GenTask("s", [GenItem(f"q{i}", [g], ["a", "b"]) for i, g in enumerate(golds)])
    assert chance_level(skewed) == pytest.approx(0.75)  # always "a" beats a coin
    assert chance_level(task, "cand_acc") == pytest.approx(0.25)


def test_interval_gates_and_saturation():
    lo, hi = interval([1.0] * 20 + [0.0] * 20)
    assert lo < 0.5 < hi and 0.3 < lo
    task = _task()
    good = task_gates([task], _results(task, 32, 20), task_key).iloc[0]
    assert good.above_chance and not good.saturated and good.passed
    pinned = task_gates([task], _results(task, 32, 10), task_key).iloc[0]  # 0.25 = chance
    assert pinned.above_chance and pinned.saturated and not pinned.passed
    at_chance = task_gates([task], _results(task, 12, 10), task_key)
    assert not at_chance.iloc[0].above_chance
    assert not suite_gate(at_chance)["passed"]


def test_heads_before_growth_from_the_card():
    card = {"growth_steps": [1000], "history": [{"step": 500, "score": 0.2},
            {"step": 1000, "score": 0.45}, {"step": 1500, "score": 0.8}]}  # fmt: skip
    assert heads_before_growth(card) == (1000, 0.45)
    gates = model_gates(0.8, 0.4, {**card, "history": card["history"][:1] + card["history"][2:]})
    assert [g.passed for g in gates] == [True, False]
    assert heads_before_growth({"growth_steps": []}) is None
    assert model_gates(0.3, 0.4)[0].passed is False


def test_a_model_that_fails_its_gates_is_untestable(tiny_llama_dir):
    """A random tiny model does no task above chance: the verdict names the gate."""
    result = ablate(str(tiny_llama_dir), suite="zoo19", tasks=("open_fact", "prim_math_depth0"),
                    n_items=8, controls=2, progress=False, cache=False)  # fmt: skip
    verdict = result.verdict()
    assert verdict.startswith("untestable here") and "induction heads" in verdict
    assert set(result.gates.readout) == {"f1", "em", "logprob", "cand_acc"}
    assert any(line.startswith("FAIL gate cand_acc: ") for line in result.gate_lines())


def test_the_verdict_names_the_smallest_p_its_controls_allow():
    import pandas as pd

    from ablation.config import AblationConfig
    from ablation.pipeline import AblationResult

    report = pd.DataFrame(
        [
            {
                "task": "MEAN",
                "drop": 0.3,
                "ctrl_mean": 0.1,
                "p_ctrl": 0.17,
                "shaped_mean": 0.1,
                "p_shaped": 0.17,
            }
        ]  # fmt: skip
    )

    def verdict(controls):
        config = AblationConfig(controls=controls)
        return AblationResult("m", config, "zoo", None, None, report).verdict()

    assert "p cannot go below 0.17" in verdict(5) and "--controls 19" in verdict(5)
    assert "cannot go below" not in verdict(19)  # 1/20 = 0.05 is reachable


def _staged_log(operator: str):
    from lineage.growth import PRESETS
    from lineage.log import DuplicationLog

    log = DuplicationLog(initial_depth=4)
    for stage, step in enumerate((300, 450, 600, 750)):
        source, insert_at = PRESETS[operator](4 + stage, 1)
        log.record_copy(step, operator, source, insert_at)
    return log


def test_copied_head_before_growth_needs_the_head_in_a_copied_layer():
    """R4-gate: grown8c's layout (heads in L3, growth copies L1) fails; top growth passes."""
    from ablation.gates import (
        copied_head_before_growth,
        copied_initial_layers,
        fewest_ancestors,
        pre_growth_head_scores,
    )

    scores = [[0.01] * 8, [0.04] * 8, [0.1] * 8, [0.47, 0.46, 0.2] + [0.0] * 5]
    after = [[0.9] * 8] * 5
    kept = [{"step": 0, "head_scores": [[0.0] * 8] * 4},
            {"step": 300, "growth": "before", "head_scores": scores},
            {"step": 300, "growth": "after", "head_scores": after}]  # fmt: skip
    card = {"growth_steps": [300], "history": [{"step": 300, "score": 0.47}], "checkpoints": kept}
    assert pre_growth_head_scores(card) == (300, scores)
    middle, top = _staged_log("midas"), _staged_log("top")
    assert copied_initial_layers(middle) == [1] and copied_initial_layers(top) == [3]
    assert copied_initial_layers(top.to_json()) == [3]  # as ablate reads duplication_log.json
    assert fewest_ancestors(top.to_json(), [3]) == 2
    assert fewest_ancestors(middle, [3]) == 10  # L3 has one descendant: one ancestor per head
    assert fewest_ancestors(top, [3]) == 2  # L3 ends with 5 copies: ceil(10 / 5)
    failed = copied_head_before_growth(card, middle, 0.4)
    passed = copied_head_before_growth(card, top, 0.4)
    assert failed.passed is False and "copies initial layers [1]" in failed.detail
    assert passed.passed is True and "m reachable for 10 heads: 2" in passed.detail
    assert copied_head_before_growth({"growth_steps": [300]}, top, 0.4).passed is None
    gates = model_gates(0.8, 0.4, card, top)
    assert [g.name for g in gates][-1] == "copied head before growth" and gates[-1].passed
