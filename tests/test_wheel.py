"""What the wheel ships: the second zoo (the replication's, the default model's), not the
record zoos."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ("dense-s", "grown-s", "grown12-s", "looped-s", "dense12-s", "lidas12-s")
RECORDS += ("dense8-s", "lidas8-s", "looped8-s", "looped8p-s")  # zoo2


def test_the_wheel_leaves_the_first_zoo_out_and_stays_small(tmp_path):
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
    assert "grown8c-s0" in models and "dense8c-s0" in models
    assert not [m for m in models if m.startswith(RECORDS)]
    assert wheel.stat().st_size < 150e6
