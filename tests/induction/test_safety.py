"""Data safety: no pickle is ever loaded, outputs never overwrite inputs, outputs are claimed,
stale temporaries are cleaned, caches key on content (docs/safety.md)."""

from __future__ import annotations

import json
import pathlib
import pickle
import shutil
import threading

import pytest
from typer.testing import CliRunner

from induction.commands.main import app
from induction.errors import InputError, ModelLoadError
from induction.models.specs import model_inputs
from induction.store.io import check_outputs, claim_output, write_table, write_text, wrote

runner = CliRunner()


class _Evil:
    """Unpickling this touches ``marker``: proof that a pickle was loaded."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (pathlib.Path(self.marker).touch, ())


def _poisoned(tiny_llama_dir, tmp_path, looped: bool):
    import torch
    from safetensors.torch import save_file

    folder = tmp_path / "poisoned"
    shutil.copytree(tiny_llama_dir, folder)
    (folder / "model.safetensors").unlink()
    save_file({"dummy": torch.zeros(1)}, str(folder / "dummy.safetensors"))
    marker = tmp_path / "UNPICKLED"
    with open(folder / "pytorch_model.bin", "wb") as fh:
        pickle.dump({"model.embed_tokens.weight": _Evil(marker)}, fh)
    if looped:
        from induction.models.looped import LoopPlan

        LoopPlan(block=2, loops=2).save(folder)
    return folder, marker


@pytest.mark.parametrize("looped", [False, True])
def test_pickle_beside_safetensors_is_never_loaded(tiny_llama_dir, tmp_path, looped):
    from induction.models.loading import load_model

    folder, marker = _poisoned(tiny_llama_dir, tmp_path, looped)
    with pytest.raises(ModelLoadError) as err:
        load_model(folder, device="cpu")
    assert "\n" not in str(err.value)
    assert not marker.exists()
    # not even opened: torch's restricted unpickler would have refused it ("Weights only")
    assert "weights only" not in str(err.value).lower() and "unpickl" not in str(err.value)


def test_pickle_cli_one_line_error(tiny_llama_dir, tmp_path, one_line_error):
    folder, marker = _poisoned(tiny_llama_dir, tmp_path, looped=True)
    result = runner.invoke(app, ["scan", str(folder), "--seeds", "1", "--batch", "2"])
    one_line_error(result, str(folder))
    assert not marker.exists()


# --------------------------------------------------------------------------- inputs


def test_check_outputs_rules(tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    log = tmp_path / "log.json"
    log.write_text("{}")
    hard = tmp_path / "hard.json"
    hard.hardlink_to(log)
    link = tmp_path / "link"
    link.symlink_to(ckpt)
    for out, why in [
        (ckpt / "config.json", "inside"),
        (link / "config.json", "inside"),
        (tmp_path / "x" / ".." / "log.json", "is an input"),
        (hard, "is an input"),
        (tmp_path, "contains"),
    ]:
        with pytest.raises(InputError, match=why):
            check_outputs({"--out": out}, [ckpt, log])
    with pytest.raises(InputError, match="different files"):
        check_outputs({"--out": tmp_path / "a.csv", "--export": [tmp_path / "a.csv"]}, [])
    check_outputs({"--out": tmp_path / "fine.csv", "--plot": None}, [ckpt, log, None])


def test_model_inputs(tiny_llama_dir, tmp_path):
    assert model_inputs(str(tiny_llama_dir)) == [tiny_llama_dir]
    assert model_inputs("grown")[0].name == "grown-s0"
    assert model_inputs(None) == [] and model_inputs("nonexistent-thing") == []


@pytest.mark.parametrize("target", ["config.json", "model.safetensors", "tokenizer.json"])
def test_scan_refuses_model_files(tiny_llama_dir, tmp_path, one_line_error, target):
    folder = tmp_path / "m"
    shutil.copytree(tiny_llama_dir, folder)
    before = (folder / target).read_bytes()
    out = folder / target
    result = runner.invoke(app, ["scan", str(folder), "--out", str(out.with_suffix(".csv"))])
    one_line_error(result, "inside")
    result = runner.invoke(app, ["scan", str(folder), "--plot", str(folder / "x.html")])
    one_line_error(result, "--plot")
    assert (folder / target).read_bytes() == before


def test_ablate_refuses_model_config(tiny_llama_dir, tmp_path, one_line_error):
    folder = tmp_path / "m"
    shutil.copytree(tiny_llama_dir, folder)
    before = (folder / "config.json").read_bytes()
    result = runner.invoke(app, ["ablate", str(folder), "--out", str(folder / "config.json")])
    one_line_error(result, "refusing to write --out", "config.json")
    assert (folder / "config.json").read_bytes() == before


def test_lineage_refuses_its_score_table(grown_copy, tmp_path, one_line_error):
    scores = tmp_path / "scores.csv"
    scores.write_text("layer,head,induction\n0,0,0.5\n")
    result = runner.invoke(
        app, ["lineage", str(grown_copy), "--scores", str(scores), "--out", str(scores)]
    )
    one_line_error(result, "--out", "is an input")
    export = str(grown_copy / "g.json")
    result = runner.invoke(
        app, ["lineage", str(grown_copy), "--scores", str(scores), "--export", export]
    )
    one_line_error(result, "--export", "inside")
    assert scores.read_text().startswith("layer,head")


@pytest.fixture
def grown_copy(tmp_path):
    from induction.models import registry

    folder = tmp_path / "grown"
    shutil.copytree(registry.zoo_path("grown"), folder)
    return folder


# --------------------------------------------------------------------------- claims


def test_claim_is_exclusive_and_reentrant(tmp_path):
    out = tmp_path / "t.csv"
    errors = []
    with claim_output(out):
        with claim_output(out):  # same thread: re-entrant
            write_text(out, "a")
        t = threading.Thread(target=lambda: _try(lambda: write_text(out, "b"), errors))
        t.start()
        t.join()
    assert len(errors) == 1 and "being written by" in str(errors[0])
    assert out.read_text() == "a"
    assert not list(tmp_path.glob(".t.csv.lock"))
    write_text(out, "c")  # released
    assert out.read_text() == "c"


def _try(fn, errors):
    try:
        fn()
    except InputError as e:
        errors.append(e)


def test_claim_held_by_another_process(tmp_path, one_line_error):
    import subprocess
    import sys

    out = tmp_path / "scores.csv"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from induction.store.io import claim_output\n"
            f"with claim_output({str(out)!r}):\n"
            "    print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        result = runner.invoke(app, ["scan", "grown", "--out", str(out)])
        one_line_error(result, "being written by another run", f"pid {holder.pid}")
    finally:
        holder.kill()
        holder.wait()
    # the kernel dropped the dead holder's lock: the output is free again
    with claim_output(out):
        pass


def test_unwritable_output_folder_is_one_line(tmp_path):
    import os

    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        with pytest.raises(InputError, match="writable output folder"):
            write_text(locked / "x.csv", "a")
    finally:
        locked.chmod(0o700)


def test_wrote_and_replaced(tmp_path):
    import pandas as pd

    out = tmp_path / "t.csv"
    df = pd.DataFrame({"a": [1]})
    write_table(df, out)
    assert wrote(out) == f"wrote {out}"
    write_table(df, out)
    assert wrote(out) == f"replaced {out}"


def test_stale_temporaries_cleaned(tmp_path, capsys):
    out = tmp_path / "t.csv"
    out.write_text("old")
    stale_file = tmp_path / ".t.csv.ab12cd34.tmp"
    stale_file.write_text("half")
    stale_dir = tmp_path / ".t.csv.zz99yy88.tmp"
    stale_dir.mkdir()
    other = tmp_path / ".t.csv.extra.ab12cd34.tmp"  # another output's temporary: kept
    other.write_text("x")
    write_text(out, "new")
    assert not stale_file.exists() and not stale_dir.exists() and other.exists()
    assert capsys.readouterr().err.count("left by an interrupted run") == 2


def test_interrupted_folder_swap_is_restored(tmp_path, capsys):
    out = tmp_path / "model"
    old = tmp_path / ".model.old.abcd1234"
    (old / "x").mkdir(parents=True)
    (old / "x" / "config.json").write_text("{}")  # the only copy of the previous model
    with claim_output(out):
        pass
    assert (out / "config.json").is_file() and not old.exists()
    assert "restored" in capsys.readouterr().err


# --------------------------------------------------------------------------- caches


def test_fingerprint_covers_config(tiny_llama_dir, tmp_path, monkeypatch):
    from ablation.run import default_cache_path
    from induction.models.loading import load_model
    from induction.store.fingerprint import cache_root

    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "m"
    shutil.copytree(tiny_llama_dir, folder)
    first = default_cache_path(load_model(folder, device="cpu"))
    assert first.parent.parent == cache_root() == tmp_path / "cache"
    assert default_cache_path(load_model(folder, device="cpu")) == first  # stable
    config = json.loads((folder / "config.json").read_text())
    config["rope_theta"] = 1234.0
    (folder / "config.json").write_text(json.dumps(config))
    assert default_cache_path(load_model(folder, device="cpu")) != first
    hashes = json.loads((cache_root() / "file-hashes.json").read_text())
    assert str((folder / "model.safetensors").resolve()) in hashes


def test_file_hash_is_content_not_mtime(tmp_path, monkeypatch):
    import os

    from induction.store.fingerprint import file_hash

    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "w.bin"
    f.write_bytes(b"a" * 100)
    h = file_hash(f)
    os.utime(f, ns=(1, 1))
    assert file_hash(f) == h  # touched, same content
    f.write_bytes(b"b" * 100)
    os.utime(f, ns=(1, 1))  # same path, size, inode and mtime; new content
    assert file_hash(f) != h


def test_cache_command(tmp_path, monkeypatch, one_line_error):
    root = tmp_path / "cache"
    monkeypatch.setenv("INDUCTION_CACHE", str(root))
    (root / "ablate").mkdir(parents=True)
    (root / "ablate" / "abc.jsonl").write_text("{}\n")
    (root / "unrelated.txt").write_text("keep me")
    result = runner.invoke(app, ["cache"])
    assert result.exit_code == 0, result.output
    assert str(root) in result.stdout and "ablate" in result.stdout and "1 entr" in result.stdout
    result = runner.invoke(app, ["cache", "clear"])
    one_line_error(result, "--yes")
    assert (root / "ablate" / "abc.jsonl").exists()
    result = runner.invoke(app, ["cache", "clear", "--yes"])
    assert result.exit_code == 0, result.output
    assert not (root / "ablate").exists() and (root / "unrelated.txt").exists()


def test_ablate_announces_reuse(tiny_llama_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))
    args = ["ablate", str(tiny_llama_dir), "--suite", "zoo", "--task", "copy", "--n-items", "3",
            "--controls", "1", "--heads", "0.1", "--quiet"]  # fmt: skip
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "reusing" not in first.stderr
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    # clean, ablated, one uniform and one layer-shaped control
    assert "reusing 4 cached result(s)" in second.stderr


def test_zoo_train_refuses_before_training(tmp_path, one_line_error):
    out = tmp_path / "m"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    stale = tmp_path / ".m.abcd1234.tmp"  # a killed training run's folder
    stale.mkdir()
    result = runner.invoke(app, ["zoo", "train", "dense", "--out", str(out)])
    assert result.exit_code == 2 and "already exists" in result.stderr
    assert not stale.exists() and (out / "keep.txt").read_text() == "mine"
    from induction.models import registry

    inside = registry.MODELS_DIR / "dense-s0" / "new"
    result = runner.invoke(app, ["zoo", "train", "dense", "--out", str(inside)])
    one_line_error(result, "is an input")
