"""Execute every notebook in ``notebooks/`` top to bottom in FAST mode (nbclient).

The kernel is the interpreter running the tests: a kernelspec written to a temporary folder
points at ``sys.executable``, so a fresh CI venv needs only ``ipykernel`` and ``nbclient``
(both in ``[dev]``), not a registered ``python3`` kernel. ``INDUCTION_NOTEBOOK_FAST=1`` puts
every notebook on reduced settings (fewer prompts, items, controls and seeds).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL = "induction-notebook-test"
# Zoo models every notebook needs (the first seed; 04 one seed per family in FAST): 01, 02, 03
# and 05 the default model grown8rt (02 with the second zoo's grown8ce, looped8c and dense8c,
# 05 with dense8r and grown8r), 04 every round-4 arm, 06 the FV pair's grown8f.
NEEDED = {
    *("dense8r", "grown8rt", "grown8rte", "grown8r", "looped8r"),
    *("grown8ce", "dense8c", "looped8c", "grown8f"),
}


def test_notebooks_exist():
    names = [p.name for p in NOTEBOOKS]
    stems = ("01_detect", "02_lineage", "03_ablation", "04_replication", "05_dynamics", "06_fv")
    for stem in stems:
        assert any(n.startswith(stem) for n in names), names


@pytest.fixture(scope="module")
def kernel_manager_factory(tmp_path_factory):
    pytest.importorskip("ipykernel")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    folder = tmp_path_factory.mktemp("kernels")
    spec_dir = folder / KERNEL
    spec_dir.mkdir()
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "induction-workbench (tests)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    specs = KernelSpecManager(kernel_dirs=[str(folder)])

    def make():
        return KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)

    return make


def _zoo_families() -> set[str]:
    from induction import zoo_models

    return {name.split("-s")[0] for name in zoo_models()}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, kernel_manager_factory, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    missing = NEEDED - _zoo_families()
    if missing:
        pytest.skip(f"zoo models missing for {sorted(missing)} (induction zoo train)")

    monkeypatch.setenv("INDUCTION_NOTEBOOK_FAST", "1")
    monkeypatch.setenv("INDUCTION_NOTEBOOK_OUT", str(tmp_path))
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    # One intra-op thread: the zoo models are tiny, and on a 2-core machine shared with other
    # processes two OpenMP threads made each matmul ~50x slower (spin-waiting; measured here).
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        km=kernel_manager_factory(),
        timeout=300,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError with the cell's traceback on any error

    errors = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors
    text = "\n".join(
        str(out.get("text", "")) + json.dumps(out.get("data", {}).get("text/plain", ""))
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )
    assert "Traceback" not in text
    size = sum(len(json.dumps(cell.get("outputs", []))) for cell in nb.cells)
    assert size < 2_000_000, f"{path.name}: outputs of {size / 1e6:.1f} MB; keep them small"
    if os.environ.get("INDUCTION_NOTEBOOK_KEEP"):  # write the executed copy for inspection
        nbformat.write(nb, Path(os.environ["INDUCTION_NOTEBOOK_KEEP"]) / path.name)
