"""Many head sets in one batched forward (issue #42 item 2): every set gets the numbers it
gets in a pass of its own, on generation tasks with their readouts, on RegBench, in both
ablation modes, through the engine, :func:`ablation.ablate` and its resume cache."""

import json
import math

import pytest
import torch

from ablation.config import AblationConfig
from ablation.engine import Engine, ResultCache
from ablation.hooks import HeadAblation, HeadSetsAblation
from ablation.pipeline import ablate
from ablation.run import compute_scores
from ablation.tasks import load_suite
from induction.errors import InputError
from induction.models.loading import load_model

ZOO = "grown8c-s0"
TOL = 1e-5


@pytest.fixture(scope="module")
def zoo():
    loaded = load_model(ZOO, device="cpu")
    return loaded, compute_scores(loaded)


def _tasks(loaded):
    kw = dict(tokenizer=loaded.tokenizer, bos_id=loaded.info.bos_token_id, seed=0)
    gen = load_suite("zoo", n_items=6, tasks=["lookup", "copy", "var_depth0"], **kw)
    return gen + load_suite("regbench", n_items=3, **kw)


def _same(a, b) -> None:
    """Two results agree: the same answers, every item score within TOL (NaN with NaN)."""
    assert a.predictions == b.predictions
    assert set(a.items) == set(b.items)
    for name, values in a.items.items():
        for x, y in zip(values, b.items[name], strict=True):
            assert (math.isnan(x) and math.isnan(y)) or abs(x - y) <= TOL, name


SETS = [[], [(1, 2), (3, 0), (3, 5)], [(0, 1), (6, 7)], [(2, 3)], [(4, 4), (5, 1), (7, 0)], []]


@pytest.mark.parametrize(("mode", "mean_over"), [("zero", "all"), ("mean", "position")])
def test_head_sets_in_one_pass_equal_one_set_per_pass(zoo, mode, mean_over):
    loaded, _ = zoo
    engine = Engine(loaded.bridge, loaded.tokenizer, batch_size=4, readouts=True)
    moved = 0
    for task in _tasks(loaded):
        prep = engine.prepare(task)
        means = engine.means_for(prep, [], mean_over) if mode == "mean" else None
        ablations = [HeadAblation(h, mode, means, mean_over) if h else None for h in SETS]
        alone = [engine.evaluate(prep, a) for a in ablations]
        engine.head_sets_per_pass = 4  # passes of 4 and 2 sets
        seen = []
        together = engine.evaluate_sets(prep, ablations, on_result=lambda i, r: seen.append(i))
        engine.head_sets_per_pass = None
        assert seen == list(range(len(SETS)))
        for a, b in zip(alone, together, strict=True):
            _same(a, b)
        moved += alone[1].scores != alone[0].scores  # the ablation changes something
    assert moved


def test_rows_of_each_set_equal_zeroing_the_o_proj_input_slice(tiny_llama_dir):
    """Against raw transformers: each row block of one batched forward equals the model with
    its own set's slices of the output projection's input zeroed (GQA: per query head)."""
    from transformers import LlamaForCausalLM

    loaded = load_model(str(tiny_llama_dir), device="cpu")
    raw = LlamaForCausalLM.from_pretrained(str(tiny_llama_dir)).eval()
    d_head, n_heads = loaded.info.d_head, loaded.info.n_heads
    x = torch.randint(4, 128, (2, 11), generator=torch.Generator().manual_seed(0))
    sets = [[(0, 1), (1, 3)], [], [(1, 0)]]
    multi = HeadSetsAblation(sets, n_heads)
    multi.row_sets = torch.arange(len(sets)).repeat_interleave(2)
    with torch.no_grad(), loaded.bridge.hooks(fwd_hooks=multi.fwd_hooks()):
        got = loaded.hf_model(input_ids=x.repeat(len(sets), 1)).logits
    for k, heads in enumerate(sets):
        handles = []
        for layer in sorted({la for la, _ in heads}):
            idx = [h for la, h in heads if la == layer]

            def pre(mod, args, idx=idx):
                z = args[0].clone()
                for h in idx:
                    z[..., h * d_head : (h + 1) * d_head] = 0
                return (z,)

            o_proj = raw.model.layers[layer].self_attn.o_proj
            handles.append(o_proj.register_forward_pre_hook(pre))
        try:
            with torch.no_grad():
                ref = raw(x).logits
        finally:
            for h in handles:
                h.remove()
        torch.testing.assert_close(got[2 * k : 2 * k + 2], ref, rtol=0, atol=TOL)


def _numbers(result) -> dict:
    return json.loads(json.dumps({
        t: {label: r.to_json() for label, r in by.by_label.items()}
        for t, by in result.run.results.items()
    }))  # fmt: skip


def _close(a, b) -> None:
    if isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            if k != "heads":
                _close(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _close(x, y)
    elif isinstance(a, float) and isinstance(b, float):
        assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= TOL
    else:
        assert a == b


@pytest.mark.parametrize("suite", ["zoo", "regbench"])
def test_ablate_json_is_the_same_batched(zoo, suite, tmp_path):
    """:func:`ablate` with one set per pass and with every set in one pass: the same report
    and per-item numbers (JSON) within 1e-5, and the resume cache keeps one entry per
    (task, head set) that either way serves."""
    loaded, scores = zoo
    tasks = ("lookup", "var_depth0") if suite == "zoo" else None
    cfg = AblationConfig(suite=suite, tasks=tasks, n_items=4, controls=2, cache=False)
    one = ablate(loaded, cfg, scores=scores, progress=False, head_sets_per_pass=1)
    many = ablate(loaded, cfg, scores=scores, progress=False, head_sets_per_pass=6)
    _close(_numbers(one), _numbers(many))
    a, b = one.save(tmp_path / "one.json"), many.save(tmp_path / "many.json")
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    _close(ra["rows"], rb["rows"])


def test_resume_cache_is_per_task_and_head_set(zoo, tmp_path):
    loaded, scores = zoo
    cfg = AblationConfig(suite="zoo", tasks=("lookup",), n_items=4, controls=2, cache=False)
    engine_kw = dict(batch_size=32, readouts=True)
    from ablation.run import plan_heads, run_ablation

    plan = plan_heads(loaded, frac=0.2, n_controls=2, scores=scores, controls_shape="both")
    from ablation.pipeline import build_tasks

    tasks = build_tasks(cfg, "zoo", loaded)
    path = tmp_path / "cache.jsonl"
    full = run_ablation(
        loaded,
        tasks,
        plan,
        engine=Engine(loaded.bridge, loaded.tokenizer, head_sets_per_pass=6, **engine_kw),
        cache=ResultCache(path),
        progress=False,
    )
    lines = path.read_text().splitlines()
    assert len(lines) == 6  # clean, target, 2 uniform, 2 shaped: one line each
    path.write_text("\n".join(lines[:2]) + "\n")  # an interrupted run kept two
    resumed = run_ablation(
        loaded,
        tasks,
        plan,
        engine=Engine(loaded.bridge, loaded.tokenizer, head_sets_per_pass=3, **engine_kw),
        cache=ResultCache(path),
        progress=False,
    )
    assert resumed.cached == 2
    assert len(path.read_text().splitlines()) == 6
    for key, by in full.results.items():
        for label, res in by.by_label.items():
            _same(res, resumed.results[key].by_label[label])


def test_sets_per_pass_override_memory_and_refusals(zoo):
    loaded, _ = zoo
    engine = Engine(loaded.bridge, loaded.tokenizer, readouts=True)
    prep = engine.prepare(_tasks(loaded)[0])
    assert engine.sets_per_pass(prep, 1) == 1
    auto = engine.sets_per_pass(prep, 41)
    rows = max(len(i) for i, _, _ in prep.batches)
    width = max(ids.shape[1] for _, ids, _ in prep.batches)
    assert 1 <= auto <= max(1, 4096 // (rows * width))  # the CPU's tokens per pass
    assert engine.bytes_per_set(prep) > 0
    engine.head_sets_per_pass = 7
    assert engine.sets_per_pass(prep, 41) == 7 and engine.sets_per_pass(prep, 3) == 3
    with pytest.raises(InputError, match="head-sets-per-pass"):
        Engine(loaded.bridge, loaded.tokenizer, head_sets_per_pass=0)
    with pytest.raises(InputError, match="head-sets-per-pass"):
        AblationConfig(head_sets_per_pass=0)
    assert "head_sets_per_pass" not in AblationConfig().to_dict()  # keys as they were
    assert AblationConfig(head_sets_per_pass=4).to_dict()["head_sets_per_pass"] == 4


def test_cli_refuses_zero_head_sets_per_pass(one_line_error):
    from typer.testing import CliRunner

    from induction.commands.main import app

    result = CliRunner().invoke(app, ["ablate", ZOO, "--head-sets-per-pass", "0"])
    assert result.exit_code == 2
    one_line_error(result, "--head-sets-per-pass")
