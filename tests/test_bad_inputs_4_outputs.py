"""Bad inputs, round 4, the output and store half (#44, ../shared/bad-inputs-4.tsv): every
result refuses to save over what it was computed from, stores are sealed and keyed on whole
packages, score tables are validated whole, ``fv`` is a score in every command, and
``build_zoo`` claims its folders. Tests carry the case ids of the table's ``breaks`` rows."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from induction.errors import InputError

REPO = Path(__file__).resolve().parents[1]


def _snapshot(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root``."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("INDUCTION_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _cli(*args: str):
    from induction.commands.main import app

    return CliRunner().invoke(app, list(args))


# --------------------------------------------------------------------------- output guard


def _public_writers() -> list[tuple[str, type]]:
    """Every class of induction/, lineage/ and ablation/ that defines a public ``save``."""
    found = []
    for package in ("induction", "lineage", "ablation"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if ".zoo.models" in info.name:
                continue
            module = importlib.import_module(info.name)
            for name, cls in vars(module).items():
                if (
                    inspect.isclass(cls)
                    and cls.__module__ == module.__name__
                    and not name.startswith("_")
                    and "save" in vars(cls)
                    and not getattr(cls, "_is_protocol", False)
                ):
                    found.append((f"{module.__name__}.{name}", cls))
    return found


def test_every_public_save_and_plot_goes_through_the_output_guard():
    """#44 item 1: no public ``save`` (nor a ``plot`` that writes a path) can skip the guard
    that refuses the result's inputs (``induction.io.guards_inputs``)."""
    writers = dict(_public_writers())
    assert {  # the enumeration finds the writers we know of (it can fail)
        "induction.scan.ScanResult",
        "induction.circuits.fv.FVResult",
        "induction.circuits.effects.EffectsResult",
        "induction.circuits.finder.CircuitResult",
        "lineage.api.TraceResult",
        "ablation.pipeline.AblationResult",
        "ablation.token_loss.TokenLossResult",
        "lineage.log.DuplicationLog",
    } <= set(writers)
    for name, cls in writers.items():
        assert getattr(cls.save, "guards_inputs", False), f"{name}.save skips the output guard"
        plot = vars(cls).get("plot")
        if plot is not None and "path" in inspect.signature(plot).parameters:
            assert getattr(plot, "guards_inputs", False), f"{name}.plot skips the output guard"


def _model_copy(tmp_path: Path, src: Path, name: str = "m") -> Path:
    dst = tmp_path / "in" / name
    shutil.copytree(src, dst)
    return dst


def _refuses_over_inputs(result, model: Path, tmp_path: Path, inside: str = "config.json"):
    before = _snapshot(model)
    for target, why in [(model / inside, "inside"), (model, "is an input")]:
        with pytest.raises(InputError, match=why) as e:
            result.save(target)
        assert "\n" not in str(e.value) and str(model) in str(e.value)
    assert _snapshot(model) == before
    out = tmp_path / "out" / "r.csv"
    result.save(out)
    assert out.is_file()


def test_api11_fv_result_refuses_the_model_config(tmp_path, tiny_llama_dir):
    from induction.circuits.fv import fv_scores

    model = _model_copy(tmp_path, tiny_llama_dir)
    result = fv_scores(str(model), n_prompts=2, shots=2, tasks=["fact_digit"])
    _refuses_over_inputs(result, model, tmp_path)


def test_api12_scan_result_refuses_the_model_config(tmp_path, tiny_llama_dir):
    from induction.scan import scan

    model = _model_copy(tmp_path, tiny_llama_dir)
    result = scan(str(model), batch=2, seeds=[0], seq_len=16, progress=False)
    _refuses_over_inputs(result, model, tmp_path)
    with pytest.raises(InputError, match="inside"):
        result.plot(path=model / "scan.html")


def test_api17_effects_result_refuses_the_model_config(tmp_path, tiny_llama_dir):
    from induction.circuits.effects import head_effects

    model = _model_copy(tmp_path, tiny_llama_dir)
    result = head_effects(str(model), batch=2, seq_len=16, atp=False)
    _refuses_over_inputs(result, model, tmp_path)


def test_api24_circuit_result_refuses_the_model_config(tmp_path, tiny_llama_dir):
    from induction.circuits.job import run

    model = _model_copy(tmp_path, tiny_llama_dir)
    result = run(str(model), batch=2, seq_len=16, top=1)
    _refuses_over_inputs(result, model, tmp_path)


def test_api16_trace_result_refuses_the_duplication_log(tmp_path, grown_dir):
    import lineage

    model = _model_copy(tmp_path, grown_dir, "g")
    result = lineage.trace(str(model), top=2)
    _refuses_over_inputs(result, model, tmp_path, inside="duplication_log.json")


def test_a_loaded_log_is_not_saved_back_over_its_file(tmp_path, grown_dir):
    from lineage.log import DuplicationLog

    model = _model_copy(tmp_path, grown_dir, "g")
    log = DuplicationLog.load(model)
    with pytest.raises(InputError, match="is an input"):
        log.save(model / "duplication_log.json")
    log.save(tmp_path / "copy.json")
    assert DuplicationLog.load(tmp_path / "copy.json") == log
