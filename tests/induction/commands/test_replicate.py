"""``induction replicate`` (issue #43 item 4): the measurement's settings are options built from
``SettingsOptions``; ``python benchmarks/replication.py`` is the same command (``main``)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from induction.commands.main import app
from induction.commands.replicate import main, replicate
from induction.errors import InputError
from induction.replication.config import Settings, SettingsOptions
from induction.replication.results import README_END, README_START

ROOT = Path(__file__).resolve().parents[3]
#: Every option the replication's argparse parser had (names, meanings and defaults kept).
OPTIONS = (
    "--fast --families --seeds --models-dir --controls --n-items --prompt-seeds --tasks "
    "--suite --no-regbench --top --tied --cache --threads --jobs --no-store --stored-only --record "
    "--no-gates --out-dir --no-png --progress --readme --summary --from-results --help"
).split()


def test_help_lists_every_option() -> None:
    result = CliRunner().invoke(app, ["replicate", "--help"])
    assert result.exit_code == 0, result.output
    listed = set(re.findall(r"^\s+(--[a-z-]+)", result.output, flags=re.M))
    assert listed == set(OPTIONS)


def _parsed(*args: str) -> dict:
    """The values the command receives for ``args`` (click's own parse, no run)."""
    app = typer.Typer()
    app.command(**replicate.command_settings)(replicate)  # type: ignore[attr-defined]
    command = typer.main.get_command(app)
    return command.make_context("replicate", list(args)).params


def test_several_values_follow_one_flag_as_before() -> None:
    """``--families a b`` (the argparse form the docs use) and ``--families a --families b``
    give the same list; a negative seed is a value, refused later in one line."""
    params = _parsed("--families", "dense8c", "grown8c", "--seeds", "1", "-2", "--tasks", "copy")
    assert params["families"] == ["dense8c", "grown8c"] and params["seeds"] == [1, -2]
    assert params["tasks"] == ["copy"]
    again = _parsed(
        "--families", "dense8c", "--families", "grown8c", *"--seeds 1 --seeds -2".split()
    )
    assert again["families"] == params["families"] and again["seeds"] == params["seeds"]
    defaults = _parsed()
    assert not defaults["families"] and defaults["threads"] == 1 and defaults["jobs"] == 1


def test_settings_options_map_onto_the_presets() -> None:
    assert SettingsOptions().settings() == Settings()
    assert SettingsOptions(fast=True).settings() == Settings.fast()
    chosen = SettingsOptions(
        fast=True,
        controls=3,
        n_items=5,
        prompt_seeds=3,
        tasks=("copy",),
        no_regbench=True,
        top=4,
        tied=True,
        cache=True,
    )
    assert chosen.settings() == Settings.fast(
        controls=3,
        n_items=5,
        prompt_seeds=(0, 1, 2),
        tasks=("copy",),
        regbench=False,
        top_n=4,
        tied=True,
        cache=True,
    )
    with pytest.raises(InputError, match="--controls must be an integer >= 0, got -1"):
        SettingsOptions(controls=-1)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--bogus"], "No such option: --bogus"),
        (["--families", "--seeds", "1"], "'--families' requires an argument"),
        (["--seeds", "x"], "'--seeds'"),
        (["--n-items", "0"], "--n-items must be an integer >= 1, got 0"),
        (["--jobs", "0"], "--jobs must be an integer >= 1, got 0"),
    ],
)
def test_errors_are_one_line_and_exit_2(argv, fragment, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--out-dir", "r"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and fragment in err[0], err
    assert not list(tmp_path.iterdir())


def test_the_docs_block_names_the_command_as_run(tmp_path, monkeypatch, capsys) -> None:
    """``--from-results`` re-renders the stored zoo3 record; the rewritten block names the
    benchmark script with the arguments as given."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "benchmarks" / "results" / "zoo3" / "replication.json", tmp_path)
    doc = tmp_path / "doc.md"
    doc.write_text(f"{README_START}\nold\n{README_END}\n")
    argv = ["--from-results", "--out-dir", ".", "--no-png", "--no-gates", "--readme", "doc.md"]
    assert main(argv) == 0
    assert f"`python benchmarks/replication.py {' '.join(argv)}`" in doc.read_text()
    assert "| family |" in capsys.readouterr().out


def test_suite_option_names_a_registered_suite() -> None:
    """``--suite zoo4g`` (round 4, docs/replication.md R8) reaches the settings; a name that is
    no suite is refused in one line, exit 2, listing the suites."""
    from induction.replication.config import SettingsOptions

    assert SettingsOptions(suite="zootrain").settings().suite == "zootrain"
    # round 4's suite and controls are the defaults: `induction replicate` measures what the
    # verdict reads (R4-verdict: 20 controls of each shape)
    default = SettingsOptions().settings()
    assert (default.suite, default.controls, default.controls_shape) == ("zoo4g", 20, "both")
    result = CliRunner().invoke(app, ["replicate", "--suite", "zoo5", "--fast"])
    assert result.exit_code == 2 and "--suite 'zoo5' is not a suite" in result.output
    assert "zoo4g" in result.output and "Traceback" not in result.output
