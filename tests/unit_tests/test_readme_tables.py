"""The README's result tables are exactly what ``benchmarks/readme_tables.py`` writes from the
committed files in ``benchmarks/results/``: a result changed without the README fails here."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import ROOT

README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "results"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


tables = _load("readme_tables")


def test_the_readme_tables_match_the_result_files() -> None:
    text = README.read_text(encoding="utf-8")
    assert tables.rewrite(text) == text, (
        "README.md's tables differ from benchmarks/results: run python benchmarks/readme_tables.py"
    )
    for name in tables.TABLES:  # every table is marked, once
        assert text.count(f"<!-- readme-table: {name} ") == 1
        assert text.count(f"<!-- /readme-table: {name} -->") == 1


def test_a_changed_result_file_changes_the_readme(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    start = json.loads((results / "compare.json").read_text(encoding="utf-8"))
    start["import langchain_om"] = start["import langchain.agents"] * 1.5
    (results / "compare.json").write_text(json.dumps(start), encoding="utf-8")
    report = json.loads((results / "eval-scripted" / "report.json").read_text(encoding="utf-8"))
    report["systems"]["om"]["overall"]["score"] = 0.9876
    (results / "eval-scripted" / "report.json").write_text(json.dumps(report), encoding="utf-8")
    text = README.read_text(encoding="utf-8")
    changed = tables.rewrite(text, results)
    assert changed != text
    assert "| `import langchain_om` ≤ 1.2× `import langchain.agents` | 1.50× (" in changed
    assert "| **no** |" in changed  # a missed target says so
    assert "| om | 0.988 |" in changed


def test_missing_markers_and_files_are_errors(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    cut = text.replace("<!-- /readme-table: workers -->", "")
    with pytest.raises(tables.ResultsError, match="no markers for workers"):
        tables.rewrite(cut)
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    (results / "threads.json").unlink()
    with pytest.raises(tables.ResultsError, match="threads.json is missing"):
        tables.rewrite(text, results)


def test_the_table_reader_reads_what_the_benchmarks_write() -> None:
    common = _load("_common")
    lines = common.table(
        ["store", "ms", "vs"], [["InMemory", "1.50", "1.08×"], ["SQLite", "2", "x"]]
    )
    rows = tables.markdown_tables("intro\n\n" + "\n".join(lines) + "\n\nafter")
    assert rows == [
        [
            {"store": "InMemory", "ms": "1.50", "vs": "1.08×"},
            {"store": "SQLite", "ms": "2", "vs": "x"},
        ]
    ]
