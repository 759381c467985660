"""Function-vector scores (induction.circuits.fv): batched patching equals a plain loop; a head that
writes nothing has no effect; the prompts shuffle labels and never show the query."""

import pytest
import torch

from ablation.tasks.base import Example
from induction.circuits import fv
from induction.models.loading import load_model


@pytest.fixture(scope="module")
def tiny(tiny_llama_dir):
    torch.set_num_threads(1)
    return load_model(str(tiny_llama_dir))


def _examples(n=12):
    return [Example(prompt=f"w{i} :", golds=(f"w{i + 40}",), demo="") for i in range(n)]


def test_prompts_shuffle_labels_and_hold_out_the_query():
    prompts = fv.fv_prompts(_examples(), n_prompts=20, shots=4, seed=3)
    assert prompts == fv.fv_prompts(_examples(), n_prompts=20, shots=4, seed=3)
    for p in prompts:
        clean_pairs = [s for s in p.clean.split("\n\n")[:-1]]
        shuffled = [s for s in p.corrupted.split("\n\n")[:-1]]
        assert len(clean_pairs) == 4 and all(
            a.split(":")[0] == b.split(":")[0] and a != b
            for a, b in zip(clean_pairs, shuffled, strict=True)
        )  # same inputs, every label moved
        query = p.clean.split("\n\n")[-1]
        assert query not in clean_pairs and p.corrupted.endswith(query)
        assert p.answer == f"w{int(query.split()[0][1:]) + 40}"
    with pytest.raises(Exception, match="--shots"):
        fv.fv_prompts(_examples(3), n_prompts=1, shots=4, seed=0)


def _batches(model, n_prompts: int, seed: int):
    """Clean and label-shuffled prompt batches of the toy task, and the clean mean outputs."""
    prompts = fv.fv_prompts(_examples(), n_prompts=n_prompts, shots=3, seed=seed)
    answers = [p.answer for p in prompts]
    clean = fv.encode(model.tokenizer, [p.clean for p in prompts], answers, "cpu")
    corrupted = fv.encode(model.tokenizer, [p.corrupted for p in prompts], answers, "cpu")
    return clean, corrupted, fv.mean_activations(model, clean)


def test_batched_equals_loop_and_a_silent_head_has_no_effect(tiny):
    clean, corrupted, means = _batches(tiny, n_prompts=6, seed=0)
    heads = [(la, h) for la in range(2) for h in range(4)]
    looped = fv.cie_loop(tiny, corrupted, means, heads)
    # uneven chunks; the last token alone on the prefix's KV cache, and full passes
    batched = fv.cie_batched(tiny, corrupted, means, heads, max_rows=13)
    full = fv.cie_batched(tiny, corrupted, means, heads, max_rows=13, reuse_prefix=False)
    torch.testing.assert_close(batched, looped, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(full, looped, atol=1e-6, rtol=1e-5)
    assert looped.abs().max() > 0  # patching moves the answer's probability somewhere

    # head (1, 2) writes nothing: its slice of o_proj is zero, so patching it changes nothing
    o_proj = tiny.hf_model.model.layers[1].self_attn.o_proj
    d_head = o_proj.weight.shape[1] // 4
    saved = o_proj.weight.detach().clone()
    try:
        with torch.no_grad():
            o_proj.weight[:, 2 * d_head : 3 * d_head] = 0
        silent = fv.cie_batched(tiny, corrupted, fv.mean_activations(tiny, clean), [(1, 2)])
        assert silent.abs().max() < 1e-7
    finally:
        with torch.no_grad():
            o_proj.weight.copy_(saved)


def test_a_model_whose_kv_cache_is_not_exact_gets_full_passes(tiny):
    """A final norm that reads the sequence length (a stand-in for any module the cache cannot
    reproduce) makes the cached last token differ from a full pass: the scores must still be
    the reference loop's, with a warning."""
    clean, corrupted, means = _batches(tiny, n_prompts=4, seed=1)
    heads = [(0, 1), (1, 3)]
    norm = tiny.hf_model.model.norm
    handle = norm.register_forward_hook(lambda mod, args, out: out + 0.1 * out.shape[1])
    try:
        looped = fv.cie_loop(tiny, corrupted, means, heads)
        with pytest.warns(UserWarning, match="full passes"):
            batched = fv.cie_batched(tiny, corrupted, means, heads)
    finally:
        handle.remove()
    torch.testing.assert_close(batched, looped, atol=1e-6, rtol=1e-5)


def test_exclusion_ablation_keeps_the_excluded_heads_out_of_target_and_controls(tiny):
    """--score fv --exclude induction:FRAC: the top induction heads are neither ablated nor in
    any control; the target keeps ceil(frac x all heads) heads."""
    import pandas as pd

    from ablation.run import plan_heads

    heads = [(la, h) for la in range(2) for h in range(4)]
    table = pd.DataFrame(
        [{"layer": la, "head": h, "fv": float(8 - i), "induction": float(i)}
         for i, (la, h) in enumerate(heads)]
    )  # fmt: skip
    plan = plan_heads(tiny, frac=0.25, score="fv", scores=table, n_controls=5,
                      controls_shape="both", exclude=("induction", 0.25))  # fmt: skip
    excluded = {(1, 2), (1, 3)}  # the two highest induction scores
    assert plan.target == [(0, 0), (0, 1)] and "excluding the top 0.25 by induction" in (
        plan.selection
    )
    for control in plan.controls + plan.shaped:
        assert len(control) == 2 and not set(control) & (excluded | set(plan.target))
    # without exclusion the top FV heads are the same here, but the controls may use (1, 2)
    free = plan_heads(tiny, frac=0.25, score="fv", scores=table, n_controls=20)
    assert any(set(c) & excluded for c in free.controls)
    assert "fv" in __import__("ablation.run", fromlist=["x"]).SCORE_PROVIDERS


def test_cli_writes_one_row_per_head_with_its_spread(tiny_llama_dir, tmp_path):
    import pandas as pd
    from typer.testing import CliRunner

    from induction.commands.main import app

    out = tmp_path / "fv.csv"
    # the tiny model has the zoo vocabulary: words would be refused as unknown tokens (fv11)
    args = ["fv", str(tiny_llama_dir), "--suite", "zoofacts", "--task", "fact_word",
            "--n-prompts", "2", "--shots", "2", "--seeds", "2", "--out", str(out),
            "--threads", "1"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert len(table) == 8 and {"layer", "head", "rank", "fv", "fv_std", "cie:fact_word"} <= set(
        table.columns
    )
    assert table["fv_std"].notna().all()  # two seeds: a spread
    one = CliRunner().invoke(app, [*args[:11], "1", "--threads", "1"])
    assert one.exit_code == 0, one.output
    rows = [line.split() for line in one.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert rows and all(r[-1] == "-" for r in rows)  # one seed: no spread, not "nan"
    assert f"wrote {out}" in result.stderr
    bad = CliRunner().invoke(app, ["fv", str(tiny_llama_dir), "--task", "nope"])
    assert bad.exit_code == 2 and "unknown zoofacts task" in bad.stderr


def test_zoo_models_default_to_the_zoo_worlds_relations(tiny_llama_dir):
    from induction.circuits.fv import fv_scores

    result = fv_scores(str(tiny_llama_dir), tasks=["fact_digit"], n_prompts=2, shots=2)
    assert result.settings["suite"] == "zoofacts" and "cie:fact_digit" in result.table.columns
    from induction.errors import InputError

    with pytest.raises(InputError, match="unknown zoofacts task"):
        fv_scores(str(tiny_llama_dir), tasks=["antonyms"], n_prompts=2, shots=2)


def test_foreign_labels_come_from_other_tasks_and_keep_the_clean_prompts():
    foreign = ["z1", "z2", "z3"]
    shuffled = fv.fv_prompts(_examples(), n_prompts=10, shots=4, seed=5)
    moved = fv.fv_prompts(_examples(), n_prompts=10, shots=4, seed=5, foreign=foreign)
    assert [p.clean for p in moved] == [p.clean for p in shuffled]  # only the corruption differs
    for p in moved:
        demos = p.corrupted.split("\n\n")[:-1]
        assert all(d.split()[-1] in foreign for d in demos)
    with pytest.raises(Exception, match="other tasks' answers"):
        fv.fv_prompts(_examples(), n_prompts=1, shots=2, seed=0, foreign=[])
    with pytest.raises(Exception, match="--corruption 'reversed'"):
        fv.FVConfig(corruption="reversed")


def test_headroom_says_when_shuffled_labels_still_name_the_task():
    """The zoo's relations have disjoint label sets: with shuffled labels the FV pair's dense
    model still answers (headroom ~0, every CIE noise); foreign labels take the task away and
    one head's mean output brings much of it back."""
    from induction.circuits.fv import fv_scores

    torch.set_num_threads(1)
    kw = {"tasks": ["fact_word"], "n_prompts": 8, "shots": 5}
    shuffled = fv_scores("dense8f-s0", corruption="shuffled", **kw)
    foreign = fv_scores("dense8f-s0", corruption="foreign", **kw)
    assert set(shuffled.baselines.columns) >= {"task", "seed", "p_clean", "p_corrupted"}
    assert shuffled.headroom < 0.05 and foreign.headroom > 0.5
    assert foreign.table["fv"].max() > 10 * shuffled.table["fv"].abs().max()
    assert foreign.settings["corruption"] == "foreign"


def test_a_bare_bridge_is_refused_in_one_line(tiny):
    # fv reads the model's facts and tokenizer, which come with a LoadedModel only
    from induction.errors import InputError

    with pytest.raises(InputError, match="fv needs a model spec or a LoadedModel"):
        fv.run(tiny.bridge)
