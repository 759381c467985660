"""benchmarks/replication.py: the parts that need no model (counts, tables, verdict, the
generated block of docs/results.md)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rep_mod():
    path = ROOT / "benchmarks" / "replication.py"
    spec = importlib.util.spec_from_file_location("replication_under_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


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


def _models(rep_mod) -> pd.DataFrame:
    rows = []
    for fam, drop, ctrl in (("dense", 0.3, 0.1), ("grown", 0.5, 0.2), ("looped", 0.4, 0.3)):
        for seed in range(3):
            rows.append(
                {
                    "model": f"{fam}-s{seed}",
                    "family": fam,
                    "seed": seed,
                    "formed_step": 600 + 50 * seed if seed else None,
                    "train_flops": 1e13 * (0.7 if fam == "grown" else 1.0),
                    "max_induction": 0.6,
                    "induction_heads": 3,
                    "top_n": 7,
                    "top_ancestors": 5 + seed % 2,
                    "ancestor_pool": {"dense": 32, "grown": 16, "looped": 8}[fam],
                    "min_ancestors": 4,
                    "random_ancestors": 6.3,
                    "top_layers": 2,
                    "layer_pool": 4,
                    "min_layers": 1,
                    "random_layers": 3.5,
                    "top_above": 5,
                    "clean": 0.7,
                    "drop": drop + 0.01 * seed,
                    "ctrl_mean": ctrl,
                    "ctrl_std": 0.05,
                    "z": (drop - ctrl) / 0.05,
                    "excess": drop - ctrl,
                    "ctrl_drops": json.dumps([ctrl - 0.05, ctrl + 0.05]),
                }
            )
    return rep_mod.add_flops_ratio(pd.DataFrame(rows))


def test_family_table_markdown_and_verdict(rep_mod):
    models = _models(rep_mod)
    assert models.loc[models.family == "grown", "flops_vs_dense"].iloc[0] == pytest.approx(0.7)
    fam = rep_mod.family_summary(models)
    assert list(fam.family) == ["dense", "grown", "looped"]
    assert fam.set_index("family").loc["grown", "drop"] == pytest.approx(0.51)
    assert fam.set_index("family").loc["looped", "source_drop"] == 0.28
    md = rep_mod.markdown_tables(models, fam)
    assert md.count("\n| grown-s") == 3 and "| looped | 3 |" in md
    assert "– |" in md  # a missing formation step is a dash, not nan
    lines = rep_mod.verdict(fam)
    text = "\n".join(lines)
    assert "Order of the drops: dense (+0.310) < looped (+0.410) < grown (+0.510)" in text
    assert "the source's order is dense < grown < looped" in text
    assert "grown 0.70x dense (30% fewer; source 26% fewer)" in text


def test_update_readme_replaces_only_the_block(rep_mod, tmp_path):
    models = _models(rep_mod)
    rep = rep_mod.Replication(
        models=models,
        tasks=pd.DataFrame(),
        families=rep_mod.family_summary(models),
        settings=rep_mod.Settings(),
        seconds=60.0,
    )
    readme = tmp_path / "results.md"
    readme.write_text(f"# T\n\nbefore\n{rep_mod.README_START}\nold\n{rep_mod.README_END}\nafter\n")
    rep_mod.update_readme(readme, rep)
    text = readme.read_text()
    assert text.startswith("# T\n\nbefore\n") and text.endswith("\nafter\n")
    assert "old" not in text and "| dense-s0 |" in text
    assert "--readme docs/results.md" in text
    assert "](../benchmarks/results/replication.png)" in text  # relative to docs/
    rep_mod.update_readme(readme, rep)  # idempotent
    assert readme.read_text() == text
    (tmp_path / "bad.md").write_text("no markers\n")
    with pytest.raises(Exception, match="no <!-- replication:start -->"):
        rep_mod.update_readme(tmp_path / "bad.md", rep)


def test_results_doc_holds_the_block(rep_mod):
    """docs/results.md carries the markers the script rewrites, and its figure link resolves."""
    doc = ROOT / "docs" / "results.md"
    text = doc.read_text()
    assert text.count(rep_mod.README_START) == 1 and text.count(rep_mod.README_END) == 1
    block = text.split(rep_mod.README_START, 1)[1].split(rep_mod.README_END, 1)[0]
    figure = block.split("![replication figure](", 1)[1].split(")", 1)[0]
    assert (doc.parent / figure).resolve().is_file()


def test_outputs_round_trip(rep_mod, tmp_path):
    models = _models(rep_mod)
    rep = rep_mod.Replication(
        models=models,
        tasks=pd.DataFrame({"model": ["dense-s0"], "task": ["copy"], "drop": [0.1]}),
        families=rep_mod.family_summary(models),
        settings=rep_mod.Settings.fast(),
        seconds=5.0,
    )
    written = rep_mod.write_outputs(rep, tmp_path, png=False)
    assert {Path(p).name for p in written} >= {"replication.csv", "replication.json"}
    text = (tmp_path / "replication.json").read_text()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    back = rep_mod.load_results(tmp_path)
    assert back.settings == rep.settings
    assert back.markdown() == rep.markdown()
