"""The one Head type and head-list grammar every command uses (induction.heads)."""

import pytest

from ablation.selection import parse_heads as ablation_heads
from induction.errors import InputError
from induction.heads import Head, head_label, heads_label, parse_heads
from induction.scores.views import parse_heads as view_heads


def test_head_spelling_parsing_and_order():
    assert str(Head(5, 1)) == "L5H1" == head_label(5, 1)
    assert Head.parse("l5h1") == Head.parse("5.1") == Head.parse(" 5:1 ") == (5, 1)
    assert sorted([Head(2, 0), Head(1, 3), Head(1, 0)]) == [(1, 0), (1, 3), (2, 0)]
    layer, head = Head(3, 2)
    assert (layer, head) == (3, 2) and Head(3, 2) == (3, 2) and hash(Head(3, 2)) == hash((3, 2))
    assert heads_label([Head(0, 1), (2, 3)]) == "L0H1,L2H3"
    with pytest.raises(InputError, match="malformed head '3-1'"):
        Head.parse("3-1")


def test_one_grammar_for_every_command():
    text = "L5H0, 3.1,2:3"
    assert parse_heads(text, 8, 4) == [(5, 0), (3, 1), (2, 3)]  # order given
    assert view_heads(text, 8, 4) == parse_heads(text, 8, 4)
    assert ablation_heads(text, 8, 4) == sorted(parse_heads(text, 8, 4))  # a set
    assert parse_heads(heads_label(parse_heads(text, 8, 4)), 8, 4) == parse_heads(text, 8, 4)
    for parse in (parse_heads, view_heads, ablation_heads):
        for bad, message in [
            ("3.1,L3H1", "L3H1 is named twice"),
            ("L8H0", "L8H0 is out of range: the model has layers 0-7 and heads 0-3"),
            ("head5", "malformed head 'head5'"),
            (" , ", "no heads given"),
        ]:
            with pytest.raises(InputError, match=message):
                parse(bad, 8, 4)
