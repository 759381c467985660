"""Command options built from config fields: each setting declared once, on its config."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import pytest
import typer
from typer.testing import CliRunner

from ablation.config import AblationConfig
from induction.circuits.config import CircuitsConfig, EffectsConfig, FVConfig
from induction.commands.ablate import ablate
from induction.commands.circuits import circuits, effects
from induction.commands.config_options import config_command
from induction.commands.dynamics import sweep
from induction.commands.fv import fv
from induction.commands.lineage import lineage
from induction.commands.replicate import replicate
from induction.commands.scan import scan
from induction.config_fields import CLI_DEFAULT, flags_of, option, option_fields, parse_seeds
from induction.dynamics.sweep import SweepSettings
from induction.errors import InputError
from induction.replication.config import SettingsOptions
from induction.scores.score_names import ScanConfig, parse_token_range
from lineage.api import TraceConfig


@dataclass(frozen=True)
class ToyConfig:
    rate: float = option(0.5, "A rate.")
    names: tuple[str, ...] | None = option(None, "Names (repeatable).", "--name")
    loud: bool = option(False, "Shout.", "--loud/--quiet")
    seeds: object = option(1, "Seeds.", parse=parse_seeds)
    hidden: int = 3  # not an option

    def __post_init__(self) -> None:
        if not 0 < self.rate <= 1:
            raise InputError(f"--rate must be in (0, 1], got {self.rate}")


def _app() -> tuple[typer.Typer, list]:
    seen = []

    @config_command(ToyConfig, hidden=7)
    def toy(word: str = "x", config: ToyConfig = ToyConfig()) -> None:
        seen.append((word, config))

    app = typer.Typer()
    app.command()(toy)
    app.command("other")(lambda: None)  # two commands, so `toy` is a subcommand
    return app, seen


def test_options_come_from_the_config_fields() -> None:
    app, seen = _app()
    result = CliRunner().invoke(
        app,
        ["toy", "--word", "w", "--rate", "0.25", "--name", "a", "--name", "b", "--loud"]
        + ["--seeds", "0,2"],
    )
    assert result.exit_code == 0, result.output
    assert seen == [("w", ToyConfig(0.25, ("a", "b"), True, (0, 2), 7))]


def test_defaults_are_the_configs_and_unset_sequences_stay_none() -> None:
    app, seen = _app()
    assert CliRunner().invoke(app, ["toy"]).exit_code == 0
    assert seen[0][1] == ToyConfig(hidden=7)
    assert seen[0][1].names is None and seen[0][1].seeds == 1


def test_help_lists_options_not_hidden_fields() -> None:
    app, _ = _app()
    text = CliRunner().invoke(app, ["toy", "--help"]).output
    assert "--rate" in text and "--name" in text and "--loud" in text
    assert "--hidden" not in text


def test_the_configs_validation_runs_before_the_body() -> None:
    app, seen = _app()
    result = CliRunner().invoke(app, ["toy", "--rate", "2"])
    assert isinstance(result.exception, InputError) and seen == []
    assert "--rate must be in (0, 1]" in str(result.exception)


def test_a_command_without_config_parameter_is_refused() -> None:
    with pytest.raises(TypeError, match="config"):
        config_command(ToyConfig)(lambda word="x": None)


@pytest.mark.parametrize(
    ("command", "config_cls", "fixed"),
    [
        (ablate, AblationConfig, set()),
        (fv, FVConfig, {"progress"}),
        (circuits, CircuitsConfig, {"progress"}),
        (effects, EffectsConfig, {"scores", "progress"}),
        (scan, ScanConfig, set()),
        (lineage, TraceConfig, set()),
        (sweep, SweepSettings, set()),  # the scan's options stay its own (fv in --scores)
        (replicate, SettingsOptions, set()),
    ],
)
def test_every_option_field_is_a_command_option_once(command, config_cls, fixed) -> None:
    params = inspect.signature(command).parameters
    wanted = {f.name for f in option_fields(config_cls)} - fixed
    assert wanted <= set(params)
    flags = [
        flag.split("/")[0]
        for f in option_fields(config_cls)
        if f.name in wanted
        for flag in flags_of(f)
    ]
    assert len(flags) == len(set(flags))
    # the command restates no config default: each generated default is the field's, or the
    # command line's own declared beside it (scan's --loss)
    for f in option_fields(config_cls):
        if f.name in wanted and f.default is not None and not callable(f.metadata.get("cli_parse")):
            assert params[f.name].default == f.metadata.get(CLI_DEFAULT, f.default)


def test_scan_options_come_from_scan_config() -> None:
    """#43 item 4: ``induction scan`` builds its options from ScanConfig; the command line
    keeps its own defaults (every score, three seeds, the loss) and the config parses them."""
    params = inspect.signature(scan).parameters
    assert params["loss"].default is True and params["seeds"].default == "3"
    assert params["scores"].default == ",".join(ScanConfig().scores)
    assert "layers" not in {f.name for f in option_fields(ScanConfig)}  # needs the model
    assert parse_token_range("100:200") == (100, 200)
    with pytest.raises(InputError, match="--token-range 'x': expected lo:hi"):
        parse_token_range("x")


def test_parse_seeds() -> None:
    assert parse_seeds("3") == 3 and parse_seeds("0,1, 2") == (0, 1, 2)
    with pytest.raises(InputError, match="--seeds 'x'"):
        parse_seeds("x")
