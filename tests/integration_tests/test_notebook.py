"""The notebooks run offline top to bottom, and their committed outputs are not stale.

All notebooks are executed once (side by side, in a temporary copy); each test then checks one
notebook: no errors, what it must show, and that the fresh outputs match the committed ones
modulo times, dates, ids, memory addresses and image bytes (``tests/notebooks.py``). When they
differ, run ``make notebooks`` and commit the result.
"""

from __future__ import annotations

import difflib
import pprint
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

from tests.notebooks import NOTEBOOKS, execute_all, fingerprint  # noqa: E402

NAMES = [path.name for path in NOTEBOOKS]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every notebook, executed once from a temporary copy."""
    work = tmp_path_factory.mktemp("notebooks")
    copies = [Path(shutil.copy(path, work / path.name)) for path in NOTEBOOKS]
    notebooks = [nbformat.read(path, as_version=4) for path in copies]
    execute_all(notebooks, work)
    return dict(zip(NAMES, notebooks, strict=True))


def outputs(nb: Any) -> list[dict[str, Any]]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def texts(nb: Any) -> str:
    return "\n".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs(nb)
    )


def html_outputs(nb: Any) -> list[str]:
    return [o["data"]["text/html"] for o in outputs(nb) if "text/html" in o.get("data", {})]


def images(nb: Any) -> list[dict[str, Any]]:
    return [o for o in outputs(nb) if "image/png" in o.get("data", {})]


def test_there_are_three_notebooks() -> None:
    assert NAMES == [
        "01-quickstart.ipynb",
        "02-agent-and-recall.ipynb",
        "03-inspect-a-database.ipynb",
    ]


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_without_errors(fresh: dict[str, Any], name: str) -> None:
    errors = [o for o in outputs(fresh[name]) if o.get("output_type") == "error"]
    assert not errors, errors
    stderr = [o for o in outputs(fresh[name]) if o.get("name") == "stderr"]
    assert not stderr, f"{name} writes warnings: {stderr}"


@pytest.mark.parametrize("name", NAMES)
def test_committed_outputs_match_a_fresh_run(fresh: dict[str, Any], name: str) -> None:
    committed = nbformat.read(NOTEBOOKS[NAMES.index(name)], as_version=4)
    assert any(outputs(committed)), f"{name} is committed without outputs: run `make notebooks`"
    want, got = fingerprint(committed), fingerprint(fresh[name])
    if want != got:
        diff = difflib.unified_diff(
            pprint.pformat(want, width=100).splitlines(),
            pprint.pformat(got, width=100).splitlines(),
            "committed",
            "fresh",
            lineterm="",
        )
        pytest.fail(f"{name} outputs are stale: run `make notebooks`\n" + "\n".join(diff))


def test_quickstart_shows_a_plot_and_the_memory(fresh: dict[str, Any]) -> None:
    nb = fresh["01-quickstart.ipynb"]
    assert "generation" in texts(nb) and "messages observed" in texts(nb)
    assert len(images(nb)) == 1, "the windows plot is shown once"
    html = html_outputs(nb)
    assert html, "the snapshot shows itself as HTML (ThreadSnapshot._repr_html_)"
    assert "langchain-om-memory" in html[0] and "observations" in html[0]
    assert "🔴" in html[0]


def test_agent_notebook_streams_events_and_recalls(fresh: dict[str, Any]) -> None:
    text = texts(fresh["02-agent-and-recall.ipynb"])
    for event in ("data-om-status", "data-om-observation-start", "data-om-observation-end"):
        assert f"[{event}]" in text
    assert "the address is in memory: False" in text  # the Observer kept only user sentences
    assert "agent calls recall('messages')" in text
    assert "I had written: Here is one that fits: ES-04" in text and "Rua da Lapa 17" in text
    page_lines = [
        line for line in text.splitlines() if re.match(r"human \d\d:\d\d  Hi, I'm Maya", line)
    ]
    assert page_lines, "the recall page lists the archived messages with their times"


def test_database_notebook_reads_the_file_back(fresh: dict[str, Any]) -> None:
    nb = fresh["03-inspect-a-database.ipynb"]
    text = texts(nb)
    assert "memory.db written" in text
    assert "36 model calls" in text
    assert len(images(nb)) == 1, "the windows over time, from the checkpoints"
    html = html_outputs(nb)
    assert html and "langchain-om-memory" in html[0] and "reflection of" in html[0]
    assert "generation 1:" in text and "condensed observation" in text
    assert "archived messages; the first and the last:" in text
    assert "human: I'm Maya and I'm moving from Berlin to Lisbon in March." in text
