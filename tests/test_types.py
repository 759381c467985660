"""The ground floor type-checks: pyright's basic rules (``[tool.basedpyright]`` in
pyproject.toml) report no error on ``induction/`` below the upper units."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_ground_floor_type_checks():
    exe = shutil.which("basedpyright", path=str(Path(sys.executable).parent)) or shutil.which(
        "basedpyright"
    )
    assert exe, "basedpyright is missing: pip install -e '.[dev]'"
    run = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=900)
    errors = [line for line in run.stdout.splitlines() if " - error: " in line]
    assert run.returncode == 0 and not errors, "\n".join(errors) or run.stdout[-2000:]
