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
from induction.models.looped import LoopPlan


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
    the cache key (:func:`induction.store.fingerprint.code_packages` of ``CODE_MODULES``): a change
    there never serves stale results."""
    import ast
    from pathlib import Path

    import ablation.engine
    from ablation.run import CODE_MODULES
    from induction.store.fingerprint import code_packages

    tree = ast.parse(Path(ablation.engine.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        computes = ("ablation", "induction.models.kv_cache")
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(computes):
            imported.add(node.module)
    packages = set(code_packages(tuple(CODE_MODULES)))
    assert {"ablation", "induction"} <= packages
    for module in imported:
        parent = module if module in packages else module.rpartition(".")[0]
        assert parent in packages, module


# --------------------------------------------------------------------------- time estimates


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def run_estimate(tasks, pace_s, order, clock, lines, first_by_s=None):
    """Drive ``_Estimate`` through ``order`` (``(task, batch)`` runs), each taking
    ``pace_s[task] * weight`` seconds of the fake clock."""
    from ablation.run import _Estimate

    est = _Estimate(lines.append, tasks, len(tasks), 3, clock=clock)
    if first_by_s is not None:
        est.FIRST_BY_S = first_by_s
    weights = {key: w for key, w, _ in tasks}
    lefts = []
    for key, batch in order:
        clock.t += pace_s[key] * weights[key][batch]
        est.tick(key, batch)
        lefts.append(est.left_s)
    return est, lefts


def test_estimate_weights_each_task_at_its_own_pace():
    # a cheap task first (short batches, fast), then a slow one with a long batch: the
    # first estimate waits for a pass of both and is exact; the first task's pace says 12 s
    tasks = [("a", [1.0, 1.0], 3), ("b", [2.0, 6.0], 3)]
    pace = {"a": 1.0, "b": 3.0}
    order = [("a", 0), ("a", 1), ("b", 0), ("b", 1)] * 3
    clock, lines = FakeClock(), []
    _, lefts = run_estimate(tasks, pace, order, clock, lines)
    assert (
        lines[0].startswith("size: 2 task instance(s) x 3 head sets") and "12 batches" in lines[0]
    )
    assert lines[1].startswith("estimate: about 78 s in all, 52 s left (4 of 12 batches")
    assert "2 of 2 task(s)" in lines[1] and clock.t == 78.0
    assert len(lines) == 2  # the pace held: no re-estimate
    assert lefts[-1] == 0.0
    assert lefts[2] == pytest.approx(78.0 - 8.0)  # exact from b's first, short batch on


def test_a_slower_pace_brings_a_re_estimate():
    from ablation.run import _Estimate

    clock, lines = FakeClock(), []
    est = _Estimate(lines.append, [("a", [1.0] * 10, 2)], 1, 2, clock=clock)
    for i in range(20):
        clock.t += 2.0 if i < 10 else 6.0  # three times slower after the first pass
        est.tick("a", i % 10)
    again = [ln for ln in lines if ln.startswith("re-estimate")]
    assert lines[1].startswith("estimate: about 40 s in all, 20 s left") and again
    assert len(again) <= 5  # only when the time left moves by more than 25% (and 10 s)
    assert est.left_s == 0.0


def test_first_estimate_waits_for_a_control_set():
    """SmolLM2's one-task run (issue #45): clean and target take 14 s a pass, the ten controls
    4 s. Said after the first two passes the estimate would be 168 s; it waits for a control."""
    from ablation.run import _Estimate

    clock, lines = FakeClock(), []
    est = _Estimate(lines.append, [("a", [1.0], 12)], 1, 12, controls=True, clock=clock)
    for i in range(12):
        clock.t += 14.0 if i < 2 else 4.0
        est.tick("a", 0, control=i >= 2)
        if i == 1:
            assert len(lines) == 1  # the size line only: no control pass yet
    # the rest is controls, at the controls' pace (the pace of all three passes says 128 s)
    assert lines[1].startswith("estimate: about 68 s in all, 36 s left (3 of 12 batches")
    assert clock.t == 68.0 and est.first_s == 68.0 and len(lines) == 2
    # without controls to come (--controls 0) nothing is waited for
    clock, lines = FakeClock(), []
    est = _Estimate(lines.append, [("a", [1.0], 2)], 1, 2, clock=clock)
    clock.t += 30.0
    est.tick("a", 0)
    assert lines[1].startswith("estimate: about 60 s in all")


def test_first_estimate_does_not_wait_past_its_limit():
    tasks = [("a", [1.0] * 4, 1), ("b", [1.0], 1)]
    clock, lines = FakeClock(), []
    order = [("a", 0), ("a", 1), ("a", 2)]
    run_estimate(tasks, {"a": 10.0, "b": 10.0}, order, clock, lines, first_by_s=30)
    assert len(lines) == 2 and "1 of 2 task(s)" in lines[1]  # b not sampled: pooled pace
    assert lines[1].startswith("estimate: about 50 s in all, 20 s left (3 of 5 batches")


def test_first_estimate_waits_for_twenty_seconds_or_a_tenth_of_the_work():
    tasks = [("a", [1.0], 200), ("b", [1.0], 200)]  # both sampled after 2 s
    clock, lines = FakeClock(), []
    run_estimate(tasks, {"a": 1.0, "b": 1.0}, [("a", 0), ("b", 0)] * 15, clock, lines)
    assert (
        lines[1].startswith("estimate: about 7 min in all")
        and "(20 of 400 batches" in lines[1]
        and "in 20 s)" in lines[1]
    )
    clock, lines = FakeClock(), []
    run_estimate([("a", [1.0], 20), ("b", [1.0], 20)], {"a": 1.0, "b": 1.0},
                 [("a", 0), ("b", 0)] * 3, clock, lines)  # fmt: skip
    assert "(4 of 40 batches" in lines[1]


def test_the_first_passes_cover_every_task(tiny_llama_dir):
    """A real run: the first estimate has sampled both tasks (one pass of each in turn) and a
    control set (the next pass)."""
    from ablation import ablate

    lines = []
    result = ablate(tiny_llama_dir, suite="zoo", tasks=("copy", "var_depth0"), n_items=4,
                    controls=3, heads="0.1", readouts=False, cache=False, progress=False,
                    head_sets_per_pass=2, log=lines.append)  # fmt: skip
    first = next(ln for ln in lines if ln.startswith("estimate: about"))
    assert "2 of 2 task(s)" in first, lines
    assert "(6 of 16 batches" in first  # clean+target of each task, then copy's [c0, c1]
    meta = result.meta  # the first estimate kept beside the time the evaluations took
    assert 0 < meta["first_estimate_seconds"] and 0 < meta["evaluation_seconds"]
