"""Where zoo names resolve: the package, the repository's data folder, $INDUCTION_ZOO, then
the zoo's hub repository (offline: one line that says how to get the model)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from induction.errors import ModelLoadError
from induction.models import registry


def _a_small_model(dst):
    """A copy of a shipped model's top-level files (no checkpoint series) under ``dst``."""
    src = registry.zoo_path("dense8c-s1")
    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file():
            shutil.copy2(f, dst / f.name)
    return dst


def test_a_model_in_an_induction_zoo_folder_resolves_after_the_package(tmp_path, monkeypatch):
    extra = tmp_path / "zoo"
    _a_small_model(extra / "dense8c-s99")
    _a_small_model(extra / "grown8c-s0")  # shadowed: the package's own copy comes first
    monkeypatch.setenv(registry.ZOO_ENV, str(tmp_path / "missing") + ":" + str(extra))
    assert registry.zoo_path("dense8c-s99") == extra / "dense8c-s99"
    assert "dense8c-s99" in registry.zoo_models()
    assert registry.zoo_path("grown8c-s0") == registry.MODELS_DIR / "grown8c-s0"
    assert extra in registry.zoo_dirs() and tmp_path / "missing" not in registry.zoo_dirs()


def test_a_zoo_name_found_nowhere_fails_offline_in_one_line_that_says_how(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv(registry.ZOO_HUB_ENV, "nobody/no-such-zoo")
    with pytest.raises(ModelLoadError) as err:
        registry.zoo_path("dense8c-s98")
    msg = str(err.value)
    assert "\n" not in msg and "$INDUCTION_ZOO" in msg
    assert "induction zoo train dense8c --seed 98" in msg and "nobody/no-such-zoo" in msg


def test_an_unknown_family_is_refused_without_a_hub_call():
    with pytest.raises(ModelLoadError, match="unknown zoo model 'grown8c-x'"):
        registry.zoo_path("grown8c-x")


def test_the_cli_names_the_way_to_get_a_missing_zoo_model(tmp_path):
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    env["PYTHONPATH"] = str(registry.MODELS_DIR.parents[2])
    run = subprocess.run(
        [sys.executable, "-m", "induction.commands.main", "info", "looped8c-s97"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr and "INDUCTION_ZOO" in run.stderr
