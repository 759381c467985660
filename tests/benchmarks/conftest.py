"""Benchmark scripts are files, not modules of the package: tests load them by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="session")
def load_benchmark():
    """``load_benchmark("replication")`` -> ``benchmarks/replication.py`` as a module (kept in
    ``sys.modules``, where dataclasses look their module up)."""

    def load(stem: str):
        spec = importlib.util.spec_from_file_location(
            f"{stem}_under_test", BENCHMARKS / f"{stem}.py"
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module

    return load
