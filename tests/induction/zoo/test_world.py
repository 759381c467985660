"""The fixed world (``induction.zoo.world``) and the corpus's ``facts`` kind.

The world is drawn once from ``WORLD_SEED`` and must never change: closed-book QA in the
``zoo19`` suite asks it of models trained on it, so its hash is pinned here. The ``facts``
segment states exactly the world's facts, and adding the kind left the default mix (and so the
shipped models' corpus stream) unchanged.
"""

import hashlib
from collections import Counter

import numpy as np

from induction.zoo import corpus
from induction.zoo import vocab as V
from induction.zoo import world as W

WORLD_DIGEST = "7f13ab70c5791f55c4e418a74376a6bd7688ef23b394d722c552fc563f6a0d30"
# sha256 of make_batch(default_rng(5), CorpusConfig(), 16): the default stream, as before the
# facts kind existed (checked against the previous corpus module when the kind was added)
DEFAULT_STREAM_DIGEST = "00c9472c4cd7"


def test_world_is_pinned():
    assert W.WORLD_SEED == 20250219
    assert W.world().digest() == WORLD_DIGEST


def test_world_layout_is_disjoint_and_balanced():
    w = W.world()
    assert len(w.entities) == W.N_ENTITIES == 32 and len(set(w.entities)) == 32
    assert [r.word for r in w.relations] == list(W.RELATION_WORDS)
    word_values = [v for r in w.relations if r.kind == "word" for v in r.values]
    groups = [set(w.entities), set(word_values), set(w.free_words), set(W.FUNCTION_WORDS),
              set(W.RELATION_WORDS)]  # fmt: skip
    assert sum(len(g) for g in groups) == len(set().union(*groups)) == len(V.WORDS)
    assert [len(r.values) for r in w.relations] == [8, 8, 8, 4]
    for r in w.relations:
        assert [e for e, _ in r.facts] == list(w.entities)
        counts = Counter(v for _, v in r.facts)
        assert set(counts) == set(r.values) and len(set(counts.values())) == 1  # balanced
        assert all(v in V.VOCAB for v in r.values) and "a" not in r.values
    assert len(w.facts()) == 128 == len(set(w.facts()))


def test_facts_segment_states_exactly_the_world():
    rng = np.random.default_rng(0)
    facts = set(W.fact_ids())
    seen = set()
    for _ in range(200):
        seg = corpus.facts_segment(rng, 96)
        assert len(seg) % 4 == 0 and len(seg) >= 96
        for i in range(0, len(seg), 4):
            e, r, v, end = seg[i : i + 4]
            assert end == V.VOCAB["."] and (e, r, v) in facts
            seen.add((e, r, v))
    assert seen == facts  # every fact is stated (128 facts, ~4,800 statements)


def test_mixes():
    assert corpus.CorpusConfig().mix == corpus.MIX_V1 and "facts" not in corpus.MIX_V1
    assert abs(sum(corpus.MIX_V2.values()) - 1) < 1e-9 and corpus.MIX_V2["facts"] == 0.15
    for kind, weight in corpus.MIX_V1.items():  # same ratios among the old kinds
        assert abs(corpus.MIX_V2[kind] - 0.85 * weight) < 1e-9
    cfg = corpus.CorpusConfig(seq_len=96, mix=dict(corpus.MIX_V2))
    rng = np.random.default_rng(1)
    kinds = Counter(corpus.make_sequence(rng, cfg)[1] for _ in range(400))
    assert 30 <= kinds["facts"] <= 95  # 0.15 * 400 = 60
    only_facts = corpus.CorpusConfig(mix={"facts": 1})
    seq, kind = corpus.make_sequence(np.random.default_rng(2), only_facts)
    assert kind == "facts" and len(seq) == 128 and seq[0] == V.BOS_ID


def test_default_stream_unchanged():
    batch = corpus.make_batch(np.random.default_rng(5), corpus.CorpusConfig(), 16)
    assert hashlib.sha256(batch.tobytes()).hexdigest()[:12] == DEFAULT_STREAM_DIGEST


# sha256 of make_batch(default_rng(5), 96 tokens, the second zoo's mix, spans <= 40), 16 rows:
# the second zoo's stream, unchanged when the ``pairs`` kind was added (checked both ways)
SECOND_ZOO_STREAM_DIGEST = "1d100b47946b"


def test_pairs_segment_shows_one_relation_without_its_word():
    """``pairs``: the world's facts as ``entity value .``, one relation per segment, the
    relation word never stated, so only the pairs say which relation holds."""
    rng = np.random.default_rng(0)
    by_relation: dict[int, set] = {}
    for e, r, v in W.fact_ids():
        by_relation.setdefault(r, set()).add((e, v))
    relation_ids = {V.VOCAB[w] for w in W.RELATION_WORDS}
    used = Counter()
    for _ in range(200):
        seg = corpus.pairs_segment(rng, 96)
        assert len(seg) % 3 == 0 and len(seg) >= 96 and not relation_ids & set(seg)
        pairs = {(seg[i], seg[i + 1]) for i in range(0, len(seg), 3)}
        assert all(seg[i + 2] == V.VOCAB["."] for i in range(0, len(seg), 3))
        (relation,) = [r for r, facts in by_relation.items() if pairs <= facts]
        used[relation] += 1
    assert set(used) == set(by_relation) and min(used.values()) >= 30  # ~50 each


def test_the_fv_mix_adds_pairs_and_leaves_the_second_zoo_stream_alone():
    from induction.training.protocol import ICL_FV_MIX, ICL_VA_MIX

    assert abs(sum(ICL_FV_MIX.values()) - 1) < 1e-9 and ICL_FV_MIX["pairs"] == 0.1
    assert "pairs" not in ICL_VA_MIX
    cfg = corpus.CorpusConfig(seq_len=96, mix=dict(ICL_VA_MIX), max_span=40)
    batch = corpus.make_batch(np.random.default_rng(5), cfg, 16)
    assert hashlib.sha256(batch.tobytes()).hexdigest()[:12] == SECOND_ZOO_STREAM_DIGEST
    kinds = Counter(
        corpus.make_sequence(np.random.default_rng(s), corpus.CorpusConfig(mix=ICL_FV_MIX))[1]
        for s in range(400)
    )
    assert 20 <= kinds["pairs"] <= 65  # 0.1 * 400 = 40
