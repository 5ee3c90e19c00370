"""The package's layers hold: the pure core and the plan layer never reach the front doors,
and no modules of the package import each other in a cycle (type-only imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "langchain_om"
FRONT_DOORS = (
    "middleware",
    "graph",
    "history",
    "tools",
    "cli",
    "engine",
    # the subpackages the front doors are split into (every module in them counts)
    "_engine",
    "_config",
    "_storage",
    "_cli",
)
LOWER_LAYERS = ("langchain_om._core", "langchain_om._plans")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """Package modules ``name`` imports anywhere in its file (``TYPE_CHECKING`` included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from a import b`` depends on module a.b when it is one, else on module a.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        for target in targets:
            # "a.b.c" imports module a.b.c if it exists, else the closest enclosing module.
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("langchain_om") and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imported(name, path, known) for name, path in mods.items()}


def test_the_walker_sees_plain_relative_and_type_only_imports(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from langchain_om._core import tokens\n"
        "from . import dates\n"
        "if TYPE_CHECKING:\n"
        "    from langchain_om.engine import ObservationalMemory\n"
        "def f():\n"
        "    import langchain_om.tools\n",
        encoding="utf-8",
    )
    known = {"langchain_om._core.tokens", "langchain_om._core.dates", "langchain_om.engine"}
    known |= {"langchain_om.tools", "langchain_om._core", "langchain_om"}
    found = imported("langchain_om._core.probe", source, known)
    assert found == {
        "langchain_om._core.tokens",
        "langchain_om._core.dates",
        "langchain_om.engine",
        "langchain_om.tools",
    }


@pytest.mark.parametrize("layer", LOWER_LAYERS)
def test_lower_layers_never_import_the_front_doors(layer: str) -> None:
    doors = tuple(f"langchain_om.{door}" for door in FRONT_DOORS)
    edges = graph()
    members = [m for m in edges if m == layer or m.startswith(layer + ".")]
    assert members, f"no modules found in {layer}"
    bad = {
        m: sorted(t for t in edges[m] if t in doors or t.startswith(tuple(d + "." for d in doors)))
        for m in members
    }
    assert {m: t for m, t in bad.items() if t} == {}


def test_every_door_name_is_a_module_or_a_package() -> None:
    names = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if p.is_dir()
    }
    assert set(FRONT_DOORS) - names == set()


def test_the_top_level_holds_the_public_modules_and_a_few_folders() -> None:
    # Private code lives in folders named for its concern, never loose at the top level.
    private_files = sorted(p.name for p in PACKAGE.glob("_*.py") if p.name != "__init__.py")
    assert private_files == []
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == [
        "_cli",
        "_config",
        "_core",
        "_engine",
        "_plans",
        "_storage",
        "eval",
        "testing",
    ]


def test_the_core_imports_nothing_above_it() -> None:
    edges = graph()
    allowed_prefixes = ("langchain_om._core", "langchain_om.errors")
    bad = {
        m: sorted(t for t in targets if not t.startswith(allowed_prefixes) and t != "langchain_om")
        for m, targets in edges.items()
        if m.startswith("langchain_om._core")
    }
    assert {m: t for m, t in bad.items() if t} == {}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the import graph, or ``None`` (package ``__init__`` edges to children skipped)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target.startswith(node + "."):
                continue  # a package importing its own submodules is not a cycle
            if state.get(target) == 1:
                return stack[stack.index(target) :] + [target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_cycle_finder_finds_type_only_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles_in_the_package() -> None:
    edges = graph()
    # The top-level package re-exports the public API; its submodules never import it.
    importers = sorted(m for m, targets in edges.items() if "langchain_om" in targets)
    assert importers == []
    assert find_cycle(edges) is None


@pytest.mark.parametrize("folder", ["_core", "_plans", "_engine", "_config", "_storage", "_cli"])
def test_each_private_folder_maps_every_module(folder: str) -> None:
    doc = (PACKAGE / folder / "__init__.py").read_text(encoding="utf-8")
    listed = {line.strip().split(":")[0] for line in doc.splitlines() if line.startswith("    ")}
    present = {p.stem for p in (PACKAGE / folder).glob("*.py") if p.stem != "__init__"}
    assert present - listed == set()
