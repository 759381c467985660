"""The replication's validity gates (induction/replication/gates.py): the record of zoo2
fails them (every claim untestable here, naming the gate); models that pass them get a verdict
read from the comparison."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
ZOO2 = ROOT / "benchmarks" / "results" / "zoo2"


@pytest.fixture(scope="module")
def gates_mod(load_benchmark):
    load_benchmark("replication")  # puts benchmarks/ on sys.path
    import induction.replication.gates as gates
    import induction.replication.store as store

    return gates, store


def test_record_fails_its_gates(gates_mod):
    gates, store = gates_mod
    records = store.MeasurementStore(ZOO2 / "models")
    measured = [records.get_record(n) for n in ("dense8-s0", "lidas8-s0")]
    assert all(m is not None and m.extra["record"] for m in measured)
    from induction.replication.config import Settings

    models = pd.DataFrame([m.row for m in measured])
    tasks = pd.concat([m.tasks for m in measured], ignore_index=True)
    settings = Settings(suite="zoo19")  # the record was measured on zoo19
    table = gates.gate_table(models, tasks, settings, probe=False).set_index("model")
    assert not table["testable"].any()
    assert table.loc["dense8-s0", "heads"] and not table.loc["dense8-s0", "above_chance"]
    assert table.loc["lidas8-s0", "heads_before_growth"] is False  # 0.13 at step 1000
    assert table.loc["dense8-s0", "heads_before_growth"] is None  # not grown
    assert 0.2 < table.loc["dense8-s0", "chance"] < 0.4


class _Rep:
    def __init__(self, drops: dict, p: float, seeds: int = 5):
        self.families = pd.DataFrame(
            [{"family": f, "source_family": f.rstrip("0123456789"), "drop": d,
              "src_ancestors": 2.0, "src_min": 2} for f, d in drops.items()]
        )  # fmt: skip
        self.models = pd.DataFrame(
            [{"model": f"{f}-s{s}", "family": f, "drop": d, "drop_cand_acc": d,
              "drop_logprob": 10 * d, "src_ancestors": 2.0, "src_min": 2}
             for f, d in drops.items() for s in range(seeds)]
        )  # fmt: skip
        from induction.stats import min_perm_p

        floor = min_perm_p(seeds, seeds)
        self.comparisons = pd.DataFrame(
            [{"family": "lidas12", "measure": m, "p_holm": p, "min_p": floor}
             for m in ("drop", "drop[cand_acc]", "drop[logprob]")]
        )  # fmt: skip


#: The chance level of m for 12 random heads of an 8-layer model grown from 4 by copying one
#: layer four times (:func:`induction.replication.lineage_claim.chance_ancestors`).
CHANCE = 7.8


def _gates(testable: dict, seeds: int = 5, cand_acc: bool = True) -> pd.DataFrame:
    rows = []
    for fam, ok in testable.items():
        for seed in range(seeds):
            rows.append({"model": f"{fam}-s{seed}", "family": fam, "heads": ok,
                         "in_context": True, "above_chance": True, "saturated": False,
                         "testable": ok, "heads_before_growth": True, "chance_ancestors": CHANCE,
                         "pass_cand_acc": cand_acc, "testable_cand_acc": ok and cand_acc,
                         "pass_logprob": True, "testable_logprob": ok})  # fmt: skip
    return pd.DataFrame(rows)


def test_claims_read_only_gated_comparisons(gates_mod):
    gates, _ = gates_mod
    claim = "top-20% ablation costs LIDAS (lidas12) more than dense"
    rep = _Rep({"dense12": 0.05, "lidas12": 0.15}, p=0.01)
    ok = gates.claims(rep, _gates({"dense12": True, "lidas12": True})).set_index("claim")
    row = ok.loc[claim]
    assert row["verdict"] == "agree" and row["zoo"].startswith("cand_acc:")
    assert "all gates pass on cand_acc" in row["decided_by"]
    assert "ancestors" in ok.index[1] and ok.iloc[1]["verdict"] == "untestable here"
    assert "5 seeds allow no sign-flip p below 0.062" in ok.iloc[1]["decided_by"]
    against = gates.claims(_Rep({"dense12": 0.15, "lidas12": 0.05}, p=0.01),
                           _gates({"dense12": True, "lidas12": True}))  # fmt: skip
    assert against.iloc[0]["verdict"] == "disagree"
    failed = gates.claims(rep, _gates({"dense12": True, "lidas12": False})).iloc[0]
    assert failed["verdict"] == "untestable here"
    assert "5 of 10 fail induction heads" in failed["decided_by"]


def test_a_family_with_unmeasured_seeds_reads_pending(gates_mod):
    """An interim report (models found, not all measured): every claim reading a family with a
    model not measured yet says "pending" and names it, whatever the seeds measured so far
    would give; the figure beside it still describes them; claims of other families stand."""
    gates, _ = gates_mod
    rep = _Rep({"dense12": 0.05, "lidas12": 0.15}, p=0.01)
    rep.pending = ["lidas12-s5", "lidas12-s6"]
    table = gates.claims(rep, _gates({"dense12": True, "lidas12": True})).set_index("claim")
    drop = table.loc["top-20% ablation costs LIDAS (lidas12) more than dense"]
    assert drop["verdict"] == "pending" and drop["zoo"].startswith("cand_acc:")
    assert drop["decided_by"] == "not measured yet: lidas12-s5, lidas12-s6"
    assert (table["verdict"] == "pending").all() and "families" not in table.columns
    rep.pending = ["looped12-s0"]  # a family no claim here reads
    table = gates.claims(rep, _gates({"dense12": True, "lidas12": True}))
    assert "pending" not in set(table["verdict"])


def test_verdict_readout_falls_back_to_logprob(gates_mod):
    """cand_acc saturated (its gate fails) but the log-probability's passes: the verdict is
    read on the log-probability and says so; with neither, untestable, naming both gates."""
    gates, _ = gates_mod
    rep = _Rep({"dense12": 0.05, "lidas12": 0.15}, p=0.01)
    g = _gates({"dense12": True, "lidas12": True}, cand_acc=False)
    row = gates.claims(rep, g).iloc[0]
    assert row["verdict"] == "agree" and row["zoo"].startswith("logprob:")
    assert row["difference"] == "+1.000"  # the log-probability drops, 10x the others here
    g["pass_logprob"] = g["testable_logprob"] = False
    row = gates.claims(rep, g).iloc[0]
    assert row["verdict"] == "untestable here" and row["zoo"].startswith("cand_acc:")
    assert "fail the cand_acc gate" in row["decided_by"]
    assert "fail the logprob gate" in row["decided_by"]


def test_too_few_seeds_is_untestable_not_disagree(gates_mod):
    """One seed a family: every gate passes but no p can reach 0.05, so no verdict is read,
    whatever the difference."""
    gates, _ = gates_mod
    rep = _Rep({"dense12": 0.15, "lidas12": 0.05}, p=1.0, seeds=1)
    row = gates.claims(rep, _gates({"dense12": True, "lidas12": True}, seeds=1)).iloc[0]
    assert row["verdict"] == "untestable here"
    assert "1 and 1 seeds allow no permutation p below 1" in row["decided_by"]


#: The two grown arms' growth schedules (docs/zoo.md): the timing arms come from these.
FIRST_GROWTH = {"grown8c": "[1200, 1800]", "grown8ce": [267, 800]}  # JSON text, as measured


def _timing_case(m: dict) -> tuple:
    rep = _Rep({"dense8c": 0.1, "grown8c": 0.1, "grown8ce": 0.1}, p=0.5)
    rep.families["source_family"] = ["dense", "lidas", "lidas"]
    rep.models = pd.DataFrame(
        [{"model": f"{f}-s{s}", "family": f, "src_ancestors": v, "src_min": 2, "drop": 0.1,
          "growth_steps": FIRST_GROWTH[f]} for f, vs in m.items() for s, v in enumerate(vs)]
        + [{"model": "dense8c-s0", "family": "dense8c", "src_ancestors": 1.0, "src_min": 1,
            "drop": 0.1, "growth_steps": []}]
    )  # fmt: skip
    rows = []
    for fam, vs in m.items():
        for seed in range(len(vs)):
            rows.append({"model": f"{fam}-s{seed}", "family": fam, "heads": True,
                         "saturated": False, "testable": True, "chance_ancestors": CHANCE,
                         "heads_before_growth": fam == "grown8c",
                         "before_growth": 0.9 if fam == "grown8c" else 0.1})  # fmt: skip
    return rep, pd.DataFrame(rows)


TIMING = "lineage more concentrated when heads form before growth"


def test_growth_timing_compares_the_two_grown_arms_over_seeds(gates_mod):
    """The zoo's own question: grown8c (heads before growth) vs grown8ce (growth before heads),
    m over seeds on the permutation-inverted interval against the declared effect of interest
    (m = 2 against chance: 2 - 7.8); untestable when a seed has no heads or the seeds are too
    few for any p to reach 0.05."""
    gates, _ = gates_mod
    rep, g = _timing_case({"grown8c": [2, 2, 3, 2, 3], "grown8ce": [9, 10, 10, 9, 10]})
    row = gates.claims(rep, g).set_index("claim").loc[TIMING]
    assert row["verdict"] == "agree" and row["difference"] == "-7.20"
    assert "2.4 vs grown8ce" in row["zoo"]
    assert "-7.2 ancestors over 5 and 5 seeds" in row["decided_by"]
    assert "against the effect of interest -5.80" in row["decided_by"]
    rep, g = _timing_case({"grown8c": [8, 9, 9, 8, 9], "grown8ce": [9, 10, 10, 9, 10]})
    row = gates.claims(rep, g).set_index("claim").loc[TIMING]  # -0.8: excludes -5.8, not 0
    assert row["verdict"] == "disagree" and row["power"] != "–"
    rep, g = _timing_case({"grown8c": [2, 2, 3, 2, 3], "grown8ce": [9, 10, 10, 9, 10]})
    g.loc[0, "heads"] = False
    row = gates.claims(rep, g).set_index("claim").loc[TIMING]
    assert row["verdict"] == "untestable here" and "1 of 10" in row["decided_by"]
    g["heads"] = True
    g["heads_before_growth"] = True  # the growth-first arm formed heads first after all
    g.loc[g["family"] == "grown8ce", "before_growth"] = [0.63, 0.5, 0.41, 0.7, 0.45]
    row = gates.claims(rep, g).set_index("claim").loc[TIMING]
    assert row["verdict"] == "untestable here"
    assert (
        "5 of 5 seeds of grown8ce had a head before the first growth (strongest head up to it "
        "on the training monitor: 0.63, 0.50, 0.41, 0.70, 0.45)"
    ) in row["decided_by"]
    rep, g = _timing_case({"grown8c": [2, 2, 3], "grown8ce": [9, 10, 10]})
    row = gates.claims(rep, g).set_index("claim").loc[TIMING]
    assert row["verdict"] == "untestable here"
    assert "3 and 3 seeds allow no permutation p below 0.1" in row["decided_by"]


SECONDARY = "top-20% ablation costs LIDAS (lidas12) more than dense, on the seeds that pass"


def test_secondary_verdict_reads_the_passing_seeds_and_names_the_others(gates_mod):
    """docs/replication.md's amendment: the primary verdict stays untestable when one seed
    fails a gate; a secondary row reads the claim on the seeds that pass, with the same seeds
    rule, and names the seeds left out. Nobody failing adds no secondary row."""
    gates, _ = gates_mod
    rep = _Rep({"dense12": 0.05, "lidas12": 0.15}, p=0.01, seeds=6)
    rep.models.loc[rep.models["model"] == "lidas12-s5", "drop_cand_acc"] = -1.0  # a failed seed
    g = _gates({"dense12": True, "lidas12": True}, seeds=6)
    assert not any("seeds that pass" in c for c in gates.claims(rep, g)["claim"])
    g.loc[g["model"] == "lidas12-s5", ["in_context", "testable", "testable_cand_acc",
                                        "testable_logprob"]] = False  # fmt: skip
    table = gates.claims(rep, g).set_index("claim")
    assert table.iloc[0]["verdict"] == "untestable here"  # the primary rule is unchanged
    row = table.loc[SECONDARY]
    assert row["verdict"] == "agree" and "(5 seeds)" in row["zoo"] and "(6 seeds)" in row["zoo"]
    assert "lidas12 +0.150" in row["zoo"]  # the failed seed's drop is not in the mean
    assert "left out: lidas12-s5" in row["decided_by"] and "Holm" in row["decided_by"]
    rep.models.loc[rep.models["family"] == "lidas12", "drop_cand_acc"] = 0.0
    rep.models.loc[rep.models["model"].isin(["lidas12-s0", "lidas12-s1"]), "drop_cand_acc"] = 0.01
    assert gates.claims(rep, g).set_index("claim").loc[SECONDARY, "verdict"] == "disagree"

    logprob_all = _gates({"dense12": True, "lidas12": True}, seeds=6)
    logprob_all.loc[logprob_all["family"] == "lidas12", "testable_cand_acc"] = False
    claims = gates.claims(rep, logprob_all)["claim"]  # the primary reads the log-prob: no row
    assert not any("seeds that pass" in c for c in claims)
    few = _gates({"dense12": True, "lidas12": True}, seeds=6)
    for col in ("testable_cand_acc", "testable_logprob"):
        few.loc[few["family"] == "lidas12", col] = [True] + [False] * 5
    row = gates.claims(rep, few).set_index("claim").loc[SECONDARY]
    assert row["verdict"] == "untestable here"
    assert "6 and 1 passing seeds allow no permutation p below 0.14" in row["decided_by"]

    none = _gates({"dense12": True, "lidas12": False}, seeds=6)
    row = gates.claims(rep, none).set_index("claim").loc[SECONDARY]
    assert row["verdict"] == "untestable here" and "no seed of a family passes" in row["decided_by"]


def test_secondary_lineage_reads_the_seeds_with_heads_before_growth(gates_mod):
    """The source's lineage claim and the growth-timing question on the passing seeds: the
    seed without a head before growth leaves the early arm, the arm grown before heads keeps
    its seeds; the primary timing row disappears (the early arm is mixed), the secondary one
    reads the rest."""
    gates, _ = gates_mod
    rep, g = _timing_case({"grown8c": [2, 2, 3, 2, 3, 12], "grown8ce": [9, 10, 10, 9, 10]})
    g.loc[g["model"] == "grown8c-s5", "heads_before_growth"] = False
    table = gates.claims(rep, g).set_index("claim")
    primary = table.loc[TIMING]
    assert primary["verdict"] == "untestable here"
    assert "1 of 6 seeds of grown8c had no head before the first growth" in primary["decided_by"]
    timing = table.loc[f"{TIMING}, on the seeds that pass"]
    assert timing["verdict"] == "agree" and "grown8c 2.4 (5 seeds)" in timing["zoo"]
    assert "left out: grown8c-s5" in timing["decided_by"]
    lineage = table.loc["10 of the 12 strongest heads from 2 ancestors (grown8c), on the seeds "
                        "that pass"]  # fmt: skip
    assert lineage["verdict"] == "untestable here" and "m = 2.4 over 5 seeds" in lineage["zoo"]
    assert "5 seeds allow no sign-flip p below 0.062" in lineage["decided_by"]
    assert not any("(grown8ce), on the seeds" in c for c in table.index)  # grown before heads


def test_secondary_lineage_reads_only_seeds_with_a_copied_head_where_cards_record_it(gates_mod):
    """R4-lineage: a seed without a copied head before growth (R4-gate) is untestable, so the
    lineage row on the seeds that pass leaves it out even when every seed had some head before
    growth; a seed with no record of it (None: an earlier zoo's seed without its series) is
    kept, as the primary row keeps it, and with no seed recorded as failing there is no row."""
    gates, _ = gates_mod
    rep, g = _timing_case({"grown8c": [2, 2, 3, 2, 3, 2], "grown8ce": [9, 10, 10, 9, 10]})
    record = {"grown8c-s0": True, "grown8c-s4": False}
    g["copied_head_before_growth"] = [record.get(m) for m in g["model"]]
    g["copied_head"] = ""
    claim = "10 of the 12 strongest heads from 2 ancestors (grown8c), on the seeds that pass"
    lineage = gates.claims(rep, g).set_index("claim").loc[claim]
    assert "m = 2.2 over 5 seeds" in lineage["zoo"]
    assert lineage["decided_by"].endswith("left out: grown8c-s4")
    g["copied_head_before_growth"] = [True] + [None] * (len(g) - 1)
    assert claim not in set(gates.claims(rep, g)["claim"])


def test_secondary_never_reads_f1_and_holm_counts_every_drop_claim(gates_mod):
    """With readouts, a failed readout gate is not rescued by the F1/EM gate (the verdict
    readouts are cand_acc and logprob, docs/replication.md); Holm counts every drop claim, the
    ones the primary reads and the untestable ones as p = 1."""
    gates, _ = gates_mod
    rep = _Rep({"dense12": 0.05, "lidas12": 0.15}, p=0.01, seeds=6)
    g = _gates({"dense12": True, "lidas12": True}, seeds=6)
    g.loc[g["family"] == "lidas12", ["testable_cand_acc", "testable_logprob"]] = False
    row = gates.claims(rep, g).set_index("claim").loc[SECONDARY]
    assert row["verdict"] == "untestable here" and "cand_acc gates" in row["decided_by"]

    three = _Rep({"dense12": 0.05, "lidas12": 0.15, "looped12": 0.15}, p=0.01, seeds=6)
    three.families["source_family"] = ["dense", "lidas", "looped"]
    g = _gates({"dense12": True, "lidas12": True, "looped12": True}, seeds=6)
    g.loc[g["model"] == "lidas12-s5", ["testable_cand_acc", "testable_logprob"]] = False
    row = gates.claims(three, g).set_index("claim").loc[SECONDARY]
    assert "Holm 0.0043 over 2 drop claims" in row["decided_by"]  # 2 x p 0.0022


def test_timing_arms_come_from_the_schedule_and_unknown_seeds_stay_out(gates_mod):
    """A seed of the growth-first arm that formed a head early makes the primary untestable
    and leaves the secondary's late arm; so does one whose timing is unknown (None): arms are
    never flipped by a measurement."""
    gates, _ = gates_mod
    rep, g = _timing_case({"grown8c": [2, 2, 3, 2, 3], "grown8ce": [9, 10, 10, 9, 10, 2, 9]})
    assert gates.timing_arms(rep.models, ["grown8c", "grown8ce"]) == [("grown8c", "grown8ce")]
    g["heads_before_growth"] = g["heads_before_growth"].astype(object)  # None: no record
    g.loc[g["model"] == "grown8ce-s5", "heads_before_growth"] = True
    g.loc[g["model"] == "grown8ce-s6", "heads_before_growth"] = None
    table = gates.claims(rep, g).set_index("claim")
    assert "2 of 7 seeds of grown8ce had a head" in table.loc[TIMING, "decided_by"]
    second = table.loc[f"{TIMING}, on the seeds that pass"]
    assert "(5 seeds) vs grown8ce 9.6 (5 seeds)" in second["zoo"]
    assert "left out: grown8ce-s5, grown8ce-s6" in second["decided_by"]
    assert not any("(grown8ce), on the seeds" in c for c in table.index)


def test_round4_reads_one_timing_pair(gates_mod):
    """R4-lineage declares one growth-timing question, grown8rt against grown8rte; the
    schedule alone would also pair the middle-growth grown8r (first growth at step 4,800, as
    grown8rt) with the twin (step 800), an undeclared row the independent re-reading found.
    Outside round 4 every such pair stays."""
    gates, _ = gates_mod
    models = pd.DataFrame(
        [{"model": f"{f}-s0", "family": f, "growth_steps": steps}
         for f, steps in [("dense8r", "[]"), ("grown8r", "[4800, 6600, 8400, 10200]"),
                          ("grown8rt", "[4800, 6600, 8400, 10200]"),
                          ("grown8rte", "[800, 2400, 4800, 8000]")]]
    )  # fmt: skip
    grown = ["grown8r", "grown8rt", "grown8rte"]
    assert gates.timing_arms(models, grown) == [("grown8rt", "grown8rte")]
    second = models.replace({"dense8r": "dense8c", "grown8r": "grown8c", "grown8rt": "grown8ct",
                             "grown8rte": "grown8ce"})  # fmt: skip
    pairs = gates.timing_arms(second, ["grown8c", "grown8ct", "grown8ce"])
    assert pairs == [("grown8c", "grown8ce"), ("grown8ct", "grown8ce")]


def test_seeds_rule_counts_holm(gates_mod):
    """A comparison whose seeds allow a raw p below 0.05 but no Holm-adjusted one over the
    measure's comparisons is untestable, never "disagree": 3 against 5 seeds (smallest p 1/56)
    over four comparisons cannot pass 0.05; the secondary counts its drop claims the same way."""
    gates, _ = gates_mod
    from induction.stats import min_perm_p

    rep = _Rep({"dense12": 0.15, "lidas12": 0.05}, p=0.5, seeds=5)
    rep.models = rep.models[~rep.models["model"].isin(["lidas12-s3", "lidas12-s4"])]
    rep.comparisons = pd.DataFrame(
        [{"family": f, "measure": "drop[cand_acc]", "p_holm": 0.5, "min_p": min_perm_p(3, 5)}
         for f in ("lidas12", "x", "y", "z")]
    )  # fmt: skip
    g = _gates({"dense12": True, "lidas12": True}, seeds=5)
    g = g[~g["model"].isin(["lidas12-s3", "lidas12-s4"])]
    row = gates.claims(rep, g).iloc[0]
    assert row["verdict"] == "untestable here"
    assert "no Holm-adjusted p below 0.071 over 4 comparisons" in row["decided_by"]

    four = _Rep({"dense12": 0.05, "lidas12": 0.15, "looped12": 0.15, "looped13": 0.1}, p=0.5,
                seeds=5)  # fmt: skip
    four.families["source_family"] = ["dense", "lidas", "looped", "looped"]
    g = _gates({"dense12": True, "lidas12": True, "looped12": False, "looped13": False}, seeds=5)
    g.loc[g["model"] == "lidas12-s4", ["testable_cand_acc", "testable_logprob"]] = False
    g.loc[g["model"] == "dense12-s4", ["testable_cand_acc", "testable_logprob"]] = False
    table = gates.claims(four, g).set_index("claim")
    row = table.loc[SECONDARY]
    assert row["verdict"] == "untestable here"  # 4 vs 4: 0.029, with two claims at p = 1
    assert "no Holm-adjusted p below 0.086 over 3 drop claims" in row["decided_by"]


def _tvd_models(levels: dict[str, float], seeds: int = 5) -> pd.DataFrame:
    return pd.DataFrame(
        [{"model": f"{f}-s{s}", "family": f, "tvd_clean": v + 0.001 * s}
         for f, v in levels.items() for s in range(seeds)]
    )  # fmt: skip


def test_regbench_order_is_read_pairwise_over_seeds(gates_mod):
    """LIDAS < looped < dense as pairs over seeds, each on its interval at 0.05 / pairs against
    the source's difference for that pair: agree only when every pair does; a pair whose
    interval excludes the source's difference disagrees; one holding 0 and it is inconclusive."""
    gates, _ = gates_mod
    kinds = {"dense": ["d"], "lidas": ["g"], "looped": ["l"]}
    verdict, why, cells = gates._regbench_order(_tvd_models({"g": 0.1, "l": 0.2, "d": 0.3}), kinds)
    assert verdict == "agree" and "3 of 3 pairs agree" in why and cells["difference"] == "-0.100"
    verdict, why, cells = gates._regbench_order(_tvd_models({"g": 0.3, "l": 0.2, "d": 0.1}), kinds)
    assert verdict == "disagree" and "3 of 3 pairs disagree" in why and "g - d +0.200" in why
    assert cells["difference"] == "+0.100"  # the first pair that disagrees: g - l
    noisy = _tvd_models({"g": 0.137, "l": 0.137, "d": 0.137})
    noisy["tvd_clean"] += [0.0, 0.03, -0.03, 0.02, -0.02] * 3  # every pair holds 0 and source
    verdict, why, cells = gates._regbench_order(noisy, kinds)
    assert verdict == "inconclusive" and "(source -0.018)" in why
    verdict, why, _ = gates._regbench_order(_tvd_models({"g": 0.1, "l": 0.2, "d": 0.3}, 1), kinds)
    assert verdict == "untestable here" and "allow no p below 1" in why
    four = _tvd_models({"g": 0.1, "l": 0.2, "d": 0.3}, 4)  # each pair p >= 2/70 > 0.05 / 3
    assert gates._regbench_order(four, kinds)[0] == "untestable here"
    verdict, why, _ = gates._regbench_order(four, {"dense": ["d"], "lidas": ["g"]})
    assert verdict == "untestable here" and "every kind" in why


def test_grown8c_lineage_is_untestable_because_growth_copies_no_formed_head(gates_mod):
    """R4-gate on the shipped default model: its heads sat in initial layer 3 at the first
    growth (step 1200), every growth copies initial layer 1, so 10 heads need 10 ancestors."""
    gates, _ = gates_mod
    gate = gates.copied_head_gate("grown8c-s0")
    assert gate.passed is False
    assert "layers [3]" in gate.detail and "copies initial layers [1]" in gate.detail
    assert gate.detail.endswith("for 10 heads: 10")
    assert gates.copied_head_gate("dense8c-s0") is None
    # the lineage claim names the gate when a seed's copied layer held no formed head
    rep = _Rep({"dense12": 0.05, "lidas12": 0.15}, p=0.01)
    table = _gates({"dense12": True, "lidas12": True})
    table["copied_head_before_growth"] = [None] * 5 + [True] * 4 + [False]
    table["copied_head"] = "heads >= 0.4 in layers [3]; growth copies initial layers [1]"
    row = gates.claims(rep, table).iloc[1]
    assert "ancestors" in row["claim"] and row["verdict"] == "untestable here"
    assert "lidas12-s4 fails copied head before growth" in row["decided_by"]


def test_a_readout_verdict_names_only_the_gates_that_decide_it(gates_mod):
    """With readouts, the task metric's own suite gate (F1/EM above chance) decides nothing, so
    an untestable row never names it; the independent re-reading found "9 of 12 fail clean
    above chance" beside the in-context gate that decided a round-4 dry run's row."""
    gates, _ = gates_mod
    rep = _Rep({"dense12": 0.05, "lidas12": 0.15}, p=0.01)
    g = _gates({"dense12": True, "lidas12": True})
    g["above_chance"] = False
    assert gates.claims(rep, g).iloc[0]["verdict"] == "agree"
    g.loc[0, ["in_context", "testable_cand_acc", "testable_logprob"]] = False
    row = gates.claims(rep, g).iloc[0]
    assert row["verdict"] == "untestable here"
    assert row["decided_by"] == "1 of 10 fail in-context probe"


def test_round4_reads_its_declared_claims_on_its_declared_scale(gates_mod):
    """R8 (docs/replication.md): a report of round-4 arms reads three drop claims (grown8r,
    grown8rt, looped8r against dense8r; Holm's m = 3), never the twin grown8rte's, and each
    word comes from the readout's declared scale (cand_acc: the difference)."""
    gates, _ = gates_mod
    from induction.replication.models import drop_claim_families

    arms = {"dense8r": 0.05, "grown8r": 0.15, "grown8rt": 0.15, "grown8rte": 0.15,
            "looped8r": 0.25}  # fmt: skip
    rep = _Rep(arms, p=0.01, seeds=6)
    rep.families["source_family"] = ["dense", "lidas", "lidas", "lidas", "looped"]
    rep.models["drop_cand_acc"] += [0.01 * (s % 3) for s in range(len(rep.models))]
    table = gates.claims(rep, _gates(dict.fromkeys(arms, True), seeds=6))
    drops = table[table["claim"].str.startswith("top-20% ablation costs")]
    named = [c.split("(")[1].split(")")[0] for c in drops["claim"]]
    assert named == ["grown8r", "grown8rt", "looped8r"]
    assert all("difference agree (declared)" in c for c in drops["scales"])
    assert set(drops["verdict"]) == {"agree"}
    assert drop_claim_families(arms) == ["grown8r", "grown8rt", "looped8r"]
    g = _gates(dict.fromkeys(arms, True), seeds=6)
    failing = g["model"] == "grown8rt-s0"
    g.loc[failing, ["in_context", "testable_cand_acc", "testable_logprob"]] = False
    table = gates.claims(rep, g)
    second = table[table["claim"].str.endswith("more than dense, on the seeds that pass")]
    assert len(second) == 1  # the seeds that pass are read on the declared scale too
    word = second.iloc[0]["scales"].split(",")[0]
    assert word.startswith("difference ") and word.endswith(" (declared)")
    assert second.iloc[0]["verdict"] == word.removeprefix("difference ").split(" ")[0]
    second = ["dense8c", "grown8c", "grown8ce", "looped8c", "looped8cp"]  # A9: every arm
    assert drop_claim_families(second) == second[1:]


def test_gates_read_a_models_dir_folder_not_the_zoo(gates_mod, tmp_path):
    """``--models-dir`` (a round's models before they ship): the card, duplication log and
    checkpoints are read from the model's folder; before, the gates looked the name up in the
    zoo and failed for any model not shipped."""
    gates, _ = gates_mod
    from induction.models.registry import local_model_path

    folder = tmp_path / "grown8q-s0"
    folder.symlink_to(local_model_path("grown8c-s0"))
    assert gates._folder(str(folder)) == folder and gates._folder("grown8q-s0") is None
    assert gates._card(str(folder))["name"] == "grown8c-s0"
    shipped, elsewhere = gates.copied_head_gate("grown8c-s0"), gates.copied_head_gate(str(folder))
    assert (elsewhere.passed, elsewhere.detail) == (shipped.passed, shipped.detail)


LINEAGE = "10 of the 12 strongest heads from 2 ancestors (grown8c)"


def test_lineage_claim_reads_m_against_chance_on_its_interval(gates_mod):
    """The source's lineage claim per grown arm: each seed's m minus the chance level (7.8),
    on the sign-flip interval (6 seeds reach 2/64): *agree* when it lies below 0 (more
    concentrated than random heads), *disagree* when it excludes the source's 2 - 7.8 but
    not 0, *inconclusive* when it holds both; the row carries its interval cells."""
    gates, _ = gates_mod
    cases = {
        "agree": [2, 2, 3, 2, 3, 2],
        "disagree": [7, 8, 9, 8, 7, 8],
        "inconclusive": [2, 9, 3, 9, 2, 9],
    }
    for expected, ms in cases.items():
        rep, g = _timing_case({"grown8c": ms, "grown8ce": [9, 10, 10, 9, 10, 9]})
        row = gates.claims(rep, g).set_index("claim").loc[LINEAGE]
        assert row["verdict"] == expected, (expected, row["decided_by"])
        assert "chance 7.8" in row["zoo"] and "sign-flip interval" in row["decided_by"]
        assert row["difference"] == f"{np.mean(ms) - CHANCE:+.2f}"
    rep, g = _timing_case({"grown8c": cases["agree"], "grown8ce": [9, 10, 10, 9, 10, 9]})
    g["chance_ancestors"] = float("nan")  # no duplication log
    row = gates.claims(rep, g).set_index("claim").loc[LINEAGE]
    assert row["verdict"] == "untestable here" and "no duplication log" in row["decided_by"]
