"""benchmarks/replication.py (package induction/replication/): the parts that need no
model (discovery, counts, statistics across models and seeds, tables, verdict, the generated
block of docs/results.md, the JSON round trip)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rep_mod(load_benchmark):
    return load_benchmark("replication")


def test_ancestor_counts_grown_like(rep_mod):
    # 4 layers x 2 heads; layers 2 and 3 are copies of 0 and 1 (each ancestor: 2 descendants)
    primary = {(la, h): (la % 2, h) for la in range(4) for h in range(2)}
    top = [(0, 0), (2, 0), (1, 1)]  # two copies of L0H0 and L1H1
    c = rep_mod.ancestor_counts(primary, top, samples=200)
    assert c["top_n"] == 3
    assert (c["top_ancestors"], c["ancestor_pool"], c["min_ancestors"]) == (2, 4, 2)
    assert (c["top_layers"], c["layer_pool"], c["min_layers"]) == (2, 2, 1)
    # 3 random heads of 8 with 2 per ancestor: E[distinct] = 4 * (1 - C(6,3)/C(8,3)) = 4 * 36/56
    assert c["random_ancestors"] == pytest.approx(4 * 36 / 56, abs=0.15)


def test_ancestor_counts_dense_is_trivial(rep_mod):
    heads = [(la, h) for la in range(3) for h in range(4)]
    c = rep_mod.ancestor_counts({h: h for h in heads}, heads[:5], samples=50)
    assert c["top_ancestors"] == c["min_ancestors"] == 5
    assert c["random_ancestors"] == 5.0


def test_source_headline(rep_mod):
    # 12 heads, each ancestor with 3 descendants; the top 12 ranked: 6 from A, 4 from B, 2 more
    a, b = (0, 0), (0, 1)
    ranked = [(1, i) for i in range(6)] + [(2, i) for i in range(4)] + [(3, 0), (3, 1)]
    primary = {h: a for h in ranked[:6]} | {h: b for h in ranked[6:10]}
    primary |= {(3, 0): (0, 2), (3, 1): (0, 3)}
    h = rep_mod.source_headline(primary, ranked, top=12, cover=0.8)
    assert (h["src_top"], h["src_heads"], h["src_ancestors"], h["src_from2"]) == (12, 10, 2, 10)
    assert h["src_min"] == 2  # ceil(10 / 6)
    assert h["src_copied"] == 10  # (3, 0) and (3, 1) are their ancestors' only descendants


def test_discover_new_zoo_folders(rep_mod, tmp_path):
    """Families are folder names minus the seed, mapped to the source's; unfinished
    fixed-protocol runs (train_config.json, no card.json yet) are skipped."""
    for name, files in {
        "looped8p-s0": ["config.json", "card.json", "train_config.json"],
        "dense8-s1": ["config.json", "card.json", "train_config.json"],
        "dense8-s0": ["config.json"],
        "lidas8-s0": ["config.json", "card.json"],
        "lidas8-s1": ["train_config.json", "config.json"],  # still training
        "notes": ["config.json"],
        "mystery-s0": ["config.json"],  # no source counterpart
    }.items():
        (tmp_path / name).mkdir()
        for f in files:
            (tmp_path / name / f).write_text("{}")
    refs = rep_mod.discover(models_dir=tmp_path)
    assert [r.name for r in refs] == ["dense8-s0", "dense8-s1", "lidas8-s0", "looped8p-s0"]
    assert [r.source_family for r in refs] == ["dense", "dense", "lidas", "looped"]
    assert (
        rep_mod.source_family("grown") == "lidas" and rep_mod.source_family("looped8") == "looped"
    )
    assert [r.name for r in rep_mod.discover(["lidas8"], models_dir=tmp_path)] == ["lidas8-s0"]


def _models(rep_mod, seeds: int = 3) -> pd.DataFrame:
    rows = []
    for fam, drop, ctrl, tvd in (
        ("dense8", 0.3, 0.1, 0.45),
        ("lidas8", 0.5, 0.2, 0.40),
        ("looped8", 0.4, 0.3, 0.42),
    ):
        for seed in range(seeds):
            d = drop + 0.01 * seed
            rows.append(
                {
                    "model": f"{fam}-s{seed}",
                    "family": fam,
                    "source_family": rep_mod.source_family(fam),
                    "seed": seed,
                    "layers": 8,
                    "heads": 64,
                    "d_model": 64,
                    "vocab": 128,
                    "formed_step": None,
                    "train_flops": 1e13 * (0.84 if fam == "lidas8" else 1.0),
                    "max_induction": 0.6,
                    "induction_heads": 3,
                    "top_n": 13,
                    "top_ancestors": 5 + seed % 2,
                    "ancestor_pool": {"dense8": 64, "lidas8": 32, "looped8": 16}[fam],
                    "min_ancestors": 4,
                    "random_ancestors": 6.3,
                    "top_layers": 2,
                    "layer_pool": 4,
                    "min_layers": 1,
                    "random_layers": 3.5,
                    "src_top": 12,
                    "src_heads": 10,
                    "src_ancestors": 10 if fam == "dense8" else 4,
                    "src_from2": 2 if fam == "dense8" else 6,
                    "src_min": 10 if fam == "dense8" else 5,
                    "top_above": 5,
                    "clean": 0.7,
                    "drop": d,
                    "ci_lo": d - 0.05,
                    "ci_hi": d + 0.05,
                    "ctrl_mean": ctrl,
                    "ctrl_std": 0.05,
                    "z": (d - ctrl) / 0.05,
                    "p_perm": 1 / 101 if fam != "looped8" else 0.2,
                    "excess": d - ctrl,
                    "ctrl_drops": json.dumps([ctrl - 0.05, ctrl + 0.05]),
                    "drop:math": d / 2,
                    "clean:math": 0.3,
                    "ctrl:math": ctrl / 2,
                    "drop:primitives": d,
                    "clean:primitives": 0.9,
                    "ctrl:primitives": ctrl,
                    "tvd_clean": tvd,
                    "tvd_drop": 0.05,
                    "tvd_ctrl": 0.02,
                }
            )
    return pd.DataFrame(rows)


def _rep(rep_mod, settings=None, **kw):
    return rep_mod.Replication.from_models(
        _models(rep_mod), settings or rep_mod.Settings(), seconds=60.0, **kw
    )


def test_statistics_across_models_and_seeds(rep_mod):
    rep = _rep(rep_mod)
    m = rep.models.set_index("model")
    assert m.loc["lidas8-s0", "flops_vs_dense"] == pytest.approx(0.84)
    # Holm over 9 models: the six at 1/101 -> 9/101 for the smallest, monotone after
    assert m.loc["dense8-s0", "p_holm"] == pytest.approx(9 / 101)
    assert m.loc["looped8-s2", "p_holm"] == pytest.approx(0.6)  # 3 x 0.2
    fam = rep.families.set_index("family")
    assert list(rep.families.family) == ["dense8", "lidas8", "looped8"]
    assert fam.loc["lidas8", "drop"] == pytest.approx(0.51)
    assert fam.loc["looped8", "source_drop"] == 0.28 and fam.loc["lidas8", "source_tvd"] == 0.119
    assert fam.loc["dense8", "n_significant"] == 0  # Holm 9/101 > 0.05
    c = rep.comparisons.set_index(["family", "measure"])
    assert c.loc[("lidas8", "drop"), "diff"] == pytest.approx(0.2)
    assert c.loc[("lidas8", "drop"), "p_perm"] == pytest.approx(0.1)  # 2 / C(6, 3): exact
    assert c.loc[("lidas8", "drop"), "min_p"] == pytest.approx(0.1)
    assert c.loc[("looped8", "excess"), "diff"] == pytest.approx(0.1 - 0.2)
    assert c.loc[("lidas8", "drop"), "source_diff"] == pytest.approx(0.10)
    assert c.loc[("lidas8", "drop"), "p_holm"] == pytest.approx(0.2)  # Holm over 2


def test_pooled_rank_p_is_exact(rep_mod):
    """Against every equally likely placement of the top set among each model's controls."""
    import itertools

    drops = [0.30, 0.12, 0.05]
    controls = [[0.1, 0.2, 0.4], [0.0, 0.1, 0.2, 0.3], [0.01, 0.02]]
    u = [sum(c >= d for c in cs) for d, cs in zip(drops, controls)]  # 1, 2, 0
    sizes = [len(c) + 1 for c in controls]
    hits = sum(sum(v) <= sum(u) for v in itertools.product(*(range(s) for s in sizes)))
    total = sizes[0] * sizes[1] * sizes[2]
    assert rep_mod.pooled_rank_p(drops, controls) == pytest.approx(hits / total)
    # one model: its own permutation p, (1 + u) / (1 + n)
    assert rep_mod.pooled_rank_p([0.12], [controls[1]]) == pytest.approx(3 / 5)
    # five models that each beat all 100 controls: far below what one model can reach
    p5 = rep_mod.pooled_rank_p([1.0] * 5, [[0.0] * 100] * 5)
    assert p5 == pytest.approx(101.0**-5) and p5 < 1e-9
    # ties count against the top set (conservative); no controls: undefined
    assert rep_mod.pooled_rank_p([0.2], [[0.2, 0.2, 0.2]]) == 1.0
    assert rep_mod.pooled_rank_p([0.2], [[]]) != rep_mod.pooled_rank_p([0.2], [[]])


def test_family_pooled_test_in_tables(rep_mod):
    rep = _rep(rep_mod)
    fam = rep.families.set_index("family")
    # dense8: 3 seeds, each drop above both of its 2 controls -> (1/3)^3; Holm over 3 families
    assert fam.loc["dense8", "p_pooled"] == pytest.approx(1 / 27)
    assert fam.loc["dense8", "p_pooled_holm"] >= fam.loc["dense8", "p_pooled"]
    assert "all seeds vs random heads: exact p (Holm)" in rep.markdown()
    assert "together" in "\n".join(rep_mod.verdict(rep))


def test_tables_and_verdict(rep_mod):
    rep = _rep(rep_mod)
    md = rep.markdown()
    assert md.count("\n| lidas8-s") == 3 and "| lidas8 (LIDAS) | 3 |" in md
    assert "m = 2 (3B LIDAS)" in md and "LIDAS 0.74 (26% fewer)" in md
    assert "group mean drop: math (clean)" in md
    text = "\n".join(rep_mod.verdict(rep))
    assert "Order of the drops: dense8 (+0.310) < looped8 (+0.410) < lidas8 (+0.510)" in text
    assert "the source's order is dense8 < lidas8 < looped8" in text
    assert (
        "lidas8 − dense8 across seeds: drop +0.200 (source +0.10; the source's direction)" in text
    )
    assert "smallest possible 0.100" in text  # the lidas8 - dense8 comparison above
    # 3 vs 3 seeds: the design sentence says per comparison that 0.05 is out of reach
    assert "lidas8 3 vs 3 (smallest possible p 0.100, so it cannot reach 0.05)" in text
    assert "lidas8 0.84x dense (16% fewer; source 26% fewer)" in text
    assert "RegBench TVD" in text and "the zoo's order is the source's" in text
    models = _models(rep_mod)
    models.loc[models["family"] == "dense8", "tvd_clean"] = 0.30  # dense now the best
    flipped = "\n".join(rep_mod.verdict(rep_mod.Replication.from_models(models, rep.settings)))
    assert "lower is better): dense8 0.300 ± 0.000, lidas8 0.400" in flipped
    assert "the zoo's order differs from the source's (lidas8 < looped8 < dense8 there)" in flipped
    assert "lidas8: 10 of the 12 strongest heads descend from 4.0" in text
    # 20 controls (round 4's default): 1/21 per model, Holm over 9 -> 0.429 > 0.05, said as such
    assert "smallest adjusted p is 0.429 (> 0.05" in text
    # 100 controls (the second zoo's): 1/101, Holm over 9 -> 0.089
    hundred = rep_mod.Replication.from_models(_models(rep_mod), rep_mod.Settings(controls=100))
    assert "smallest adjusted p is 0.089 (> 0.05" in "\n".join(rep_mod.verdict(hundred))


def test_a_record_says_why_its_measurements_are_read_as_stored(rep_mod):
    """Round 4 is a record by design (one frozen measuring commit, docs/replication.md "How
    round 4 is measured"); an earlier zoo because its measuring code changed since."""
    earlier = rep_mod.readme_block(_rep(rep_mod, record=True))
    assert "(readouts, layer-shaped controls, gates), so a rerun cannot reproduce" in earlier
    assert "7e62c22" not in earlier
    models = _models(rep_mod)
    arms = {"dense8": "dense8r", "lidas8": "grown8rt", "looped8": "looped8r"}
    models["family"] = models["family"].map(arms)
    models["model"] = [f"{f}-s{s}" for f, s in zip(models["family"], models["seed"])]
    round4 = rep_mod.Replication.from_models(models, rep_mod.Settings(), record=True)
    text = rep_mod.readme_block(round4)
    assert "every model was measured from one commit, `7e62c22`, as it landed" in text
    assert "layer-shaped controls, gates), so a rerun" not in text
    assert "A record." not in rep_mod.readme_block(_rep(rep_mod))  # measured by this code


def test_update_readme_replaces_only_the_block(rep_mod, tmp_path):
    rep = _rep(rep_mod)
    readme = tmp_path / "results.md"
    start, end = rep_mod.README_START, rep_mod.README_END
    readme.write_text(f"# T\n\nbefore\n{start}\nSTALE\n{end}\nafter\n")
    rep_mod.update_readme(readme, rep)
    text = readme.read_text()
    assert text.startswith("# T\n\nbefore\n") and text.endswith("\nafter\n")
    assert "STALE" not in text and "| dense8-s0 |" in text
    assert "--readme docs/results.md" in text
    assert "](../benchmarks/results/zoo4/replication.png)" in text  # relative to docs/
    rep_mod.update_readme(readme, rep)  # idempotent
    assert readme.read_text() == text
    (tmp_path / "bad.md").write_text("no markers\n")
    with pytest.raises(Exception, match="no <!-- replication:start -->"):
        rep_mod.update_readme(tmp_path / "bad.md", rep)


def test_summary_block_states_the_words_and_links_the_tables(rep_mod, tmp_path):
    """README's short block: how a word follows its interval, and a link to the full tables
    (the verdict table itself: tests/induction/replication/test_intervals.py); nothing
    outside the markers changes."""
    rep = _rep(rep_mod)
    readme = tmp_path / "README.md"
    start, end = rep_mod.SUMMARY_START, rep_mod.SUMMARY_END
    readme.write_text(f"# W\n{start}\nSTALE\n{end}\ntail\n")
    rep_mod.update_summary(readme, rep, "docs/results.md#replication")
    text = readme.read_text()
    assert text.startswith("# W\n") and text.endswith("\ntail\n") and "STALE" not in text
    assert "from 9 models (seeds: dense8 3, lidas8 3, looped8 3)" in text
    from induction.replication.results import WORDS_SHORT

    assert WORDS_SHORT in text
    assert "[docs/results.md](docs/results.md#replication)" in text


def test_readme_holds_the_summary_block(rep_mod):
    text = (ROOT / "README.md").read_text()
    assert text.count(rep_mod.SUMMARY_START) == 1 and text.count(rep_mod.SUMMARY_END) == 1


def test_results_doc_holds_the_block(rep_mod):
    """docs/results.md carries the markers the script rewrites, and its figure link resolves."""
    doc = ROOT / "docs" / "results.md"
    text = doc.read_text()
    assert text.count(rep_mod.README_START) == 1 and text.count(rep_mod.README_END) == 1
    block = text.split(rep_mod.README_START, 1)[1].split(rep_mod.README_END, 1)[0]
    figure = block.split("![replication figure](", 1)[1].split(")", 1)[0]
    assert (doc.parent / figure).resolve().is_file()


def test_outputs_round_trip(rep_mod, tmp_path):
    rep = _rep(
        rep_mod,
        rep_mod.Settings.fast(),
        tasks=pd.DataFrame({"model": ["dense8-s0"], "task": ["copy"], "drop": [0.1]}),
    )
    written = rep_mod.write_outputs(rep, tmp_path, png=False)
    assert {Path(p).name for p in written} >= {"replication.csv", "replication.json"}
    text = (tmp_path / "replication.json").read_text()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    back = rep_mod.load_results(tmp_path)
    assert back.settings == rep.settings
    assert back.markdown() == rep.markdown()
    assert rep_mod.verdict(back) == rep_mod.verdict(rep)
    rep_mod.write_outputs(back, tmp_path, png=False)  # --from-results: the same JSON again
    assert (tmp_path / "replication.json").read_text() == text


def _tiny(rep_mod, **kw):
    tiny = {"controls": 2, "n_items": 4, "tasks": ("var_depth0",), "regbench": False}
    return rep_mod.Settings.fast(**{**tiny, **kw})


def _zoo_ref(rep_mod, name: str):
    family, seed = name.rsplit("-s", 1)
    return rep_mod.ModelRef(family, int(seed), str(ROOT / "induction" / "zoo" / "models" / name))


def test_store_serves_only_measurements_of_the_same_inputs(rep_mod, tmp_path):
    """Each model's measurement is stored as it lands and served again only under the same
    model, settings, head ranking and code; a damaged or foreign file is measured again."""
    ref = _zoo_ref(rep_mod, "dense8-s0")
    store = rep_mod.MeasurementStore(tmp_path)
    lines: list[str] = []
    first = rep_mod.replicate([ref], _tiny(rep_mod), log=lines.append, store=store)
    stored = store.path("dense8-s0", _tiny(rep_mod))
    assert stored.parent == tmp_path and stored.name.startswith("dense8-s0-")
    key = json.loads(stored.read_text())["key"]
    again = rep_mod.replicate([ref], _tiny(rep_mod), log=lines.append, store=store)
    assert "stored, reused" not in lines[0] and "stored, reused" in lines[1]
    pd.testing.assert_frame_equal(first.models, again.models)
    assert again.markdown() == first.markdown() and again.seconds == first.seconds

    rep_mod.replicate([ref], _tiny(rep_mod, n_items=5), log=lines.append, store=store)
    assert "stored, reused" not in lines[2]  # other settings: measured, in a file of their own
    assert len(list(tmp_path.glob("dense8-s0-*.json"))) == 2
    assert json.loads(stored.read_text())["key"] == key

    stored.write_text('{"key": ')  # torn
    rep_mod.replicate([ref], _tiny(rep_mod), log=lines.append, store=store)
    assert "stored, reused" not in lines[3] and json.loads(stored.read_text())["key"] == key


def test_jobs_give_the_rows_of_a_sequential_run(rep_mod, tmp_path):
    """``--jobs 2`` measures models in worker processes, with the sequential run's numbers."""
    refs = [_zoo_ref(rep_mod, "dense8-s0"), _zoo_ref(rep_mod, "lidas8-s0")]
    one = rep_mod.replicate(refs, _tiny(rep_mod), log=None)
    two = rep_mod.replicate(
        refs, _tiny(rep_mod), log=None, store=rep_mod.MeasurementStore(tmp_path), jobs=2
    )
    pd.testing.assert_frame_equal(one.models, two.models)
    names = sorted(p.name.rsplit("-", 1)[0] for p in tmp_path.iterdir())
    assert names == ["dense8-s0", "lidas8-s0"]


def test_code_hash_ignores_wording_not_code(rep_mod, tmp_path, monkeypatch):
    """Stored measurements survive a reworded docstring, comment or layout, not a code change."""
    pkg = tmp_path / "measured_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""A package."""\n')
    src = pkg / "calc.py"
    src.write_text('"""Adds."""\n\n\ndef drop(a, b):\n    """The drop."""\n    return a - b\n')
    (pkg / "cli.py").write_text("print('presentation only')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    base = rep_mod.code_hash(("measured_pkg",))
    src.write_text(
        '"""Subtracts, reworded."""\n\n\ndef drop(a, b):  # note\n    return (a -\n b)\n'
    )
    (pkg / "cli.py").write_text("print('changed wording')\n")
    assert rep_mod.code_hash(("measured_pkg",)) == base
    src.write_text("def drop(a, b):\n    return b - a\n")
    assert rep_mod.code_hash(("measured_pkg",)) != base


def test_store_key_covers_the_model_folder_and_code(rep_mod, tmp_path):
    """A changed card (training length, FLOPs), duplication log or code changes the key."""
    import shutil

    from induction import load_model

    folder = tmp_path / "lidas8-s0"
    shutil.copytree(ROOT / "induction" / "zoo" / "models" / "lidas8-s0", folder)
    settings = _tiny(rep_mod)

    def key(code: str = "c") -> str:
        return rep_mod.measurement_key(load_model(str(folder)), settings, code)

    base = key()
    assert key("other code") != base
    text = (folder / "card.json").read_text()
    (folder / "card.json").write_text(json.dumps({**json.loads(text), "train_flops": 1.0}))
    assert key() != base
    (folder / "card.json").write_text(text)
    assert key() == base
    log = folder / "duplication_log.json"
    log.write_text(log.read_text() + "\n")
    assert key() != base


def test_store_ranking_tolerates_float_rounding_not_a_new_ranking(rep_mod):
    """A scan on another CPU moves the scores by ~1e-7: the stored measurement still serves.
    Another order, another head over the threshold or a real score change does not."""
    from induction import INDUCTION_THRESHOLD
    from induction.replication.store import SCORE_TOLERANCE, same_ranking

    base = pd.DataFrame(
        {"layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "induction": [0.9, 0.41, 0.2, 0.05]}
    )
    noisy = base.assign(induction=base["induction"] + [4e-8, -6e-8, 1e-8, 0.0])
    assert same_ranking(base, noisy) and same_ranking(base, noisy.iloc[::-1])
    swapped = base.assign(induction=[0.41, 0.9, 0.2, 0.05])
    assert not same_ranking(base, swapped)
    crossing = base.assign(induction=[0.9, INDUCTION_THRESHOLD - 1e-6, 0.2, 0.05])
    assert not same_ranking(base, crossing)
    moved = base.assign(induction=base["induction"] + [0.0, 0.0, 2 * SCORE_TOLERANCE, 0.0])
    assert not same_ranking(base, moved)
    assert not same_ranking(base, base.iloc[:3]) and not same_ranking(base[["layer"]], base)


def test_store_refuses_a_measurement_whose_scan_ranked_other_heads(rep_mod, tmp_path):
    """The stored scan is part of what a hit must match: a stored file whose scores rank the
    heads otherwise than today's scan is measured again."""
    ref = _zoo_ref(rep_mod, "dense8-s0")
    store = rep_mod.MeasurementStore(tmp_path)
    rep_mod.replicate([ref], _tiny(rep_mod), log=None, store=store)
    stored = store.path("dense8-s0", _tiny(rep_mod))
    data = json.loads(stored.read_text())
    top = max(range(len(data["scores"])), key=lambda i: data["scores"][i]["induction"])
    data["scores"][top]["induction"] = 0.0
    stored.write_text(json.dumps(data))
    lines: list[str] = []
    rep_mod.replicate([ref], _tiny(rep_mod), log=lines.append, store=store)
    assert "stored, reused" not in lines[0]


def test_duplicate_models_are_refused(rep_mod):
    ref = _zoo_ref(rep_mod, "dense8-s0")
    with pytest.raises(Exception, match="models named twice: dense8-s0"):
        rep_mod.replicate([ref, ref], _tiny(rep_mod), log=None)


def test_stored_only_summarises_what_is_stored(rep_mod, tmp_path):
    """An interim report: the stored models only, the others named; nothing measured."""
    refs = [_zoo_ref(rep_mod, "dense8-s0"), _zoo_ref(rep_mod, "lidas8-s0")]
    store = rep_mod.MeasurementStore(tmp_path)
    with pytest.raises(Exception, match="no stored measurements"):
        rep_mod.replicate(refs, _tiny(rep_mod), log=None, store=store, stored_only=True)
    first = rep_mod.replicate(refs[:1], _tiny(rep_mod), log=None, store=store)
    lines: list[str] = []
    interim = rep_mod.replicate(
        refs, _tiny(rep_mod), log=lines.append, store=store, stored_only=True
    )
    assert list(interim.models["model"]) == ["dense8-s0"]
    pd.testing.assert_frame_equal(interim.models, first.models)
    assert any("lidas8-s0: not measured with these settings yet" in line for line in lines)
    assert interim.pending == ["lidas8-s0"] and first.pending == []
    assert len(list(tmp_path.iterdir())) == 1  # nothing new measured or stored


def test_markerless_target_is_refused_before_measuring(rep_mod, tmp_path, capsys):
    """A --readme or --summary file without its markers ends in one line and exit 2 before any
    model is loaded; nothing is written."""
    doc = tmp_path / "notes.md"
    doc.write_text("no markers\n")
    out = tmp_path / "out"
    for flag in ("--readme", "--summary"):
        assert rep_mod.main(["--fast", "--out-dir", str(out), flag, str(doc)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and "marker" in err[0]
    assert not out.exists() and doc.read_text() == "no markers\n"


def test_from_results_reads_the_stored_gates_by_the_current_rules(rep_mod, tmp_path):
    """`--from-results` keeps the stored measurements and gates but reads the claims again by
    the current rules (docs/replication.md, A11): a stored verdict that the rules do not give
    is replaced, so an amendment reaches every stored record."""
    import shutil

    zoo2 = ROOT / "benchmarks" / "results" / "zoo2"  # the smaller record: 5 seeds a family
    for name in ("replication.json", "replication_tasks.csv"):
        shutil.copy(zoo2 / name, tmp_path / name)
    data = json.loads((tmp_path / "replication.json").read_text())
    stored = [c["verdict"] for c in data["claims"]]
    data["claims"][0]["verdict"] = "agree"  # a word the rules do not give this row
    (tmp_path / "replication.json").write_text(json.dumps(data))
    back = rep_mod.load_results(tmp_path)
    assert list(back.claims["verdict"]) == stored
    assert back.claims.iloc[0]["verdict"] == "untestable here"
