"""Token F1 / EM against hand-computed SQuAD cases, and TVD on a hand-computed automaton."""

import numpy as np
import pytest

from ablation.metrics import (
    exact_match,
    final_number,
    normalize_answer,
    number_match,
    token_f1,
    tvd,
)
from ablation.tasks.base import DistItem
from ablation.tasks.regbench import DFA, score_item


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Cat", "cat"),
        ("  a  dog,  an apple!  ", "dog apple"),
        ("the-end", "theend"),  # punctuation removed, not split (SQuAD)
        ("Theatre", "theatre"),  # article only as a whole word
        ("A.B.C.", "abc"),
        ("an", ""),
        ("Éclair", "éclair"),
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_f1_hand_computed():
    # pred tokens: [big, red, dog] vs gold [red, dog, runs]: overlap 2, P=2/3, R=2/3 -> 2/3
    assert token_f1("The big red dog", "red dog runs") == pytest.approx(2 / 3)
    # repeated tokens count with multiplicity: pred [dog, dog] vs gold [dog]: P=1/2, R=1
    assert token_f1("dog dog", "dog") == pytest.approx(2 * 0.5 * 1 / 1.5)
    # max over golds
    assert token_f1("Paris", ["London", "paris."]) == 1.0
    assert token_f1("Paris France", ["Paris", "London"]) == pytest.approx(2 / 3)
    # no overlap
    assert token_f1("cat", "dog") == 0.0


def test_f1_empty_cases_follow_squad_v2():
    assert token_f1("", "") == 1.0
    assert token_f1("the", "a") == 1.0  # both normalise to nothing
    assert token_f1("", "dog") == 0.0
    assert token_f1("dog", "") == 0.0
    assert token_f1("dog", []) == 0.0


def test_exact_match():
    assert exact_match("The Eiffel Tower!", "eiffel tower") == 1.0
    assert exact_match("Eiffel", ["eiffel tower", "EIFFEL"]) == 1.0
    assert exact_match("Eiffel Towers", "Eiffel Tower") == 0.0


def test_final_number_and_number_match():
    assert final_number("so 3 + 4 = 7 apples") == "7"
    assert final_number("it costs 1,200 dollars") == "1200"
    assert final_number("7.0") == "7"
    assert final_number("0.5 of it") == "0.5"
    assert final_number("no number") is None
    assert number_match("The answer is 18.", "18") == 1.0
    assert number_match("18 then 19", "18") == 0.0
    assert number_match("", "18") == 0.0


def test_tvd():
    assert tvd([0.5, 0.5, 0.0], [0.25, 0.25, 0.5]) == pytest.approx(0.5)
    assert tvd([1, 0], [1, 0]) == 0.0
    with pytest.raises(ValueError):
        tvd([1], [0.5, 0.5])


def test_regbench_scoring_on_hand_automaton():
    # 0 -a-> 1, 0 -b-> 2; 1 -c-> 0; 2 -a-> 0. Support a, b, c as token ids 10, 11, 12.
    dfa = DFA(alphabet=("a", "b", "c"), edges=((("a", 1), ("b", 2)), (("c", 0),), (("a", 0),)))
    assert dfa.accepts("acbaac") and not dfa.accepts("ab")
    ids = {"a": 10, "b": 11, "c": 12}
    # string "a c b": at state 0 valid {a, b}; at 1 valid {c}; at 0 valid {a, b}
    item = DistItem(
        ids=[1, 10, 12, 11],
        positions=[0, 1, 2],
        valid=[[ids[x] for x in dfa.valid(s)] for s in (0, 1, 0)],
        support=[10, 11, 12],
    )
    q = np.array(
        [
            [0.5, 0.5, 0.0],  # exact: TVD 0, argmax a valid
            [0.2, 0.2, 0.6],  # p = (0, 0, 1): TVD = 0.5 * (0.2 + 0.2 + 0.4) = 0.4, argmax c ok
            [0.1, 0.1, 0.8],  # p = (.5, .5, 0): TVD = 0.5 * (0.4 + 0.4 + 0.8) = 0.8, wrong
        ]
    )
    mean_tvd, acc = score_item(q, item)
    assert mean_tvd == pytest.approx((0 + 0.4 + 0.8) / 3)
    assert acc == pytest.approx(2 / 3)
