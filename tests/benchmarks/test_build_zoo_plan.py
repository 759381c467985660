"""benchmarks/build_zoo.py's build order: seed-major, and round 4's arms with the seeds rule
R8 fixed before they trained (docs/replication.md)."""

from __future__ import annotations


def test_round4_plan_is_seed_major_with_six_seeds_per_arm(load_benchmark):
    bench = load_benchmark("build_zoo")
    from induction.models.registry import ROUND4

    todo = bench.plan(bench.ROUND4_ORDER)
    assert len(todo) == 6 * 5 and set(bench.ROUND4_ORDER) <= set(ROUND4)
    assert "grown8re" not in bench.ROUND4_ORDER and "looped8rp" not in bench.ROUND4_ORDER
    assert todo[:5] == [(f, 0) for f in bench.ROUND4_ORDER]  # seed 0 of every arm first
    assert [s for _, s in todo] == sorted(s for _, s in todo)
    assert todo[0] == ("grown8rt", 0)  # the default-model candidate first
    assert bench.plan(["dense8r"], [3, 4]) == [("dense8r", 3), ("dense8r", 4)]
    second = bench.plan(bench.BUILD_ORDER)  # the second zoo's seeds are unchanged
    assert sum(f == "grown8c" for f, _ in second) == 8
    assert sum(f == "looped8c" for f, _ in second) == 5
