"""Zoo training smoke tests: a few steps of each family, determinism, the CLI."""

import json
import re
import shutil

import pytest
import torch
from typer.testing import CliRunner

from induction import load_model
from induction.commands.main import app
from induction.errors import InputError
from induction.training.first_zoo import ZooTrainConfig
from induction.training.train import train
from lineage.log import duplication_log


def tiny(family, **kw):
    base = dict(family=family, steps=4, max_steps=4, eval_every=2, d_mlp=64, batch=4, seq_len=48)
    return ZooTrainConfig(**{**base, "seq_len_before": 48, **kw})


def test_same_seed_same_weights_different_seed_different():
    a, _ = train(tiny("dense", depth=2), progress=False)
    b, _ = train(tiny("dense", depth=2), progress=False)
    c, _ = train(tiny("dense", depth=2, seed=1), progress=False)
    for (name, pa), pb, pc in zip(
        a.state_dict().items(), b.state_dict().values(), c.state_dict().values()
    ):
        assert torch.equal(pa, pb), name
    assert not torch.equal(a.lm_head.weight, c.lm_head.weight)


def test_grown_model_grows_after_formation_and_reloads(tmp_path):
    # formed_threshold 0: "formed" at the first check, so growth happens at grow_at.
    cfg = tiny("grown", formed_threshold=0.0, grow_at=(0.5,))
    model, card = train(cfg, out=tmp_path / "g", progress=False)
    assert card["effective_depth"] == 8 and card["formed_at_step"] == 2
    assert 0.5 < card["flops_vs_dense"] < 1.0
    loaded = load_model(str(tmp_path / "g"), device="cpu")
    log = duplication_log(loaded)
    assert log.final_depth == 8 and log.events[0].step == 2
    tokens = torch.randint(4, 128, (2, 12))
    with torch.no_grad():
        torch.testing.assert_close(
            loaded.bridge(tokens), model.eval()(tokens).logits, rtol=0, atol=1e-5
        )


def test_two_growth_stages_keep_their_spacing_when_formation_is_late(tmp_path):
    # Planned at steps 1 and 3; the first check (step 4) finds a head ("formed" at threshold
    # 0), so the first event moves to step 4 and the second keeps its distance: step 6.
    cfg = tiny("grown", formed_threshold=0.0, grow_at=(0.1, 0.3), depth=12, steps=12, max_steps=12)
    cfg.eval_every = 4
    _, card = train(cfg, out=tmp_path / "g12", progress=False)
    assert card["name"] == "grown12-s0" and card["effective_depth"] == 12
    log = duplication_log(load_model(str(tmp_path / "g12"), device="cpu"))
    assert [e.step for e in log.events] == [4, 6]
    assert log.depths() == [4, 8, 12]
    # LIDAS twice: ab abcd cd -> ab ab abcd cd cd; every initial layer has three copies
    assert [log.ancestor_of(layer) for layer in range(12)] == [0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3]
    # the 8-layer network the second event copied is kept, and lineage --stage 1 scores it
    assert card["stage_checkpoints"] == {"1": {"folder": "stage1", "step": 6}}
    stage1 = load_model(str(tmp_path / "g12" / "stage1"), device="cpu")
    assert stage1.info.n_layers == 8 and stage1.duplication_log_path is None

    import lineage

    result = lineage.trace(str(tmp_path / "g12"), stage=1, top=3, seeds=1, batch=2)
    assert result.summary.ancestors["ancestor_score"].notna().all()


def test_grown_depth_must_match_the_growth_events():
    with pytest.raises(InputError, match="ends at 12 layers, not depth 8"):
        train(tiny("grown", grow_at=(0.25, 0.5)), progress=False)


def test_looped_model_saves_block_once(tmp_path):
    _, card = train(tiny("looped"), out=tmp_path / "l", progress=False)
    config = json.loads((tmp_path / "l" / "config.json").read_text())
    assert config["num_hidden_layers"] == 2 and card["effective_depth"] == 8
    assert load_model(str(tmp_path / "l"), device="cpu").info.n_layers == 8


def test_cli_trains_and_refuses_bad_input(tmp_path):
    runner = CliRunner()
    out = tmp_path / "m"
    result = runner.invoke(
        app, ["zoo", "train", "dense", "--seed", "3", "--steps", "2", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "card.json").read_text())["seed"] == 3
    result = runner.invoke(app, ["zoo", "train", "dense", "--steps", "2", "--out", str(out)])
    assert result.exit_code == 2 and "already exists" in result.output
    result = runner.invoke(app, ["zoo", "train", "recurrent", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "unknown zoo family" in result.output
    for args, message in (
        (["dense", "--grow-at", "0.3"], "grown family only"),
        (["grown", "--grow-at", "0.5,0.2"], "increasing fractions"),
        (["grown", "--grow-at", "1.5"], "increasing fractions"),
        (["grown", "--grow-at", "x"], "increasing fractions"),
    ):
        result = runner.invoke(app, ["zoo", "train", *args, "--out", str(tmp_path / "y")])
        assert result.exit_code == 2 and message in result.output, result.output


# ----------------------------------------------------------------------------- fixed protocol
def fixed(preset, **kw):
    """A tiny fixed-protocol config: d_model 16 (8 heads of 2 dims), 30 steps of 2 x 24."""
    from induction.training.protocol import preset_config

    phases = [
        {"at": 0.0, "mix": {"copy": 0.8, "bigram": 0.2}, "seq_len": 24, "max_span": 6},
        {"at": 0.5, "mix": {"copy": 0.5, "lookup": 0.5}, "seq_len": 24, "max_span": 8},
    ]
    base = dict(d_model=16, d_mlp=32, batch=2, steps=30, warmup=3, eval_every=10)
    base.update(phases=phases, first_checkpoint=10, eval_distance=6, repeat_len=6)
    return preset_config(preset, **{**base, **kw})


def test_fixed_growth_happens_at_the_preset_step_whatever_the_scores(monkeypatch):
    import induction.training.protocol
    from induction.training.protocol import growth_steps, train_fixed

    cfg = fixed("lidas8")
    assert growth_steps(cfg) == [10]  # Prop-1 with two stages: growth at 1/3 of the steps
    assert growth_steps(fixed("lidas8", alpha=0.0)) == [15]
    assert growth_steps(fixed("lidas8", depth=12, steps=60)) == [10, 30]  # shares 1:2:3
    for score in (0.0, 1.0):  # a head "formed" at once or never: the same schedule
        monkeypatch.setattr(
            induction.training.protocol,  # the module whose loop reads the monitor
            "induction_head_scores",
            lambda m, d, score=score, **k: torch.full((1, 1), score),
        )
        _, card = train_fixed(cfg, progress=False)
        assert card["growth_steps"] == [10] and card["effective_depth"] == 8
        assert [h["depth"] for h in card["history"]] == [4, 8, 8]


def test_fixed_families_see_the_same_data():
    from induction.training.protocol import batch_at, train_fixed

    cards = {p: train_fixed(fixed(p), progress=False)[1] for p in ("dense8", "lidas8", "looped8")}
    assert len({c["data_sha256"] for c in cards.values()}) == 1
    assert len({c["tokens"] for c in cards.values()}) == 1
    # keyed by (data seed, step), not by the model seed; the phase switch is at a fixed step
    a, b = fixed("dense8", seed=0), fixed("looped8p", seed=5, data_seed=0)
    assert all((batch_at(a, t) == batch_at(b, t)).all() for t in (0, 14, 15, 29))
    assert not (batch_at(a, 3) == batch_at(fixed("dense8", seed=1), 3)).all()
    different_init = train_fixed(fixed("dense8", seed=1, data_seed=0), progress=False)[1]
    assert different_init["data_sha256"] == cards["dense8"]["data_sha256"]


def test_fixed_flop_and_parameter_accounting():
    from induction.training.model import build_model
    from induction.training.protocol import param_count, train_fixed

    cfg = fixed("dense8")
    assert param_count(cfg, 8) == sum(p.numel() for p in build_model(cfg, 8).parameters())
    looped = train_fixed(fixed("looped8"), progress=False)
    assert looped[1]["flops_vs_dense"] == 1.0  # 2-layer block x 4: FLOP-matched
    assert looped[1]["params_vs_dense"] < 0.5
    stored = {id(p) for p in looped[0].parameters()}
    assert sum(p.numel() for p in looped[0].parameters()) == looped[1]["stored_params"]
    assert len(stored) == len(list(looped[0].parameters()))
    _, p_card = train_fixed(fixed("looped8p"), progress=False)  # 8 stored layers x 2
    assert p_card["params_vs_dense"] == 1.0 and p_card["effective_depth"] == 16
    ratio = matmul_ratio(cfg, 16, 8)
    assert p_card["flops_vs_dense"] == round(ratio, 4) and 1.9 < ratio < 2
    _, g_card = train_fixed(fixed("lidas8"), progress=False)  # 4 layers for 10 of 30 steps
    want = (10 * matmul_ratio(cfg, 4, 8) + 20) / 30
    assert g_card["flops_vs_dense"] == round(want, 4)


def matmul_ratio(cfg, a, b):
    from induction.training.model import matmul_flops_per_token

    return matmul_flops_per_token(cfg, a, 24) / matmul_flops_per_token(cfg, b, 24)


def test_fixed_checkpoints_load_with_their_log_so_far(tmp_path):
    from induction.training.protocol import train_fixed

    out = tmp_path / "lidas8-s0"
    _, card = train_fixed(fixed("lidas8"), out=out, progress=False)
    names = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert names == ["step-0", "step-10", "step-10-pre", "step-20"]
    assert [c["step"] for c in card["checkpoints"]] == [0, 10, 10, 20, 30]
    assert not list(out.glob("checkpoints/*/training_state.pt"))  # dropped once finished
    for name, depth, events in (("step-0", 4, 0), ("step-10-pre", 4, 0), ("step-10", 8, 1)):
        loaded = load_model(str(out / "checkpoints" / name), device="cpu")
        assert loaded.info.n_layers == depth and loaded.card["step"] in (0, 10)
        assert len(duplication_log(loaded).events) == events
        assert "float32" in loaded.info.dtype  # stored float16, loaded upcast
    final = load_model(str(out), device="cpu")
    assert duplication_log(final).events[0].step == 10
    rows = [json.loads(r) for r in (out / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, 31))
    assert [r["depth"] for r in rows][9:11] == [4, 8]
    assert {"loss", "lr", "depth"} <= set(rows[0]) and "max_induction" in rows[9]
    looped = tmp_path / "looped8-s0"
    train_fixed(fixed("looped8", steps=12), out=looped, progress=False)
    step10 = load_model(str(looped / "checkpoints" / "step-10"), device="cpu")
    assert step10.info.n_layers == 8 and step10.loop_plan.block == 2


@pytest.mark.parametrize("preset", ["lidas8", "looped8"])
def test_fixed_resume_is_bit_identical(tmp_path, preset):
    from safetensors.torch import load_file

    from induction.training.protocol import latest_checkpoint, train_fixed

    cfg = fixed(preset, d_model=16, steps=30, keep_train_state="all")
    cfg.depth, cfg.initial_depth, cfg.grow_block = (4, 2, 2) if preset == "lidas8" else (8, 4, 4)
    cfg.loop_block, cfg.loops = 2, cfg.depth // 2
    train_fixed(cfg, out=tmp_path / "a", progress=False)
    # interrupted after 25 steps: resumes from step 20, then again (nothing to redo) ...
    train_fixed(cfg, out=tmp_path / "b", progress=False, stop_at=25)
    assert latest_checkpoint(tmp_path / "b") == 20
    with pytest.raises(InputError, match="already holds a run"):
        train_fixed(cfg, out=tmp_path / "b", progress=False)
    train_fixed(None, out=tmp_path / "b", progress=False, resume=True, stop_at=27)
    _, card = train_fixed(None, out=tmp_path / "b", progress=False, resume=True)
    a, b = (
        load_file(tmp_path / "a" / "model.safetensors"),
        load_file(tmp_path / "b" / "model.safetensors"),
    )
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert (tmp_path / "a" / "train_log.jsonl").read_text() == (
        tmp_path / "b" / "train_log.jsonl"
    ).read_text()
    first = json.loads((tmp_path / "a" / "card.json").read_text())
    for key in ("data_sha256", "train_flops", "history", "checkpoints", "growth_steps"):
        assert card[key] == first[key], key
    # a resume from the post-growth checkpoint (the growth is not redone)
    if preset == "lidas8":
        assert card["growth_steps"] == [10]
        c = tmp_path / "c"
        train_fixed(cfg, out=c, progress=False, stop_at=15)
        assert latest_checkpoint(c) == 10 and (c / "checkpoints" / "step-10-pre").is_dir()
        train_fixed(None, out=c, progress=False, resume=True)
        assert load_file(c / "model.safetensors").keys() == a.keys()
        assert all(torch.equal(a[k], v) for k, v in load_file(c / "model.safetensors").items())


def test_a_damaged_run_folder_resumes_or_is_refused_in_one_line(tmp_path):
    """ZK2-ZK5, ZK7: a torn last log line (what SIGKILL leaves) and a stray folder under
    checkpoints/ do not stop a resume; a truncated training state and a config value of the
    wrong type are refused with one line naming the file."""
    from induction.training.protocol import TRAIN_CONFIG, TRAIN_LOG, TRAIN_STATE, train_fixed

    cfg = fixed("dense8", steps=30, keep_train_state="last")
    out = tmp_path / "run"
    train_fixed(cfg, out=out, progress=False, stop_at=25)
    with open(out / TRAIN_LOG, "a") as fh:
        fh.write('{"step": 26, "lo')  # torn mid-line
    (out / "checkpoints" / "step-notes").mkdir()
    (out / "checkpoints" / "step-notes" / TRAIN_STATE).write_text("not a state")
    keep = out.with_name("keep")
    shutil.copytree(out, keep)
    _, card = train_fixed(None, out=out, progress=False, resume=True)
    assert card["config"]["steps"] == 30
    assert all(json.loads(line) for line in (out / TRAIN_LOG).read_text().splitlines())

    state = next((keep / "checkpoints").glob(f"step-20/{TRAIN_STATE}"))
    state.write_bytes(state.read_bytes()[:1000])
    with pytest.raises(InputError, match="cannot be read.*delete that checkpoint"):
        train_fixed(None, out=keep, progress=False, resume=True)
    config = json.loads((keep / TRAIN_CONFIG).read_text())
    (keep / TRAIN_CONFIG).write_text(json.dumps({**config, "lr": "fast"}))
    with pytest.raises(InputError, match="lr is 'fast', not a float"):
        train_fixed(None, out=keep, progress=False, resume=True)


def test_a_run_stopped_before_its_first_checkpoint_resumes_from_scratch(tmp_path):
    """FD06: a full disk at the first checkpoint leaves the config, an empty log and a
    temporary folder; ``--resume`` then trains from the recorded config, as a fresh run."""
    from safetensors.torch import load_file

    from induction.training.protocol import TRAIN_CONFIG, train_fixed

    cfg = fixed("dense8", steps=12, keep_train_state="last")
    train_fixed(cfg, out=tmp_path / "fresh", progress=False)
    torn = tmp_path / "torn"
    (torn / "checkpoints" / ".step-0.tmp").mkdir(parents=True)
    shutil.copy(tmp_path / "fresh" / TRAIN_CONFIG, torn / TRAIN_CONFIG)
    (torn / "train_log.jsonl").write_text("")
    train_fixed(None, out=torn, progress=False, resume=True)
    a, b = (
        load_file(tmp_path / "fresh" / "model.safetensors"),
        load_file(torn / "model.safetensors"),
    )
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_fixed_config_is_checked():
    from induction.training.protocol import preset_config, train_fixed

    with pytest.raises(InputError, match="unknown fixed-protocol preset"):
        preset_config("dense9")
    with pytest.raises(InputError, match="unknown segment kind"):
        train_fixed(
            fixed("dense8", phases=[{"at": 0, "mix": {"cpy": 1}, "seq_len": 8, "max_span": 3}])
        )
    with pytest.raises(InputError, match="not reachable"):
        train_fixed(fixed("lidas8", depth=10), progress=False)
    with pytest.raises(InputError, match="not 8"):
        train_fixed(fixed("looped8", loops=3), progress=False)


def test_cli_trains_and_resumes_a_fixed_preset(tmp_path):
    from induction.training.protocol import preset_config, train_fixed

    runner = CliRunner()
    out = tmp_path / "lidas8-s0"
    # interrupted after 2 of 3 steps (checkpoints at 0 and at the growth step 1)
    train_fixed(preset_config("lidas8", steps=3, batch=2), out=out, progress=False, stop_at=2)
    result = runner.invoke(app, ["zoo", "train", "lidas8", "--out", str(out)])
    assert result.exit_code == 2 and "--resume" in result.output
    result = runner.invoke(app, ["zoo", "train", "dense8", "--resume", str(out)])
    assert result.exit_code == 2 and "is a lidas8 run" in result.output
    result = runner.invoke(app, ["zoo", "train", "--resume", str(out)])
    assert result.exit_code == 0, result.output
    assert "grown at steps [1]" in result.output
    # R4-gate: where the heads sat before growth against the layers growth copies (lidas8
    # copies initial layers 0-3; a 3-step model has no head >= 0.4)
    assert "FAIL gate copied head before growth: " in result.output
    assert "copies initial layers [0, 1, 2, 3]" in " ".join(result.output.split())
    card = json.loads((out / "card.json").read_text())
    assert card["steps"] == 3 and card["effective_depth"] == 8
    result = runner.invoke(app, ["zoo", "train", "--resume", str(out)])
    assert result.exit_code == 2 and "finished" in result.output


def test_build_zoo_resumes_an_unfinished_fixed_model(tmp_path):
    import importlib.util
    from pathlib import Path

    from induction.training.protocol import train_fixed

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "build_zoo.py"
    spec = importlib.util.spec_from_file_location("build_zoo", path)
    build_zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_zoo)
    dest = tmp_path / "models"
    train_fixed(fixed("dense8", steps=12), out=dest / "dense8-s0", progress=False, stop_at=11)
    assert build_zoo.build("dense8", 0, dest=dest) == "dense8-s0: resumed from step 10"
    assert json.loads((dest / "dense8-s0" / "card.json").read_text())["steps"] == 12
    assert build_zoo.build("dense8", 0, dest=dest) == "dense8-s0: present"


def test_fixed_bare_resume_states_lose_little_work(tmp_path):
    """Between log-spaced checkpoints a bare training state every ``state_every`` steps is the
    resume point (loaded with weights_only=True); the result is still bit-identical."""
    from safetensors.torch import load_file

    from induction.training.protocol import latest_checkpoint, train_fixed

    cfg = fixed("dense8", steps=30, state_every=4)
    train_fixed(cfg, out=tmp_path / "a", progress=False)
    train_fixed(cfg, out=tmp_path / "b", progress=False, stop_at=27)
    assert latest_checkpoint(tmp_path / "b") == 24  # not 20, the last log-spaced checkpoint
    assert [p.name for p in (tmp_path / "b" / "checkpoints").glob("state-*")] == ["state-24"]
    train_fixed(None, out=tmp_path / "b", progress=False, resume=True)
    a, b = (load_file(tmp_path / x / "model.safetensors") for x in ("a", "b"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not list((tmp_path / "b" / "checkpoints").glob("state-*"))  # gone once finished


def test_the_training_monitor_reads_the_detectors_stripe():
    """The monitor takes its (query, key) pairs from the detector's PromptLayout: on the same
    prompts it equals the stripe written out, mean over queries r[1:] of the second copy."""
    import numpy as np

    from induction.training.model import build_model, induction_head_scores
    from induction.zoo import vocab as V

    cfg = tiny("dense")
    model = build_model(cfg, 2)
    d, batch, seed = 7, 4, 3
    got = induction_head_scores(model, d, batch=batch, seed=seed)
    rng = np.random.default_rng(seed)
    ids = np.arange(V.FIRST_ORDINARY_ID, V.VOCAB_SIZE)
    r = np.stack([rng.choice(ids, d, replace=False) for _ in range(batch)])
    tokens = torch.tensor(np.concatenate([np.full((batch, 1), V.BOS_ID), r, r], axis=1))
    model.set_attn_implementation("eager")
    attentions = model(tokens, output_attentions=True).attentions
    q = torch.arange(1 + d, 1 + 2 * d)
    want = torch.stack([a[:, :, q, q - d + 1].mean(dim=(0, 2)) for a in attentions])
    assert got.shape == (2, cfg.n_heads)
    torch.testing.assert_close(got, want.detach())


def test_fixed_training_device_is_checked_and_recorded(tmp_path, monkeypatch, capsys):
    from dataclasses import asdict

    from induction.training.protocol import FixedTrainConfig, train_fixed

    with pytest.raises(InputError, match="not a torch device"):
        train_fixed(fixed("dense8", device="gpu7"), progress=False)
    with pytest.raises(InputError, match="trains on cpu or cuda"):
        train_fixed(fixed("dense8", device="meta"), progress=False)
    _, card = train_fixed(fixed("dense8", steps=4), out=tmp_path / "d", progress=False)
    assert card["train_device"] == "cpu" and card["config"]["device"] == "cpu"
    # run folders written before the device field existed resume on the CPU
    old = asdict(fixed("dense8"))
    del old["device"]
    assert FixedTrainConfig.from_json(old).device == "cpu"
    if torch.cuda.is_available():
        return
    # a run begun on a GPU, cut off, resumes here only when told to
    with pytest.raises(InputError, match="no CUDA GPU"):
        train_fixed(fixed("dense8", device="cuda"), progress=False)
    run = tmp_path / "gpu-run"
    train_fixed(fixed("dense8", steps=12), out=run, progress=False, stop_at=11)
    config = json.loads((run / "train_config.json").read_text())
    (run / "train_config.json").write_text(json.dumps(config | {"device": "cuda"}))
    with pytest.raises(InputError, match="--device cpu"):
        train_fixed(None, out=run, progress=False, resume=True)
    _, card = train_fixed(None, out=run, progress=False, resume=True, device="cpu")
    assert card["steps"] == 12 and card["train_device"] == "cpu"
    runner = CliRunner()
    result = runner.invoke(
        app, ["zoo", "train", "dense", "--device", "cpu", "--out", str(tmp_path / "x")]
    )
    assert result.exit_code == 2 and "fixed-protocol presets" in result.output
    result = runner.invoke(
        app, ["zoo", "train", "dense8", "--device", "cuda", "--out", str(tmp_path / "y")]
    )
    assert result.exit_code == 2 and "no CUDA GPU" in result.output
    assert not (tmp_path / "y").exists()
    build_zoo = _build_zoo_module()
    for argv, message in ((["--device", "gpu7"], "not a torch device"),
                          (["--device", "cuda", "--families", "dense8"], "no CUDA GPU"),
                          (["--device", "cuda", "--families", "dense"], "first-zoo")):  # fmt: skip
        monkeypatch.setattr("sys.argv", ["build_zoo.py", "--dest", str(tmp_path / "z"), *argv])
        with pytest.raises(SystemExit) as stop:
            build_zoo.main()
        assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "z").exists()


def _build_zoo_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "build_zoo.py"
    spec = importlib.util.spec_from_file_location("build_zoo", path)
    build_zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_zoo)
    return build_zoo


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_fixed_training_on_cuda_follows_the_cpu_run_and_resumes(tmp_path):
    """Same initialisation and batches as on the CPU; only float rounding differs, so the
    losses agree closely; a run cut off on the GPU resumes on the CPU and loads there."""
    from induction.training.protocol import train_fixed

    cfg = fixed("lidas8", d_model=16, steps=30)
    cfg.depth, cfg.initial_depth, cfg.grow_block = 4, 2, 2
    train_fixed(cfg, out=tmp_path / "cpu", progress=False)
    cfg.device = "cuda"
    train_fixed(cfg, out=tmp_path / "gpu", progress=False, stop_at=25)
    _, card = train_fixed(None, out=tmp_path / "gpu", progress=False, resume=True, device="cpu")
    assert card["train_device"].startswith("cuda") and card["train_device"].endswith(" then cpu")
    assert card["growth_steps"] == [10]
    losses = [
        [json.loads(r)["loss"] for r in (tmp_path / d / "train_log.jsonl").read_text().splitlines()]
        for d in ("cpu", "gpu")
    ]
    assert len(losses[0]) == len(losses[1]) == 30
    assert max(abs(a - b) for a, b in zip(*losses)) < 1e-3, losses
    model = load_model(str(tmp_path / "gpu"), device="cpu")
    assert model.info.n_layers == 4


def test_round4_top_growth_keeps_per_head_scores_per_checkpoint(tmp_path):
    """grown8rt (R4-arms): four stages each copy the top layer; every checkpoint entry of the
    card keeps its per-head scores (R4-gate reads them); the r4 kinds train."""
    from ablation.gates import copied_head_before_growth, copied_initial_layers
    from induction.training.protocol import train_fixed
    from induction.zoo.corpus import MIX_R4

    phases = [
        {"at": 0.0, "mix": {"copy": 1.0}, "seq_len": 24, "max_span": 6},
        {"at": 0.25, "mix": dict(MIX_R4), "seq_len": 24, "max_span": 8},
    ]
    out = tmp_path / "grown8rt-s0"
    _, card = train_fixed(fixed("grown8rt", phases=phases), out=out, progress=False)
    # R4_LATE_GROWTH: 40/55/70/85% of 30 steps
    assert card["growth_steps"] == [12, 16, 21, 26] and card["effective_depth"] == 8
    log = duplication_log(load_model(str(out), device="cpu"))
    assert copied_initial_layers(log) == [3]
    assert [log.ancestor_of(i) for i in range(8)] == [0, 1, 2, 3, 3, 3, 3, 3]
    kept = card["checkpoints"][:-1]
    assert kept and all(len(c["head_scores"]) == c["depth"] for c in kept)
    assert all(len(row) == 8 for c in kept for row in c["head_scores"])
    gate = copied_head_before_growth(card, log, 0.4)
    assert gate.passed is not None and "step 12" in gate.detail
    # item 6: every copied head followed from its copy to the end, and classified
    from induction.dynamics.copies import CLASSES, copied_heads_of_sweep
    from induction.dynamics.sweep import SweepSettings, sweep

    settings = SweepSettings(scores=("induction", "previous_token"), seeds=1, batch=4)
    assert not sweep([str(out)], tmp_path / "sweep", settings=settings, progress=False).failed
    copies = copied_heads_of_sweep(tmp_path / "sweep", log)
    t = copies.table
    assert sorted(t["event_step"].unique()) == [12, 16, 21, 26]
    assert sorted(t["copy_layer"].unique()) == [3, 4, 5, 6, 7] and t["final_layer"].min() == 3
    assert set(t["class"]) <= set(CLASSES) and copies.series["step"].max() == 30


#: A progress line off a terminal (induction.progress): ``name (fields): done/total (pct%), ...``
PROGRESS_LINE = re.compile(r"^(\S+) \(([^)]*)\): (\d+)/(\d+) \(\d+%\), (.*)$")


def progress_lines(monkeypatch, capsys, train_it) -> list[re.Match]:
    """The progress lines ``train_it()`` writes to a captured (not a terminal) stderr, with
    the quiet start and the 10 s interval off: one line per tenth of the steps."""
    from induction import progress

    monkeypatch.setattr(progress, "LINE_QUIET_S", 0)
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 1e9)
    monkeypatch.delenv("INDUCTION_PROGRESS", raising=False)  # the stream chooses the mode
    capsys.readouterr()
    train_it()
    lines = capsys.readouterr().err.splitlines()
    rows = [PROGRESS_LINE.match(line) for line in lines]
    assert lines and all(rows), lines
    return [r for r in rows if r is not None]


def test_training_progress_writes_the_projects_lines_off_a_terminal(monkeypatch, capsys):
    """Both trainers report through induction.progress as every job does (#43): off a terminal
    one line per tenth of the steps with the depth, the monitor's ``ind=`` and the loss of the
    last measured step, the rate and the time left; nothing when progress is off."""
    from induction.training.protocol import train_fixed

    rows = progress_lines(monkeypatch, capsys, lambda: train_fixed(fixed("lidas8")))
    assert [(r[1], int(r[3]), int(r[4])) for r in rows] == [
        ("lidas8-s0", 3 * k, 30) for k in range(1, 11)
    ]
    depths = [int(r[2].split(",")[0].removeprefix("depth ")) for r in rows]
    assert depths == sorted(depths) and depths[0] < depths[-1]  # grown on the way
    for row in rows:
        measured = int(row[3]) >= 10  # eval_every 10: ind= and the loss from step 10 on
        assert bool(re.search(r"ind=\d\.\d\d, loss \d+\.\d{3}", row[2])) == measured, row[0]
        assert re.search(r"\d+\.\d+ (step/s|s/step)$", row[2]), row[0]
        assert re.fullmatch(r"\d+ s elapsed, ~\d+ s left", row[5]) or (
            row[3] == "30" and re.fullmatch(r"done in \d+ s", row[5])
        ), row[0]

    rows = progress_lines(monkeypatch, capsys, lambda: train(tiny("dense", depth=2)))
    assert [(r[1], r[3], r[4]) for r in rows] == [("dense2-s0", str(k), "4") for k in (1, 2, 3, 4)]
    assert "ind=" in rows[-1][2] and rows[-1][5].startswith("done in")

    monkeypatch.setenv("INDUCTION_PROGRESS", "lines")
    train_fixed(fixed("dense8", steps=10), progress=False)
    assert capsys.readouterr().err == ""


def _gated(**gate):
    """``fixed("dense8")`` whose second phase (at 50% at the latest) opens on the probe, read
    every 5 steps."""
    cfg = fixed("dense8", probe_every=5, state_every=5)
    cfg.phases[1] = {**cfg.phases[1], "gate": gate}
    return cfg


def test_a_gated_phase_trains_as_if_fixed_at_the_step_its_gate_opened(tmp_path):
    """Pilot 7a (docs/replication.md): a phase may open at the first probe that reaches its
    gate; the run then equals one whose phase was fixed at that step, and resumes exactly
    from a state saved after the gate opened."""
    from safetensors.torch import load_file

    from induction.training.protocol import train_fixed

    # this tiny model's probe reads lookup 0.0069 at step 5 and 0.0115 at step 10
    gated = _gated(probe="lookup", min=0.01)
    _, card = train_fixed(gated, out=tmp_path / "gated", progress=False)
    assert card["phase_starts"] == [0, 10]
    log = (tmp_path / "gated" / "train_log.jsonl").read_text()
    rows = [json.loads(r) for r in log.splitlines()]
    assert [r["step"] for r in rows if r.get("phase_1_opens")] == [10]
    fixed_at_10 = fixed("dense8", probe_every=5, state_every=5)
    fixed_at_10.phases[1]["at"] = 1 / 3
    _, twin = train_fixed(fixed_at_10, out=tmp_path / "fixed", progress=False)
    assert twin["phase_starts"] == [0, 10] and twin["data_sha256"] == card["data_sha256"]
    weights = [load_file(tmp_path / r / "model.safetensors") for r in ("gated", "fixed")]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    # stopped at 13, resumed from the state of step 10 (the gate open in it)
    train_fixed(gated, out=tmp_path / "resumed", progress=False, stop_at=13)
    _, again = train_fixed(None, out=tmp_path / "resumed", progress=False, resume=True)
    assert again["phase_starts"] == [0, 10] and again["data_sha256"] == card["data_sha256"]
    resumed = load_file(tmp_path / "resumed" / "model.safetensors")
    assert all(torch.equal(weights[0][k], resumed[k]) for k in resumed)


def test_a_gate_never_reached_starts_its_phase_at_its_latest_step():
    from induction.training.protocol import batch_at, phase_at, train_fixed

    _, card = train_fixed(_gated(probe="varassign", min=1.0), progress=False)
    assert card["phase_starts"] == [0, 15]
    cfg = _gated(probe="lookup", min=0.5)
    assert phase_at(cfg, 12) is cfg.phases[0] and phase_at(cfg, 12, {"1": 12}) is cfg.phases[1]
    assert (batch_at(cfg, 20) == batch_at(cfg, 20, {"1": 10})).all()  # after both starts


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (lambda c: c.phases[1].update(gate={"probe": "loss", "min": 0.4}), "needs probe"),
        (lambda c: c.phases[1].update(gate={"probe": "varassign", "min": 0}), "min in"),
        (lambda c: c.phases[0].update(gate={"probe": "lookup", "min": 0.4}), "cannot be gated"),
        (lambda c: setattr(c, "probe_every", 0), "set probe_every"),
    ],
)
def test_a_bad_gate_is_refused_in_one_line(change, error):
    from induction.training.multiseed import train_seeds
    from induction.training.protocol import train_fixed

    cfg = _gated(probe="lookup", min=0.4)
    change(cfg)
    with pytest.raises(InputError, match=error):
        train_fixed(cfg, progress=False)
    # a gate opens on each seed's own probe: no batches drawn ahead by workers
    with pytest.raises(InputError, match="data_workers=0"):
        train_seeds([_gated(probe="lookup", min=0.4)], data_workers=1, progress=False)


def test_an_unknown_corpus_field_is_refused_in_one_line():
    from induction.training.protocol import train_fixed

    with pytest.raises(InputError, match=r"unknown corpus field\(s\) \['recall'\]"):
        train_fixed(fixed("dense8", corpus={"recall": True}), progress=False)
    with pytest.raises(InputError, match="math_recall must be true or false"):
        train_fixed(fixed("dense8", corpus={"math_recall": "yes"}), progress=False)


def test_build_zoo_sweeps_a_grown_seed_before_dropping_its_series(tmp_path):
    """R8 (docs/replication.md): a grown seed after the first ships no checkpoint series, so
    build_zoo sweeps it for the copied-head table first, then drops the series."""
    from induction.training.protocol import train_fixed

    build_zoo = _build_zoo_module()
    dest = tmp_path / "models"
    out = dest / "grown8rt-s1"
    train_fixed(fixed("grown8rt", seed=1), out=out, progress=False, stop_at=29)
    (out / build_zoo.MARK).write_text("")  # as build_zoo marks a folder it made
    line = build_zoo.build("grown8rt", 1, dest=dest)
    assert "copied heads swept" in line and "checkpoints dropped" in line
    assert not (out / "checkpoints").exists() and (out / "card.json").is_file()
    results = tmp_path / "copied_heads"
    assert (results / "sweeps" / "grown8rt-s1").is_dir() and (results / "grown8rt-s1.csv").is_file()
