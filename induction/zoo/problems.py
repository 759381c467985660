"""Round 4's in-context problems: one generator per ``zoo4g`` task, shared by corpus and suite.

The ``zoo4g`` suite (:mod:`ablation.tasks.zoo4g`, docs/zoo.md "Round 4: the zoo4g suite")
asks the source's open-book QA, math word problems and reasoning primitives (Saunshi et al.
2025; docs/research.md) in the formats the round-4 corpus trains: the corpus's ``openbook``,
``math`` and ``programs`` kinds (:mod:`induction.zoo.corpus`) string problems of one type
together, exactly as a few-shot prompt of that task does. Corpus and suite draw from disjoint
seed namespaces, so every measured problem is fresh content.

A :class:`Problem` is ``query`` (tokens ending right before the answer), ``answer`` (one or
two tokens), the problem's end token, and ``candidates``: the right-type answers a blind guess
picks from (every value the passage or program shows, or the task's number range). Every
answer is uniform over its candidates given anything a content-blind rule reads (a constant,
the first or last candidate, the token before the query), so such rules score at chance
(``tests/induction/zoo/test_problems.py``).

Words: open-book entities and values, and math's people and objects, are the world's free
words (:attr:`induction.zoo.world.World.free_words`), never a closed-book entity or value;
function words ``w72``-``w78`` are yes, no, gets, loses, each, more, how-many. Math asks with
``w78`` (from pilot 8), open-book and the programs with ``?``: a math answer is never a number
the problem shows, where theirs always is (docs/replication.md, "Pilot notes"; pilot 10a's
own word for open-book was not taken).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from induction.zoo import vocab as V
from induction.zoo.world import RELATION_WORDS, world

GETS, LOSES, MORE, HOW_MANY = "w74", "w75", "w77", "w78"
#: Open-book states and asks with the ``lookup`` kind's ``>`` (pilot 13, docs/replication.md):
#: every pilot keeps the ``k > v`` lookup, and the longer ones lose a ``:`` one.
SAYS = ">"


@dataclass(frozen=True)
class Problem:
    query: tuple[str, ...]
    answer: tuple[str, ...]
    end: str
    candidates: tuple[str, ...]  # answers as text (a two-token answer: "v1 v2")

    @property
    def tokens(self) -> list[str]:
        """The problem as training text: query, answer, end."""
        return [*self.query, *self.answer, self.end]

    @property
    def answer_text(self) -> str:
        return " ".join(self.answer)


def _pick(rng: np.random.Generator, pool, n: int) -> list[str]:
    return [str(x) for x in rng.choice(list(pool), size=n, replace=False)]


def _passage(pairs) -> list[str]:
    """``e > v , e > v , ... .``"""
    out: list[str] = []
    for e, v in pairs:
        out += [e, SAYS, v, ","]
    out[-1] = "."
    return out


# ----------------------------------------------------------------------------- open-book QA
def open_lookup(rng: np.random.Generator) -> Problem:
    """``e > v , ... . ? e >`` -> ``v``: 4-6 statements, distinct entities and values (the
    others are distractors), the queried statement uniform."""
    n = int(rng.integers(4, 7))
    words = _pick(rng, world().free_words, 2 * n)
    ents, vals = words[:n], words[n:]
    k = int(rng.integers(n))
    q = [*_passage(zip(ents, vals)), "?", ents[k], SAYS]
    return Problem(tuple(q), (vals[k],), "|", tuple(vals))


def open_keys(rng: np.random.Generator) -> Problem:
    """Several keys: ``... . ? e_i e_j >`` -> ``v_i v_j`` (two distinct entities, uniform);
    candidates are every ordered pair of distinct passage values."""
    n = int(rng.integers(3, 6))
    words = _pick(rng, world().free_words, 2 * n)
    ents, vals = words[:n], words[n:]
    i, j = (int(x) for x in rng.choice(n, size=2, replace=False))
    q = [*_passage(zip(ents, vals)), "?", ents[i], ents[j], SAYS]
    pairs = tuple(f"{a} {b}" for a in vals for b in vals if a != b)
    return Problem(tuple(q), (vals[i], vals[j]), "|", pairs)


def open_hops(rng: np.random.Generator) -> Problem:
    """Two hops: 2-3 chains ``a > b`` and ``b > c`` (all words distinct), statements shuffled;
    ``... . ? ? a >`` -> ``c``. Candidates: every chain end."""
    m = int(rng.integers(2, 4))
    words = _pick(rng, world().free_words, 3 * m)
    chains = [words[3 * i : 3 * i + 3] for i in range(m)]
    stmts = [(a, b) for a, b, _ in chains] + [(b, c) for _, b, c in chains]
    stmts = [stmts[i] for i in rng.permutation(len(stmts))]
    k = int(rng.integers(m))
    q = [*_passage(stmts), "?", "?", chains[k][0], SAYS]
    return Problem(tuple(q), (chains[k][2],), "|", tuple(c[2] for c in chains))


def open_passage(rng: np.random.Generator) -> Problem:
    """A passage in the zoo's fact syntax ``x r v .`` about fresh words: 2-3 entities, two
    relations each (the same entity under another relation is a distractor), statements
    shuffled; then ``x r`` -> ``v``. Values are fresh per passage (digits for ``w84``, letters
    for ``w86``, free words for ``w85``/``w87``), all distinct; the queried statement uniform."""
    n_ent = int(rng.integers(2, 4))
    free = list(world().free_words)
    ents = _pick(rng, free, n_ent)
    rest = [w for w in free if w not in ents]
    digits, letters = _pick(rng, V.DIGITS, 6), _pick(rng, V.LETTERS[1:], 6)
    words = _pick(rng, rest, 12)
    pools = {0: digits, 1: words[:6], 2: letters, 3: words[6:]}
    stmts = []
    for e in ents:
        for r in sorted(int(x) for x in rng.choice(4, size=2, replace=False)):
            stmts.append((e, RELATION_WORDS[r], pools[r].pop()))
    stmts = [stmts[i] for i in rng.permutation(len(stmts))]
    k = int(rng.integers(len(stmts)))
    body = [t for s in stmts for t in (*s, ".")]
    e, r, v = stmts[k]
    return Problem((*body, e, r), (v,), "|", tuple(s[2] for s in stmts))


def open_reverse(rng: np.random.Generator) -> Problem:
    """Reverse lookup: ``e > v , ... . ? > v`` -> ``e`` (which entity has ``v``); 4-6
    statements, the queried one uniform; candidates: the passage's entities."""
    n = int(rng.integers(4, 7))
    words = _pick(rng, world().free_words, 2 * n)
    ents, vals = words[:n], words[n:]
    k = int(rng.integers(n))
    q = [*_passage(zip(ents, vals)), "?", SAYS, vals[k]]
    return Problem(tuple(q), (ents[k],), "|", tuple(ents))


# ----------------------------------------------------------------------------- math
def _digits(lo: int, hi: int) -> tuple[str, ...]:
    return tuple(str(d) for d in range(lo, hi + 1))


def math_add(rng: np.random.Generator) -> Problem:
    """``P : A O , P gets B ; how-many O :`` -> ``A + B``; the answer uniform over 2-9, ``A``
    uniform over 1 .. answer - 1 (so neither shown number is ever the answer)."""
    ans = int(rng.integers(2, 10))
    a = int(rng.integers(1, ans))
    p, o = _pick(rng, world().free_words, 2)
    q = [p, ":", str(a), o, ",", p, GETS, str(ans - a), ";", HOW_MANY, o, ":"]
    return Problem(tuple(q), (str(ans),), "|", _digits(2, 9))


def math_sub(rng: np.random.Generator) -> Problem:
    """``P : A O , P loses B ; how-many O :`` -> ``A - B``; the answer uniform over 1-8."""
    ans = int(rng.integers(1, 9))
    b = int(rng.integers(1, 10 - ans))
    p, o = _pick(rng, world().free_words, 2)
    q = [p, ":", str(ans + b), o, ",", p, LOSES, str(b), ";", HOW_MANY, o, ":"]
    return Problem(tuple(q), (str(ans),), "|", _digits(1, 8))


def math_two_step(rng: np.random.Generator) -> Problem:
    """``P : A O , P gets B , P loses C ; how-many O :`` (the two steps in random order) ->
    ``A + B - C``; the answer uniform over 1-8, operands uniform over the solutions in 1-9
    with ``B != C`` (steps that cancel would give ``A``)."""
    ans = int(rng.integers(1, 9))
    while True:
        a, b, c = (int(x) for x in rng.integers(1, 10, size=3))
        if a + b - c == ans and b != c and a + b <= 9 and a != ans:
            break
    p, o = _pick(rng, world().free_words, 2)
    steps = [[p, GETS, str(b)], [p, LOSES, str(c)]]
    if rng.integers(2):
        steps.reverse()
    q = [p, ":", str(a), o, ",", *steps[0], ",", *steps[1], ";", HOW_MANY, o, ":"]
    return Problem(tuple(q), (str(ans),), "|", _digits(1, 8))


def math_compare(rng: np.random.Generator) -> Problem:
    """``P : A O , Q : B O ; P more Q how-many :`` -> ``A - B`` (P has more), P's statement first or
    second uniformly; the answer uniform over 1-8."""
    ans = int(rng.integers(1, 9))
    small = int(rng.integers(1, 10 - ans))
    p, r, o = _pick(rng, world().free_words, 3)
    stmts = [[p, ":", str(small + ans), o], [r, ":", str(small), o]]
    if rng.integers(2):
        stmts.reverse()
    q = [*stmts[0], ",", *stmts[1], ";", p, MORE, r, HOW_MANY, ":"]
    return Problem(tuple(q), (str(ans),), "|", _digits(1, 8))


def math_distractor(rng: np.random.Generator) -> Problem:
    """``P : A O , P : B O2 , P gets C O ; how-many O :`` -> ``A + C``, with a distractor quantity
    ``B`` of another object (its statement first or second uniformly); the answer uniform over
    2-9."""
    ans = int(rng.integers(2, 10))
    a = int(rng.integers(1, ans))
    b = int(rng.choice([x for x in range(1, 10) if x not in (a, ans)]))
    p, o, o2 = _pick(rng, world().free_words, 3)
    stmts = [[p, ":", str(a), o], [p, ":", str(b), o2]]
    if rng.integers(2):
        stmts.reverse()
    q = [*stmts[0], ",", *stmts[1], ",", p, GETS, str(ans - a), o, ";", HOW_MANY, o, ":"]
    return Problem(tuple(q), (str(ans),), "|", _digits(2, 9))


def math_recall(rng: np.random.Generator) -> Problem:
    """Training only (pilot 9, docs/replication.md): ``P : A O , P : B O2 ; how-many O2 :`` ->
    ``B``, 2-3 quantities of distinct objects and numbers, the asked one uniform. The one math
    problem whose answer is a number it shows: a model trained on the other five learns that a
    shown number is never the answer, the opposite of what a variable program asks."""
    n = int(rng.integers(2, 4))
    p, *objects = _pick(rng, world().free_words, n + 1)
    numbers = _pick(rng, _digits(1, 9), n)
    k = int(rng.integers(n))
    q: list[str] = []
    for o, a in zip(objects, numbers, strict=True):
        q += [p, ":", a, o, ","]
    q[-1] = ";"
    q += [HOW_MANY, objects[k], ":"]
    return Problem(tuple(q), (numbers[k],), "|", tuple(numbers))


# ----------------------------------------------------------------------------- primitives
def _program(stmts, query: str) -> tuple[str, ...]:
    """``a = 3 , b = a ; q ?`` (the corpus's ``varassign`` syntax)."""
    out: list[str] = []
    for name, value in stmts:
        out += [name, "=", value, ","]
    out[-1] = ";"
    return (*out, query, "?")


def var_depth(rng: np.random.Generator, depth: int) -> Problem:
    """Depth 0-2 variable assignment: 2-4 digit assignments (distinct digits, random order);
    depth >= 1 adds 1-2 aliases of uniform digit variables; depth 2 then one alias of a uniform
    depth-1 alias. The query is uniform over the variables of its depth."""
    n_direct = int(rng.integers(2, 5))
    n_alias = int(rng.integers(1, 3)) if depth >= 1 else 0
    n_deep = 1 if depth >= 2 else 0
    names = _pick(rng, V.LETTERS, n_direct + n_alias + n_deep)
    digits = _pick(rng, V.DIGITS, n_direct)
    value = dict(zip(names[:n_direct], digits, strict=True))
    stmts = [(n, value[n]) for n in names[:n_direct]]
    stmts = [stmts[i] for i in rng.permutation(n_direct)]
    aliases = names[n_direct : n_direct + n_alias]
    for n in aliases:
        src = names[int(rng.integers(n_direct))]
        value[n] = value[src]
        stmts.append((n, src))
    for n in names[n_direct + n_alias :]:
        src = aliases[int(rng.integers(n_alias))]
        value[n] = value[src]
        stmts.append((n, src))
    level = [names[:n_direct], aliases, names[n_direct + n_alias :]][depth]
    query = level[int(rng.integers(len(level)))]
    return Problem(_program(stmts, query), (value[query],), ".", tuple(digits))


def var_reassign(rng: np.random.Generator) -> Problem:
    """``a = 3 , b = 5 , a = 7 , c = 2 ; a ? 7``: 2-4 digit assignments in random order, one
    variable (uniform) assigned again to a new digit at a uniform place after its first
    assignment, then one more fresh assignment, so the answer is never the last digit; the
    query is the reassigned variable (the later value holds)."""
    n = int(rng.integers(2, 5))
    names = _pick(rng, V.LETTERS, n + 1)
    digits = _pick(rng, V.DIGITS, n + 2)
    stmts = [(names[i], digits[i]) for i in rng.permutation(n)]
    k = int(rng.integers(n))
    target = names[k]
    first = [s[0] for s in stmts].index(target)
    at = int(rng.integers(first + 1, n + 1))
    stmts.insert(at, (target, digits[n]))
    stmts.append((names[n], digits[n + 1]))
    return Problem(_program(stmts, target), (digits[n],), ".", tuple(digits))


def var_which(rng: np.random.Generator) -> Problem:
    """Which variable holds a digit: 3-5 digit assignments (distinct names and digits, random
    order) ``... ; 7 ?`` -> the name assigned 7 (uniform); candidates: the program's names."""
    n = int(rng.integers(3, 6))
    names = _pick(rng, V.LETTERS[1:], n)  # not ``a``: SQuAD normalisation drops it
    digits = _pick(rng, V.DIGITS, n)
    k = int(rng.integers(n))
    return Problem(_program(zip(names, digits), digits[k]), (names[k],), ".", tuple(names))


Maker = Callable[[np.random.Generator], Problem]
#: Every problem type by its ``zoo4g`` task name, grouped as the corpus kinds draw them.
OPEN_BOOK: dict[str, Maker] = {
    "open_lookup": open_lookup,
    "open_keys": open_keys,
    "open_hops": open_hops,
    "open_passage": open_passage,
    "open_reverse": open_reverse,
}
MATH: dict[str, Maker] = {
    "math_add": math_add,
    "math_sub": math_sub,
    "math_two_step": math_two_step,
    "math_compare": math_compare,
    "math_distractor": math_distractor,
}
PROGRAMS: dict[str, Maker] = {
    "var_depth0": lambda rng: var_depth(rng, 0),
    "var_depth1": lambda rng: var_depth(rng, 1),
    "var_depth2": lambda rng: var_depth(rng, 2),
    "var_reassign": var_reassign,
    "var_which": var_which,
}
#: Corpus kind -> its problem types (a training sequence strings problems of one type).
KIND_PROBLEMS: dict[str, dict[str, Maker]] = {
    "openbook": OPEN_BOOK,
    "math": MATH,
    "programs": PROGRAMS,
}
MAKERS: dict[str, Maker] = {**OPEN_BOOK, **MATH, **PROGRAMS}
#: Problem types the corpus may add to a kind (``CorpusConfig.math_recall``), never measured.
TRAINING_ONLY: dict[str, dict[str, Maker]] = {"math": {"math_recall": math_recall}}


def problem_segment(
    rng: np.random.Generator, kind: str, budget: int, training_only: bool = False
) -> list[int]:
    """Token ids of problems of one type of corpus kind ``kind`` (type uniform per segment)
    until ``budget`` tokens: the layout of a few-shot prompt of that ``zoo4g`` task.
    ``training_only``: the kind's :data:`TRAINING_ONLY` types are drawn too."""
    extra = TRAINING_ONLY.get(kind, {}) if training_only else {}
    makers = [*KIND_PROBLEMS[kind].values(), *extra.values()]
    make = makers[int(rng.integers(len(makers)))]
    out: list[int] = []
    while len(out) < budget:
        out += [V.VOCAB[t] for t in make(rng).tokens]
    return out
