"""Caches never serve damaged entries: each entry carries a hash of its own content, checked on
read; a mismatch is noted once on stderr and the entry rebuilt (induction.store.cache_integrity).
And every model file that changes a result (card.json, duplication_log.json) is in the keys.
"""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from induction.store.cache_integrity import hash_path, intact, seal, seal_record

runner = CliRunner()
NOTE = "note: cache entry"


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))


def flip(path, at: int | None = None) -> None:
    """Change one byte of ``path`` (the middle one by default)."""
    data = bytearray(path.read_bytes())
    i = len(data) // 2 if at is None else at
    data[i] = data[i] + 1 if data[i] < 255 else 0
    path.write_bytes(bytes(data))


def notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(NOTE)]


def test_a_sealed_file_and_folder_detect_one_changed_byte(tmp_path, capsys):
    f = tmp_path / "entry.csv"
    f.write_text("layer,head,induction\n0,0,0.5\n")
    seal(f)
    assert intact(f) and hash_path(f).name == ".entry.csv.sha256"
    flip(f)
    assert not intact(f) and not f.exists() and not hash_path(f).exists()
    (line,) = notes(capsys.readouterr().err)
    assert str(f) in line and "content hash mismatch" in line and "rebuilding" in line
    d = tmp_path / "folder"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "w.bin").write_bytes(b"\0" * 64)
    seal(d)
    assert intact(d) and (d / ".sha256").is_file()
    flip(d / "sub" / "w.bin")
    assert not intact(d) and not d.exists()
    assert len(notes(capsys.readouterr().err)) == 1
    g = tmp_path / "unsealed.csv"
    g.write_text("x\n")
    assert not intact(g) and not g.exists()
    assert "has no content hash" in capsys.readouterr().err


# --------------------------------------------------------------------------- ablation


def _result(em: float, n: int = 4):
    from ablation.results import EvalResult

    items = [1.0] * round(em * n) + [0.0] * (n - round(em * n))
    return EvalResult({"em": sum(items) / n}, {"em": items}, ["a"] * n, "")


def test_resume_cache_line_with_one_changed_byte_is_dropped_once(tmp_path, capsys):
    from ablation.engine import ResultCache

    path = tmp_path / "c.jsonl"
    cache = ResultCache(path)
    cache.put("fp|clean", _result(0.75))
    cache.put("fp|zero:0.1", _result(0.25))
    text = path.read_text()
    path.write_text(text.replace('"em": 0.75', '"em": 0.95', 1))  # AC04: one byte
    again = ResultCache(path)
    assert again.get("fp|clean") is None  # recomputed, not served
    assert again.get("fp|zero:0.1") == _result(0.25)
    (line,) = notes(capsys.readouterr().err)
    assert str(path) in line and "1 of 2 lines" in line
    assert len(path.read_text().splitlines()) == 1  # rewritten without the damaged line
    again.put("fp|clean", _result(0.75))  # the rebuilt result
    third = ResultCache(path)
    assert third.get("fp|clean") == _result(0.75)
    assert notes(capsys.readouterr().err) == []


def test_a_torn_last_line_is_dropped_quietly(tmp_path, capsys):
    from ablation.engine import ResultCache

    path = tmp_path / "c.jsonl"
    ResultCache(path).put("fp|clean", _result(0.5))
    with open(path, "a") as fh:
        fh.write('{"key": "fp|torn", "res')  # a crash mid-write
    cache = ResultCache(path)
    cache.put("fp|zero:0.1", _result(0.25))  # not glued to the torn fragment
    assert ResultCache(path).get("fp|zero:0.1") == _result(0.25)
    assert notes(capsys.readouterr().err) == []


def test_results_that_do_not_fit_their_task_are_recomputed():
    from ablation.engine import fits
    from ablation.results import EvalResult
    from ablation.tasks.base import GenItem, GenTask

    task = GenTask("t", [GenItem(f"p{i}", ["x"]) for i in range(4)], metric="em")
    assert fits(task, _result(0.75))
    nan = float("nan")
    bad = [
        EvalResult({"em": nan}, {"em": [1.0, 1.0, 1.0, 0.0]}, ["a"] * 4),  # AC03: NaN score
        EvalResult({"em": 0.99}, {"em": [1.0, 1.0, 1.0, 0.0]}, ["a"] * 4),  # AC04
        EvalResult({"em": 1.0}, {"em": [1.0] * 8}, ["a"] * 4),  # AC05: items of another size
        EvalResult({"f1": 0.75}, {"f1": [1.0, 1.0, 1.0, 0.0]}, ["a"] * 4),  # AC06: f1, not em
        EvalResult({"em": 0.75}, {"em": [1.0, 1.0, 1.0, 0.0]}, None),  # no answers
    ]
    assert not any(fits(task, r) for r in bad)
    assert fits(task, EvalResult({"em": nan}, {"em": [nan] * 4}, ["a"] * 4))  # honest NaN


def test_cached_head_scores_with_one_changed_byte_are_rescored(tiny_llama_dir, tmp_path, capsys):
    import pandas as pd

    from ablation.run import compute_scores
    from induction.models.loading import load_model

    loaded = load_model(tiny_llama_dir, device="cpu")
    first = compute_scores(loaded, cache_dir=tmp_path)
    (csv,) = tmp_path.glob("*.scores-induction.csv")
    assert hash_path(csv).is_file()
    reused = compute_scores(loaded, cache_dir=tmp_path)
    assert "reusing cached induction scores" in capsys.readouterr().err
    pd.testing.assert_frame_equal(reused, first[["layer", "head", "induction"]])
    flip(csv, at=len("layer,head,induction\n") + 2)
    again = compute_scores(loaded, cache_dir=tmp_path)
    err = capsys.readouterr().err
    assert len(notes(err)) == 1 and "reusing" not in err
    pd.testing.assert_frame_equal(again, first)
    assert intact(csv)  # rebuilt with its hash
    # AC09: a table cut to one row, even with a matching hash, is not this model's table
    csv.write_text("layer,head,induction\n0,0,0.5\n")
    seal(csv)
    compute_scores(loaded, cache_dir=tmp_path)
    err = capsys.readouterr().err
    assert len(notes(err)) == 1 and "not a score table of this model" in err


def test_ablate_rebuilds_damaged_cache_entries(tiny_llama_dir, tmp_path):
    from induction.commands.main import app

    out = [tmp_path / f"r{i}.csv" for i in range(3)]
    args = ["ablate", str(tiny_llama_dir), "--suite", "zoo", "--task", "copy", "--n-items", "3",
            "--controls", "1", "--frac", "0.25", "--quiet"]  # fmt: skip
    first = runner.invoke(app, [*args, "--out", str(out[0])])
    assert first.exit_code == 0, first.output
    cache = tmp_path / "cache" / "ablate"
    (jsonl,) = cache.glob("*.jsonl")
    (csv,) = cache.glob("*.scores-induction.csv")
    flip(jsonl, at=jsonl.read_bytes().index(b'"scores"') + 12)
    flip(csv, at=len("layer,head,induction\n") + 2)
    second = runner.invoke(app, [*args, "--out", str(out[1])])
    assert second.exit_code == 0, second.output
    lines = notes(second.stderr)
    assert len(lines) == 2, second.stderr
    assert any(str(jsonl) in x for x in lines) and any(str(csv) in x for x in lines)
    assert out[1].read_text() == out[0].read_text()
    third = runner.invoke(app, [*args, "--out", str(out[2])])
    assert notes(third.stderr) == [] and "reusing" in third.stderr
    assert out[2].read_text() == out[0].read_text()


# --------------------------------------------------------------------------- keys


def test_card_and_duplication_log_are_in_the_keys(tiny_llama_dir, tmp_path):
    from ablation.run import default_cache_path
    from induction.dynamics.sweep import SweepItem, content_hash
    from induction.models.loading import load_model

    folder = tmp_path / "m"
    shutil.copytree(tiny_llama_dir, folder)
    (folder / "card.json").write_text(json.dumps({"repeat_len": 32, "steps": 3000}))

    def keys():
        loaded = load_model(folder, device="cpu")
        return default_cache_path(loaded), content_hash(SweepItem("m", "final", str(folder)))

    first = keys()
    assert keys() == first
    (folder / "card.json").write_text(json.dumps({"repeat_len": 6, "steps": 3000}))  # AC22
    second = keys()
    assert second[0] != first[0] and second[1] != first[1]
    (folder / "duplication_log.json").write_text(json.dumps({"events": []}))  # SWS3
    third = keys()
    assert third[0] != second[0] and third[1] != second[1]


# --------------------------------------------------------------------------- file-hash index


def test_a_changed_file_hash_index_entry_is_noted_and_rehashed(tmp_path, capsys):
    import hashlib

    from induction.store.fingerprint import HASH_INDEX, cache_root, file_hash

    f = tmp_path / "w.bin"
    f.write_bytes(b"weights" * 100)
    truth = hashlib.sha256(f.read_bytes()).hexdigest()
    assert file_hash(f) == truth
    index = cache_root() / HASH_INDEX
    text = index.read_text()
    at = text.index(truth)
    index.write_text(text[:at] + ("0" if truth[0] != "0" else "1") + text[at + 1 :])  # AC21
    assert file_hash(f) == truth  # not the tampered value
    (line,) = notes(capsys.readouterr().err)
    assert str(index) in line and str(f.resolve()) in line
    assert file_hash(f) == truth
    assert notes(capsys.readouterr().err) == []  # the entry was rewritten
    index.write_text("{ not json")
    assert file_hash(f) == truth
    assert len(notes(capsys.readouterr().err)) == 1
    entry = json.loads(index.read_text())[str(f.resolve())]
    assert entry == seal_record({k: entry[k] for k in ("stat", "sha256")}, str(f.resolve()))


# --------------------------------------------------------------------------- GGUF copies


def _tiny_gguf(path):
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.arange(16, dtype=np.float32).reshape(4, 4))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_damaged_gguf_copy_is_dequantized_again(tmp_path, monkeypatch, capsys):
    """GG01: a dequantized copy with a changed tensor byte. Dequantizing a real GGUF takes
    seconds, so a stand-in writes the checkpoint; the cache logic around it is the real one."""
    pytest.importorskip("gguf")
    import induction.models.gguf as mod

    calls = []

    def dequantize(path, dtype, dest):
        calls.append(path)
        (dest / "config.json").write_text('{"model_type": "llama"}')
        (dest / "model.safetensors").write_bytes(bytes(range(256)) * 64)

    monkeypatch.setattr(mod, "_dequantize", dequantize)
    src = _tiny_gguf(tmp_path / "tiny.gguf")
    folder = mod.gguf_checkpoint(src)
    assert (folder / ".sha256").is_file() and len(calls) == 1
    assert mod.gguf_checkpoint(src) == folder and len(calls) == 1  # served from the cache
    good = (folder / "model.safetensors").read_bytes()
    flip(folder / "model.safetensors")
    assert mod.gguf_checkpoint(src) == folder and len(calls) == 2
    (line,) = notes(capsys.readouterr().err)
    assert str(folder) in line and "content hash mismatch" in line
    assert (folder / "model.safetensors").read_bytes() == good
    (folder / "model.safetensors").write_bytes(good[:100])  # GG02: truncated
    assert mod.gguf_checkpoint(src) == folder and len(calls) == 3
    assert len(notes(capsys.readouterr().err)) == 1
    assert mod.gguf_checkpoint(src) == folder and len(calls) == 3
    assert notes(capsys.readouterr().err) == []


# --------------------------------------------------------------------------- sweep datasets


def test_sweep_rebuilds_a_damaged_file_and_a_changed_card(tiny_llama_dir, tmp_path, capsys):
    import pandas as pd

    from induction.dynamics.dataset import read_dataset
    from induction.dynamics.sweep import SweepSettings, sweep
    from induction.errors import InputError

    settings = SweepSettings(scores=("induction",), seeds=1, batch=2, device="cpu")
    folder = tmp_path / "m"
    shutil.copytree(tiny_llama_dir, folder)
    (folder / "card.json").write_text(json.dumps({"repeat_len": 8, "steps": 3000}))
    out = tmp_path / "ds"
    assert sweep([str(folder)], out, settings=settings, progress=False).computed == 1
    (part,) = out.glob("*.parquet")
    assert hash_path(part).is_file()
    first = read_dataset(out)
    flip(part)
    with pytest.raises(InputError, match="content hash mismatch"):
        read_dataset(out)
    report = sweep([str(folder)], out, settings=settings, progress=False)  # SWS1
    assert (report.computed, report.done) == (1, 0)
    (line,) = notes(capsys.readouterr().err)
    assert str(part) in line
    pd.testing.assert_frame_equal(read_dataset(out), first)
    report = sweep([str(folder)], out, settings=settings, progress=False)
    assert (report.computed, report.done) == (0, 1)
    assert notes(capsys.readouterr().err) == []
    (folder / "card.json").write_text(json.dumps({"repeat_len": 8, "steps": 999999}))  # SWS4
    report = sweep([str(folder)], out, settings=settings, progress=False)
    assert report.computed == 1
    assert len(list(out.glob("*.parquet"))) == 1  # the stale file of that label is gone
    assert set(read_dataset(out)["step"]) == {999999}


@pytest.mark.parametrize("kind", ["folder", "dangling link"])
def test_a_resume_cache_that_is_not_a_file_is_bypassed_once(kind, tmp_path, capsys):
    """AC13: ``ablate/<fp>.jsonl`` is a folder (or a dangling link): results are computed and
    not cached, with one note; nothing is removed."""
    from ablation.engine import ResultCache

    path = tmp_path / "c.jsonl"
    if kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "nowhere")
    cache = ResultCache(path)
    cache.put("fp|clean", _result(0.75))
    assert cache.get("fp|clean") == _result(0.75)  # this run still reuses its own result
    (line,) = notes(capsys.readouterr().err)
    assert str(path) in line and "not a regular file" in line
    assert path.is_dir() if kind == "folder" else path.is_symlink()
