"""The command line's terminal: notices and a progress bar, the spinner.

The spinner is shown while a model answers; line editing serves the chat prompt.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import TextIO

from langchain_om import events
from langchain_om.events import OMEvent


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class Console:
    """Prints notices and a one-line progress bar that notices do not garble."""

    def __init__(self, out: TextIO, *, verbose: bool = False) -> None:
        self.out = out
        self.verbose = verbose
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self._bar_shown = False
        self._lock = threading.Lock()

    def say(self, text: str) -> None:
        """Print a line (below the progress bar, if one is showing); safe from any thread."""
        with self._lock, contextlib.suppress(BrokenPipeError):
            if self._bar_shown:
                self.out.write("\n")
                self._bar_shown = False
            print(text, file=self.out, flush=True)

    def progress(self, done: int, total: int, note: str = "") -> None:
        """Show ``done`` of ``total``: redrawn in place on a terminal, every 10% otherwise."""
        width = 30
        filled = width * done // max(total, 1)
        line = f"[{'#' * filled}{'-' * (width - filled)}] {done}/{total} {note}".rstrip()
        if self.tty:
            self.out.write("\r" + line.ljust(78))
            self.out.flush()
            self._bar_shown = True
            if done == total:
                self.say("")
        elif done == total or done % max(1, total // 10) == 0:
            self.say(line)

    def event(self, event: OMEvent) -> None:
        """Print a short line for each observation, buffering, activation and reflection."""
        op = getattr(event, "operation_type", "")
        what = "reflection" if op == "reflection" else "observation"
        if isinstance(event, events.ObservationStartEvent):
            unit = "log" if op == "reflection" else "message"
            self.say(f"  · {what} started: {event.tokens_to_observe:,} {unit} tokens")
        elif isinstance(event, events.ObservationEndEvent):
            took = event.duration_ms / 1000
            self.say(f"  · {what} done in {took:.1f}s: log is {event.observation_tokens:,} tokens")
        elif isinstance(event, events.BufferingStartEvent) and self.verbose:
            self.say(f"  · background {what} started: {event.tokens_to_buffer:,} tokens")
        elif isinstance(event, events.BufferingEndEvent) and self.verbose:
            took = event.duration_ms / 1000
            self.say(f"  · background {what} ready in {took:.1f}s (waits for activation)")
        elif isinstance(event, events.ActivationEvent):
            if op == "reflection":
                self.say(f"  · reflection activated: log is {event.observation_tokens:,} tokens")
            else:
                self.say(
                    f"  · observations activated: {event.messages_activated} messages left the "
                    f"window, log is {event.observation_tokens:,} tokens"
                )
        elif isinstance(event, events.ObservationFailedEvent | events.BufferingFailedEvent):
            again = " (retrying)" if getattr(event, "retrying", False) else ""
            self.say(f"  ! {what} failed{again}: {clip(event.error, 160)}")
        elif isinstance(event, events.ThreadUpdateEvent):
            self.say(f"  · thread title: {event.new_title}")


class Spinner:
    """A spinner with elapsed seconds on stderr while a model answers (only on a terminal)."""

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Spinner:
        if getattr(self.stream, "isatty", lambda: False)():
            self._thread = threading.Thread(target=self._spin, daemon=True)
            self._thread.start()
        return self

    def _spin(self) -> None:
        started = time.monotonic()
        frame = 0
        while not self._stop.wait(0.1):
            took = time.monotonic() - started
            text = f"\r{self.FRAMES[frame % len(self.FRAMES)]} {self.label} {took:4.1f}s"
            with contextlib.suppress(OSError, ValueError):
                self.stream.write(text)
                self.stream.flush()
            frame += 1

    def __exit__(self, *exc: object) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        with contextlib.suppress(OSError, ValueError):
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def enable_line_editing() -> None:
    """Arrow keys, Ctrl-A/E and the history of this session for ``input()`` on a terminal."""
    if not sys.stdin.isatty():
        return
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401, PLC0415 - importing it turns on input() line editing


def read_line(prompt: str) -> str | None:
    """One line from the user; ``None`` at end of input (Ctrl-D). Ctrl-C clears the line."""
    while True:
        try:
            return input(prompt)
        except EOFError:
            return None
        except KeyboardInterrupt:
            print("^C", flush=True)  # a fresh prompt; Ctrl-D (or /quit) leaves
