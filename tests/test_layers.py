"""The packages import one way (docs/design.md): a module imports only units on lower floors
or its own unit, never a unit beside it or above it, and no two modules import each other,
directly or around a loop. Only the command-line roof names every floor. Checked on the
source: lazy imports, ``TYPE_CHECKING`` imports and ``importlib`` strings included."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("induction", "lineage", "ablation")
#: Units and their floors. A module belongs to the unit of the longest matching prefix, so
#: ``induction.circuits`` is its own floor-7 unit inside the ``induction`` distribution name.
#: Floors 1-5 are the ground floor (docs/design.md): the shared vocabulary (errors, heads,
#: configs, types, statistics, progress), files and caches, models, figures, the job
#: signature, then the scores.
FLOORS = {
    "induction": 1,
    "induction.store": 2,
    "induction.models": 3,
    "induction.figures": 3,
    "induction.jobs": 4,
    "induction.scores": 5,
    "lineage": 6,
    "ablation": 6,
    "induction.training": 7,
    "induction.circuits": 7,
    "induction.dynamics": 8,
    "induction.replication": 8,
    "induction.commands": 9,
}
#: The ground floor: the units below the first job package.
GROUND = 5
#: ``induction/__init__.py``, the public API's facade, sits on top of the ground floor.
FACADE = "induction (facade)"
FLOORS[FACADE] = GROUND + 0.5
ROOF = "induction.commands"
_MODULE_STRING = re.compile(r"""["']((?:%s)(?:\.\w+)*)["']""" % "|".join(PACKAGES))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _source_modules() -> dict[str, Path]:
    return {
        _module_name(p): p
        for package in PACKAGES
        for p in sorted((ROOT / package).rglob("*.py"))
        if "zoo/models/" not in p.relative_to(ROOT).as_posix()
    }


def _unit(module: str) -> str:
    if module == "induction":  # the package's facade (its __init__) re-exports every floor's API
        return FACADE
    return max((u for u in FLOORS if module == u or module.startswith(u + ".")), key=len)


def _imports(path: Path, module: str = "", known: frozenset[str] = frozenset()) -> list[str]:
    """Every module ``path`` imports, absolute names, relative imports resolved against
    ``module``; ``from package import name`` counts as ``package.name`` when that is one of
    the ``known`` modules, else as ``package``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            out += [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
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


def import_graph() -> nx.DiGraph:
    """Module -> module edges between the project's own modules."""
    modules = _source_modules()
    known = frozenset(modules)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        targets = {name for name in _imports(path, module, known) if name in modules}
        graph.add_edges_from((module, t) for t in targets if t != module)
    return graph


@pytest.mark.parametrize("unit", sorted(FLOORS))
def test_imports_go_down_only(unit):
    graph = import_graph()
    wrong = [
        f"{module} imports {target}"
        for module, target in graph.edges
        if _unit(module) == unit and _unit(target) != unit and FLOORS[_unit(target)] >= FLOORS[unit]
    ]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles_even_inside_a_package():
    cycles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_the_ground_floor_names_no_upper_unit_even_as_a_string():
    """No importlib strings, lazy-import tables or entry-point names pointing upward from the
    ground floor."""
    wrong = []
    for module, path in _source_modules().items():
        if FLOORS[_unit(module)] > GROUND:
            continue
        for match in _MODULE_STRING.finditer(path.read_text(encoding="utf-8")):
            name = match.group(1)
            if "." in name and FLOORS[_unit(name)] > FLOORS[_unit(module)]:
                wrong.append(f"{module} names {name}")
    assert not wrong, "\n".join(wrong)


def test_the_checks_would_catch_an_upward_import_and_a_cycle(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from lineage.log import DuplicationLog\n")
    good = tmp_path / "g.py"
    good.write_text("import importlib\nimportlib.import_module('ablation.run')\n")
    relative = tmp_path / "r.py"
    relative.write_text("from .x import y\nfrom . import z\n")
    assert "lineage.log" in _imports(bad)
    assert _imports(good) == ["importlib", "ablation.run"]
    known = frozenset({"induction.circuits.z"})
    assert _imports(relative, "induction.circuits.finder", known) == [
        "induction.circuits.x",
        "induction.circuits.z",
    ]
    assert _unit("induction.circuits.fv") == "induction.circuits"
    assert _unit("induction.scores.scan") == "induction.scores"
    assert _unit("induction.heads") == "induction"
    loop = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a")])
    assert [len(c) for c in nx.strongly_connected_components(loop)] == [3]


def test_the_ground_floor_keeps_at_most_eight_top_level_modules():
    """Issue #43: the ground floor is grouped by what it does (models, scores, store, figures,
    stats, zoo); only the shared vocabulary stays at the top of the package."""
    top = sorted(p.stem for p in (ROOT / "induction").glob("*.py") if p.stem != "__init__")
    assert len(top) <= 8, top
    groups = {p.name for p in (ROOT / "induction").iterdir() if (p / "__init__.py").is_file()}
    assert {"models", "scores", "store", "figures", "stats", "zoo"} <= groups
