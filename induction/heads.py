"""Attention heads by name: the one :class:`Head` type, its spelling ``L5H1`` and the parser
every command and API uses for lists of heads.

A head is ``(layer, head)`` with 0-based indices; ``layer`` counts decoder layers after a
looped model is unrolled. Heads order by layer, then head (tuple order).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from induction.errors import InputError

#: ``L5H1`` (any case), also ``5.1`` and ``5:1``.
_HEAD = re.compile(r"^\s*L?(\d+)\s*(?:H|\.|:)\s*(\d+)\s*$", re.IGNORECASE)
_HOW = "write heads like L5H1,L11H2"
#: A head whose induction score is at or above this is conventionally called an induction head
#: (the one definition: ``induction.INDUCTION_THRESHOLD``, the scores, the CLI and the figures
#: read it from here).
INDUCTION_THRESHOLD = 0.4


class Head(NamedTuple):
    """One attention head; a plain ``(layer, head)`` tuple everywhere tuples are expected."""

    layer: int
    head: int

    def __str__(self) -> str:
        return head_label(self.layer, self.head)

    @classmethod
    def parse(cls, text: str) -> Head:
        """``"L5H1"`` (or ``5.1``, ``5:1``) -> ``Head(5, 1)``; malformed text is refused."""
        m = _HEAD.match(text)
        if not m:
            raise InputError(f"malformed head {text.strip()!r}; {_HOW}")
        return cls(int(m[1]), int(m[2]))


def head_label(layer: int, head: int) -> str:
    """The spelling of a head in tables, figures and messages: ``L5H1``."""
    return f"L{layer}H{head}"


def heads_label(heads: Iterable[tuple[int, int]]) -> str:
    """``L5H1,L11H2``: a list of heads as the commands read it back."""
    return ",".join(head_label(a, b) for a, b in heads)


def parse_heads(
    heads: str | Iterable[str | tuple[int, int]], n_layers: int, n_heads: int
) -> list[Head]:
    """``"L5H1,L11H2"`` (also ``5.1``, ``5:1``), or a list of such names or ``(layer, head)``
    pairs, checked against the model's shape, in the order given. A head named twice, a
    malformed or out-of-range name and an empty list are refused, each with one line."""
    items = heads.split(",") if isinstance(heads, str) else list(heads)
    out: list[Head] = []
    for item in items:
        if isinstance(item, tuple | list) and len(item) == 2:
            head = Head(int(item[0]), int(item[1]))
        elif not str(item).strip():
            continue
        else:
            head = Head.parse(str(item))
        if not (0 <= head.layer < n_layers and 0 <= head.head < n_heads):
            raise InputError(
                f"head {head} is out of range: the model has layers 0-{n_layers - 1} and heads "
                f"0-{n_heads - 1}"
            )
        if head in out:
            raise InputError(f"head {head} is named twice; name it once")
        out.append(head)
    if not out:
        raise InputError(f"no heads given (the list is empty); {_HOW}")
    return out
