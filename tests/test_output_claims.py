"""Every output of ``ablate``, ``effects``, ``circuits``, ``show`` and ``depth`` is claimed
before the model loads and held until it is written (issue "Trust, round 3", CC01-CC05): a
second run to the same output fails at once with one ``error:`` line naming the first run's
pid, exit code 2, nothing written, no model loaded.

The model is never loaded here: ``load_model`` is replaced by a stub that fails the test (the
refusal must come first) or, to see that the claim is held while the model loads, records
which outputs are claimed at that moment and stops the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from induction.commands.main import app
from induction.errors import InputError, ModelLoadError
from induction.store.io import claim_output

runner = CliRunner()
MODEL = "grown"  # a zoo model: nothing to build, and never loaded here

#: command -> (arguments with {d} for the case folder, the outputs it names)
COMMANDS = {
    "ablate": (
        "ablate {m} --no-cache -q --n-items 2 --controls 1 --out {d}/r.csv --plot {d}/r.html",
        ("r.csv", "r.html"),
    ),
    "effects": ("effects {m} --batch 2 --out {d}/e.csv --plot {d}/e.html", ("e.csv", "e.html")),
    "circuits": (
        "circuits {m} --top 1 --batch 2 --out {d}/c.csv --plot {d}/c.html --graph {d}/g.json",
        ("c.csv", "c.html", "g.json"),
    ),
    "show": ("show {m} --heads L0H0 --out {d}/v.html", ("v.html",)),
    "depth": ("depth {m} --out {d}/d.html --table {d}/d.csv", ("d.html", "d.csv")),
}

CASES = [(cmd, held) for cmd, (_, outputs) in COMMANDS.items() for held in outputs]


def _args(command: str, d: Path) -> list[str]:
    return COMMANDS[command][0].format(m=MODEL, d=d).split()


@contextmanager
def _held_by_another_run(path: Path) -> Iterator[int]:
    """Another process holds the claim on ``path`` (as a concurrent run would); its pid."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from induction.store.io import claim_output\n"
            f"with claim_output({str(path)!r}):\n"
            "    print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()


def _claimed_elsewhere(path: Path) -> bool:
    """Whether claiming ``path`` from another thread fails now (someone holds it)."""
    refused = []

    def attempt():
        try:
            with claim_output(path, clean=False):
                pass
        except InputError:
            refused.append(path)

    t = threading.Thread(target=attempt)
    t.start()
    t.join()
    return bool(refused)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path.parent / f"{tmp_path.name}-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.mark.parametrize("command, held", CASES, ids=[f"{c}-{h}" for c, h in CASES])
def test_second_run_to_a_claimed_output_fails_at_once(
    command, held, tmp_path, monkeypatch, one_line_error
):
    def no_load(*args, **kwargs):
        raise AssertionError("the model was loaded although an output is claimed")

    monkeypatch.setattr("induction.models.loading.load_model", no_load)
    out = tmp_path / "outs"
    out.mkdir()
    with _held_by_another_run(out / held) as pid:
        before = _files(out)
        result = runner.invoke(app, _args(command, out))
        line = one_line_error(result, "being written by another run", f"pid {pid}")
        assert str(out / held) in line
        assert _files(out) == before  # nothing written, no lock file of ours left behind
    assert not _claimed_elsewhere(out / held)  # the holder is gone: the output is free again


@pytest.mark.parametrize("command", list(COMMANDS))
def test_outputs_stay_claimed_while_the_model_loads(command, tmp_path, monkeypatch, one_line_error):
    outputs = [tmp_path / name for name in COMMANDS[command][1]]
    seen: dict[Path, bool] = {}

    def stub(*args, **kwargs):
        seen.update({p: _claimed_elsewhere(p) for p in outputs})
        raise ModelLoadError("stub: stopped before loading")

    monkeypatch.setattr("induction.models.loading.load_model", stub)
    result = runner.invoke(app, _args(command, tmp_path))
    one_line_error(result, "stub: stopped before loading")
    assert seen == {p: True for p in outputs}, seen  # every output claimed during the load
    assert not any(_claimed_elsewhere(p) for p in outputs)  # and released on the way out
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".lock")]
