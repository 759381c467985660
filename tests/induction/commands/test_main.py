"""The CLI skeleton: help, the models listing, one-line errors in a real process."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest
import typer
from typer.testing import CliRunner

from induction.commands.main import app, register_commands

runner = CliRunner()


def test_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("models", "info"):
        assert command in result.stdout


def test_models_lists_zoo_and_spec_kinds():
    import re

    from induction import zoo_models
    from induction.models.registry import (
        FIRST_ZOO,
        FIXED_PROTOCOL,
        FV_ZOO,
        ROUND4,
        SECOND_ZOO,
        TWELVE_LAYER_ZOO,
    )

    result = runner.invoke(app, ["models"])
    assert result.exit_code == 0, result.output
    for kind in ("folder", ".gguf", "hub name", "smollm2"):
        assert kind in result.stdout
    zoo_labels = (
        r"(round 4|second|function-vector|zoo2 \(record\)|12-layer \(record\)|first \(record\))"
    )
    row = re.compile(r"^  (\S+) +(\S+) +" + zoo_labels + r" +(\d+) +(\S+) ")
    listed = [m.groups() for m in map(row.match, result.stdout.splitlines()) if m]
    rows = {r[0]: r for r in listed}
    for name in zoo_models():
        assert name in rows
        assert "max induction" in next(ln for ln in result.stdout.splitlines() if f" {name} " in ln)
    # each model's zoo marked; round 4 (training) and the second zoo first, the records last
    zoos = {
        "round 4": ROUND4,
        "second": SECOND_ZOO,
        "function-vector": FV_ZOO,
        "zoo2 (record)": FIXED_PROTOCOL,
        "12-layer (record)": TWELVE_LAYER_ZOO,
        "first (record)": FIRST_ZOO,
    }
    for name, family, zoo, _, _ in listed:
        assert family in zoos[zoo], (name, zoo)
    order = [z for _, _, z, _, _ in listed]
    assert order == sorted(order, key=list(zoos).index)
    assert "first (record) = the first zoo" in result.stdout
    # layers as the hooks see them: looped models unrolled, grown12 after both stages
    assert {rows[n][4] for n in rows if n.startswith("looped-")} <= {"8"}
    assert {rows[n][4] for n in rows if n.startswith("grown12-")} <= {"12"}


def test_console_script_one_line_error():
    """A real process: exit 2, one stderr line, no traceback."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from induction.commands.main import main; main()",
            "info",
            "./no/such",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: no such file or folder: ./no/such (`induction models` lists what can be loaded)"
    ]


def test_unexpected_errors_keep_traceback():
    def crash() -> None:
        raise ZeroDivisionError("bug")

    from induction.commands.main import _Group

    local = typer.Typer(cls=_Group)
    local.command()(crash)
    local.command()(lambda: None)
    result = runner.invoke(local, ["crash"])
    assert isinstance(result.exception, ZeroDivisionError)


def test_registration_skips_missing_but_surfaces_broken(monkeypatch):
    target = typer.Typer()
    assert register_commands(target, [("induction.no_such_module_xyz", "x", None)]) == []
    broken = types.ModuleType("induction._broken_cli_test")
    monkeypatch.setitem(sys.modules, "induction._broken_cli_test", broken)
    with pytest.raises(AttributeError):
        register_commands(target, [("induction._broken_cli_test", "missing", None)])


def test_info_json_reports_growth_stages():
    import json

    grown = json.loads(runner.invoke(app, ["info", "grown12", "--json"]).stdout)
    assert grown["lineage"] is True and grown["depth_per_stage"] == [4, 8, 12]
    assert grown["n_layers"] == 12 and grown["looped"] is False
    dense = json.loads(runner.invoke(app, ["info", "dense", "--json"]).stdout)
    assert dense["lineage"] is False and "depth_per_stage" not in dense


def test_the_command_line_starts_without_torch():
    """`induction --help` and option parsing import no torch (seconds on a cold start); the
    job configs the commands build their options from are torch-free for this reason."""
    import subprocess
    import sys

    code = "import sys, induction.commands.main; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_deleted_working_folder_is_one_line(tmp_path):
    """EN10: run from a folder that was removed: one error line, exit 2, before torch loads."""
    import shutil
    import subprocess
    import sys

    gone = tmp_path / "gone"
    gone.mkdir()
    code = (
        "import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
        "sys.argv = ['induction', 'show', 'lidas8', '--heads', 'L5H1']; "
        "from induction.commands.main import main; main()"
    )
    out = subprocess.run([sys.executable, "-c", code, str(gone)], capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines() == [
        "error: the current folder no longer exists; cd to an existing folder and run again"
    ]
    shutil.rmtree(gone, ignore_errors=True)


@pytest.mark.parametrize(
    "args",
    [
        ["info", "{m}"],
        ["scan", "{m}", "--scores", "induction", "--seeds", "1", "--batch", "2"],
        [
            "ablate",
            "{m}",
            "--suite",
            "zoo",
            "--task",
            "lookup",
            "--n-items",
            "2",
            "--controls",
            "1",
            "--no-cache",
        ],  # fmt: skip
    ],
    ids=lambda a: a[0],
)
def test_every_command_that_loads_a_model_says_so(args, tiny_llama_dir, monkeypatch, tmp_path):
    """A slow load (46 s for a first GGUF) is never silent: the loading line appears once
    the phase has run LINE_QUIET_S, here 0."""
    from typer.testing import CliRunner

    from induction import progress
    from induction.commands.main import app

    monkeypatch.setattr(progress, "LINE_QUIET_S", 0)
    monkeypatch.setenv("INDUCTION_PROGRESS", "lines")
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))
    result = CliRunner().invoke(app, [a.format(m=tiny_llama_dir) for a in args])
    assert result.exit_code == 0, result.output
    assert f"loading {tiny_llama_dir}" in result.stderr
