"""The ``zoo19`` suite: the 19 few-shot tasks of the source, in the zoo's 128-token vocabulary.

Kapl et al. 2025 report mean F1 over 19 few-shot tasks, the suite of Saunshi et al. 2025 in
four groups (``docs/research.md``): closed-book QA (4), open-book QA (5), math word problems
(6) and reasoning primitives (4). The zoo's tiny models cannot read those datasets, so this
suite rebuilds each group's *kind* of question in the zoo vocabulary (``docs/zoo19.md`` has
the table):

- **closed-book QA** asks the facts of the fixed world (``induction.zoo.world``), which the
  corpus states only as ``entity relation value .``; each relation is asked in its own format,
  never trained on. Demonstrations are other entities of the same relation; the queried
  entity's fact is never in the prompt, and the demonstrations' values are drawn
  independently of the queried value, so nothing in the prompt tells the answer: only
  knowledge stored in the weights beats chance (``1 / len(values)``). Models trained without
  the ``facts`` kind (``corpus.MIX_V1``, the shipped zoo) are at chance by construction.
- **open-book QA** puts fresh random facts (:data:`induction.zoo.world.World.free_words`,
  never the world's) in a passage of ``entity : value`` statements and asks one question:
  a lookup, the entity named second in the question, a two-hop chain, a count, yes / no.
- **math word problems** are one- and two-step arithmetic stories with words as people and
  objects (ASDiv / MAWPS / SVAMP types); answers are spelled as digit tokens (``1 2``) and
  scored by the ``digits`` metric; answers are uniform over each type's range.
- **reasoning primitives** are variable assignment at depth 0 and 1 in a math form
  (``a : 3 , b : a , b : ?``) and a code form (``a = 3 ; b = a ; > b``), both unlike the
  corpus's ``a = 3 , b = a ; b ? 3 .``.
- ``lookup`` and ``copy`` of the ``zoo`` suite are positive controls (induction by
  construction, Olsson et al. 2022), reported apart and kept out of the mean.

Every prompt format is new to the models: the class 4-gram that ends at the answer (the last
three prompt tokens and the first answer token, with words, digits and letters as classes)
never occurs in the structured kinds of the training corpus (``tests/ablation/test_zoo19.py``).
Prompts fit ``max_tokens`` (default 96, the zoo's training length) with the answer; the
oldest demonstrations are dropped to fit. Draws come from
``numpy.random.default_rng([SEED_OFFSET + seed, task index])``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ablation.tasks import zoo
from ablation.tasks.base import GenItem, GenTask
from ablation.tasks.registry import SuiteRequest, register
from ablation.tasks.spec import TaskSpec, index
from induction.zoo import vocab as V
from induction.zoo.world import world

SUITE = "zoo19"
SEED_OFFSET = 19_000
CONTEXT = zoo.CONTEXT
#: Decoding stops at any structure symbol: every answer is words, digits or letters.
STOP = tuple(V.SYMBOLS)
# Function words (``induction.zoo.world.FUNCTION_WORDS``): never an entity or a value.
YES, NO = "w72", "w73"
GETS, LOSES, EACH, MORE = "w74", "w75", "w76", "w77"


@dataclass
class Unit:
    """One question: ``query`` ends right before ``answer``; ``end`` closes a demonstration.
    ``meta`` holds what the baseline tests need (candidate answers, the queried rank)."""

    query: str
    answer: str
    end: str = "|"
    meta: dict = field(default_factory=dict)

    @property
    def demo(self) -> str:
        return f"{self.query} {self.answer} {self.end}"


@dataclass
class Record:
    """An item with its parts: the prompt is ``demos`` then ``unit.query``."""

    demos: list[Unit]
    unit: Unit

    @property
    def prompt(self) -> str:
        return " ".join([d.demo for d in self.demos] + [self.unit.query])


def _pick(rng: np.random.Generator, pool, n: int) -> list[str]:
    return [str(x) for x in rng.choice(list(pool), size=n, replace=False)]


def _fit(demos: list[Unit], unit: Unit, max_tokens: int, max_new: int) -> list[Unit]:
    """Drop the oldest demonstrations until BOS + prompt + ``max_new`` answer tokens fit."""
    sizes = [len(d.demo.split()) for d in demos]
    total, first = 1 + sum(sizes) + len(unit.query.split()) + max_new, 0
    while first < len(demos) and total > max_tokens:  # one pass: linear in the demos
        total, first = total - sizes[first], first + 1
    return list(demos[first:])


# ----------------------------------------------------------------------------- closed-book QA
#: Relation index -> (query format with {e} for the entity, end token). Each is asked in a
#: format of its own; none is the corpus's ``e r v .``.
CLOSED_FORMATS = {
    0: ("w84 ? {e} :", "|"),
    1: ("{e} w85 =", ";"),
    2: ("? {e} w86 :", "|"),
    3: ("{e} : w87 ?", ";"),
}
CLOSED_NAMES = ("closed_digit", "closed_word", "closed_letter", "closed_word4")


def closed_record(rng: np.random.Generator, relation: int, shots: int) -> Record:
    """Query a uniform entity; each demonstration's value is drawn uniformly from the
    relation's values *independently of the queried value*, then an entity holding it (never
    the queried one; not one already shown unless all holders of that value are). Every rule
    reading only the prompt is right with probability ``1 / len(values)``."""
    rel = world().relations[relation]
    fmt, end = CLOSED_FORMATS[relation]
    entity = rel.facts[int(rng.integers(len(rel.facts)))][0]
    used = {entity}
    demos = []
    for _ in range(shots):
        value = rel.values[int(rng.integers(len(rel.values)))]
        holders = [e for e in rel.entities_with(value) if e != entity]
        fresh = [e for e in holders if e not in used] or holders  # repeat only if exhausted
        e = fresh[int(rng.integers(len(fresh)))]
        used.add(e)
        demos.append(Unit(fmt.format(e=e), value, end))
    meta = {"values": list(rel.values), "entity": entity, "relation": rel.word}
    return Record(demos, Unit(fmt.format(e=entity), rel.value(entity), end, meta))


# ----------------------------------------------------------------------------- open-book QA
def _passage(entities, values) -> str:
    return " , ".join(f"{e} : {v}" for e, v in zip(entities, values, strict=True)) + " ."


def _free() -> tuple[str, ...]:
    return world().free_words


def open_fact(rng: np.random.Generator) -> Unit:
    """``e : v , ... . ? e :`` -> ``v``: 3-5 statements, distinct entities and values, the
    queried statement uniform."""
    n = int(rng.integers(3, 6))
    words = _pick(rng, _free(), 2 * n)
    ents, vals = words[:n], words[n:]
    k = int(rng.integers(n))
    meta = {"values": vals, "rank": (k, n)}
    return Unit(f"{_passage(ents, vals)} ? {ents[k]} :", vals[k], "|", meta)


def open_second(rng: np.random.Generator) -> Unit:
    """``... . ? e_i e_j :`` -> value of ``e_j``, the entity named last in the question;
    ``e_i`` (a distractor named first) and ``e_j`` are distinct, uniform over the passage."""
    n = int(rng.integers(3, 6))
    words = _pick(rng, _free(), 2 * n)
    ents, vals = words[:n], words[n:]
    i, j = (int(x) for x in rng.choice(n, size=2, replace=False))
    meta = {"values": vals, "rank": (j, n), "first": vals[i]}
    return Unit(f"{_passage(ents, vals)} ? {ents[i]} {ents[j]} :", vals[j], "|", meta)


def open_chain(rng: np.random.Generator) -> Unit:
    """Two-hop: 2-3 chains ``a : b`` and ``b : c`` (all words distinct), statements
    shuffled; ``? ? a :`` -> ``c``. The queried chain is uniform."""
    m = int(rng.integers(2, 4))
    words = _pick(rng, _free(), 3 * m)
    chains = [words[3 * i : 3 * i + 3] for i in range(m)]
    stmts = [(a, b) for a, b, _ in chains] + [(b, c) for _, b, c in chains]
    order = rng.permutation(len(stmts))
    stmts = [stmts[i] for i in order]
    k = int(rng.integers(m))
    a, b, c = chains[k]
    meta = {"values": [ch[2] for ch in chains], "rank": (k, m), "one_hop": b}
    passage = _passage([s[0] for s in stmts], [s[1] for s in stmts])
    return Unit(f"{passage} ? ? {a} :", c, "|", meta)


def open_count(rng: np.random.Generator) -> Unit:
    """Six statements over three value words whose counts are a permutation of 1, 2, 3;
    ``v ? :`` -> how many statements give ``v`` (a digit), ``v`` uniform over the three, so
    the answer is uniform over 1-3 and counting any value not chosen by the question is right
    1 time in 3."""
    words = _pick(rng, _free(), 9)
    ents, kinds = words[:6], words[6:]
    counts = [int(c) for c in rng.permutation([1, 2, 3])]
    vals = [kinds[i] for i in range(3) for _ in range(counts[i])]
    vals = [vals[i] for i in rng.permutation(6)]
    k = int(rng.integers(3))
    meta = {"values": [str(c) for c in counts], "kinds": kinds, "rank": (k, 3)}
    return Unit(f"{_passage(ents, vals)} {kinds[k]} ? :", str(counts[k]), "|", meta)


def open_yesno(rng: np.random.Generator) -> Unit:
    """``... . e v ?`` -> ``w72`` (yes) if the passage states ``e : v``, else ``w73`` (no);
    ``e`` uniform over the passage, ``v`` its own value or (half the time) another
    statement's, so both words are in the passage either way."""
    n = int(rng.integers(3, 6))
    words = _pick(rng, _free(), 2 * n)
    ents, vals = words[:n], words[n:]
    k = int(rng.integers(n))
    yes = bool(rng.integers(2))
    v = vals[k] if yes else vals[(k + 1 + int(rng.integers(n - 1))) % n]
    meta = {"values": [YES, NO], "rank": (k, n)}
    return Unit(f"{_passage(ents, vals)} {ents[k]} {v} ?", YES if yes else NO, "|", meta)


# ----------------------------------------------------------------------------- math
def _who(rng: np.random.Generator, n: int) -> list[str]:
    return _pick(rng, _free(), n)


def _spell(n: int) -> str:
    return " ".join(str(n))


def math_add(rng: np.random.Generator) -> Unit:
    """``P : A O , P gets B ; ? O :`` -> A + B (AddSub); answer uniform over 2-18."""
    ans = int(rng.integers(2, 19))
    a = int(rng.integers(max(1, ans - 9), min(9, ans - 1) + 1))
    p, o = _who(rng, 2)
    q = f"{p} : {a} {o} , {p} {GETS} {ans - a} ; ? {o} :"
    return Unit(q, _spell(ans), "|", {"range": list(range(2, 19)), "numbers": [a, ans - a]})


def math_sub(rng: np.random.Generator) -> Unit:
    """``P : A O , P loses B ; ? O :`` -> A - B (AddSub); answer uniform over 1-8."""
    ans = int(rng.integers(1, 9))
    b = int(rng.integers(1, 10 - ans))
    p, o = _who(rng, 2)
    q = f"{p} : {ans + b} {o} , {p} {LOSES} {b} ; ? {o} :"
    return Unit(q, _spell(ans), "|", {"range": list(range(1, 9)), "numbers": [ans + b, b]})


_PRODUCTS = sorted({a * b for a in range(2, 10) for b in (2, 3)})


def math_mul(rng: np.random.Generator) -> Unit:
    """``P : A each B O ; ? O :`` -> A x B (A groups of B; MultiArith / SingleOp), A in 2-9,
    B in 2-3; the answer is uniform over the 13 products, then a factorisation uniform."""
    ans = _PRODUCTS[int(rng.integers(len(_PRODUCTS)))]
    pairs = [(a, b) for a in range(2, 10) for b in (2, 3) if a * b == ans]
    a, b = pairs[int(rng.integers(len(pairs)))]
    p, o = _who(rng, 2)
    q = f"{p} : {a} {EACH} {b} {o} ; ? {o} :"
    return Unit(q, _spell(ans), "|", {"range": list(_PRODUCTS), "numbers": [a, b]})


def math_two_step(rng: np.random.Generator) -> Unit:
    """``P : A O , P gets B , P loses C ; ? O :`` (the two steps in random order) ->
    A + B - C (MultiArith / SingleEq); answer uniform over 2-10, operands 1-9 uniform over
    the solutions with A > C and B != C (else the answer would often be the first number or
    the gain: steps that cancel, a loss of everything had)."""
    ans = int(rng.integers(2, 11))
    while True:
        a, b = (int(x) for x in rng.integers(1, 10, size=2))
        c = a + b - ans
        if 1 <= c <= 9 and a > c and b != c:
            break
    p, o = _who(rng, 2)
    steps = [f"{p} {GETS} {b}", f"{p} {LOSES} {c}"]
    if rng.integers(2):
        steps.reverse()
    nums = [a] + ([b, c] if steps[0].endswith(f"{GETS} {b}") else [c, b])
    q = f"{p} : {a} {o} , {steps[0]} , {steps[1]} ; ? {o} :"
    return Unit(q, _spell(ans), "|", {"range": list(range(2, 11)), "numbers": nums})


def math_compare(rng: np.random.Generator) -> Unit:
    """``P : A O , Q : B O ; P more Q ? :`` -> how many more P has than Q (ASDiv
    comparison); P (named first in the question) has more, its statement first or second
    uniformly; answer uniform over 1-8."""
    ans = int(rng.integers(1, 9))
    small = int(rng.integers(1, 10 - ans))
    p, r, o = _who(rng, 3)
    stmts = [(p, small + ans), (r, small)]
    if rng.integers(2):
        stmts.reverse()
    body = " , ".join(f"{w} : {n} {o}" for w, n in stmts)
    q = f"{body} ; {p} {MORE} {r} ? :"
    nums = [n for _, n in stmts]
    return Unit(q, _spell(ans), "|", {"range": list(range(1, 9)), "numbers": nums})


def math_distractor(rng: np.random.Generator) -> Unit:
    """SVAMP-style: ``P : A O , P : B O2 , P gets C O ; ? O :`` -> A + C, with a distractor
    quantity B of another object; the relevant statement is first or second uniformly,
    B != A; answer uniform over 2-18. Adding C to the quantity in a fixed position, not the
    one the object word picks, is right half the time (``docs/zoo19.md``)."""
    ans = int(rng.integers(2, 19))
    a = int(rng.integers(max(1, ans - 9), min(9, ans - 1) + 1))
    c = ans - a
    b = int(rng.choice([x for x in range(1, 10) if x != a]))
    p, o, o2 = _who(rng, 3)
    stmts = [(a, o), (b, o2)]
    first = int(rng.integers(2))  # 0: the relevant statement comes first
    if first:
        stmts.reverse()
    body = " , ".join(f"{p} : {n} {w}" for n, w in stmts)
    q = f"{body} , {p} {GETS} {c} {o} ; ? {o} :"
    meta = {"range": list(range(2, 19)), "numbers": [stmts[0][0], stmts[1][0], c],
            "rank": (first, 2)}  # fmt: skip
    return Unit(q, _spell(ans), "|", meta)


# ----------------------------------------------------------------------------- primitives
def program(rng: np.random.Generator, depth: int):
    """Statements ``(name, value)`` (a digit or an earlier name), the queried name, its digit
    and its rank. 2-4 digit assignments (distinct digits, random order); at depth 1, 1-2
    aliases after them, each of a uniform digit variable; the query is uniform over the digit
    variables (depth 0) or the aliases (depth 1)."""
    n_direct = int(rng.integers(2, 5))
    n_alias = int(rng.integers(1, 3)) if depth else 0
    names = _pick(rng, V.LETTERS, n_direct + n_alias)
    digits = _pick(rng, V.DIGITS, n_direct)
    stmts = list(zip(names[:n_direct], digits))
    value = dict(stmts)
    for n in names[n_direct:]:
        src = names[int(rng.integers(n_direct))]
        value[n] = value[src]
        stmts.append((n, src))
    if depth:
        k = int(rng.integers(n_alias))
        query, rank = names[n_direct + k], (k, n_alias)
    else:
        k = int(rng.integers(n_direct))
        query, rank = names[k], (k, n_direct)
    source = dict(stmts)[query] if depth else query
    meta = {"values": digits, "rank": rank, "target_rank": (names.index(source), n_direct)}
    return stmts, query, value[query], meta


def prim_math(rng: np.random.Generator, depth: int) -> Unit:
    """``a : 3 , b : 7 , c : a , c : ?`` -> ``3`` (the source's ``a=3, b=7, c=a, c=?``)."""
    stmts, query, answer, meta = program(rng, depth)
    body = " , ".join(f"{n} : {v}" for n, v in stmts)
    return Unit(f"{body} , {query} : ?", answer, "|", meta)


def prim_code(rng: np.random.Generator, depth: int) -> Unit:
    """``a = 3 ; b = 7 ; c = a ; > c`` -> ``3`` (``>`` prints; the source's ``print(c)``)."""
    stmts, query, answer, meta = program(rng, depth)
    body = " ; ".join(f"{n} = {v}" for n, v in stmts)
    return Unit(f"{body} ; > {query}", answer, "|", meta)


# ----------------------------------------------------------------------------- records
Maker = Callable[[np.random.Generator], Unit]
_MAKERS: dict[str, Maker] = {
    "open_fact": open_fact,
    "open_second": open_second,
    "open_chain": open_chain,
    "open_count": open_count,
    "open_yesno": open_yesno,
    "math_add": math_add,
    "math_sub": math_sub,
    "math_mul": math_mul,
    "math_two_step": math_two_step,
    "math_compare": math_compare,
    "math_distractor": math_distractor,
    "prim_math_depth0": lambda rng: prim_math(rng, 0),
    "prim_math_depth1": lambda rng: prim_math(rng, 1),
    "prim_code_depth0": lambda rng: prim_code(rng, 0),
    "prim_code_depth1": lambda rng: prim_code(rng, 1),
}


def _source(name: str) -> str:
    if name.startswith("closed_"):
        return "closed_record"
    if name.startswith("prim_"):
        return name.rsplit("_", 1)[0]
    return name


def _spec(name, group, metric, fmt, shots, max_new=2, positive_control=False, source=None):
    return TaskSpec(name=name, suite=SUITE, group=group, metric=metric,
                    source=source or f"generator:ablation.tasks.zoo19.{_source(name)}",
                    prompt_format=fmt, shots=shots, n_items=64, max_new_tokens=max_new,
                    stop=STOP, positive_control=positive_control)  # fmt: skip


_C = "closed_qa"
_O = "open_qa"
_M = "math"
_P = "primitives"
#: 19 measured tasks in the source's four groups, then the two positive controls.
SPECS: list[TaskSpec] = [
    _spec("closed_digit", _C, "f1", "w84 ? {x} : {y} |", 8),
    _spec("closed_word", _C, "f1", "{x} w85 = {y} ;", 8),
    _spec("closed_letter", _C, "f1", "? {x} w86 : {y} |", 8),
    _spec("closed_word4", _C, "f1", "{x} : w87 ? {y} ;", 8),
    _spec("open_fact", _O, "f1", "e : v , e : v . ? {x} : {y} |", 2),
    _spec("open_second", _O, "f1", "e : v , e : v . ? e {x} : {y} |", 2),
    _spec("open_chain", _O, "f1", "a : b , b : c . ? ? {x} : {y} |", 2),
    _spec("open_count", _O, "f1", "e : v , e : u , e : v . {x} ? : {y} |", 2),
    _spec("open_yesno", _O, "f1", f"e : v , e : u . {{x}} ? {{y}} | ({YES} yes, {NO} no)", 2),
    _spec("math_add", _M, "digits", f"P : 4 O , P {GETS} 3 ; ? O : {{y}} |", 4, 3),
    _spec("math_sub", _M, "digits", f"P : 7 O , P {LOSES} 3 ; ? O : {{y}} |", 4, 3),
    _spec("math_mul", _M, "digits", f"P : 4 {EACH} 3 O ; ? O : {{y}} |", 4, 3),
    _spec(
        "math_two_step", _M, "digits", f"P : 4 O , P {GETS} 3 , P {LOSES} 2 ; ? O : {{y}} |", 4, 3
    ),  # fmt: skip
    _spec("math_compare", _M, "digits", f"P : 7 O , Q : 3 O ; P {MORE} Q ? : {{y}} |", 4, 3),
    _spec(
        "math_distractor", _M, "digits", f"P : 4 O , P : 6 O2 , P {GETS} 3 O ; ? O : {{y}} |", 3, 3
    ),  # fmt: skip
    _spec("prim_math_depth0", _P, "em", "a : 3 , b : 7 , {x} : ? {y} |", 3),
    _spec("prim_math_depth1", _P, "em", "a : 3 , b : 7 , c : a , {x} : ? {y} |", 3),
    _spec("prim_code_depth0", _P, "em", "a = 3 ; b = 7 ; > {x} {y} |", 3),
    _spec("prim_code_depth1", _P, "em", "a = 3 ; b = 7 ; c = a ; > {x} {y} |", 3),
    _spec(
        "lookup",
        "control",
        "em",
        "k > v , ... , k > {y}",
        12,
        3,
        True,
        "generator:ablation.tasks.zoo.lookup",
    ),  # fmt: skip
    _spec(
        "copy", "control", "f1", "r r[:8] {y}", 0, 4, True, "generator:ablation.tasks.zoo.copy"
    ),  # fmt: skip
]
BY_NAME = index(SPECS)
TASKS = tuple(BY_NAME)
GROUPS = {"closed_qa": 4, "open_qa": 5, "math": 6, "primitives": 4}


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([SEED_OFFSET + seed, TASKS.index(name)])


def records(
    name: str, n_items: int, shots: int | None = None, seed: int = 0, max_tokens: int = CONTEXT
) -> list[Record]:
    """The items of a measured task with their parts (the baseline tests read ``meta``)."""
    spec = BY_NAME[name]
    # a demonstration is at least 2 tokens: more than max_tokens // 2 can never fit
    k = min(spec.shots if shots is None else shots, max_tokens // 2)
    rng = _rng(seed, name)
    out = []
    for _ in range(n_items):
        if name in CLOSED_NAMES:
            rec = closed_record(rng, CLOSED_NAMES.index(name), k)
        else:
            make = _MAKERS[name]
            rec = Record([make(rng) for _ in range(k)], make(rng))
        rec.demos = _fit(rec.demos, rec.unit, max_tokens, spec.max_new_tokens)
        out.append(rec)
    return out


def unit_candidates(unit: Unit) -> list[str] | None:
    """The right-type answers of one question: its ``values`` (a passage's values, a
    relation's values, a program's digits, yes/no) or its numeric ``range``, spelled."""
    if "values" in unit.meta:
        cands = [str(v) for v in unit.meta["values"]]
    elif "range" in unit.meta:
        cands = [_spell(int(n)) for n in unit.meta["range"]]
    else:
        return None
    return cands if unit.answer in cands else [*cands, unit.answer]


def build(
    name: str, n_items: int, shots: int | None = None, seed: int = 0, max_tokens: int = CONTEXT
) -> GenTask:
    """One task of the suite as a :class:`GenTask`."""
    spec = BY_NAME[name]
    if name == "lookup":
        task = zoo.lookup(n_items, spec.shots if shots is None else shots, seed, max_tokens)
    elif name == "copy":
        task = zoo.copy(n_items, seed)
    else:
        recs = records(name, n_items, shots, seed, max_tokens)
        items = [
            GenItem(prompt=r.prompt, golds=[r.unit.answer], candidates=unit_candidates(r.unit))
            for r in recs
        ]
        task = GenTask(name, items, metric=spec.metric)
    return spec.stamp(task)


def load(
    tokenizer=None,
    n_items: int = 64,
    shots: int | None = None,
    seed: int = 0,
    max_tokens: int = CONTEXT,
    names=None,
) -> list[GenTask]:
    """The suite's tasks (all, or ``names``), deterministic for ``seed``; ``shots`` of
    ``None`` takes each task's default (closed-book 8, open-book 2, math 4 (3 for
    ``math_distractor``), primitives 3, lookup 12 pairs), fewer when the prompt must shrink
    to ``max_tokens``."""
    return [build(name, n_items, shots, seed, max_tokens) for name in names or TASKS]


@register("zoo19", lambda: list(SPECS))
def _load_suite(r: SuiteRequest) -> list[GenTask]:
    return load(r.tokenizer, n_items=r.n_items or 64, shots=r.shots, seed=r.seed,
                max_tokens=r.max_tokens or CONTEXT, names=r.tasks)  # fmt: skip
