"""The benchmark scripts run end to end in their smallest modes and write well-formed results.

One ``report.py --smoke`` run (module fixture) drives ``turns.py --smoke``, ``tokens.py --quick``,
``recall.py --quick``, ``compare.py --smoke`` and ``bookkeeping.py --smoke``; the tests check the
shape of what they wrote, never the timings.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware

from tests.helpers import ROOT

BENCH = ROOT / "benchmarks"
SETUPS = {"plain", "om", "summarization", "langmem"}
POINTS = [20, 40]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    done = subprocess.run(
        [sys.executable, str(BENCH / "report.py"), "--smoke", "--out-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def turns(results: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((results / "turns.json").read_text(encoding="utf-8"))
    return data


def test_report_writes_readme_and_plot(results: Path) -> None:
    readme = (results / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# Benchmarks")
    for heading in ("## Targets", "benchmarks/turns.py", "benchmarks/tokens.py", "recall.py"):
        assert heading in readme
    assert "![Per-turn time against turns](turns.png)" in readme
    assert (results / "turns.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    targets = readme.split("## Targets", 1)[1].split("\n\n")[1].splitlines()
    assert targets[0].replace(" ", "") == "|target|result|status|"
    statuses = [row.strip("|").split("|")[-1].strip() for row in targets[2:]]
    assert len(statuses) >= 3  # bookkeeping, growth, checkpoint (+ counting from tokens.py)
    assert set(statuses) <= {"met", "**not met**"}


def test_turns_measures_every_setup_at_every_point(turns: dict[str, Any]) -> None:
    assert turns["points"] == POINTS
    assert turns["meta"]["mode"] == "smoke"
    ran = set(turns["series"])
    assert ran | set(turns["missing"]) == SETUPS
    assert {"plain", "om", "summarization"} <= ran
    for name, series in turns["series"].items():
        for point in POINTS:
            cell = series["at"][str(point)]
            assert cell["turn_ms"] > 0, (name, point)
            assert cell["checkpoint_bytes"] > 0, (name, point)
            assert cell["sqlite_bytes"] > 0, (name, point)
            if name == "plain":
                assert cell["hooks_ms"] == 0
            else:
                assert cell["hooks_ms"] > 0, (name, point)
        assert series["rss_peak_mb"] > 10
        assert series["turn_ms"], "no plot data"


def test_plain_history_grows_and_memory_bounds_it(turns: dict[str, Any]) -> None:
    series = turns["series"]
    # the plain agent's state is exactly the whole conversation: two messages a turn
    assert [series["plain"]["at"][str(p)]["messages"] for p in POINTS] == [2 * p for p in POINTS]
    last = str(POINTS[-1])
    for name in ("om", "summarization"):
        assert series[name]["at"][last]["messages"] < 2 * POINTS[-1], name
        assert (
            series[name]["at"][last]["checkpoint_bytes"]
            < series["plain"]["at"][last]["checkpoint_bytes"]
        )
    plain_growth = (
        series["plain"]["at"][last]["checkpoint_bytes"]
        / series["plain"]["at"][str(POINTS[0])]["checkpoint_bytes"]
    )
    assert 1.6 < plain_growth < 2.4  # linear: twice the turns, about twice the bytes


def test_turns_markdown_has_each_table(results: Path, turns: dict[str, Any]) -> None:
    text = (results / "turns.md").read_text(encoding="utf-8")
    for title in (
        "### Memory bookkeeping per turn",
        "### Whole turn",
        "### Checkpoint",
        "### SQLite file after N turns",
        "### Targets",
    ):
        assert title in text
    for label in turns["labels"].values():
        assert label in text
    header = next(ln for ln in text.splitlines() if ln.startswith("| setup") and "growth" in ln)
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "setup",
        "20",
        "40",
        "growth 20→40",
        "p95 at 40",
        "max at 40",
    ]


def test_tokens_and_recall_outputs(results: Path) -> None:
    tokens = (results / "tokens.md").read_text(encoding="utf-8")
    assert "cached vs cold" in tokens
    assert sum(1 for ln in tokens.splitlines() if ln.startswith("| om ")) >= 3
    recall = (results / "recall.txt").read_text(encoding="utf-8")
    assert "page read median" in recall and "ratio" in recall


def test_time_middleware_excludes_the_model_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    _common = importlib.import_module("_common")  # benchmarks/_common.py, on sys.path above

    now = [0.0]  # a fake clock: each piece of "work" advances it by a known amount
    monkeypatch.setattr(_common, "CLOCK", lambda: now[0])

    class Probe(AgentMiddleware[Any, Any]):
        def before_model(self, state: Any, runtime: Any) -> None:
            now[0] += 2.0

        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            now[0] += 1.0
            response = handler(request)
            now[0] += 0.5
            return response

    def model_call(request: Any) -> str:
        now[0] += 100.0
        return "response"

    timer = _common.HookTimer()
    probe = _common.time_middleware(Probe(), timer)
    probe.before_model({}, None)
    assert probe.wrap_model_call("request", model_call) == "response"
    assert timer.by_hook == {"before_model": 2.0, "wrap_model_call": 1.5}
    assert (timer.calls, timer.take(), timer.take()) == (2, 3.5, 0.0)


def test_compare_reports_every_setup_store_and_target(results: Path) -> None:
    text = (results / "compare.md").read_text(encoding="utf-8")
    for label in (
        "create_agent, no memory",
        "langchain-om",
        "SummarizationMiddleware",
        "floor middleware",
        "InMemorySaver",
        "SqliteSaver",
        "first turn",
        "`import langchain_om`",
        "background CPU per turn",
    ):
        assert label in text, label
    rows = [ln for ln in text.splitlines() if ln.startswith("| whole turn")]
    assert len(rows) == 2 * len(POINTS)  # per store and point
    assert all(ln.rstrip(" |").endswith(("met", "**not met**")) for ln in rows)
    whole = [ln for ln in text.splitlines() if ln.startswith("| whole cost (background inside)")]
    assert len(whole) == 2 * len(POINTS)  # the whole-cost view beside today's, per store and point
    assert "whole vs summarizer" in text
    means = [ln for ln in text.splitlines() if ln.startswith("| … mean over every turn")]
    assert len(means) == 2 * len(POINTS)  # the mean beside the median, per store and point
    assert "whole mean ms (vs summarizer)" in text
    assert "## Beside the alternatives" in (results / "README.md").read_text(encoding="utf-8")


def test_bookkeeping_splits_memory_work_into_pieces_for_both_setups(results: Path) -> None:
    data = json.loads((results / "bookkeeping.json").read_text(encoding="utf-8"))
    assert data["points"] == POINTS and data["meta"]["mode"] == "smoke"
    pieces = data["pieces"]
    assert {"count", "gate", "render", "record write", "store reads"} <= set(pieces)
    for setup in ("om", "floor"):
        for point in POINTS:
            cells = data["series"][setup][str(point)]
            assert set(cells) == {*pieces, "total", "whole turn"}
            assert all(c["median_ms"] >= 0 and c["mean_ms"] >= 0 for c in cells.values())
            # the pieces are parts of the hooks, the hooks part of the turn
            assert cells["total"]["mean_ms"] <= cells["whole turn"]["mean_ms"]
            summed = sum(cells[p]["mean_ms"] for p in pieces)
            assert abs(summed - cells["total"]["mean_ms"]) < 1e-6 * max(1.0, summed)
    om = data["series"]["om"][str(POINTS[-1])]
    assert om["count"]["mean_ms"] > 0 and om["gate"]["mean_ms"] > 0  # memory did count, gate
    text = (results / "bookkeeping.md").read_text(encoding="utf-8")
    assert "Target: memory's own work" in text
    report = (results / "README.md").read_text(encoding="utf-8")
    assert "## Memory's own work, piece by piece" in report


def test_worker_benchmark_runs_and_checks_its_invariants() -> None:
    """``workers.py --quick`` on 1 and 2 workers: a table row per setting, invariants ok."""
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "workers.py"),
            "--quick",
            "--workers",
            "1,2",
            "--threads",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [
        ln
        for ln in done.stdout.splitlines()
        if ln.startswith("| sqlite") or ln.startswith("| postgres")
    ]
    assert {r.split("|")[1].strip() for r in rows} >= {"sqlite"}
    assert all(r.rstrip(" |").endswith("ok") for r in rows), done.stdout


def test_resource_batches_benchmark_writes_its_table(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "resource_batches.py"),
            "--delay",
            "0.05",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = (tmp_path / "resource_batches.md").read_text(encoding="utf-8")
    assert "| sync (worker threads) | 3 |" in table and "| async (tasks) | 3 |" in table


def test_threads_benchmark_reports_every_store_and_size(tmp_path: Path) -> None:
    out = tmp_path / "threads.md"
    done = subprocess.run(
        [sys.executable, str(BENCH / "threads.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    stores = ["InMemoryStore", "SQLite"]
    if "PostgreSQL skipped" not in done.stdout:
        stores.append("PostgreSQL")
    elif os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is required in CI: {done.stdout[-500:]}")
    assert [(r["store"], r["threads"]) for r in rows] == [
        (store, size) for store in stores for size in (10, 50)
    ]
    assert all(r["turn_ms"] > 0 and r["wall_ms"] > 0 and r["items_per_thread"] > 0 for r in rows)
    assert out.read_text(encoding="utf-8").startswith("# Per-turn cost against the number")
