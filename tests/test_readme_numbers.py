"""Every number README states comes from a committed result file (issue #41 item 7): each test
recomputes README's figures from the file README names, formats them as README writes them,
and requires README to say exactly that. A result file rewritten without README, or README
edited without its file, fails here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


@pytest.fixture(scope="module")
def readme() -> str:
    """README as one line of words: its sentences wrap anywhere."""
    return " ".join((ROOT / "README.md").read_text().split())


def _says(readme: str, *phrases: str) -> None:
    for phrase in phrases:
        assert " ".join(phrase.split()) in readme, f"README does not say {phrase!r}"


_WORDS = {0: "none", 1: "one", 2: "two", 3: "all"}


def _listed(items: list[str]) -> str:
    """English list: "1, 5 and 10"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _mean_row(path: Path, task: str) -> dict:
    rows = json.loads(path.read_text())["rows"]
    return next(r for r in rows if r["task"] == task)


def test_smollm2_circuit_numbers(readme):
    """The four strongest induction heads' previous-token partner and how much removing it
    from their keys costs (`induction circuits smollm2 ... --out .../circuits.csv`)."""
    circuits = pd.read_csv(RESULTS / "smollm2" / "circuits.csv")
    best = circuits[circuits.partner_rank == 1]
    assert best.induction_head.nunique() == 4 and best.partner.nunique() == 1
    partner = best.partner.iloc[0]
    _says(
        readme,
        "its four strongest induction heads share one previous-token partner, "
        f"{partner} (previous-token score {best.partner_prev_token.iloc[0]:.2f})",
        f"cuts their induction scores by {best.drop_key.min():.2f}-{best.drop_key.max():.2f}",
        "benchmarks/results/smollm2/circuits.csv",
    )


def test_attribution_patching_numbers(readme):
    """AtP against single-head ablation on SmolLM2 (correlations, and the heads among the
    three most important whose sign it gets wrong) and on the first zoo's grown model."""
    effects = pd.read_csv(RESULTS / "smollm2" / "effects.csv")
    spearman = effects["effect"].corr(effects["atp"], method="spearman")
    pearson = effects["effect"].corr(effects["atp"])
    top = effects.sort_values("rank").head(3)
    wrong = [f"L{r.layer}H{r.head}" for r in top.itertuples() if (r.effect > 0) != (r.atp > 0)]
    _says(
        readme,
        f"(Spearman {spearman:.2f}; Pearson {pearson:.2f}",
        f"it gets the sign of {' and '.join(wrong)}, {_WORDS[len(wrong)]} of the three most "
        "important heads, wrong",
    )
    grown = [pd.read_csv(f) for f in sorted((RESULTS / "effects").glob("grown-*.csv"))]
    rhos = [g["effect"].corr(g["atp"], method="spearman") for g in grown]
    assert len(rhos) == 4
    _says(readme, f"Spearman {min(rhos):.2f}-{max(rhos):.2f}", "four settings in")


def test_fv_comparison_numbers(readme):
    """The FV heads against the induction heads at every fraction, with the controls' count
    (`python benchmarks/fv_comparison.py smollm2 ...`)."""
    record = json.loads((RESULTS / "fv" / "SmolLM2-135M-Instruct.Q4_1.json").read_text())
    arms = pd.DataFrame(record["arms"])
    drops = {
        score: [f"{d:+.2f}" for d in arms[arms.score == score].sort_values("frac")["drop"]]
        for score in ("fv", "induction")
    }
    assert len(drops["fv"]) == len(drops["induction"]) == len(record["settings"]["fracs"])
    for fv, ind in zip(drops["fv"], drops["induction"], strict=True):
        assert fv in readme and ind in readme, f"README lacks the drops {fv} / {ind}"
    controls = record["settings"]["controls"]
    _says(
        readme,
        f"Each arm has {controls} uniform and {controls} layer-shaped",
        f"--controls {controls}",
    )
    floor = 1 / (controls + 1)
    _says(readme, f"no p can go below 1/{controls + 1} ({floor:.2f})")
    testable = arms[~arms.verdict.str.startswith("untestable")]
    at_floor = testable[(testable.score == "fv") & (testable.p_ctrl <= floor + 1e-9)]
    fracs = [f"{f * 100:g}" for f in sorted(at_floor.frac)]
    _says(readme, f"the FV heads reach that floor against\nuniform controls at {_listed(fracs)}%")
    induction = testable[testable.score == "induction"].p_ctrl
    assert (induction > floor + 1e-9).all()
    _says(readme, f"the induction heads do not (p {induction.min():.2f}-{induction.max():.2f})")
    _says(readme, f"over the {len(testable)} testable cells", f"(0.05/{len(testable)})")
    assert 0.05 / len(testable) < floor, "the README says no cell passes Holm's first step"


@pytest.mark.parametrize(
    ("file", "row", "spec", "phrase"),
    [
        (
            "words-frac0.2.json",
            "MEAN[cand_acc]",
            "+.2f",
            "{} against {} uniform and {} layer-shaped",
        ),
        ("paper19-f33441-frac0.2.json", "MEAN[logprob]", "+.1f", "{} nats against {} and {}"),
    ],
)
def test_real_model_numbers(readme, file, row, spec, phrase):
    """SmolLM2's top-20% drop against both kinds of random head sets, with the smallest p
    20 sets allow (`python benchmarks/real_model.py`)."""
    r = _mean_row(RESULTS / "smollm2" / file, row)
    drop, uniform, shaped = (format(r[k], spec) for k in ("drop", "ctrl_mean", "shaped_mean"))
    _says(readme, phrase.format(drop, uniform, shaped))
    p_floor = 1 / (1 + 20)
    assert math.isclose(r["p_ctrl"], p_floor) and math.isclose(r["p_shaped"], p_floor)
    _says(readme, f"(p {p_floor:.2f}, the smallest 20 sets allow)")


def test_default_model_ablation_numbers(readme):
    """`induction ablate --frac 0.2` on the default model: tasks above chance on each task's own
    metric (R4-pilot's rule), the one that is not, and the evaluation time README quotes."""
    report = json.loads((RESULTS / "default" / "grown8rt-s0-ablate.json").read_text())
    own = {
        g["task"]: g["above_chance"]
        for g in report["meta"]["gates"]
        if g["readout"] not in ("cand_acc", "logprob")
    }
    below = sorted(t for t, above in own.items() if not above)
    _says(
        readme,
        f"({report['meta']['evaluation_seconds']:.0f} s evaluating",
        f"On all {len(own)} `zoo4g` tasks it is above chance on {len(own) - len(below)} "
        f"({', '.join(f'`{t}`' for t in below)} is not;",
    )


def test_smollm2_ablation_time(readme):
    """The quoted time of a small SmolLM2 ablation is the one its committed report records."""
    report = json.loads((RESULTS / "default" / "smollm2-antonyms-ablate.json").read_text())
    assert report["meta"]["model"].startswith("SmolLM2")
    _says(
        readme,
        f"({report['meta']['evaluation_seconds']:.0f} s evaluating after",
        "benchmarks/results/default/smollm2-antonyms-ablate.json",
    )


def test_default_model_growth_numbers(readme):
    """The default model's induction heads and what growth made of them, from its card and its
    committed copied-head table (`python benchmarks/copied_heads.py`)."""
    from induction.dynamics.copies import copied_heads_of_sweep
    from lineage.log import DuplicationLog

    folder = ROOT / "induction" / "zoo" / "models" / "grown8rt-s0"
    card = json.loads((folder / "card.json").read_text())
    first_full = next(
        c
        for c in card["checkpoints"]
        if c.get("head_scores") and len(_heads(c["head_scores"])) == card["heads_above_0.4_d32"]
    )
    assert {layer for layer, _ in _heads(first_full["head_scores"])} == {3}
    table = pd.read_csv(RESULTS / "copied_heads" / "grown8rt-s0.csv")
    induction = table[table.role_at_copy == "induction"]
    kept = induction[induction["class"] == "keeps its role"]
    lost = induction[induction["class"] == "loses it"]
    _says(
        readme,
        f"Its {len(kept)} induction heads ({kept.induction_at_end.min():.2f}-"
        f"{kept.induction_at_end.max():.2f}) formed in initial layer 3 by step "
        f"{first_full['step']:,}",
        f"of the {len(induction)} descendants of the {kept['head'].nunique()} heads, the "
        f"{len(kept)} left in place keep the role and {len(lost)} lose it",
    )
    assert (kept.copy_index == 0).all() and (lost.copy_index > 0).all()
    # the copy the first growth adds, at the checkpoint right after it (before any training)
    log = DuplicationLog.load(folder / "duplication_log.json")
    result = copied_heads_of_sweep(RESULTS / "copied_heads" / "sweeps" / "grown8rt-s0", log)
    series = result.series
    first = series[
        series.descendant.str.startswith("L3H")
        & series.descendant.str.endswith(tuple(f"-> L4H{h}" for h in range(8)))
    ]
    at_growth = first[first.step == first.step.min()].groupby("descendant")["induction"].last()
    assert len(at_growth) == 8
    _says(readme, f"(<= {math.ceil(at_growth.max() * 100) / 100:.2f} before any training on it)")


def _heads(scores: list[list[float]]) -> list[tuple[int, int]]:
    """The (layer, head) pairs of a card's per-head scores at or above the induction threshold."""
    from induction import INDUCTION_THRESHOLD

    return [
        (la, h)
        for la, row in enumerate(scores)
        for h, s in enumerate(row)
        if s >= INDUCTION_THRESHOLD
    ]


def test_chunked_scan_memory(readme):
    """SmolLM2 at 8k tokens, every layer: the peak beyond the weights."""
    record = json.loads((RESULTS / "scan_memory_8k_all_layers.json").read_text())
    (row,) = record["rows"]
    _says(readme, f"(SmolLM2 at 8k tokens: {row['chunked_peak_bytes'] / 2**20:.0f} MiB beyond")


# Every generated replication block, with the store it is rendered from: the current zoo's
# in README (summary) and docs/results.md, each earlier zoo's in its record.
REPLICATION_BLOCKS = (
    ("README.md", "zoo4", "summary"),
    ("docs/results.md", "zoo4", "results"),
    ("docs/zoo3-record.md", "zoo3", "results"),
)


@pytest.mark.parametrize(("doc", "store", "kind"), REPLICATION_BLOCKS)
def test_the_replication_blocks_regenerate_from_the_committed_results(tmp_path, doc, store, kind):
    """Each generated replication block is what `benchmarks/replication.py --from-results`
    writes from its committed store (`benchmarks/results/<store>/`), character for character."""
    import re

    from induction.replication import results as replication

    rep = replication.load_results(RESULTS / store)
    assert rep is not None and not rep.gates.empty
    if kind == "summary":
        start, update, args = (
            replication.SUMMARY_START,
            replication.update_summary,
            ("docs/results.md#replication",),
        )
    else:
        figure = replication.figure_link(ROOT / doc, RESULTS / store)  # the store's own figure
        start, update, args = replication.README_START, replication.update_readme, (figure,)
    text = (ROOT / doc).read_text()
    block = text.split(start, 1)[1]
    command = re.search(r"Generated by `([^`]+)`", block)
    assert command is not None, f"{doc}'s block names no command"
    out_dir = re.search(r"--out-dir (\S+)", command.group(1))
    if out_dir is not None:
        assert out_dir.group(1) == f"benchmarks/results/{store}", (
            f"{doc}'s block names another store"
        )
    copy = tmp_path / Path(doc).name
    copy.write_text(text)
    update(copy, rep, *args, command=command.group(1))
    assert copy.read_text() == text, f"{doc}'s replication block is stale"


def test_round4_reading_quotes_the_stored_verdict():
    """docs/results.md's hand-written reading of round 4 and the README's sentences quote the
    stored reading (`benchmarks/results/zoo4/replication.json`): each drop claim's word,
    difference and adjusted interval on the seeds that pass, and the seeds the probe fails."""
    import re

    reading = json.loads((RESULTS / "zoo4" / "replication.json").read_text())
    results = (ROOT / "docs" / "results.md").read_text()
    results = results.split("<!-- replication:end -->", 1)[1].split("### The first zoo", 1)[0]
    results = " ".join(results.split())
    readme = " ".join((ROOT / "README.md").read_text().split())
    passing = [c for c in reading["claims"] if re.match(r"top-20% .*seeds that pass$", c["claim"])]
    assert len(passing) == 3
    for claim in passing:
        family = re.search(r"\((\w+)\)", claim["claim"]).group(1)
        adjusted = claim["interval"].split("adjusted ", 1)[1]
        _says(results, f"Difference {claim['difference']}, adjusted {adjusted}")
        _says(results, f"so *{claim['verdict']}*")
        _says(results, f"`{family}`")
        _says(results, claim["ratio"])
    failing = sorted(g["model"] for g in reading["gates"] if not g["in_context"])
    assert len(failing) == 6, failing
    _says(readme, "six of the 30 seeds fail the in-context probe")
    powers = [float(c["power"].split("(")[1].rstrip(")")) for c in passing]
    _says(results, f"power {min(powers):.2f}-{max(powers):.2f} for the source's effects")
    _says(readme, f"(power {min(powers):.2f}-{max(powers):.2f})")
