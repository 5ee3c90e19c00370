"""The README's offline eval table is current: the command it shows, run now, gives the
committed ``benchmarks/results/eval-scripted/report.json`` (machine seconds aside)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from tests.helpers import ROOT

BENCH = ROOT / "benchmarks"
COMMITTED = BENCH / "results" / "eval-scripted" / "report.json"


def _without_seconds(report: dict[str, Any]) -> dict[str, Any]:
    for system in report["systems"].values():
        system["memory"].pop("seconds")
    return report


def test_the_offline_eval_gives_the_committed_report(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("readme_tables", BENCH / "readme_tables.py")
    assert spec is not None and spec.loader is not None
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    results = tmp_path / "results"
    (results / "eval-scripted").mkdir(parents=True)
    tables.rerun_eval(results)  # the README's command, into results/eval-scripted
    fresh = json.loads((results / "eval-scripted" / "report.json").read_text(encoding="utf-8"))
    committed = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert _without_seconds(fresh) == _without_seconds(committed), (
        "the offline eval now gives other figures: run python benchmarks/readme_tables.py "
        "--rerun-eval and commit benchmarks/results/eval-scripted and README.md"
    )
    assert "eval --format locomo --data examples/data/eval/locomo_synthetic.json --scripted" in (
        ROOT / "README.md"
    ).read_text(encoding="utf-8")
