"""What the wheel ships: the default model with its checkpoint series and no other zoo model
(the rest of the zoo is data beside the package, docs/zoo.md), under 30 MB."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_ships_the_default_model_only_and_stays_under_30_mb(tmp_path):
    pytest.importorskip("setuptools")  # the build backend, used without isolation (offline)
    build = tmp_path / "src"
    # a copy of the tracked tree, so no build folder or egg-info of the checkout is reused
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src, dst = ROOT / name.decode(), build / name.decode()
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(src.read_bytes())
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["-w", str(tmp_path / "wh"), str(build)],
        check=True,
    )
    (wheel,) = (tmp_path / "wh").glob("*.whl")
    models = {
        n.split("/")[3]
        for n in zipfile.ZipFile(wheel).namelist()
        if n.startswith("induction/zoo/models/") and n.count("/") > 3
    }
    names = zipfile.ZipFile(wheel).namelist()
    assert models == {"grown8rt-s0"}
    assert any(n.startswith("induction/zoo/models/grown8rt-s0/checkpoints/") for n in names)
    assert "induction/zoo/models/grown8rt-s0/model.safetensors" in names
    assert wheel.stat().st_size < 30e6
