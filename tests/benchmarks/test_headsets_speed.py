"""benchmarks/headsets_speed.py: one ablation with one head set per pass and with several,
timed in one run, its numbers checked equal (a tiny setting of the zoo model)."""

from __future__ import annotations

import math

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("headsets_speed")


def test_measure_times_both_ways_and_checks_the_numbers(bench):
    row = bench.measure(
        "grown8c-s0", suite="zoo", tasks=("lookup",), n_items=3, controls=1, per_pass=4
    )
    assert row["head_sets"] == 4 and row["head_sets_per_pass"] == [4]
    assert row["max_abs_diff"] <= 1e-5 and row["same_answers"]
    assert row["one_per_pass_s"] > 0 and row["batched_s"] > 0 and row["ratio"] > 0
    assert set(row["prefill_tokens_per_s_by_k"]) == {"1", "4"}


def test_difference_of_nested_numbers(bench):
    assert bench._max_diff({"a": [1.0, math.nan]}, {"a": [1.5, math.nan]}) == 0.5
    assert bench._max_diff([1.0], [math.nan]) == math.inf
    assert bench._max_diff({"a": 1}, {"b": 1}) == math.inf
    assert bench._max_diff(["x", 2], ["x", 2]) == 0.0
