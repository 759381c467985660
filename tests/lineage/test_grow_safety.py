"""``induction grow`` data safety: one writer per output, leftovers cleaned, inputs never
written, sizes checked before writing (docs/safety.md)."""

from __future__ import annotations

import threading

import pytest
import yaml
from typer.testing import CliRunner

from induction.commands.main import app
from induction.errors import InputError
from lineage.checkpoint import grow_checkpoint

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_racing_grows_one_wins(grown_dir, tmp_path):
    """Two grows to one --out without --force: exactly one writes, the other is refused."""
    for trial in range(4):
        out = tmp_path / f"g{trial}"
        barrier = threading.Barrier(2)
        outcomes: list = []

        def grow():
            barrier.wait()
            try:
                grow_checkpoint(grown_dir, out, preset="midas", block=4)
                outcomes.append("ok")
            except InputError as e:
                outcomes.append(str(e))

        threads = [threading.Thread(target=grow) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert outcomes.count("ok") == 1, outcomes
        refused = next(o for o in outcomes if o != "ok")
        assert "being written by" in refused or "exists and is not empty" in refused
        assert (out / "duplication_log.json").is_file()
        assert not list(tmp_path.glob(f".g{trial}.*"))  # no temporaries, no lock left


def test_replace_is_announced(grown_dir, tmp_path):
    out = tmp_path / "g"
    assert "replaced" not in run("grow", grown_dir, "--out", out).stdout
    result = run("grow", grown_dir, "--out", out, "--force")
    assert result.exit_code == 0, result.output
    assert "replaced the old folder" in result.stdout


def test_stale_leftovers_cleaned(grown_dir, tmp_path):
    out = tmp_path / "g"
    assert run("grow", grown_dir, "--out", out).exit_code == 0
    half = tmp_path / ".g.k3j4h5g6.tmp"  # a killed run's half-written folder
    (half / "sub").mkdir(parents=True)
    (half / "model.safetensors").write_bytes(b"\0" * 64)
    old = tmp_path / ".g.old.a1b2c3d4"  # a killed replace, after the new folder moved in
    (old / "x").mkdir(parents=True)
    unrelated = tmp_path / ".gg.k3j4h5g6.tmp"  # another output's temporary
    unrelated.mkdir()
    result = run("grow", grown_dir, "--out", out, "--force")
    assert result.exit_code == 0, result.output
    assert not half.exists() and not old.exists() and unrelated.exists()
    assert result.stderr.count("left by an interrupted run") == 2


def test_grow_refuses_its_inputs(grown_dir, tmp_path, one_line_error):
    config = tmp_path / "stack.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "merge_method": "passthrough",
                "slices": [{"sources": [{"model": "m", "layer_range": [0, 8]}]}],
            }
        )
    )
    one_line_error(run("grow", grown_dir, "--mergekit", config, "--out", config), "is an input")
    one_line_error(run("grow", grown_dir, "--out", grown_dir / "sub", "--force"), "is an input")
    assert config.read_text().startswith("merge_method")


@pytest.mark.parametrize("how", ["env", "constant"])
def test_large_output_needs_yes(grown_dir, tmp_path, monkeypatch, one_line_error, how):
    if how == "env":
        monkeypatch.setenv("INDUCTION_LARGE_OUTPUT", "1000")
    else:
        monkeypatch.setattr("induction.store.io.LARGE_OUTPUT_BYTES", 1000)
    config = tmp_path / "stack.yaml"
    slices = [{"sources": [{"model": "m", "layer_range": [0, 8]}]}] * 3
    config.write_text(yaml.safe_dump({"merge_method": "passthrough", "slices": slices}))
    out = tmp_path / "big"
    one_line_error(run("grow", grown_dir, "--mergekit", config, "--out", out), "--yes", "limit")
    assert not out.exists() and not list(tmp_path.glob(".big*"))
    result = run("grow", grown_dir, "--mergekit", config, "--out", out, "--yes")
    assert result.exit_code == 0, result.output
    assert (out / "model.safetensors").is_file()


def test_output_larger_than_free_space_is_refused(grown_dir, tmp_path):
    import shutil

    from induction.store.io import check_output_size

    free = shutil.disk_usage(tmp_path).free
    with pytest.raises(InputError, match="free"):
        check_output_size(tmp_path / "x", free * 2, confirmed=True)
    check_output_size(tmp_path / "x", 10, confirmed=False)


def test_a_large_model_asks_only_when_it_would_fill_most_of_the_disk(tmp_path):
    """No fixed size limit by default: 14 GB (a 7B model) on a disk with room asks nothing;
    more than half the free space needs --yes."""
    import shutil

    from induction.store.io import check_output_size

    free = shutil.disk_usage(tmp_path).free
    check_output_size(tmp_path / "x", int(free * 0.4), confirmed=False)
    with pytest.raises(InputError, match="more than half .* --yes"):
        check_output_size(tmp_path / "x", int(free * 0.6), confirmed=False)
    check_output_size(tmp_path / "x", int(free * 0.6), confirmed=True)
