"""The per-family pages (docs/algorithms/*.md) and docs/design.md cite code as `path: Name, Other.method`: every
cited file exists and defines every cited name, so a rename cannot leave the pages pointing at nothing."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs" / "algorithms").glob("*.md")) + [ROOT / "docs" / "design.md"]
CITATION = re.compile(r"`((?:omkl_dist|storage|pipelines|cluster|tests|benchmarks)/[\w/]+\.py): ([\w., ]+)`")


@cache
def defined_names(path: Path) -> frozenset[str]:
    """Top-level functions, classes and assigned names of a module, and ``Class.member`` for class bodies."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                for member in node.body:
                    if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        names.add(f"{node.name}.{member.name}")
                    elif isinstance(member, (ast.Assign, ast.AnnAssign)):
                        targets = member.targets if isinstance(member, ast.Assign) else [member.target]
                        names.update(f"{node.name}.{t.id}" for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                elts = target.elts if isinstance(target, ast.Tuple) else [target]
                names.update(t.id for t in elts if isinstance(t, ast.Name))
    return frozenset(names)


def citations():
    for page in PAGES:
        for path, names in CITATION.findall(page.read_text(encoding="utf-8")):
            for name in (n.strip() for n in names.split(",")):
                if name:
                    yield page.relative_to(ROOT).as_posix(), path, name


def test_pages_cite_code():
    assert len(list(citations())) > 50


@pytest.mark.parametrize("page", [p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_cited_name_exists(page):
    missing = []
    for where, path, name in citations():
        if where != page:
            continue
        file = ROOT / path
        if not file.exists():
            missing.append(f"{path} (no such file)")
        elif name not in defined_names(file):
            missing.append(f"{path}: {name}")
    assert missing == []
