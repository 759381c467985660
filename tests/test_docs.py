"""The docs a user reads: every local link and anchor resolves, and every sentence that names
the default model names the registry's (a page that still calls a record model the default
fails here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from induction.models import registry

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
DEFAULT_PHRASE = re.compile(
    r"default (zoo )?model|when none is named|every command uses|no model is named", re.I
)
ZOO_NAME = re.compile(r"\b([a-z]+\d+[a-z]*(?:-s\d+)?)\b")
#: A clause about what was the default, or will be: history and rules, not the present.
NOT_NOW = re.compile(r"\b(was|were|stays|until|unless)\b", re.I)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        slug = _slug(line.lstrip("#"))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _links(page: Path):
    in_code = False
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
        if not in_code:
            for target in LINK.findall(line):
                yield number, target


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_local_link_and_anchor_resolves(page):
    broken = []
    for number, target in _links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{page.name}:{number}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{page.name}:{number}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_slug_follows_githubs_rule():
    assert _slug(" Detector benchmark (`python benchmarks/scan_speed.py`)") == (
        "detector-benchmark-python-benchmarksscan_speedpy"
    )


def _prose(page: Path) -> str:
    """A page's text; for a notebook, the source of its cells (prose and settings), not the
    outputs, which quote the models a cell ran on."""
    if page.suffix != ".ipynb":
        return page.read_text()
    cells = json.loads(page.read_text())["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells)


@pytest.mark.parametrize("page", PAGES + NOTEBOOKS, ids=lambda p: p.name)
def test_sentences_about_the_default_model_name_the_registrys(page):
    lines = _prose(page).splitlines()
    wrong = []
    for i, line in enumerate(lines):
        if not DEFAULT_PHRASE.search(line):
            continue
        window = line + " " + (lines[i + 1] if i + 1 < len(lines) else "")
        clauses = [
            c
            for c in re.split(r"(?<=[.;])\s+", window)
            if DEFAULT_PHRASE.search(c) and not NOT_NOW.search(c)
        ]
        for name in ZOO_NAME.findall(" ".join(clauses)):
            if registry.is_zoo_name(name) and registry.family_of(name) != registry.DEFAULT_MODEL:
                wrong.append(f"{page.name}:{i + 1}: names {name!r} near '{line.strip()[:80]}'")
    assert not wrong, "\n".join(wrong)


def test_the_default_model_check_can_fail(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("The default model (`lidas8-s0`) is used. Pilot: `grown8rt-s0`.\n")
    with pytest.raises(AssertionError, match="lidas8-s0"):
        test_sentences_about_the_default_model_name_the_registrys(page)
    notebook = tmp_path / "nb.ipynb"
    cell = {"cell_type": "code", "source": ['MODEL = "grown8c"  # the default model\n']}
    notebook.write_text(json.dumps({"cells": [cell]}))
    with pytest.raises(AssertionError, match="grown8c"):
        test_sentences_about_the_default_model_name_the_registrys(notebook)
    page.write_text("The default model is `grown8c-s0`. Pilot 1: `grown8rt-s0`.\n")
    with pytest.raises(AssertionError, match="grown8c-s0"):
        test_sentences_about_the_default_model_name_the_registrys(page)
    page.write_text(
        "The default model is `grown8rt-s0`. `grown8c-s0` was the default model until round 4;"
        " it stays `grown8c-s0` until a pilot passes.\n"
    )
    test_sentences_about_the_default_model_name_the_registrys(page)
