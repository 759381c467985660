"""Teacher-forced readouts (ablation.readout): equal to a plain per-candidate computation,
ties count as misses, candidates default to the task's answer set, and the engine reports
them beside the generated answer's metric."""

import math

import pytest
import torch

from ablation import readout as R
from ablation.engine import Engine
from ablation.hooks import HeadAblation, ablate_heads
from ablation.tasks.base import GenItem, GenTask
from induction.models.loading import load_model


@pytest.fixture(scope="module")
def tiny(tiny_llama_dir):
    return load_model(str(tiny_llama_dir))


def _plain_logprob(hf, tok, prompt: str, answer: str) -> float:
    """log p(answer | prompt) by one forward of prompt + answer, token by token."""
    ctx = tok(prompt)["input_ids"]
    full = tok(prompt + " " + answer)["input_ids"]
    ids = torch.tensor([full])
    with torch.no_grad():
        logp = torch.log_softmax(hf(ids).logits.float(), -1)[0]
    return float(sum(logp[i - 1, full[i]] for i in range(len(ctx), len(full))))


@pytest.mark.parametrize("ablated", [None, "zero", "mean:position"])
def test_readouts_equal_a_plain_loop_for_single_and_multi_token_candidates(tiny, ablated):
    """Read off the generation's prefill and a copy of its KV cache (left-padded batches of
    mixed lengths), the readouts equal one plain forward per candidate, also under an
    ablation whose fill depends on the position."""
    items = [
        GenItem("w1 > w2 , w3 > w4 , w1 >", ["w2"], candidates=["w2", "w4"]),  # one token
        GenItem("a = 3 , b = a ; b ?", ["4 5"], candidates=["3", "4 5", "6"]),  # mixed lengths
        GenItem("w5 w6 w5", ["w6"]),  # no candidates: the task's answer set
    ]
    task = GenTask("t", items, metric="em")
    engine = Engine(tiny.bridge, tiny.tokenizer, batch_size=2, readouts=True)
    prep = engine.prepare(task)
    ablation = None
    if ablated is not None:
        mode, _, over = ablated.partition(":")
        means = engine.means_for(prep, [0, 1], over or "all") if mode == "mean" else None
        ablation = HeadAblation([(0, 1), (1, 2)], mode, means, over or "all")
    res = engine.evaluate(prep, ablation)
    hf, tok = tiny.hf_model, tiny.tokenizer
    for i, (it, cands) in enumerate(zip(items, R.candidates(task), strict=True)):
        if ablation is None:
            lps = [_plain_logprob(hf, tok, it.prompt, c) for c in cands]
        else:
            with ablate_heads(tiny.bridge, ablation):
                lps = [_plain_logprob(hf, tok, it.prompt, c) for c in cands]
        assert res.items["logprob"][i] == pytest.approx(lps[cands.index(it.golds[0])], abs=1e-4)
        best = max(range(len(cands)), key=lambda j: lps[j])
        assert res.items["cand_acc"][i] == float(cands[best] == it.golds[0])
    assert R.candidates(task)[2] == sorted({"w2", "4 5", "w6"})
    assert res.scores["cand_acc"] == pytest.approx(sum(res.items["cand_acc"]) / 3)


def test_candidates_sharing_a_prefix_share_a_row(tiny):
    """Two-digit numbers: one continuation row per first digit with a second; the one-digit
    numbers are read on the prompt's own logits."""
    cands = ["1", "2", "1 0", "1 1", "2 5"]
    task = GenTask("t", [GenItem("w1 w2 :", ["1 1"], candidates=cands)], metric="em")
    rplan = R.plan(task, tiny.tokenizer)
    (rows,) = rplan.rows
    assert len(rows) == 2  # prompt + "1", prompt + "2"
    assert sorted(j for r in rows for j, _ in r.scored) == [2, 3, 4]
    assert sorted(rplan.conts[0]) == list(range(5))


def test_ablation_moves_the_logprob(tiny):
    task = GenTask("t", [GenItem("w1 w2 w3 w1 w2", ["w3"])] * 2, metric="em")
    engine = Engine(tiny.bridge, tiny.tokenizer, readouts=True)
    prep = engine.prepare(task)
    clean = engine.evaluate(prep).items["logprob"][0]
    heads = [(la, h) for la in range(2) for h in range(4)]
    ablated = engine.evaluate(prep, HeadAblation(heads, "zero")).items["logprob"][0]
    assert math.isfinite(clean) and abs(clean - ablated) > 1e-4


def test_ties_are_misses_and_chance_is_one_over_candidates():
    row = R.ReadoutRow(0, (7,), ((1, (7, 8)),))
    conts = [{0: (6,), 1: (7, 8)}]
    rplan = R.ReadoutPlan(conts=conts, rows=[[row]], gold_index=[0], n_candidates=[2])
    first = torch.log_softmax(torch.zeros(1, 10), -1)  # every token equal

    def continue_rows(source, ids, mask):  # the second token certain: a tie with the gold
        logits = torch.full((len(source), ids.shape[1], 10), -1e9)
        logits[..., 8] = 0.0
        return logits

    out = R.finish(rplan, R.read_batch(rplan, [0], first, continue_rows, pad_id=0))
    assert out["cand_acc"] == [0.0] and out["logprob"][0] == pytest.approx(-math.log(10))
    two, four = GenItem("x", ["a"], ["a", "b"]), GenItem("y", ["c"], ["c", "d", "e", "f"])
    task = GenTask("t", [two, four])
    assert R.chance(task) == pytest.approx((1 / 2 + 1 / 4) / 2)


def _logp_rows(hf, rows):
    """``[log_softmax]`` of one plain forward per row (no padding)."""
    with torch.no_grad():
        return [torch.log_softmax(hf(torch.tensor([r])).logits.float(), -1)[0] for r in rows]


def test_readouts_leave_the_generation_alone_and_fit_long_candidates_in_the_context(tiny):
    """A 6-token candidate after a prompt at the context's edge: the generation sees the same
    (left-cut) prompt with or without the readouts, and the candidate's later tokens are read
    on the prompt + prefix cut from the left to the context, by a full forward."""
    prompt = " ".join(f"w{i}" for i in range(1, 21))  # 20 tokens + BOS, past max_len 12
    long = "w3 w4 w5 w6 w7 w8"
    task = GenTask("t", [GenItem(prompt, [long], candidates=["w2", long])], metric="em",
                   max_new_tokens=1)  # fmt: skip
    with_r = Engine(tiny.bridge, tiny.tokenizer, max_len=12, readouts=True)
    without = Engine(tiny.bridge, tiny.tokenizer, max_len=12, readouts=False)
    res = with_r.evaluate(with_r.prepare(task))
    assert res.predictions == without.evaluate(without.prepare(task)).predictions
    tok, hf = tiny.tokenizer, tiny.hf_model
    gen_prompt = tok(prompt)["input_ids"][-11:]  # the budget: 12 - 1 new token
    cont = list(R.continuation(tok, prompt, long, tok(prompt)["input_ids"]))
    assert len(cont) == 6
    row = (gen_prompt + cont[:-1])[-12:]
    start = len(row) - len(cont[:-1])  # index of the prefix's first token in the row
    first, full = _logp_rows(hf, [gen_prompt, row])
    expected = float(first[-1, cont[0]]) + sum(
        float(full[start + t - 1, cont[t]]) for t in range(1, len(cont))
    )
    other = float(first[-1, tok("w2", add_special_tokens=False)["input_ids"][0]])
    assert res.items["logprob"][0] == pytest.approx(expected, abs=1e-4)
    assert res.items["cand_acc"][0] == float(expected > other)


def test_empty_candidates_no_gold_and_no_new_tokens(tiny):
    """An answer that tokenises to nothing scores the empty sum (0); an item without a gold
    among more candidates than a multiple choice holds reports NaN; with max_new_tokens 0 the
    prompt still runs for the readouts."""
    empty = GenItem("w1 w2 :", [""], candidates=["", "w1"])
    many = GenItem("w1 w2 w3", [], candidates=[f"w{i}" for i in range(R.MAX_CANDIDATES + 1)])
    engine = Engine(tiny.bridge, tiny.tokenizer, readouts=True)
    res = engine.evaluate(engine.prepare(GenTask("t", [empty, many], metric="em")))
    assert res.items["logprob"][0] == 0.0 and math.isnan(res.items["logprob"][1])
    assert math.isnan(res.items["cand_acc"][1])
    zero = GenTask("t", [GenItem("w1 w2 w1", ["w2"], candidates=["w2", "w3"])], max_new_tokens=0)
    out = engine.evaluate(engine.prepare(zero))
    assert math.isfinite(out.items["logprob"][0]) and out.predictions == [""]
