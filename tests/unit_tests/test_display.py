"""notebooks/01-quickstart.ipynb runs offline top to bottom and shows a plot and the memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_om import ObservationalMemory, ThreadSnapshot
from langchain_om.display import plot_windows, render_html, render_text, token_bar
from langchain_om.events import StatusEvent, WindowUsage
from langchain_om.testing import FunctionChatModel

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "01-quickstart.ipynb"


def outputs_of(cell: dict) -> list[dict]:
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


# --- the views the notebook shows -------------------------------------------------------


def _snapshot_with(text: str) -> ThreadSnapshot:
    model = FunctionChatModel(
        function=lambda messages, info: (
            f"<observations>\n{text}\n</observations>\n"
            "<current-task>Plan the move & pack</current-task>"
        )
    )
    memory = ObservationalMemory(model=model, observation={"message_tokens": 100})
    return memory.observe(
        thread_id="t<1>", messages=[HumanMessage("hi", id="h1"), AIMessage("yo", id="a1")]
    )


def test_render_html_escapes_and_marks_priorities() -> None:
    snap = _snapshot_with(
        "Date: Nov 2, 2026\n* 🔴 (09:00) User said <script>x</script>\n* 🟢 (09:01) ok"
    )
    html = render_html(snap, archived=1)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "Thread t&lt;1&gt;" in html and "Plan the move &amp; pack" in html
    assert "#fdecea" in html and "#eafaf1" in html  # 🔴 and 🟢 backgrounds
    assert "archive: 1 observed messages" in html
    assert f"{snap.status.messages.tokens:,} / 100 tokens" in html


def test_render_text_shows_windows_hints_and_log() -> None:
    snap = _snapshot_with("Date: Nov 2, 2026\n* 🔴 (09:00) User likes tea")
    text = render_text(snap, archived=1, width=10)
    lines = text.splitlines()
    assert lines[0] == "Thread 't<1>' · generation 0"
    assert lines[1].startswith("messages      ") and lines[1].endswith("/ 100 tokens")
    assert "current task: Plan the move & pack" in lines
    assert "   * 🔴 (09:00) User likes tea" in lines
    assert render_text(snap, max_lines=1).splitlines()[-2].startswith("   … ")


@pytest.mark.parametrize(
    ("tokens", "threshold", "bar"),
    [(0, 100, "░░░░"), (50, 100, "██░░"), (100, 100, "████"), (250, 100, "███▓"), (5, 0, "░░░░")],
)
def test_token_bar(tokens: int, threshold: int, bar: str) -> None:
    assert token_bar(tokens, threshold, width=4) == bar


def test_plot_windows_takes_events_or_their_parts() -> None:
    events = [
        StatusEvent(
            messages=WindowUsage(tokens=m, threshold=100),
            observations=WindowUsage(tokens=o, threshold=200),
            record_id="r",
            thread_id="t",
            step_number=i,
            generation_count=g,
        )
        for i, (m, o, g) in enumerate([(40, 0, 0), (90, 0, 0), (10, 150, 0), (30, 60, 1)])
    ]
    for history in (events, [e.to_part() for e in events]):
        fig = plot_windows(history, title="demo")
        top, bottom = fig.axes
        assert list(top.lines[0].get_ydata()) == [40, 90, 10, 30]
        assert list(bottom.lines[0].get_ydata()) == [0, 0, 150, 60]
        assert list(bottom.lines[1].get_ydata()) == [200] * 4
        assert [line.get_xdata()[0] for line in bottom.lines[2:]] == [4]  # generation 0 -> 1
