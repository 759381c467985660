"""benchmarks/r4_pilot.py and benchmarks/digit_mass.py (docs/replication.md, "Pilot notes"):
every pilot is a valid round-4 config written into the docs, and the digit-mass diagnostic
tells a model that binds variables from one that does not."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "induction" / "zoo" / "models"


def test_every_pilot_is_a_valid_config_named_in_the_docs(load_benchmark):
    from induction.training.protocol import preset_config, validate

    pilots = load_benchmark("r4_pilot").PILOTS
    notes = (ROOT / "docs" / "replication.md").read_text(encoding="utf-8")
    for name, (change, overrides) in pilots.items():
        cfg = preset_config("grown8rt", 0, **overrides)
        validate(cfg)
        assert change and re.search(rf"\b{name}\b", notes), name
    assert preset_config("grown8rt", 0, **pilots["pilot11"][1]).steps == 12000


@pytest.mark.parametrize(("model", "binds"), [("grown8c-s0", True), ("dense8-s0", False)])
def test_digit_mass_separates_binding_from_none(load_benchmark, tmp_path, monkeypatch, model,
                                                binds):  # fmt: skip
    bench = load_benchmark("digit_mass")
    runs = tmp_path / "runs"
    (runs / "p").mkdir(parents=True)
    (runs / "p" / "grown8rt-s0").symlink_to(MODELS / model)
    monkeypatch.setattr(bench, "OUT", tmp_path / "digit_mass.json")
    assert bench.main(["p", "--runs", str(runs)]) == 0
    row = json.loads((tmp_path / "digit_mass.json").read_text())["p"]
    assert all(0 <= row[k] <= 1 for k in ("p_gold", "p_other_shown", "p_unshown", "accuracy"))
    # grown8c-s0 passes the zoo's variable-assignment gate; dense8-s0 (the first fixed zoo)
    # does not: its gold digit gets no more than another digit the program shows
    assert (row["p_gold"] > 2 * row["p_other_shown"]) is binds


def test_open_book_mass_reads_the_suite_items(load_benchmark, tmp_path, monkeypatch):
    """``--open-book`` reads open_lookup's suite items (prompt seed 0): every item's top token
    is counted once, and the keyed value is one of the passage's values, never a key."""
    from ablation.tasks.zoo4g import problems
    from induction.zoo.problems import SAYS

    bench = load_benchmark("digit_mass")
    runs = tmp_path / "runs"
    (runs / "p").mkdir(parents=True)
    (runs / "p" / "grown8rt-s0").symlink_to(MODELS / "grown8c-s0")
    monkeypatch.setattr(bench, "OPEN_OUT", tmp_path / "open_book_mass.json")
    assert bench.main(["p", "--runs", str(runs), "--open-book"]) == 0
    row = json.loads((tmp_path / "open_book_mass.json").read_text())["p"]
    assert sum(row["top_token"].values()) == row["n_items"] == 64
    assert all(0 <= row[k] <= 1 for k in ("p_gold", "p_other_value", "p_key"))
    for _, query in problems("open_lookup", 64, seed=0):
        passage = query.query[: query.query.index("?")]
        assert query.answer[0] in query.candidates and query.answer[0] in passage
        keys = {passage[i - 1] for i, t in enumerate(passage) if t == SAYS}
        assert keys and query.answer[0] not in keys


def test_each_pilot_config_is_the_one_its_card_recorded_and_13_is_the_recipe(load_benchmark):
    """A pilot is reproduced from its definition: every stored card's config equals the
    pilot's config today (pilots 2-12 pin the mix they trained on, MIX_R4_PILOT2, and their
    steps), and round 4's grown8rt preset is pilot 13's config (amendment A10)."""
    from dataclasses import asdict

    from induction.training.protocol import preset_config

    def same(a: dict, b: dict) -> bool:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)

    pilots = load_benchmark("r4_pilot").PILOTS
    cards = ROOT / "benchmarks" / "results" / "pilot4"
    checked = 0
    for name, (_, overrides) in pilots.items():
        card = cards / f"{name}_card.json"
        if card.is_file():
            recorded = json.loads(card.read_text())["config"]
            assert same(asdict(preset_config("grown8rt", 0, **overrides)), recorded), name
            checked += 1
    assert checked >= 17
    recipe = json.loads((cards / "pilot13_card.json").read_text())["config"]
    assert same(asdict(preset_config("grown8rt", 0)), recipe)
