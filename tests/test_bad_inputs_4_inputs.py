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


def test_zt09_another_runs_identity(run, one_line_error):
    """A state written before states kept their config: the checkpoint's card names the run."""
    path = run / "checkpoints" / "step-10" / "training_state.pt"
    state = torch.load(path, weights_only=True)
    del state["config"]
    torch.save(state, path)
    _edit_config(run, lambda d: d.update(seed=3))
    _refused(run, one_line_error, "checkpoint of dense8-s0", "dense8-s3")


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
    from induction.models.loading import load_model

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


@pytest.mark.parametrize("shots", ["100", "1000000"])
def test_ab68_shots_that_a_task_cannot_drop_are_refused(shots, tmp_path, one_line_error):
    args = [*ABL, "--task", "lookup", "--shots", shots, "--out", str(tmp_path / "o.csv")]
    one_line_error(runner.invoke(app, args), f"lookup prompts of {shots} pairs", "--shots 63")


def test_ab68_shots_beyond_any_context_refused_before_loading(one_line_error):
    one_line_error(runner.invoke(app, [*ABL, "--shots", str(10**7)]), "--shots", "1,000,000")


# --------------------------------------------------------------------------- replicate (rp)
REP = ["replicate", "--fast", "--families", "dense8c", "--seeds", "1", "--no-gates",
       "--no-regbench", "--controls", "1", "--n-items", "2", "--no-png"]  # fmt: skip


@pytest.mark.parametrize(
    "cid, extra, fragment",
    [
        ("rp02", ["--threads", "-1"], "--threads must be an integer >= 0"),
        ("rp05", ["--prompt-seeds", "0"], "--prompt-seeds must be an integer >= 1"),
        ("rp06", ["--prompt-seeds", "-1"], "--prompt-seeds must be an integer >= 1"),
        ("rp08", ["--models-dir", "nope"], "--models-dir nope is not a folder"),
        ("rp11", ["--top", "0"], "--top must be an integer >= 1"),
        ("rp18", ["--out-dir", "{d}/f"], "is a file"),
    ],
)
def test_rp_replicate_options_refused_before_measuring(cid, extra, fragment, tmp_path,
                                                       monkeypatch, one_line_error):  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("")
    args = [*REP, "--out-dir", str(tmp_path / "r")] + [a.format(d=tmp_path) for a in extra]
    one_line_error(runner.invoke(app, args), fragment)
    assert (
        sorted(p.name for p in tmp_path.iterdir()) == ["f"] and not (tmp_path / "f").stat().st_size
    )


@pytest.mark.parametrize(
    "text, fragment",
    [("{bad\n", "not valid JSON"), ('{"models": [{"p_perm": 1}], "settings": 3}', "damaged")],
)
def test_rp17_corrupt_results_for_from_results(text, fragment, tmp_path, one_line_error):
    (tmp_path / "replication.json").write_text(text)
    args = ["replicate", "--from-results", "--out-dir", str(tmp_path), "--no-png"]
    one_line_error(runner.invoke(app, args), "replication.json", fragment)
    assert [p.name for p in tmp_path.iterdir()] == ["replication.json"]


# --------------------------------------------------------------------------- benchmarks/ scripts
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _benchmark(stem: str):
    """``benchmarks/STEM.py`` as a module (kept in ``sys.modules`` for its dataclasses)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(f"{stem}_bad4", BENCHMARKS / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _script(module, argv, monkeypatch, capsys) -> str:
    """Run a script's ``main`` as its ``__main__`` block does (through ``run_script``);
    assert exit 2 and one ``error:`` line on stderr, which is returned."""
    from induction.commands.main import run_script

    monkeypatch.setattr("sys.argv", ["script.py", *argv])
    with pytest.raises(SystemExit) as stop:
        run_script(module.main)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize(
    "cid, stem, argv, fragment",
    [
        ("rp24", "replication", [*REP[1:], "--out-dir", "r", "--threads", "-1"], "--threads"),
        ("rp25", "replication", ["--fast", "--models-dir", "nope", "--out-dir", "r"], "nope"),
        (
            "rm06",
            "real_model",
            [
                "--model",
                "dense8c-s1",
                "--suites",
                "zootrain:fact_digit",
                "--out-dir",
                "o",
                "--threads",
                "-1",
            ],
            "--threads",
        ),  # fmt: skip
        ("bz01", "build_zoo", ["--jobs", "0", "--families", "dense8c", "--dest", "d"], "--jobs"),
        ("bz03", "build_zoo", ["--families", "bogus", "--seeds", "0", "--dest", "d"], "bogus"),
        ("bz04", "build_zoo", ["--families", "dense8c", "--seeds", "-1", "--dest", "d"], "--seeds"),
        (
            "bz06",
            "build_zoo",
            ["--families", "dense8c", "--seeds", "0", "--dest", "f"],
            "is a file",
        ),
    ],
)
def test_benchmark_scripts_refuse_in_one_line(cid, stem, argv, fragment, tmp_path, monkeypatch,
                                              capsys):  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_text("")
    argv = [str(tmp_path / a) if a in ("d", "f", "r", "o") else a for a in argv]
    assert fragment in _script(_benchmark(stem), argv, monkeypatch, capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]  # no log, no folder


def test_bz03_a_failed_training_is_one_line_naming_its_log(tmp_path, monkeypatch, capsys):
    """A model whose training process fails ends the build in one line naming its log."""
    module = _benchmark("build_zoo")
    monkeypatch.setattr(module.sys, "executable", "false")  # a training process that fails
    argv = ["--families", "dense", "--seeds", "0", "--dest", str(tmp_path / "d"), "--jobs", "1"]
    line = _script(module, argv, monkeypatch, capsys)
    assert "training failed" in line and "build-dense-s0.log" in line


#: Scripts that must not import the project's packages, so they report their own errors (one
#: ``error:`` line on stderr, exit 2; tested beside each script).
INDEPENDENT_SCRIPTS = {"independent_reading.py"}
PROJECT_PACKAGES = {"induction", "ablation", "lineage"}


def _imported_packages(source: str) -> set[str]:
    """Top-level names of every import statement in ``source``, wherever it sits."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_benchmark_scripts_main_blocks_go_through_run_script():
    """Every script under benchmarks/ is a command: its __main__ block is ``run_script``, or,
    for a script kept independent of the package, its own one-line errors."""
    for path in sorted(BENCHMARKS.glob("*.py")):
        text = path.read_text()
        if '__name__ == "__main__"' not in text:
            continue
        if path.name in INDEPENDENT_SCRIPTS:
            assert not _imported_packages(text) & PROJECT_PACKAGES, path.name
            assert "importlib" not in text, path.name  # no import by name either
            assert 'print(f"error: ' in text and "return 2" in text, path.name
        else:
            assert "run_script(main)" in text, path.name


# --------------------------------------------------------------------------- full disks
def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")  # as write() reports it: no path


@pytest.mark.parametrize(
    "cid, args",
    [
        ("ab90", [*ABL, "--task", "fact_digit", "-q", "--out", "{d}/o.json"]),
        ("fv41", ["fv", "dense8c-s1", "--threads", "1", "--n-prompts", "2", "--out", "{d}/o.csv"]),
    ],
)
def test_ab90_fv41_a_full_disk_is_found_before_the_work(cid, args, tmp_path, monkeypatch,
                                                        one_line_error):  # fmt: skip
    import collections
    import shutil as shutil_module

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil_module, "disk_usage", lambda p: usage(200_000, 188_000, 12_000))
    args = [a.format(d=tmp_path) for a in args]
    one_line_error(runner.invoke(app, args), "only 11 KiB free", str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_ab90_a_disk_that_fills_during_the_write_names_the_path(tmp_path, monkeypatch,
                                                                one_line_error):  # fmt: skip
    import induction.store.io

    monkeypatch.setattr(induction.store.io.os, "fsync", _no_space)
    out = tmp_path / "o.json"
    args = [*ABL, "--task", "fact_digit", "-q", "--out", str(out)]
    one_line_error(runner.invoke(app, args), "cache", "No space left on device")  # resume cache
    one_line_error(runner.invoke(app, [*args, "--no-cache"]), f"cannot use {out}: No space left")
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []


def test_fv41_a_disk_that_fills_during_the_write_names_the_path(tmp_path, monkeypatch):
    import pandas as pd

    def half_then_full(self, path, *args, **kwargs):
        Path(path).write_text("layer,head")
        _no_space()

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_then_full)
    out = tmp_path / "o.csv"
    args = ["fv", "dense8c-s1", "--threads", "1", "--n-prompts", "2", "--out", str(out)]
    result = runner.invoke(app, args)  # after fv's headroom warning, one error line
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(errors) == 1 and f"cannot use {out}: No space left on device" in errors[0]
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []


# --------------------------------------------------------------------------- loops, FIFOs, bytes
def test_tl12_timeline_on_a_symlink_loop(tmp_path, monkeypatch, one_line_error):
    monkeypatch.chdir(tmp_path)
    Path("ds").symlink_to("ds")
    one_line_error(runner.invoke(app, ["timeline", "ds", "--out", "t.html"]), "looping symlink")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_sw10_checkpoint_config_that_is_a_fifo(run, tmp_path, one_line_error):
    import os

    config = run / "checkpoints" / "step-10" / "config.json"
    config.unlink()
    os.mkfifo(config)
    args = ["sweep", str(run), "--out", str(tmp_path / "ds"), "--seeds", "1", "--batch", "4"]
    one_line_error(runner.invoke(app, args), "step-10/config.json is not a regular file")
    assert not (tmp_path / "ds").exists()


def test_fifo_as_text_is_refused_not_waited_on(tmp_path, one_line_error):
    """Smaller: a FIFO as ``depth --text`` hung waiting for a writer."""
    import os

    os.mkfifo(tmp_path / "p.txt")
    out = tmp_path / "d.html"
    args = ["depth", "dense8c-s1", "--text", str(tmp_path / "p.txt"), "--out", str(out)]
    one_line_error(runner.invoke(app, args), "FIFO (named pipe)", "--text")
    assert not out.exists()


def test_show_with_an_undecodable_prompt(tmp_path, one_line_error):
    """``--prompt "$(printf 'a\\xffb')"``: the shell's byte arrives as a lone surrogate."""
    out = tmp_path / "v.html"
    args = ["show", "dense8c-s1", "--heads", "L1H1", "--prompt", "a\udcffb", "--out", str(out)]
    one_line_error(runner.invoke(app, args), "--prompt is not UTF-8")
    assert not out.exists()


# --------------------------------------------------------------------------- Python API (api)
@pytest.mark.parametrize(
    "cid, settings, fragment",
    [
        ("api04", {"controls": True}, "controls must be an integer"),
        ("api07", {"heads": 123}, "heads must be a string"),
        ("api08", {"suite": 5}, "suite must be a string"),
        ("api06", {"tasks": [1, 2]}, "tasks must be task names"),
        ("api06", {"tasks": ""}, "tasks must be task names"),
        ("api04", {"readouts": 1}, "readouts must be True or False"),
        ("api04", {"frac": True}, "frac must be a number"),
    ],
)
def test_api_ablation_config_refuses_wrong_types(cid, settings, fragment):
    from ablation.config import AblationConfig
    from induction.errors import InputError

    with pytest.raises(InputError, match=fragment):
        AblationConfig(**settings)


def test_api06_a_task_name_string_is_one_task_not_its_letters():
    from ablation.config import AblationConfig

    assert AblationConfig(tasks="fact_digit").tasks == ("fact_digit",)
    assert AblationConfig(tasks="fact_digit,var_depth0").tasks == ("fact_digit", "var_depth0")


def test_api02_config_that_is_not_a_config(dense8c):
    from ablation import ablate
    from induction.errors import InputError

    with pytest.raises(InputError, match="config must be an AblationConfig, got str"):
        ablate(dense8c, "frac=0.1")


def test_api09_fv_config_refuses_a_bool_count():
    from induction.circuits.config import FVConfig
    from induction.errors import InputError

    with pytest.raises(InputError, match="--n-prompts"):
        FVConfig(n_prompts=True)


def test_api21_plan_heads_refuses_a_fractional_count(dense8c):
    from ablation.run import plan_heads
    from induction.errors import InputError

    with pytest.raises(InputError, match="n_controls must be an integer >= 0, got 2.5"):
        plan_heads(dense8c, n_controls=2.5)
