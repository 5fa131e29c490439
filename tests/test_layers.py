"""The layer table of docs/design.md against the tree: every folder and top-level module is listed, and
every import (module level or inside a function) goes to the importer's own layer or a lower one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# repository folder -> import name (pyproject's package-dir table; benchmarks/ is not installed)
FOLDERS = {
    "omkl_dist": "omkl_dist",
    "storage": "omkl_dist.storage",
    "pipelines": "omkl_dist.pipelines",
    "cluster": "omkl_dist.cluster",
    "benchmarks": "benchmarks",
}


def layer_table() -> dict[str, int]:
    """``unit -> layer`` from the table under "## Layers": a unit is ``omkl_dist.<name>`` for a folder or
    module of the package, else the import name of a repository folder."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    table = {}
    for layer, where in re.findall(r"^\| (\d+) \| `([^`]+)`", section, flags=re.M):
        path = where.rstrip("/").removesuffix(".py")
        unit = FOLDERS[path] if path in FOLDERS else path.replace("/", ".")
        table[unit] = int(layer)
    return table


def unit_of(module: str) -> str | None:
    """The table unit a dotted module name belongs to (None: outside the project)."""
    parts = module.split(".")
    if parts[0] == "benchmarks":
        return "benchmarks"
    if parts[0] != "omkl_dist":
        return None
    if len(parts) == 1:
        return "omkl_dist"
    return ".".join(parts[:2])


def modules():
    """``(dotted name, path)`` of every Python file of the tree."""
    for folder, name in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            yield ".".join([name, *parts]), path


def imported(module: str, path: Path):
    """Every module name ``path`` imports, relative imports resolved."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module] if node.module else base)
            yield target
            if node.module is None or node.level:  # `from . import x`: x may be a module
                yield from (f"{target}.{alias.name}" for alias in node.names)


def test_table_lists_every_folder_and_module():
    table = layer_table()
    units = {unit_of(m) for m, _ in modules()} - {"omkl_dist"}
    units |= {
        f"omkl_dist.{p.name}" for p in (ROOT / "omkl_dist").iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }
    assert units - set(table) == set(), "folders/modules missing from the layer table of docs/design.md"
    assert set(table) - units - {"omkl_dist"} == set(), "the layer table names folders/modules that do not exist"


def test_imports_go_to_the_same_or_a_lower_layer():
    table = layer_table()
    table.setdefault("omkl_dist", max(table[u] for u in ("omkl_dist.algorithms", "omkl_dist.persistence")))
    upward = []
    for module, path in modules():
        own = table[unit_of(module) if unit_of(module) != "omkl_dist" else "omkl_dist"]
        for target in imported(module, path):
            unit = unit_of(target)
            if unit is None or unit not in table:
                continue  # third-party, or a name inside a module (`from . import x` of a function)
            if table[unit] > own:
                upward.append(f"{path.relative_to(ROOT)} (layer {own}) imports {target} (layer {table[unit]})")
    assert upward == []


def test_no_module_imports_the_benchmark_entry_point():
    """``benchmarks/bench.py`` runs every part; a part importing it back closed an import circle (their shared
    constants and helpers live in ``benchmarks/common.py``)."""
    importers = [str(path.relative_to(ROOT)) for m, path in modules() if "benchmarks.bench" in set(imported(m, path))]
    assert importers == []


def test_every_package_folder_is_in_the_wheel():
    """pyproject.toml lists the packages by hand (see docs/design.md, "One import namespace"): a new
    folder left out of the list is missing from the wheel while the editable install still finds it."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    installed_as = {"storage": "omkl_dist.storage", "pipelines": "omkl_dist.pipelines", "cluster": "omkl_dist.cluster"}
    found = set()
    for top in ("omkl_dist", *installed_as):
        for init in (root / top).rglob("__init__.py"):
            parts = init.parent.relative_to(root).parts
            found.add(".".join((installed_as.get(parts[0], parts[0]), *parts[1:])))
    assert found - listed == set(), "add these packages to [tool.setuptools] packages in pyproject.toml"
