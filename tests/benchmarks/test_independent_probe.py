"""benchmarks/independent_probe.py: prompts built from the documented formats tokenize cleanly
to the ids the documented vocabulary gives, and grown8c-s0 looks up fresh maps far above
chance on them."""

from __future__ import annotations

import json

import pytest

MODEL = "grown8c-s0"

# The documented vocabulary order: specials, symbols, digits, letters a-r, words w0-w87.
VOCAB = (
    ["<pad>", "<bos>", "<eos>", "<unk>"]
    + list(":,|=?;>.")
    + [str(d) for d in range(10)]
    + [chr(ord("a") + i) for i in range(18)]
    + [f"w{i}" for i in range(88)]
)
ID = {t: i for i, t in enumerate(VOCAB)}


@pytest.fixture(scope="module")
def probe(load_benchmark):
    return load_benchmark("independent_probe")


@pytest.fixture(scope="module")
def scorer(probe):
    return probe.Scorer(MODEL)


def test_hand_checked_prompts_tokenize_and_score(probe, scorer):
    lookup = probe.lookup_prompt([("w1", "w2"), ("w3", "w4"), ("w5", "w6")], "w3")
    assert lookup.text == "w1 > w2 , w3 > w4 , w5 > w6 , w3 >" and lookup.answer == "w4"
    assert lookup.chance == pytest.approx(1 / 3)
    program = probe.varassign_prompt([("a", "3"), ("b", "7")], [("c", "a")], "c")
    assert program.text == "a = 3 , b = 7 , c = a ; c ?" and program.answer == "3"
    assert program.meta["first"] and program.chance == 0.5
    for prompt in (lookup, program):
        ids = scorer.encode(prompt)
        # <bos>, then one id per word, as the documented vocabulary numbers them; the scored
        # position is the last one (the ">" or "?" the answer follows)
        assert ids == [ID["<bos>"]] + [ID[w] for w in prompt.text.split()]
        assert ID["<unk>"] not in ids
        assert scorer.answer_id(prompt) == ID[prompt.answer]
    assert scorer.predict([lookup, program]) == [ID["w4"], ID["3"]]
    # every generated prompt tokenizes without <unk> (encode raises otherwise)
    for prompts in probe.build_prompts(16, 0).values():
        for prompt in prompts:
            assert ID["<unk>"] not in scorer.encode(prompt)
            assert prompt.answer in VOCAB


def test_far_lookup_shows_the_key_once_and_far(probe):
    import numpy as np

    rng = np.random.default_rng(0)
    for _ in range(50):
        p = probe.make_lookup_far(rng)
        words = p.text.split()
        key = words[-2]
        shown = [i for i in range(0, len(words) - 2, 4) if words[i] == key]
        assert len(shown) == 1 and words[shown[0] + 2] == p.answer
        assert p.meta["gap_pairs"] >= 8 and (len(words) - 2 - shown[0]) // 4 - 1 >= 8


def test_run_writes_documented_keys_and_lookup_beats_chance(probe, tmp_path, capsys):
    out = tmp_path / "probe.json"
    assert probe.main([MODEL, "--n", "64", "--seed", "3", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["n"] == 64 and result["seed"] == 3
    r = result["models"][MODEL]
    keys = {"lookup", "lookup_chance", "lookup_n", "lookup_far", "lookup_far_chance",
            "lookup_far_n", "varassign", "varassign_n", "varassign_depth0",
            "varassign_depth0_n", "varassign_depth1", "varassign_depth1_n",
            "varassign_chance", "first", "first_n", "others", "others_n", "gap",
            "gates"}  # fmt: skip
    assert keys <= set(r)
    assert set(r["gates"]) == {"lookup", "varassign", "gap", "all"}
    assert r["lookup_n"] == r["lookup_far_n"] == r["varassign_n"] == 64
    assert r["varassign_depth0_n"] == r["varassign_depth1_n"] == 32
    assert r["first_n"] + r["others_n"] == 64
    assert r["lookup"] >= 0.8 and r["lookup"] >= 4 * r["lookup_chance"]
    assert r["gates"]["lookup"]
    assert MODEL in capsys.readouterr().out
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temp file
