"""The packages import one way (docs/design.md): a module imports only packages on lower
floors, never a package beside it or above it; only the command-line roof
(``induction/cli.py``) names every floor. Checked on the source, lazy imports included."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLOORS = {"induction": 1, "lineage": 2, "ablation": 2, "zoo": 3, "circuits": 3, "dynamics": 3}
ROOF = {ROOT / "induction" / "cli.py"}
_MODULE_STRING = re.compile(r"""["']((?:%s)(?:\.\w+)*)["']""" % "|".join(FLOORS))


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif (  # importlib.import_module("pkg.mod") and friends: imports by string
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append(node.args[0].value)
    return out


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py") if p not in ROOF)


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_imports_go_down_only(package):
    floor = FLOORS[package]
    wrong = []
    for path in _modules(package):
        for module in _imports(path):
            top = module.split(".")[0]
            if top in FLOORS and top != package and FLOORS[top] >= floor:
                wrong.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not wrong, "\n".join(wrong)


def test_the_ground_floor_names_no_upper_package_even_as_a_string():
    """No importlib strings, lazy-import tables or entry-point names pointing upward from
    ``induction/`` outside the command-line roof."""
    wrong = []
    for path in _modules("induction"):
        for match in _MODULE_STRING.finditer(path.read_text(encoding="utf-8")):
            top = match.group(1).split(".")[0]
            if top != "induction" and "." in match.group(1):
                wrong.append(f"{path.relative_to(ROOT)} names {match.group(1)}")
    assert not wrong, "\n".join(wrong)


def test_the_check_would_catch_an_upward_import(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from lineage.log import DuplicationLog\n")
    good = tmp_path / "g.py"
    good.write_text("import importlib\nimportlib.import_module('ablation.run')\n")
    assert _imports(bad) == ["lineage.log"]
    assert _imports(good) == ["importlib", "ablation.run"]
