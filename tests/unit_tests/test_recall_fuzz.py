"""Whatever arguments the model writes, recall returns nothing of another resource (300 calls;
the 5 000-call run is an integration test)."""

from __future__ import annotations

from tests.recall_fuzz import run_fuzz


def test_recall_fuzz_300_calls_leaks_nothing() -> None:
    report = run_fuzz(300, seed=1)
    assert report.leaks == []
    assert report.total >= 300 and set(report.calls) == {"tool_call", "args", "lcel", "tool_node"}
    assert report.items > 100  # the fuzz reads real data, it is not all errors


def test_recall_fuzz_in_resource_scope_leaks_nothing() -> None:
    report = run_fuzz(200, seed=2, scope="resource")
    assert report.leaks == []
    assert report.items > 50
