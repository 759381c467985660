"""Many seeds in one process (issue 42 item 1): each batched seed matches its single-seed twin
(every logged loss within LOSS_TOL, the same probe answers, the same folder), resumes per seed,
and the CLI and build_zoo take --seeds / --seeds-per-process."""

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from induction.commands.main import app
from induction.errors import InputError
from induction.training.multiseed import check_group, parse_seeds, train_seeds
from induction.training.protocol import preset_config, train_fixed
from induction.zoo.probe import probe

#: Batched kernels sum in another order than the single-seed model's: the losses of a tiny run
#: agree to about 1e-6; 1e-4 is the stated tolerance (docs/zoo.md, "Many seeds per process").
LOSS_TOL = 1e-4


def tiny(preset, seed=0, **kw):
    phases = [
        {"at": 0.0, "mix": {"copy": 0.8, "bigram": 0.2}, "seq_len": 24, "max_span": 6},
        {"at": 0.5, "mix": {"copy": 0.5, "lookup": 0.5}, "seq_len": 24, "max_span": 8},
    ]
    base = dict(d_model=16, d_mlp=32, batch=2, steps=12, warmup=3, eval_every=4, phases=phases)
    base.update(first_checkpoint=4, eval_distance=6, repeat_len=6, probe_every=6)
    cfg = preset_config(preset, seed=seed, **{**base, **kw})
    if preset == "lidas8":  # 2 -> 4 layers at step 4 (Prop-1)
        cfg.depth, cfg.initial_depth, cfg.grow_block = 4, 2, 2
    if preset == "looped8":  # a 2-layer block run twice
        cfg.depth, cfg.loops = 4, 2
    return cfg


def losses(folder: Path) -> list[float]:
    return [json.loads(r)["loss"] for r in (folder / "train_log.jsonl").read_text().splitlines()]


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("preset", ["dense8", "lidas8", "looped8"])
def test_each_batched_seed_matches_its_single_seed_twin(tmp_path, preset):
    seeds = (0, 1, 2)
    outs = [tmp_path / f"batched-{s}" for s in seeds]
    batched = train_seeds([tiny(preset, s) for s in seeds], outs, progress=False)
    for seed, out, (model, card) in zip(seeds, outs, batched, strict=True):
        twin, twin_card = train_fixed(tiny(preset, seed), out=tmp_path / f"one-{seed}",
                                      progress=False)  # fmt: skip
        a, b = losses(out), losses(tmp_path / f"one-{seed}")
        assert len(a) == len(b) == 12
        assert max(abs(x - y) for x, y in zip(a, b)) < LOSS_TOL
        assert probe(model, n_seq=16) == probe(twin, n_seq=16)
        for key in ("data_sha256", "growth_steps", "effective_depth", "train_flops", "tokens"):
            assert card[key] == twin_card[key], key
        assert card["train_seeds_per_process"] == [3] and twin_card["train_seeds_per_process"] == [
            1
        ]
        assert files(out) == files(tmp_path / f"one-{seed}")  # the same folder, file for file
    assert batched[0][1]["data_sha256"] != batched[1][1]["data_sha256"]  # each its own batches
    if preset == "lidas8":
        assert batched[0][1]["growth_steps"] == [4]


def test_batched_seeds_resume_each_from_its_own_checkpoint(tmp_path):
    """Seed 1 loses its latest checkpoint, so it resumes 4 steps behind seed 0, trains alone
    until they meet, and both end as an uninterrupted batched run does, batches drawn ahead
    by worker processes or not."""
    cfgs = [tiny("lidas8", s, keep_train_state="all") for s in (0, 1)]
    whole = [tmp_path / f"whole-{s}" for s in (0, 1)]
    cut = [tmp_path / f"cut-{s}" for s in (0, 1)]
    done = train_seeds(cfgs, whole, progress=False)
    train_seeds(cfgs, cut, progress=False, stop_at=10)
    shutil.rmtree(cut[1] / "checkpoints" / "step-8")
    # a fresh seed beside a folder that holds a run: refused before either folder is touched
    with pytest.raises(InputError, match="already holds a run"):
        train_seeds(cfgs, [tmp_path / "fresh", cut[0]])
    assert not (tmp_path / "fresh").exists()
    # and its batches are drawn ahead in worker processes (the same batches: the data hash)
    again = train_seeds([None, None], cut, resume=True, progress=False, data_workers=2)
    for (model, card), (ref, ref_card), a, b in zip(again, done, cut, whole, strict=True):
        assert max(abs(x - y) for x, y in zip(losses(a), losses(b), strict=True)) < LOSS_TOL
        assert probe(model, n_seq=16) == probe(ref, n_seq=16)
        assert card["growth_steps"] == ref_card["growth_steps"] == [4]
        assert card["data_sha256"] == ref_card["data_sha256"]
    with pytest.raises(InputError, match="nothing to resume"):
        train_seeds([None], [tmp_path / "none"], resume=True)
    with pytest.raises(InputError, match="has finished training"):
        train_seeds([None, None], whole, resume=True)
    with pytest.raises(InputError, match="share a run folder"):
        train_seeds(cfgs, [cut[0], cut[0]])


def test_seeds_of_one_process_are_one_arm():
    check_group([tiny("dense8", 0), tiny("dense8", 5, data_seed=9)])
    with pytest.raises(InputError, match="differs from dense8-s0 in steps"):
        check_group([tiny("dense8", 0), tiny("dense8", 1, steps=13)])
    with pytest.raises(InputError, match="differs from dense8-s0 in"):
        check_group([tiny("dense8", 0), tiny("looped8", 1)])
    with pytest.raises(InputError, match="must differ"):
        check_group([tiny("dense8", 0), tiny("dense8", 0)])
    assert parse_seeds("0-3,8") == [0, 1, 2, 3, 8] and parse_seeds("5") == [5]
    for bad in ("", "3-1", "0,0", "a", "-1", "0-2,2"):
        with pytest.raises(InputError, match="--seeds takes distinct seeds"):
            parse_seeds(bad)


def test_cli_trains_seeds_together_and_refuses_bad_input(tmp_path):
    runner = CliRunner()
    for args, message in [
        (["dense8", "--seeds", "1-0"], "--seeds takes distinct seeds"),
        (["dense8", "--seeds-per-process", "0"], "--seeds-per-process must be >= 1"),
        (["dense8", "--seed", "1", "--seeds", "2"], "give --seed or --seeds"),
        (["dense", "--seeds", "0-1", "--seeds-per-process", "2"], "one seed per process"),
        (["--resume", str(tmp_path), "--resume", str(tmp_path)], "names a run folder twice"),
    ]:
        result = runner.invoke(app, ["zoo", "train", *args])
        assert result.exit_code == 2 and message in result.output, (args, result.output)
        assert "Traceback" not in result.output
    out = tmp_path / "runs"
    args = ["zoo", "train", "dense8", "--seeds", "3-4", "--seeds-per-process", "2", "--steps", "2"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    for seed in (3, 4):
        card = json.loads((out / f"dense8-s{seed}" / "card.json").read_text())
        assert card["seed"] == seed and card["steps"] == 2
        assert card["train_seeds_per_process"] == [2]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 2 and "already exists" in result.output


def test_build_zoo_resumes_seeds_in_one_process(tmp_path):
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "build_zoo.py"
    spec = importlib.util.spec_from_file_location("build_zoo", path)
    build_zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_zoo)
    dest = tmp_path / "models"
    outs = [dest / f"dense8-s{s}" for s in (0, 1)]
    train_seeds([tiny("dense8", s) for s in (0, 1)], outs, progress=False, stop_at=9)
    lines = build_zoo.build_seeds("dense8", [0, 1], dest=dest)
    assert lines[0] == "dense8-s0: resumed from step 8 (2 seeds in one process)", lines
    assert lines[1].startswith("dense8-s1: resumed from step 8 (2 seeds in one process)")
    for out in outs:
        card = json.loads((out / "card.json").read_text())
        assert card["steps"] == 12 and card["train_seeds_per_process"] == [2]
    for args, message in [
        (["--seeds", "2-1"], "--seeds takes distinct seeds"),
        (["--seeds-per-process", "0"], "--seeds-per-process must be >= 1"),
    ]:
        done = subprocess.run([sys.executable, str(path), *args, "--dest", str(dest)],
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 2 and message in done.stderr, done.stderr
    assert build_zoo.build_seeds("dense8", [0, 1], dest=dest) == [
        "dense8-s0: present",
        "dense8-s1: present",
    ]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_batched_seeds_on_cuda_follow_their_single_seed_twins(tmp_path):
    """On a GPU (data drawn by worker processes): rounding differs and is not repeatable there,
    so the tolerance is the single-seed GPU test's, 1e-3."""
    seeds = (0, 1)
    outs = [tmp_path / f"batched-{s}" for s in seeds]
    batched = train_seeds([tiny("lidas8", s, device="cuda") for s in seeds], outs,
                          progress=False, data_workers=2)  # fmt: skip
    for seed, out, (_, card) in zip(seeds, outs, batched, strict=True):
        _, twin = train_fixed(tiny("lidas8", seed, device="cuda"), out=tmp_path / f"one-{seed}",
                              progress=False)  # fmt: skip
        a, b = losses(out), losses(tmp_path / f"one-{seed}")
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-3
        assert card["data_sha256"] == twin["data_sha256"] and card["growth_steps"] == [4]
        assert card["train_device"].startswith("cuda")
