"""The zoo's fixed "world": facts a model can only know by having been trained on them.

Closed-book QA (the first group of the 19 few-shot tasks of Saunshi et al. 2025, see
``docs/research.md``) asks for knowledge stored in the weights. For the zoo's tiny models that
knowledge is this world: four relations, each a function from the same 32 entity words to a
small set of values, drawn once from :data:`WORLD_SEED` and stable forever (a hash of it is
pinned in ``tests/induction/zoo/test_world.py``). The corpus states every fact in the
declarative ``facts`` format ``entity relation value .`` (``induction.zoo.corpus``); the
``zoo19`` suite asks them in formats never trained on (``docs/zoo19.md``).

Word layout (ids of ``induction.zoo.vocab`` are stable, so this is too):

- relation words: ``w84 w85 w86 w87`` (:data:`RELATION_WORDS`);
- function words ``w72``-``w83`` (:data:`FUNCTION_WORDS`) are left to the tasks (yes / no,
  gets / loses, ...) and never name an entity or a value;
- entities (32) and the word values of relations 1 and 3 (8 + 4) are drawn from ``w0``-``w71``;
  the other 28 of those words are :data:`FREE_WORDS`, the open-book passages' and math
  problems' vocabulary, so tasks built from fresh facts never reuse the world's words.

Relations (values are balanced: each value belongs to the same number of entities, so the
value of a uniformly drawn entity is uniform, chance ``1 / len(values)``):

====  ======  ==============================  =====
 id   word    values                          chance
====  ======  ==============================  =====
 0    w84     8 digits                        1/8
 1    w85     8 words                         1/8
 2    w86     8 letters (never ``a``)         1/8
 3    w87     4 words                         1/4
====  ======  ==============================  =====

The letter ``a`` is excluded from values because SQuAD normalisation drops it as an article.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from induction.zoo import vocab as V

WORLD_SEED = 20250219  # fixed forever: changing it changes every fact
N_ENTITIES = 32
RELATION_WORDS = ("w84", "w85", "w86", "w87")
FUNCTION_WORDS = tuple(f"w{i}" for i in range(72, 84))
_POOL = tuple(f"w{i}" for i in range(72))  # entities, word values and free words


@dataclass(frozen=True)
class Relation:
    """One relation: ``word`` names it; ``facts`` maps every entity to its value."""

    index: int
    word: str
    kind: str  # "digit" | "word" | "letter"
    values: tuple[str, ...]
    facts: tuple[tuple[str, str], ...]  # (entity, value), in entity order

    def value(self, entity: str) -> str:
        return dict(self.facts)[entity]

    def entities_with(self, value: str) -> list[str]:
        return [e for e, v in self.facts if v == value]


@dataclass(frozen=True)
class World:
    entities: tuple[str, ...]
    relations: tuple[Relation, ...]
    free_words: tuple[str, ...]

    def facts(self) -> list[tuple[str, str, str]]:
        """Every fact as ``(entity, relation word, value)``, relation by relation."""
        return [(e, r.word, v) for r in self.relations for e, v in r.facts]

    def digest(self) -> str:
        """SHA-256 of the facts, entity list and free words: the world's identity."""
        text = repr((self.entities, self.facts(), self.free_words))
        return hashlib.sha256(text.encode()).hexdigest()


def _balanced(rng: np.random.Generator, values: list[str], n: int) -> list[str]:
    """``n`` values, each of ``values`` equally often, in a random order."""
    assert n % len(values) == 0
    out = values * (n // len(values))
    return [out[i] for i in rng.permutation(n)]


@lru_cache(maxsize=1)
def world() -> World:
    """The world, drawn from :data:`WORLD_SEED` (the same on every machine and release:
    ``numpy.random.default_rng`` streams are stable for a fixed seed and call sequence)."""
    rng = np.random.default_rng(WORLD_SEED)
    pool = [_POOL[i] for i in rng.permutation(len(_POOL))]
    entities, word_values_1, word_values_3 = pool[:32], pool[32:40], pool[40:44]
    free = sorted(pool[44:], key=lambda w: int(w[1:]))
    digits = [V.DIGITS[i] for i in sorted(rng.choice(10, size=8, replace=False))]
    letters = [V.LETTERS[1 + i] for i in sorted(rng.choice(17, size=8, replace=False))]
    specs = [("digit", digits), ("word", word_values_1), ("letter", letters),
             ("word", word_values_3)]  # fmt: skip
    relations = []
    for i, (kind, values) in enumerate(specs):
        assigned = _balanced(rng, list(values), N_ENTITIES)
        relations.append(
            Relation(i, RELATION_WORDS[i], kind, tuple(values), tuple(zip(entities, assigned)))
        )
    return World(tuple(entities), tuple(relations), tuple(free))


@lru_cache(maxsize=1)
def _fact_ids() -> tuple[tuple[int, int, int], ...]:
    return tuple((V.VOCAB[e], V.VOCAB[r], V.VOCAB[v]) for e, r, v in world().facts())


def fact_ids() -> tuple[tuple[int, int, int], ...]:
    """Every fact as vocabulary ids ``(entity, relation, value)``."""
    return _fact_ids()
