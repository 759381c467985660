"""Round 4 of the bad-input issue (#44), the input half: every ``breaks`` row of
``bad-inputs-4.tsv`` about what a command reads (resume configs and states, prompt sizes,
options of ``replicate`` and the ``benchmarks/`` scripts, full disks, symlink loops, FIFOs),
each under its case id. The promise (docs/safety.md): exit 2, one ``error:`` line naming the
problem and the fix, no traceback, nothing half-written, inputs unchanged."""

from __future__ import annotations

import errno
import hashlib
import json
import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from induction.commands.main import app

runner = CliRunner()


def _digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden ones too) by relative path -> sha256."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# --------------------------------------------------------------------------- resume (zt)
@pytest.fixture(scope="module")
def killed_run(tmp_path_factory) -> Path:
    """A tiny fixed-protocol run (d_model 16, 12 steps) stopped at step 11: checkpoints at
    steps 0 and 10, the latter holding the training state."""
    from induction.training.protocol import preset_config, train_fixed

    phases = [{"at": 0.0, "mix": {"copy": 0.8, "bigram": 0.2}, "seq_len": 24, "max_span": 6}]
    cfg = preset_config(
        "dense8", d_model=16, d_mlp=32, batch=2, steps=12, warmup=3, eval_every=4,
        phases=phases, first_checkpoint=10, eval_distance=6, repeat_len=6,
    )  # fmt: skip
    out = tmp_path_factory.mktemp("killed") / "run"
    train_fixed(cfg, out=out, progress=False, stop_at=11)
    return out


@pytest.fixture
def run(killed_run, tmp_path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(killed_run, dst)
    return dst


def _edit_config(run: Path, change) -> None:
    path = run / "train_config.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _refused(run: Path, one_line_error, *fragments, args=()) -> str:
    before = _digest(run)
    line = one_line_error(runner.invoke(app, ["zoo", "train", "--resume", str(run), *args]),
                          *fragments)  # fmt: skip
    assert _digest(run) == before and not (run / "card.json").exists()
    return line


def test_zt03_state_without_keys(run, one_line_error):
    torch.save({"step": 10}, run / "checkpoints" / "step-10" / "training_state.pt")
    _refused(run, one_line_error, "training_state.pt", "log", "delete that checkpoint")


def test_zt03_state_of_another_shape(run, one_line_error):
    path = run / "checkpoints" / "step-10" / "training_state.pt"
    state = torch.load(path, weights_only=True)
    state["model"]["model.embed_tokens.weight"] = torch.zeros(3, 3)
    torch.save(state, path)
    _refused(run, one_line_error, "training_state.pt", "not this run's")


def test_zt09_negative_steps(run, one_line_error):
    _edit_config(run, lambda d: d.update(steps=-5))
    _refused(run, one_line_error, "train_config.json", "steps is -5")


def test_zt09_steps_changed_since_the_state(run, one_line_error):
    _edit_config(run, lambda d: d.update(steps=11))
    _refused(run, one_line_error, "train_config.json", "steps 12 -> 11")


def test_zt09_deleted_lr_is_not_filled_with_a_default(run, one_line_error):
    _edit_config(run, lambda d: d.pop("lr"))
    _refused(run, one_line_error, "lacks lr")


def test_zt09_edited_lr_differs_from_the_run(run, one_line_error):
    _edit_config(run, lambda d: d.update(lr=0.5))
    _refused(run, one_line_error, "differs from the config", "lr")


def test_zt10_nan_learning_rate(run, one_line_error):
    path = run / "train_config.json"
    path.write_text(path.read_text().replace('"lr": 0.001', '"lr": NaN'))
    assert "NaN" in path.read_text()
    _refused(run, one_line_error, "lr is nan")


def test_zt11_config_not_an_object(run, one_line_error):
    (run / "train_config.json").write_text("[1, 2]\n")
    _refused(run, one_line_error, "train_config.json", "not an object")


def test_zt15_checkpoints_is_a_file(run, one_line_error):
    shutil.rmtree(run / "checkpoints")
    (run / "checkpoints").write_text("x\n")
    _refused(run, one_line_error, "checkpoints is not a folder")


def test_zt18_threads_beside_resume(run, one_line_error):
    _refused(run, one_line_error, "drop --threads", args=("--threads", "2"))


def test_zt_an_intact_killed_run_still_resumes(run):
    result = runner.invoke(app, ["zoo", "train", "--resume", str(run)])
    assert result.exit_code == 0, result.output
    assert json.loads((run / "card.json").read_text())["steps"] == 12


def _disk_full_writer(*args, **kwargs):
    """A writer on a full disk: safetensors reports it as a SafetensorError, no OSError."""
    from safetensors import SafetensorError

    raise SafetensorError(
        'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space '
        'left on device" })'
    )


def test_zt48_full_disk_while_training(tmp_path, monkeypatch, one_line_error):
    import transformers.modeling_utils

    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", _disk_full_writer)
    out = tmp_path / "o"
    result = runner.invoke(app, ["zoo", "train", "dense8c", "--steps", "60", "--out", str(out)])
    one_line_error(result, "No space left on device", str(out / "checkpoints"))
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_zt48_full_disk_in_a_writer_without_a_path(tmp_path, monkeypatch, one_line_error):
    from induction.zoo import vocab

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(vocab, "save_tokenizer", full)
    out = tmp_path / "o"
    result = runner.invoke(app, ["zoo", "train", "dense8c", "--steps", "60", "--out", str(out)])
    one_line_error(result, "No space left on device", str(out / "checkpoints"))
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


# --------------------------------------------------------------------------- prompts (ab)
ABL = ["ablate", "dense8c-s1", "--n-items", "2", "--controls", "2", "--threads", "1"]


@pytest.fixture(scope="module")
def dense8c():
    from induction.loading import load_model

    return load_model("dense8c-s1", device="cpu")


def test_ab66_max_prompt_tokens_too_small_for_a_question(tmp_path, one_line_error):
    out = tmp_path / "o.csv"
    args = [*ABL, "--task", "fact_digit", "--task", "var_depth0", "--max-prompt-tokens", "3"]
    one_line_error(runner.invoke(app, [*args, "--out", str(out)]), "3-token", "--max-prompt-tokens")
    assert not out.exists()


def test_ab66_max_prompt_tokens_beyond_the_context(tmp_path, one_line_error):
    args = [*ABL, "--task", "fact_digit", "--max-prompt-tokens", "1000"]
    one_line_error(
        runner.invoke(app, [*args, "--out", str(tmp_path / "o.csv")]), "256-token context"
    )


@pytest.mark.parametrize("shots", [100, 100_000])
def test_ab68_ab92_shots_are_fitted_to_the_context_in_linear_time(dense8c, shots):
    """ab92: fact prompts of --shots 100 once ran 403 tokens on a 256-token model; ab68:
    --shots 100000 hung in quadratic prompt building. Both now fit and say so."""
    import time

    from ablation.config import AblationConfig
    from ablation.pipeline import build_tasks, check_prompt_fit

    cfg = AblationConfig(shots=shots, n_items=4, tasks=("fact_digit", "var_depth0"))
    start = time.perf_counter()
    tasks = build_tasks(cfg, "zootrain", dense8c)
    assert time.perf_counter() - start < 5
    for task in tasks:
        for item in task.items:
            ids = dense8c.tokenizer(item.prompt)["input_ids"]
            assert len(ids) + 1 + task.max_new_tokens <= 256, (task.name, len(ids))
    note = check_prompt_fit(tasks, dense8c, cfg, "zootrain")
    assert f"--shots {shots} does not fit the 256-token" in note and "fact_digit" in note


def test_ab68_shots_that_a_task_cannot_drop_are_refused(tmp_path, one_line_error):
    args = [*ABL, "--task", "lookup", "--shots", "100", "--out", str(tmp_path / "o.csv")]
    one_line_error(runner.invoke(app, args), "lookup prompts need", "pass fewer --shots")


def test_ab68_shots_beyond_any_context_refused_before_loading(one_line_error):
    one_line_error(runner.invoke(app, [*ABL, "--shots", str(10**7)]), "--shots", "1,000,000")
