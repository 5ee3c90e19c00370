"""notebooks/01-quickstart.ipynb runs offline top to bottom and shows a plot and the memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOK = ROOT / "notebooks" / "01-quickstart.ipynb"


def outputs_of(cell: dict[str, Any]) -> list[dict[str, Any]]:
    return list(cell.get("outputs", []))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # jupyter/zmq internals, not our code
@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_quickstart_notebook_runs_and_shows_memory(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # kernel "python3" with argv "python" runs the interpreter running the tests
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()

    code = [c for c in nb.cells if c.cell_type == "code"]
    errors = [o for c in code for o in outputs_of(c) if o.get("output_type") == "error"]
    assert not errors, errors
    texts = "\n".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
        for c in code
        for o in outputs_of(c)
    )
    assert "generation" in texts and "messages observed" in texts
    images = [o for c in code for o in outputs_of(c) if "image/png" in o.get("data", {})]
    assert len(images) == 1, "the windows plot is shown once"
    html = [
        o["data"]["text/html"]
        for c in code
        for o in outputs_of(c)
        if "text/html" in o.get("data", {})
    ]
    assert html, (
        "the snapshot shows itself as HTML: ThreadSnapshot needs "
        "`def _repr_html_(self): return langchain_om.display.render_html(self)`"
    )
    assert "langchain-om-memory" in html[0] and "observations" in html[0]
    assert "🔴" in html[0]
