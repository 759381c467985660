"""RegBench (Akyürek et al. 2024): in-context learning of random regular languages.

Automata (:func:`random_dfa`): 4-12 states over an alphabet of 4-18 letters drawn from
``a``-``r``; each state has 1-3 outgoing edges with distinct letters and no self-loops; every
state is accepting (strings may end anywhere); the automaton is trimmed to the states
reachable from the start and minimised (Moore partition refinement, the missing transitions
going to an implicit dead state), and redrawn if minimisation breaks a constraint. Transitions
are taken uniformly, so each DFA is a probabilistic automaton.

Held-out automata: :func:`dfa_split` hashes an automaton's canonical form (states renumbered in
breadth-first order from the start, edges sorted by letter) into ``train`` (80%), ``val`` (10%)
and ``test`` (10%). Training corpora must only draw ``train`` automata (``is_training_dfa``);
this suite evaluates on ``test`` automata only, so evaluated languages are unseen by
construction.

An instance is 10-19 strings of length 1-49 joined by ``" | "`` (token level: letters and
``|`` are separate tokens), truncated to the model's context. Scoring, at every position whose
next token is a letter (including a string's first letter): the model's next-token
distribution restricted to the automaton's alphabet and renormalised (``q``) is compared with
the automaton's (``p``, uniform over the letters with an outgoing edge from the current
state): TVD = ½Σ|p − q| (the reference code's L1 sum is twice this), and greedy accuracy =
whether argmax ``q`` is a valid letter. Both are averaged over positions within an instance,
then over instances.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ablation.metrics import distribution_scores
from ablation.tasks.base import DistItem, DistTask
from ablation.tasks.registry import SuiteRequest, register
from ablation.tasks.spec import TaskSpec
from induction.errors import InputError

LETTERS = tuple(chr(ord("a") + i) for i in range(18))
SEP = "|"
# RegBench eval draws use their own seed namespace, disjoint from training seeds
SEED_OFFSET = 10_000


@dataclass(frozen=True)
class DFA:
    """Partial DFA, all states accepting. ``edges[s]`` is a sorted tuple of
    ``(letter, next_state)``; state 0 is the start state."""

    alphabet: tuple[str, ...]
    edges: tuple[tuple[tuple[str, int], ...], ...]

    @property
    def n_states(self) -> int:
        return len(self.edges)

    def step(self, state: int, letter: str) -> int | None:
        for sym, nxt in self.edges[state]:
            if sym == letter:
                return nxt
        return None

    def valid(self, state: int) -> list[str]:
        return [sym for sym, _ in self.edges[state]]

    def accepts(self, string: Sequence[str]) -> bool:
        state: int | None = 0
        for ch in string:
            state = self.step(state, ch)
            if state is None:
                return False
        return True

    def canonical(self) -> str:
        order = {0: 0}
        queue = deque([0])
        while queue:
            s = queue.popleft()
            for _, nxt in self.edges[s]:
                if nxt not in order:
                    order[nxt] = len(order)
                    queue.append(nxt)
        inv = sorted(order, key=order.__getitem__)
        rows = [",".join(f"{a}{order[n]}" for a, n in self.edges[s]) for s in inv]
        return "".join(self.alphabet) + ";" + ";".join(rows)


def _minimise(alphabet, edges):
    """Trim to reachable states, then Moore refinement; returns (edges) renumbered with the
    start state 0."""
    n = len(edges)
    reach, queue = {0}, deque([0])
    while queue:
        s = queue.popleft()
        for nxt in edges[s].values():
            if nxt not in reach:
                reach.add(nxt)
                queue.append(nxt)
    states = sorted(reach)
    cls = {s: 0 for s in states}
    while True:
        sig = {
            s: (cls[s],) + tuple(cls[edges[s][a]] if a in edges[s] else -1 for a in alphabet)
            for s in states
        }
        ids: dict = {}
        new = {s: ids.setdefault(sig[s], len(ids)) for s in states}
        if len(ids) == len(set(cls.values())):
            break
        cls = new
    cls = new
    # renumber classes so the start state's class is 0
    remap = {cls[0]: 0}
    for s in states:
        remap.setdefault(cls[s], len(remap))
    out: list[dict[str, int]] = [dict() for _ in remap]
    for s in states:
        c = remap[cls[s]]
        for a, nxt in edges[s].items():
            out[c][a] = remap[cls[nxt]]
    del n
    return out


def random_dfa(
    rng: np.random.Generator,
    n_states: tuple[int, int] = (4, 12),
    n_letters: tuple[int, int] = (4, 18),
    out_degree: tuple[int, int] = (1, 3),
    max_tries: int = 1000,
) -> DFA:
    """Draw a random automaton meeting RegBench's constraints (ranges inclusive)."""
    for _ in range(max_tries):
        m = int(rng.integers(n_letters[0], n_letters[1] + 1))
        alphabet = tuple(sorted(rng.choice(LETTERS, size=m, replace=False).tolist()))
        n = int(rng.integers(n_states[0], n_states[1] + 1))
        edges: list[dict[str, int]] = []
        for s in range(n):
            k = int(rng.integers(out_degree[0], min(out_degree[1], m) + 1))
            syms = rng.choice(alphabet, size=k, replace=False).tolist()
            others = [t for t in range(n) if t != s]
            edges.append({a: int(rng.choice(others)) for a in syms})
        mini = _minimise(alphabet, edges)
        if not (n_states[0] <= len(mini) <= n_states[1]):
            continue
        if any(nxt == s for s, e in enumerate(mini) for nxt in e.values()):
            continue
        used = sorted({a for e in mini for a in e})
        if len(used) < n_letters[0]:
            continue
        return DFA(
            alphabet=tuple(used),
            edges=tuple(tuple(sorted(e.items())) for e in mini),
        )
    raise RuntimeError("could not draw a DFA meeting the constraints")


def dfa_split(dfa: DFA) -> str:
    """``train`` / ``val`` / ``test`` by a hash of the canonical form (80/10/10)."""
    h = int(hashlib.sha256(dfa.canonical().encode()).hexdigest()[:8], 16) % 10
    return "test" if h == 0 else "val" if h == 1 else "train"


def is_training_dfa(dfa: DFA) -> bool:
    return dfa_split(dfa) == "train"


def random_test_dfa(rng: np.random.Generator, split: str = "test", **kw) -> DFA:
    while True:
        dfa = random_dfa(rng, **kw)
        if dfa_split(dfa) == split:
            return dfa


def sample_strings(
    dfa: DFA,
    rng: np.random.Generator,
    n_strings: tuple[int, int] = (10, 19),
    length: tuple[int, int] = (1, 49),
) -> list[list[str]]:
    """Random walks from the start state with uniform transitions."""
    out = []
    for _ in range(int(rng.integers(n_strings[0], n_strings[1] + 1))):
        size = int(rng.integers(length[0], length[1] + 1))
        state, s = 0, []
        for _ in range(size):
            sym, state = dfa.edges[state][int(rng.integers(len(dfa.edges[state])))]
            s.append(sym)
        out.append(s)
    return out


def instance_text(strings: list[list[str]]) -> str:
    return f" {SEP} ".join(" ".join(s) for s in strings)


def symbol_ids(tokenizer) -> dict[str, int]:
    """Token id of each letter and of ``|`` when written after a space; each must be a
    single token."""
    ids = {}
    for sym in LETTERS + (SEP,):
        toks = tokenizer.encode(" " + sym, add_special_tokens=False)
        if len(toks) != 1:
            raise InputError(
                f"RegBench needs ' {sym}' to be one token in this tokenizer (got {len(toks)})"
            )
        ids[sym] = toks[0]
    return ids


def make_item(
    dfa: DFA, strings: list[list[str]], sym_ids: dict[str, int], bos_id: int | None, max_tokens: int
) -> DistItem:
    ids = [] if bos_id is None else [bos_id]
    positions: list[int] = []
    valid: list[list[int]] = []
    for i, s in enumerate(strings):
        if i:
            ids.append(sym_ids[SEP])
        state = 0
        for sym in s:
            if len(ids) >= max_tokens:
                break
            if ids:  # position len(ids)-1 predicts this letter
                positions.append(len(ids) - 1)
                valid.append([sym_ids[a] for a in dfa.valid(state)])
            ids.append(sym_ids[sym])
            nxt = dfa.step(state, sym)
            if nxt is None:  # the strings are drawn from the automaton: never taken
                raise ValueError(f"{s!r} leaves the automaton at {sym!r}")
            state = nxt
        if len(ids) >= max_tokens:
            break
    return DistItem(
        ids=ids, positions=positions, valid=valid, support=[sym_ids[a] for a in dfa.alphabet]
    )


SPEC = TaskSpec(
    name="regbench",
    suite="regbench",
    group="regbench",
    metric="tvd",
    source="generator:ablation.tasks.regbench.random_test_dfa",
    prompt_format="abca | bc | ... (10-19 strings of a held-out random automaton)",
    shots=0,
    n_items=32,
)


def load(
    tokenizer,
    bos_id: int | None,
    n_items: int = 32,
    seed: int = 0,
    max_tokens: int = 512,
    n_strings=(10, 19),
    length=(1, 49),
) -> list[DistTask]:
    rng = np.random.default_rng(SEED_OFFSET + seed)
    sym = symbol_ids(tokenizer)
    items = []
    for _ in range(n_items):
        dfa = random_test_dfa(rng)
        items.append(
            make_item(dfa, sample_strings(dfa, rng, n_strings, length), sym, bos_id, max_tokens)
        )
    return [
        DistTask(name="regbench", items=items, metric="tvd", group="regbench", suite="regbench")
    ]


def score_item(q: np.ndarray, item: DistItem) -> tuple[float, float]:
    """(mean TVD, greedy accuracy) of one instance. ``q[j]`` is the model's next-token
    distribution at ``item.positions[j]`` restricted to ``item.support`` and renormalised."""
    return distribution_scores(q, item.valid, item.support)


@register("regbench", lambda: [SPEC])
def _load_suite(r: SuiteRequest) -> list:
    return load(r.tokenizer, r.bos_id, n_items=r.n_items or 32, seed=r.seed,
                max_tokens=r.max_tokens or 512)  # fmt: skip
