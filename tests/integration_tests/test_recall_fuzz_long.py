"""The recall fuzz at full size: 5 000 calls over the four calling patterns, 0 leaks."""

from __future__ import annotations

from tests.recall_fuzz import run_fuzz


def test_recall_fuzz_5000_calls_leaks_nothing() -> None:
    report = run_fuzz(5_000, seed=12)
    assert report.leaks == []
    assert report.total >= 5_000
    assert all(n >= 500 for n in report.calls.values()), report.calls
    assert report.items > 2_000
    print(f"recall fuzz: {report.total} calls {report.calls}, {report.items} items, 0 leaks")
