"""`induction circuits`: partners of the zoo's induction heads, lineage, CLI errors."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from induction.commands.main import app


@pytest.fixture(scope="module")
def grown_result():
    import torch

    torch.set_num_threads(1)
    from induction.circuits import induction_circuits

    return induction_circuits("grown", batch=4, seq_len=16)


def test_each_induction_head_has_a_previous_token_partner(grown_result):
    r = grown_result
    assert r.heads and r.key_path
    for (la, ha), (lb, hb) in r.circuits():
        assert la < lb
        row = r.table[(r.table["partner_rank"] == 1) & (r.table["layer"] == lb)]
        row = row[row["head"] == hb].iloc[0]
        assert row["partner_prev_token"] >= 0.4  # the partner is a previous-token head
        assert row["drop_key"] > 0.05 and row["k_comp_excess"] > 0
    assert {"k_comp", "k_comp_baseline", "drop", "drop_key"} <= set(r.to_frame().columns)


def test_circuit_lineage(grown_result, tmp_path):
    lin = grown_result.lineage
    assert lin is not None
    n = len(grown_result.circuits())
    assert f"{n} circuit" in lin.headline()
    assert lin.initial_partners is not None  # the shipped initial/ network was searched
    for suffix in (".graphml", ".json", ".dot"):
        assert lin.export(tmp_path / f"c{suffix}").is_file()


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--threshold", "1.5"], "--threshold"),
        (["--top", "0"], "--top"),
        (["--mode", "bogus"], "ablation mode"),
        (["--reference", "bogus"], "reference"),
        (["--batch", "0"], "--batch"),
        (["--seeds", "a"], "--seeds"),
        (["--out", "x.txt"], "--out"),
        (["--graph", "x.png"], "--graph"),
    ],
)
def test_circuits_cli_errors(args, fragment, one_line_error):
    result = CliRunner().invoke(app, ["circuits", "grown", *args])
    one_line_error(result, fragment)


@pytest.mark.parametrize(
    "args, fragment",
    [(["--mode", "x"], "ablation mode"), (["--top", "0"], "--top"), (["--out", "a.xyz"], "--out")],
)
def test_effects_cli_errors(args, fragment, one_line_error):
    one_line_error(CliRunner().invoke(app, ["effects", "grown", *args]), fragment)


def test_circuits_cli_prints_partners_and_lineage():
    result = CliRunner().invoke(app, ["circuits", "grown", "--batch", "2", "--seq-len", "12"])
    assert result.exit_code == 0, result.output
    assert "K-composition baseline" in result.output
    assert "circuit lineage:" in result.output


@pytest.mark.parametrize(
    "command, label",
    [
        (["circuits", "--threshold", "0"], ": ablating partners"),
        (["effects"], ": ablating each head"),
    ],
)
def test_cli_reports_progress_when_stderr_is_not_a_terminal(
    command, label, tiny_llama_factory, tmp_path, monkeypatch
):
    """A log or a pipe gets one-line progress: the model loading and the ablation passes
    (each line at most 10% apart here: the quiet first 2 s are turned off for the tiny
    model), and the table still goes to stdout alone."""
    import induction.progress

    monkeypatch.delenv("INDUCTION_PROGRESS", raising=False)
    monkeypatch.setattr(induction.progress, "LINE_QUIET_S", 0.0)
    model = str(tiny_llama_factory(tmp_path / "tiny3", n_layers=3))
    args = [command[0], model, *command[1:], "--batch", "2", "--seq-len", "8"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert f"loading {model} ..." in lines
    assert any(ln.startswith(f"loading {model}: done in ") for ln in lines)
    passes = [ln for ln in lines if label in ln]
    assert len(passes) >= 3, lines
    assert "(100%), done in " in passes[-1], passes
    assert not any(label in ln for ln in result.stdout.splitlines())
