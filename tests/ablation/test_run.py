"""Head plans (top-frac, explicit, tied across loop passes) and the report arithmetic."""

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ablation.report import build_report
from ablation.results import EvalResult, TaskResults
from ablation.run import HeadPlan, RunResult, plan_heads
from ablation.tasks.base import DistItem, DistTask, GenItem, GenTask
from induction.errors import InputError
from induction.looped import LoopPlan


def fake_loaded(n_layers, n_heads, loop_plan=None):
    info = SimpleNamespace(n_layers=n_layers, n_heads=n_heads, name="fake")
    return SimpleNamespace(info=info, loop_plan=loop_plan)


def scores(n_layers, n_heads, hot):
    rows = [{"layer": la, "head": h, "induction": hot.get((la, h), 0.0)}
            for la in range(n_layers) for h in range(n_heads)]  # fmt: skip
    return pd.DataFrame(rows)


def test_plan_top_frac_and_controls():
    df = scores(8, 4, {(3, 1): 0.9, (5, 2): 0.8})
    plan = plan_heads(fake_loaded(8, 4), frac=2 / 32, n_controls=3, seed=4, scores=df)
    assert plan.target == [(3, 1), (5, 2)] and len(plan.controls) == 3
    assert plan.expand(plan.target) == plan.target
    assert "top 0.0625 by induction (2 of 32 heads)" == plan.selection
    explicit = plan_heads(fake_loaded(8, 4), heads="7.3", n_controls=0)
    assert explicit.target == [(7, 3)] and explicit.controls == []
    with pytest.raises(InputError, match="looped"):
        plan_heads(fake_loaded(8, 4), heads="1.1", tied=True)


def test_plan_tied_across_loop_passes():
    lp = LoopPlan(block=2, loops=3, prelude=1, coda=1)  # unrolled: 0 | 1 2 | 3 4 | 5 6 | 7
    assert lp.unrolled_depth == 8
    df = scores(8, 2, {(5, 1): 0.9, (0, 0): 0.5})  # layer 5 = block layer 1, pass 2
    plan = plan_heads(fake_loaded(8, 2, lp), frac=2 / 10, n_controls=4, scores=df, tied=True)
    # 10 distinct heads when tied (5 stored layers x 2 heads): ceil(0.2 * 10) = 2
    assert plan.target == [(0, 0), (1, 1)]
    assert plan.expand(plan.target) == [(0, 0), (1, 1), (3, 1), (5, 1)]
    for c in plan.controls:  # controls are drawn over stored heads (first-pass layers)
        assert {la for la, _ in c} <= {0, 1, 2, 7}
    explicit = plan_heads(fake_loaded(8, 2, lp), heads="6.0", n_controls=0, tied=True)
    assert explicit.target == [(2, 0)] and explicit.expand(explicit.target) == [
        (2, 0), (4, 0), (6, 0)]  # fmt: skip


def test_report_arithmetic():
    gen = GenTask("a", [GenItem("p", ["x"])] * 4, metric="f1")
    dist = DistTask("rb", [DistItem([1, 2], [0], [[2]], [2, 3])] * 2)

    def res(items):
        return EvalResult({"f1": float(np.mean(items))}, {"f1": items})

    def dres(tvd, acc):
        return EvalResult({"tvd": tvd, "acc": acc}, {"tvd": [tvd] * 2, "acc": [acc] * 2})

    results = {
        "a@0": TaskResults({"clean": res([1, 1, 1, 0]), "ablated": res([0, 0, 1, 0]),
              "control0": res([1, 1, 0, 0]), "control1": res([1, 1, 1, 0]),
              "control2": res([1, 0, 1, 0])}),
        "rb@0": TaskResults({"clean": dres(0.2, 0.9), "ablated": dres(0.5, 0.5),
               "control0": dres(0.2, 0.9), "control1": dres(0.3, 0.8),
               "control2": dres(0.25, 0.85)}),
    }  # fmt: skip
    plan = HeadPlan(target=[(0, 0)], controls=[[(1, 0)]] * 3, selection="x")
    df = build_report(RunResult(tasks=[gen, dist], plan=plan, results=results)).set_index("task")
    a = df.loc["a"]
    assert a.clean == 0.75 and a.ablated == 0.25 and a["drop"] == 0.5
    assert a.ctrl_mean == pytest.approx(0.5 / 3)  # drops 0.25, 0, 0.25
    std = np.std([0.25, 0, 0.25], ddof=1)
    assert a.ctrl_std == pytest.approx(std) and a.z == pytest.approx((0.5 - 0.5 / 3) / std)
    assert a.p_ctrl == pytest.approx(1 / 4)  # no control drop reaches 0.5
    assert a.drop_se == pytest.approx(np.std([1, 1, 0, 0], ddof=1) / 2)
    assert 0 <= a.drop_ci_lo <= a["drop"] <= a.drop_ci_hi <= 1  # items' drops are 0 or 1
    again = build_report(RunResult(tasks=[gen, dist], plan=plan, results=results))
    assert again.set_index("task").loc["a"].drop_ci_lo == a.drop_ci_lo  # seeded
    rb = df.loc["rb"]
    assert rb["drop"] == pytest.approx(0.3)  # TVD: higher is worse, drop = ablated - clean
    assert df.loc["rb:acc"]["drop"] == pytest.approx(0.4)
    mean = df.loc["MEAN"]  # generation tasks only
    assert mean["drop"] == 0.5 and mean.n == 1
    single = HeadPlan(target=[(0, 0)], controls=[[(1, 0)]], selection="x")
    one = {"a@0": TaskResults({k: results["a@0"][k] for k in ("clean", "ablated", "control0")})}
    d1 = build_report(RunResult(tasks=[gen], plan=single, results=one)).set_index("task")
    assert math.isnan(d1.loc["a"].z) and math.isnan(d1.loc["a"].ctrl_std)


def test_report_averages_prompt_seeds():
    t0 = GenTask("a", [GenItem("p", ["x"])] * 2, metric="em", seed=0)
    t1 = GenTask("a", [GenItem("q", ["x"])] * 2, metric="em", seed=1)

    def res(items):
        return EvalResult({"em": float(np.mean(items))}, {"em": items})

    results = {
        "a@0": TaskResults({"clean": res([1, 1]), "ablated": res([0, 1]), "control0": res([1, 1])}),
        "a@1": TaskResults({"clean": res([1, 0]), "ablated": res([0, 0]), "control0": res([0, 0])}),
    }
    plan = HeadPlan(target=[(0, 0)], controls=[[(1, 0)]], selection="x")
    df = build_report(RunResult(tasks=[t0, t1], plan=plan, results=results)).set_index("task")
    a = df.loc["a"]
    assert a.seeds == 2 and a.n == 4
    assert a.clean == 0.75 and a["drop"] == 0.5  # drops 0.5 and 0.5
    assert a.seed_std == 0.0 and a.ctrl_mean == pytest.approx(0.25)  # control drops 0, 0.5


def test_the_resume_cache_key_covers_every_module_the_engine_computes_with():
    """Each ``ablation`` module the engine imports, and the KV cache it decodes and reads the
    readouts on, decides the numbers it caches, so the whole package holding it is part of
    the cache key (:func:`induction.fingerprint.code_packages` of ``CODE_MODULES``): a change
    there never serves stale results."""
    import ast
    from pathlib import Path

    import ablation.engine
    from ablation.run import CODE_MODULES
    from induction.fingerprint import code_packages

    tree = ast.parse(Path(ablation.engine.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        computes = ("ablation", "induction.kv_cache")
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(computes):
            imported.add(node.module)
    packages = set(code_packages(tuple(CODE_MODULES)))
    assert {"ablation", "induction"} <= packages
    for module in imported:
        parent = module if module in packages else module.rpartition(".")[0]
        assert parent in packages, module
