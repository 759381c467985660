"""Synthetic training corpus that makes tiny models grow induction heads and learn in context.

Every sequence is ``<bos>`` followed by segments of one of six kinds (token text is words
joined by spaces, see ``induction.zoo.vocab``):

- ``copy``: a random span ``r`` of ordinary tokens repeated (``r r`` or ``r r r``), the
  repeated-random-token pattern that induction heads solve (Olsson et al. 2022);
- ``lookup``: ``k > v , k > v , ... .`` with a fresh random map per segment; keys recur,
  so later values can only be predicted by looking back in context;
- ``varassign``: ``a = 3 , b = a ; b ? 3 .`` (depth 0 and depth 1 variable assignment,
  the reasoning primitives of Saunshi et al. 2025);
- ``regbench``: strings of a random probabilistic DFA joined by ``|`` (Akyurek et al. 2024);
  DFAs are split into training and held-out ones by :func:`is_training_dfa`;
- ``bigram``: background text from one fixed bigram chain over the words (a "language");
- ``facts``: the fixed world's facts (``induction.zoo.world``) stated as ``entity relation
  value .`` (``w12 w84 3 .``), the knowledge closed-book QA asks for (``docs/zoo19.md``);
- ``pairs``: facts of one relation per segment stated as ``entity value .``, without the
  relation word: only the pairs before say which relation holds, the demonstration-defined
  format function vectors carry (Todd et al. 2024) and the ``zoofacts`` pair tasks ask;
- ``openbook``, ``math``, ``programs`` (round 4): problems of one ``zoo4g`` task type per
  segment, as a few-shot prompt lays them out (:mod:`induction.zoo.problems`): open-book QA
  over a passage, math word problems, variable assignment at depths 0-2 and the like.

Mixes: :data:`MIX_V1` is the default (the shipped models' mix; ``facts`` has weight 0 there,
i.e. it is absent, so old configs, cards and random streams are unchanged). :data:`MIX_V2`
adds ``facts`` at 0.15 and scales the other kinds by 0.85 (same ratios): the mix a training
protocol meant for the ``zoo19`` suite sets as its corpus ``mix``. :data:`MIX_R4` is round 4's
(docs/replication.md, rule R4): the ``zoo4g`` suite's groups in its own formats.

Repeat distances follow a curriculum: spans up to ``max_span`` tokens (30 until induction
heads form, then 70), because RoPE heads trained on short distances do not reach long ones
and long distances from the start stretch the plateau.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from induction.zoo import vocab as V
from induction.zoo.world import fact_ids

KINDS = (
    "copy",
    "lookup",
    "varassign",
    "regbench",
    "bigram",
    "facts",
    "pairs",
    "openbook",
    "math",
    "programs",
)
#: The round-4 kinds: problems of the ``zoo4g`` suite (:mod:`induction.zoo.problems`).
R4_KINDS = ("openbook", "math", "programs")
BACKGROUND_SEED = 1234  # the bigram "language" is the same for every zoo model
_SEP = V.VOCAB[","]
_END = V.VOCAB["."]
_ARROW = V.VOCAB[">"]
_EQ = V.VOCAB["="]
_SEMI = V.VOCAB[";"]
_Q = V.VOCAB["?"]
_BAR = V.VOCAB["|"]


#: The default mix (the shipped zoo models'): no ``facts`` (weight 0).
MIX_V1: dict[str, float] = {
    "copy": 0.5,
    "lookup": 0.2,
    "varassign": 0.1,
    "regbench": 0.1,
    "bigram": 0.1,
}
#: MIX_V1 scaled by 0.85 plus ``facts`` at 0.15: for models evaluated on ``zoo19``.
MIX_V2: dict[str, float] = {
    "copy": 0.425,
    "lookup": 0.17,
    "varassign": 0.085,
    "regbench": 0.085,
    "bigram": 0.085,
    "facts": 0.15,
}

#: Pilots 2-11's round-4 mix (``benchmarks/r4_pilot.py`` pins it): lookup back at 0.20 and
#: varassign at 0.30 after pilot 1; the new kinds share what is left.
MIX_R4_PILOT2: dict[str, float] = {
    "copy": 0.05,
    "lookup": 0.2,
    "varassign": 0.3,
    "facts": 0.1,
    "openbook": 0.15,
    "math": 0.1,
    "programs": 0.1,
}
#: Round 4's recipe (docs/replication.md, R4-recipe and amendment A10): pilot 13's, the pilots'
#: mix with open-book on the lookup kind's ``>`` (``induction.zoo.problems.SAYS``). Pilot 12a's
#: (open-book 0.25 on ``:``) passed first with 17 and was the recipe until 13 passed with 18.
MIX_R4: dict[str, float] = dict(MIX_R4_PILOT2)
#: Pilot 1's round-4 mix (a record: ``benchmarks/results/pilot4/grown8rt-s0_card.json``). Its
#: model never learnt lookup (``lookup`` 0.05), so no program binding formed.
MIX_R4_PILOT1: dict[str, float] = {
    "copy": 0.1,
    "lookup": 0.05,
    "facts": 0.15,
    "openbook": 0.2,
    "math": 0.15,
    "programs": 0.35,
}


@dataclass
class CorpusConfig:
    seq_len: int = 128
    mix: dict[str, float] = field(default_factory=lambda: dict(MIX_V1))
    min_span: int = 4
    max_span: int = 30
    # math segments may also be recall problems (``problems.math_recall``; pilot 9)
    math_recall: bool = False


# ----------------------------------------------------------------------------- background
def bigram_table(n_words: int = len(V.WORD_IDS), fan_out: int = 4) -> np.ndarray:
    """Row-stochastic ``[n_words, n_words]`` transition matrix: each word has a few likely
    successors (Zipf-like weights) plus a small uniform floor."""
    rng = np.random.default_rng(BACKGROUND_SEED)
    table = np.full((n_words, n_words), 0.02 / n_words)
    weights = 1.0 / np.arange(1, fan_out + 1)
    for w in range(n_words):
        succ = rng.choice(n_words, size=fan_out, replace=False)
        table[w, succ] += 0.98 * weights / weights.sum()
    return table / table.sum(axis=1, keepdims=True)


_BIGRAM = bigram_table()
_BIGRAM_CDF = np.cumsum(_BIGRAM, axis=1)


def bigram_text(rng: np.random.Generator, length: int) -> list[int]:
    out, w = [], int(rng.integers(len(V.WORD_IDS)))
    u = rng.random(length)
    for i in range(length):
        out.append(V.WORD_IDS[w])
        w = int(np.searchsorted(_BIGRAM_CDF[w], u[i]))
        w = min(w, len(V.WORD_IDS) - 1)
    return out


# ----------------------------------------------------------------------------- segments
ORDINARY_IDS = np.arange(V.FIRST_ORDINARY_ID, V.VOCAB_SIZE)


def copy_segment(rng: np.random.Generator, span: int, repeats: int = 2) -> list[int]:
    r = rng.choice(ORDINARY_IDS, size=span, replace=False).tolist()
    return r * repeats


def lookup_segment(rng: np.random.Generator, n_keys: int, n_pairs: int) -> list[int]:
    """``k > v , k > v , ... .``: ``n_pairs`` pairs of a fresh map of ``n_keys`` keys, keys
    drawn uniformly with replacement (so the key of a pair is independent of the pairs before
    it, and a repeated key is uniform over the keys shown so far). Values are distinct, so a
    value names its entry: a rule that answers some shown value without reading the key is
    right 1 time in (number of keys shown)."""
    keys = rng.choice(V.WORD_IDS, size=n_keys, replace=False)
    values = rng.choice(V.WORD_IDS, size=n_keys, replace=False)
    out: list[int] = []
    for i in rng.integers(n_keys, size=n_pairs):
        out += [int(keys[i]), _ARROW, int(values[i]), _SEP]
    out[-1] = _END
    return out


def varassign_segment(rng: np.random.Generator, depth: int) -> list[int]:
    """``a = 3 , b = 7 , c = a ; c ? 3 .`` -- depth 0 queries a digit assignment, depth 1 a
    copy of one (an alias).

    The queried variable is uniform over the digit assignments (depth 0) or the aliases
    (depth 1), whose source is uniform over the digit assignments; digit assignments come in
    a random order, so the queried statement's position is uniform too. Values are distinct
    digits within a program: a rule that answers the value of a fixed statement, the first,
    last or most frequent value, is right 1 time in ``n_direct`` (the chance level tested in
    ``tests/induction/zoo/test_corpus_baselines.py``)."""
    n_direct = int(rng.integers(2, 5))
    n_alias = int(rng.integers(1, 3)) if depth >= 1 else 0
    names = rng.choice(V.LETTER_IDS, size=n_direct + n_alias, replace=False).tolist()
    digits = rng.choice(V.DIGIT_IDS, size=n_direct, replace=False).tolist()
    values = {n: int(d) for n, d in zip(names[:n_direct], digits, strict=True)}
    stmts = [[n, _EQ, values[n]] for n in names[:n_direct]]
    for n in names[n_direct:]:
        src = names[int(rng.integers(n_direct))]
        values[n] = values[src]
        stmts.append([n, _EQ, src])
    order = rng.permutation(n_direct)  # digit assignments in any order, aliases after
    body: list[int] = []
    for i in [*order.tolist(), *range(n_direct, n_direct + n_alias)]:
        body += stmts[i] + [_SEP]
    body[-1] = _SEMI
    # uniform over the candidates; ``names`` is a random draw, so index k is no particular
    # position in ``body`` (the old rule, ``names[order[0]]``, always asked the first one)
    if depth >= 1:
        query = names[n_direct + int(rng.integers(n_alias))]
    else:
        query = names[int(rng.integers(n_direct))]
    return body + [query, _Q, values[query], _END]


def facts_segment(rng: np.random.Generator, budget: int) -> list[int]:
    """``e r v . e r v . ...`` until ``budget`` tokens: facts of the fixed world
    (:func:`induction.zoo.world.world`) drawn uniformly with replacement, each stated in the
    declarative training format ``entity relation value .``. Nothing else is ever stated, so
    the only facts a model can learn here are the world's."""
    facts = fact_ids()
    out: list[int] = []
    while len(out) < budget:
        e, r, v = facts[int(rng.integers(len(facts)))]
        out += [e, r, v, _END]
    return out


def pairs_segment(rng: np.random.Generator, budget: int) -> list[int]:
    """``e v . e v . ...`` until ``budget`` tokens: facts of one relation of the fixed world,
    drawn uniformly per segment, then its facts uniformly with replacement, each stated
    without its relation word. The relations' value sets overlap (two map to words), so
    which one holds is read from the pairs, as in a few-shot prompt."""
    facts = fact_ids()
    relations = sorted({r for _, r, _ in facts})
    relation = relations[int(rng.integers(len(relations)))]
    pool = [(e, v) for e, r, v in facts if r == relation]
    out: list[int] = []
    while len(out) < budget:
        e, v = pool[int(rng.integers(len(pool)))]
        out += [e, v, _END]
    return out


# ----------------------------------------------------------------------------- RegBench
@dataclass(frozen=True)
class DFA:
    """A probabilistic DFA: ``edges[state]`` = tuple of (letter_id, next_state); transitions
    are taken uniformly, every state accepts (RegBench-style, trimmed)."""

    edges: tuple[tuple[tuple[int, int], ...], ...]

    @property
    def n_states(self) -> int:
        return len(self.edges)

    def key(self) -> str:
        return repr(self.edges)

    def valid_next(self, state: int) -> list[int]:
        return [letter for letter, _ in self.edges[state]]

    def step(self, state: int, letter: int) -> int | None:
        for a, nxt in self.edges[state]:
            if a == letter:
                return nxt
        return None


def random_dfa(
    rng: np.random.Generator,
    n_states: tuple[int, int] = (3, 6),
    n_letters: tuple[int, int] = (4, 8),
) -> DFA:
    """Random DFA: 1-3 outgoing edges per state, distinct letters per state, no self loops,
    every state reachable from state 0."""
    while True:
        n = int(rng.integers(n_states[0], n_states[1] + 1))
        k = int(rng.integers(n_letters[0], n_letters[1] + 1))
        alphabet = rng.choice(V.LETTER_IDS, size=k, replace=False)
        edges = []
        for s in range(n):
            out_deg = int(rng.integers(1, min(3, k) + 1))
            letters = rng.choice(alphabet, size=out_deg, replace=False)
            targets = rng.choice([t for t in range(n) if t != s], size=out_deg)
            edges.append(tuple(sorted(zip(letters.tolist(), targets.tolist()))))
        dfa = DFA(tuple(edges))
        if _all_reachable(dfa):
            return dfa


def _all_reachable(dfa: DFA) -> bool:
    seen, todo = {0}, [0]
    while todo:
        for _, t in dfa.edges[todo.pop()]:
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return len(seen) == dfa.n_states


def is_training_dfa(dfa: DFA) -> bool:
    """Train/held-out split of DFAs by hash: 80% train. Evaluation uses only held-out DFAs."""
    return hashlib.sha256(dfa.key().encode()).digest()[0] % 5 != 0


def sample_dfa(rng: np.random.Generator, training: bool) -> DFA:
    while True:
        dfa = random_dfa(rng)
        if is_training_dfa(dfa) == training:
            return dfa


def sample_string(rng: np.random.Generator, dfa: DFA, length: int) -> list[int]:
    state, out = 0, []
    for _ in range(length):
        letter, state = dfa.edges[state][int(rng.integers(len(dfa.edges[state])))]
        out.append(letter)
    return out


def regbench_segment(rng: np.random.Generator, dfa: DFA, budget: int) -> list[int]:
    out: list[int] = []
    while len(out) < budget:
        out += sample_string(rng, dfa, int(rng.integers(1, 10))) + [_BAR]
    return out


# ----------------------------------------------------------------------------- sequences
def make_sequence(rng: np.random.Generator, cfg: CorpusConfig) -> tuple[list[int], str]:
    """One training sequence of exactly ``cfg.seq_len`` tokens and its kind."""
    kinds = list(cfg.mix)
    p = np.array([cfg.mix[k] for k in kinds], dtype=float)
    kind = kinds[int(rng.choice(len(kinds), p=p / p.sum()))]
    seq = [V.BOS_ID]
    n = cfg.seq_len
    if kind == "copy":
        while len(seq) < n:
            span = int(rng.integers(cfg.min_span, cfg.max_span + 1))
            seq += bigram_text(rng, int(rng.integers(0, 8)))
            seq += copy_segment(rng, span, repeats=int(rng.choice([2, 2, 3])))
    elif kind == "lookup":
        while len(seq) < n:
            seq += lookup_segment(rng, int(rng.integers(6, 13)), int(rng.integers(12, 30)))
    elif kind == "varassign":
        while len(seq) < n:
            seq += varassign_segment(rng, depth=int(rng.integers(2)))
    elif kind == "regbench":
        seq += regbench_segment(rng, sample_dfa(rng, training=True), n)
    elif kind == "facts":
        seq += facts_segment(rng, n)
    elif kind == "pairs":
        seq += pairs_segment(rng, n)
    elif kind in R4_KINDS:
        from induction.zoo.problems import problem_segment

        seq += problem_segment(rng, kind, n, training_only=cfg.math_recall)
    else:
        seq += bigram_text(rng, n)
    return seq[:n], kind


def make_batch(rng: np.random.Generator, cfg: CorpusConfig, batch: int) -> np.ndarray:
    """``[batch, seq_len]`` int64 token ids."""
    return np.array([make_sequence(rng, cfg)[0] for _ in range(batch)], dtype=np.int64)
