"""Views of what memory holds: plain text for terminals, HTML for notebooks, and a plot.

- :func:`render_text` and :func:`render_windows`: the token windows as bars, the observation
  log, hints and generation, for the ``langchain-om`` command line.
- :func:`render_html`: the same as an HTML fragment; a ``ThreadSnapshot`` in a notebook shows
  it through ``_repr_html_``.
- :func:`plot_windows`: the message and observation windows over time, from a list of
  ``data-om-status`` events (needs ``matplotlib``: ``pip install "langchain-om[notebook]"``).

Example:
    >>> from langchain_om import ObservationalMemory
    >>> from langchain_om.display import render_windows
    >>> from langchain_om.testing import memory_model
    >>> memory = ObservationalMemory(model=memory_model(), observation={"message_tokens": 100})
    >>> print(render_windows(memory.status(thread_id="t1").status, width=10))
    messages      ░░░░░░░░░░       0 / 100 tokens
    observations  ░░░░░░░░░░       0 / 40,000 tokens
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.messages import BaseMessage

from langchain_om.events import StatusEvent

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_windows", "render_html", "render_text", "render_windows", "token_bar"]


class SnapshotLike(Protocol):
    """What the views read: a ``ThreadSnapshot`` or anything shaped like one."""

    @property
    def thread_id(self) -> str: ...

    @property
    def record(self) -> Mapping[str, Any]: ...

    @property
    def window(self) -> list[BaseMessage]: ...

    @property
    def status(self) -> StatusEvent: ...


_PRIORITY_STYLE = {
    "🔴": "#fdecea",
    "🟡": "#fef9e7",
    "🟢": "#eafaf1",
    "✅": "#f2f3f4",
}
_TEXT = "#1b2631"
"""Text colour of the HTML view; with ``_CARD`` it reads the same in light and dark themes."""
_CARD = "#ffffff"
_MUTED = "#566573"
_TRACK = "#e5e8e8"
_FILL = "#1f618d"
_OVER = "#a93226"
_FILL_TEXT = "#ffffff"
_HINT_LABELS = {
    "current_task": "current task",
    "suggested_response": "suggested response",
    "thread_title": "thread title",
}


def token_bar(tokens: int, threshold: int, width: int = 24) -> str:
    """A text bar of ``tokens`` out of ``threshold`` (``█`` filled, ``░`` empty, ``▓`` over)."""
    if threshold <= 0:
        return "░" * width
    filled = min(width, round(width * tokens / threshold))
    bar = "█" * filled + "░" * (width - filled)
    return bar if tokens <= threshold else bar[:-1] + "▓"


def _count(count: int, noun: str) -> str:
    """``"1 unobserved message"``, ``"2 unobserved messages"``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _window_line(label: str, tokens: int, threshold: int, width: int) -> str:
    return f"{label:<13} {token_bar(tokens, threshold, width)} {tokens:>7,} / {threshold:,} tokens"


def render_windows(status: StatusEvent, *, width: int = 24) -> str:
    """Two lines: the unobserved-message window and the observation log against thresholds."""
    return "\n".join(
        [
            _window_line("messages", status.messages.tokens, status.messages.threshold, width),
            _window_line(
                "observations", status.observations.tokens, status.observations.threshold, width
            ),
        ]
    )


_BUDGET_LABELS = {
    "tokens_per_hour": ("tokens", "this hour"),
    "tokens_per_day": ("tokens", "today"),
    "cycles_per_hour": ("cycles", "this hour"),
    "cycles_per_day": ("cycles", "today"),
}


def spend_line(status: StatusEvent) -> str | None:
    """``spend: 1,200 / 5,000 tokens this hour · 3 / 5 cycles today`` (``None``: no spend).

    Without limits it shows what the last hour and day used; while a limit is used up it
    says until when memory makes no model call.
    """
    spend = status.spend
    if spend is None:
        return None
    parts = [
        f"{b.used:,} / {b.limit:,} {_BUDGET_LABELS[b.name][0]} {_BUDGET_LABELS[b.name][1]}"
        for b in spend.budgets
    ]
    if not parts:
        parts = [
            f"{spend.tokens_last_hour:,} tokens this hour",
            f"{spend.tokens_last_day:,} tokens today",
            f"{_count(spend.cycles_last_day, 'cycle')} today",
        ]
    line = f"spend ({spend.per}): " + " · ".join(parts)
    if spend.exhausted:
        stamp = (spend.resumes_at or "")[:16].replace("T", " ")
        line += f" · used up: no memory calls until {stamp} UTC"
    return line


def _pinned(snapshot: SnapshotLike) -> bool:
    """Whether the snapshot's title was pinned by the application (``rename_thread``)."""
    return bool(getattr(snapshot, "title_pinned", False))


def _hints(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    hints = record.get("hints") or {}
    return [(label, str(hints[key])) for key, label in _HINT_LABELS.items() if hints.get(key)]


def _extracted(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The extractors' values as ``(label, text)``; typed values as compact JSON."""
    values = record.get("extracted") or {}
    out: list[tuple[str, str]] = []
    for key, value in values.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out.append((str(key), " ".join(str(text).split())))
    return out


def _group_heading(group: Mapping[str, Any]) -> str:
    stamp = str(group.get("observed_at") or "")[:16].replace("T", " ")
    tokens = group.get("tokens", 0)
    if group.get("kind") == "reflection":
        merged = len(group.get("sources") or [])
        return f"reflection of {merged} groups · {stamp} · {tokens:,} tokens"
    return f"observed {stamp} · {tokens:,} tokens"


def render_text(
    snapshot: SnapshotLike,
    *,
    archived: int | None = None,
    width: int = 24,
    max_lines: int | None = None,
) -> str:
    """What memory holds for a thread, as text for a terminal.

    Args:
        snapshot: a ``ThreadSnapshot`` (from ``memory.status(thread_id=...)`` and friends).
        archived: how many raw messages the archive holds, when known.
        width: width of the token bars.
        max_lines: show at most this many (most recent) log lines; all when None.
    """
    record = snapshot.record
    groups = list(record.get("groups") or [])
    head = f"Thread {snapshot.thread_id!r} · generation {record.get('generation', 0)}"
    if record.get("title"):
        head += f" · {record['title']}" + (" (pinned)" if _pinned(snapshot) else "")
    out = [head, render_windows(snapshot.status, width=width)]
    counts = f"window: {_count(len(snapshot.window), 'unobserved message')}"
    if archived is not None:
        counts += f" · archive: {_count(archived, 'observed message')}"
    out.append(counts)
    if (spent := spend_line(snapshot.status)) is not None:
        out.append(spent)
    out.extend(f"{label}: {text}" for label, text in _hints(record))
    out.extend(f"extracted {label}: {text}" for label, text in _extracted(record))
    if not groups:
        out.append("observation log: (empty: nothing observed yet)")
        return "\n".join(out)
    lines: list[str] = []
    for group in groups:
        lines.append(f"── {_group_heading(group)}")
        lines.extend(f"   {line}" for line in str(group.get("text", "")).splitlines() if line)
    if max_lines is not None and len(lines) > max_lines:
        hidden = len(lines) - max_lines
        shown = lines[len(lines) - max(max_lines, 0) :]  # lines[-0:] would be every line
        lines = [f"   … {hidden} earlier lines" if shown else f"   … {hidden} lines", *shown]
    out.append(f"observation log ({len(groups)} groups):")
    out.extend(lines)
    return "\n".join(out)


# --- HTML ----------------------------------------------------------------------------------


def _html_bar(label: str, tokens: int, threshold: int) -> str:
    share = 0.0 if threshold <= 0 else min(1.0, tokens / threshold)
    fill = _OVER if tokens > threshold else _FILL
    return (
        '<div style="margin:2px 0">'
        f'<span style="display:inline-block;width:7.5em">{html.escape(label)}</span>'
        f'<span style="display:inline-block;width:16em;height:0.9em;background:{_TRACK};'
        f'color:{_TEXT};vertical-align:middle;border-radius:3px;overflow:hidden">'
        f'<span style="display:block;height:100%;width:{share * 100:.1f}%;background:{fill};'
        f'color:{_FILL_TEXT}"></span></span>'
        f" {tokens:,} / {threshold:,} tokens</div>"
    )


def _html_line(line: str) -> str:
    text = html.escape(line)
    if line.startswith("Date:"):
        return f'<div style="font-weight:bold;margin-top:4px">{text}</div>'
    bullet = line.lstrip("*- ").strip()
    background = _PRIORITY_STYLE.get(bullet[:1])
    indent = (len(line) - len(line.lstrip())) // 2
    # A line with a background sets its text colour too: a dark theme's light text would be
    # unreadable on these light tints.
    colours = f"background:{background};color:{_TEXT};" if background else ""
    return (
        f'<div style="{colours}margin:1px 0 1px {indent}em;'
        f'padding:0 4px;border-radius:2px">{text}</div>'
    )


def render_html(snapshot: SnapshotLike, *, archived: int | None = None) -> str:
    """What memory holds for a thread, as an HTML fragment (windows as bars, the log, hints).

    Args:
        snapshot: a ``ThreadSnapshot``.
        archived: how many raw messages the archive holds, when known.
    """
    record = snapshot.record
    status = snapshot.status
    title = html.escape(str(record.get("title") or ""))
    if title and _pinned(snapshot):
        title += " (pinned)"
    parts = [
        # The card sets its own background and text colour, so it reads the same whatever the
        # notebook theme (light text inherited from a dark theme would vanish on it).
        '<div class="langchain-om-memory" style="font-family:sans-serif;font-size:13px;'
        f'background:{_CARD};color:{_TEXT};padding:6px 8px;border-radius:4px">',
        f"<div><b>Thread {html.escape(snapshot.thread_id)}</b>"
        f" · generation {int(record.get('generation', 0))}"
        + (f" · {title}" if title else "")
        + "</div>",
        _html_bar("messages", status.messages.tokens, status.messages.threshold),
        _html_bar("observations", status.observations.tokens, status.observations.threshold),
    ]
    counts = f"window: {_count(len(snapshot.window), 'unobserved message')}"
    if archived is not None:
        counts += f" · archive: {_count(archived, 'observed message')}"
    parts.append(f'<div style="color:{_MUTED}">{counts}</div>')
    if (spent := spend_line(status)) is not None:
        parts.append(f'<div style="color:{_MUTED}">{html.escape(spent)}</div>')
    for label, text in [*_hints(record), *_extracted(record)]:
        parts.append(f"<div><i>{html.escape(label)}:</i> {html.escape(text)}</div>")
    groups = list(record.get("groups") or [])
    if not groups:
        parts.append("<div><i>Observation log is empty: nothing observed yet.</i></div>")
    for group in groups:
        parts.append(
            '<div style="margin-top:6px;border-left:3px solid #aab7b8;padding-left:6px">'
            f'<div style="color:{_MUTED}">{html.escape(_group_heading(group))}</div>'
        )
        parts.extend(_html_line(line) for line in str(group.get("text", "")).splitlines() if line)
        parts.append("</div>")
    parts.append("</div>")
    return "\n".join(parts)


# --- plot ----------------------------------------------------------------------------------


def _usage(event: StatusEvent | Mapping[str, Any], key: str) -> tuple[int, int]:
    if isinstance(event, StatusEvent):
        window = event.messages if key == "messages" else event.observations
        return window.tokens, window.threshold
    data = event.get("data", event)
    return int(data[key]["tokens"]), int(data[key]["threshold"])


def _generation(event: StatusEvent | Mapping[str, Any]) -> int:
    if isinstance(event, StatusEvent):
        return event.generation_count
    return int(event.get("data", event).get("generation_count", 0))


def plot_windows(
    history: Sequence[StatusEvent | Mapping[str, Any]],
    *,
    title: str | None = None,
    figsize: tuple[float, float] = (9.0, 5.5),
    dpi: float | None = None,
) -> Figure:
    """Plot the message and observation windows over time.

    Args:
        history: ``data-om-status`` events in order (``StatusEvent`` objects, or their
            ``to_part()`` dicts), e.g. collected with ``on_debug_event``.
        title: the figure title.
        figsize: width and height in inches.
        dpi: dots per inch (matplotlib's default when None); with ``figsize`` it sets the
            image's size in pixels.

    Returns:
        A matplotlib ``Figure`` (shown inline when it is the last value of a notebook cell).

    Raises:
        ImportError: when matplotlib is not installed.
    """
    try:
        from matplotlib.figure import Figure  # noqa: PLC0415 - optional extra "notebook"
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'plot_windows needs matplotlib: pip install "langchain-om[notebook]"'
        ) from exc

    steps = list(range(1, len(history) + 1))
    fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    for ax, key, color in zip(
        axes, ("messages", "observations"), ("#2e86c1", "#ca6f1e"), strict=True
    ):
        usage = [_usage(ev, key) for ev in history]
        ax.plot(steps, [u[0] for u in usage], color=color, label=f"{key} tokens")
        ax.step(
            steps,
            [u[1] for u in usage],
            where="post",
            color="#7f8c8d",
            linestyle="--",
            label="threshold",
        )
        ax.set_ylabel("tokens")
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", fontsize="small")
        ax.set_title(
            "unobserved messages (drops = observations)"
            if key == "messages"
            else "observation log (drops = reflections)",
            fontsize="medium",
        )
    generations = [_generation(ev) for ev in history]
    for index in range(1, len(generations)):
        if generations[index] > generations[index - 1]:
            axes[1].axvline(steps[index], color="#8e44ad", alpha=0.4, linewidth=1)
    axes[1].set_xlabel("step (one per model call or added message)")
    if title:
        fig.suptitle(title)
    return fig
