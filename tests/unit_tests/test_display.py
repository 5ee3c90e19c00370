"""The views the quickstart notebook shows: HTML and text snapshots, token bars, the plot."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_om import ObservationalMemory, ThreadSnapshot
from langchain_om.display import plot_windows, render_html, render_text, token_bar
from langchain_om.events import StatusEvent, WindowUsage
from langchain_om.testing import FunctionChatModel


def ydata(line: Any) -> list[float]:
    return [float(v) for v in np.asarray(line.get_ydata())]


def _snapshot_with(text: str, said: str = "hi", answer: str = "yo") -> ThreadSnapshot:
    """A snapshot whose log is ``text``: the Observer's reply, grounded in ``said`` and
    ``answer`` (the messages observed)."""
    model = FunctionChatModel(
        function=lambda messages, info: (
            f"<observations>\n{text}\n</observations>\n"
            "<current-task>Plan the move & pack</current-task>"
        )
    )
    memory = ObservationalMemory(model=model, observation={"message_tokens": 100})
    return memory.observe(
        thread_id="t<1>", messages=[HumanMessage(said, id="h1"), AIMessage(answer, id="a1")]
    )


def test_render_html_escapes_and_marks_priorities() -> None:
    snap = _snapshot_with(
        "Date: Nov 2, 2026\n* 🔴 (09:00) User pasted <script>x</script> into the form\n"
        "* 🟢 (09:01) Assistant confirmed the form works",
        said="I pasted <script>x</script> into the form",
        answer="Confirmed: the form works.",
    )
    html = render_html(snap, archived=1)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "Thread t&lt;1&gt;" in html and "Plan the move &amp; pack" in html
    assert "#fdecea" in html and "#eafaf1" in html  # 🔴 and 🟢 backgrounds
    assert "archive: 1 observed message<" in html  # one, not "1 messages"
    assert f"{snap.status.messages.tokens:,} / 100 tokens" in html


def test_render_text_shows_windows_hints_and_log() -> None:
    snap = _snapshot_with(
        "Date: Nov 2, 2026\n* 🔴 (09:00) User likes green tea",
        said="I like green tea.",
        answer="Green tea it is.",
    )
    text = render_text(snap, archived=1, width=10)
    lines = text.splitlines()
    assert lines[0] == "Thread 't<1>' · generation 0"
    assert lines[1].startswith("messages      ") and lines[1].endswith("/ 100 tokens")
    assert "current task: Plan the move & pack" in lines
    assert "   * 🔴 (09:00) User likes green tea" in lines
    assert render_text(snap, max_lines=1).splitlines()[-2].startswith("   … ")


def test_render_text_max_lines_zero_hides_the_whole_log() -> None:
    snap = _snapshot_with(
        "Date: Nov 2, 2026\n* 🔴 (09:00) User likes green tea\n* 🟡 (09:05) Has a cat named Pixel",
        said="I like green tea, and I have a cat named Pixel.",
        answer="Tea and Pixel, noted.",
    )
    lines = render_text(snap, max_lines=0).splitlines()
    assert lines[-1] == "   … 4 lines"
    assert not any("User likes green tea" in line for line in lines)
    kept = render_text(snap, max_lines=2).splitlines()
    assert kept[-3:] == [
        "   … 2 earlier lines",
        "   * 🔴 (09:00) User likes green tea",
        "   * 🟡 (09:05) Has a cat named Pixel",
    ]


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
        assert ydata(top.lines[0]) == [40, 90, 10, 30]
        assert ydata(bottom.lines[0]) == [0, 0, 150, 60]
        assert ydata(bottom.lines[1]) == [200] * 4
        assert [np.asarray(line.get_xdata())[0] for line in bottom.lines[2:]] == [
            4
        ]  # generation 0 -> 1
