"""The command line's terminal: notices and a progress bar, the spinner.

Every line goes through :meth:`Console.say`, so a notice never lands inside the progress bar:
on a terminal the bar is cleared, the notice printed and the bar drawn again below it. Python
warnings and the ``langchain_om`` logger's warnings are routed there too while a command runs
(:func:`notices_through`), as one line each: no traceback, whatever the record carries. The
spinner is shown while a model answers; line editing serves the chat prompt.

tqdm and rich draw such bars too, but neither is a dependency of the package (in a development
environment tqdm comes with the eval extra's nltk, rich with a test tool), and neither would
shorten this: the bar itself is a dozen lines, and what it must do besides (a notice or
warning from any thread printed above it and the bar drawn again, one plain line every 10%
when the output is a file or a pipe, where tqdm would write carriage returns) is the same
code around ``tqdm.write`` or rich's ``Live``.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any, TextIO

from langchain_om import events
from langchain_om.events import OMEvent


def plural(count: int, noun: str) -> str:
    """``"1 message"``, ``"2 messages"`` (thousands separated)."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def one_line(text: object) -> str:
    """``text`` with its line breaks and runs of spaces folded into single spaces."""
    return " ".join(str(text).split())


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class Console:
    """Prints notices and a one-line progress bar that notices do not garble."""

    def __init__(self, out: TextIO, *, verbose: bool = False) -> None:
        self.out = out
        self.verbose = verbose
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self._bar = ""
        """The progress bar on screen (a terminal only; empty when none is)."""
        self._lock = threading.RLock()
        self.failed_cycles = 0
        """Cycles that failed for good (not those about to be retried), as events told."""

    def say(self, text: str) -> None:
        """Print a line above the progress bar, if one is showing; safe from any thread."""
        with self._lock, contextlib.suppress(BrokenPipeError):
            if self._bar:
                self.out.write("\r\x1b[K")
            print(text, file=self.out, flush=True)
            if self._bar:
                self.out.write(self._bar)
                self.out.flush()

    def progress(self, done: int, total: int, note: str = "") -> None:
        """Show ``done`` of ``total``: redrawn in place on a terminal, every 10% otherwise."""
        width = 30
        filled = width * done // max(total, 1)
        line = f"[{'#' * filled}{'-' * (width - filled)}] {done}/{total} {note}".rstrip()
        if self.tty:
            with self._lock, contextlib.suppress(BrokenPipeError):
                self._bar = "\r" + line.ljust(78)
                self.out.write(self._bar)
                if done == total:
                    self.out.write("\n")
                    self._bar = ""
                self.out.flush()
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
                    f"  · observations activated: {plural(event.messages_activated, 'message')} "
                    f"left the window, log is {event.observation_tokens:,} tokens"
                )
        elif isinstance(event, events.ObservationFailedEvent | events.BufferingFailedEvent):
            again = " (retrying)" if getattr(event, "retrying", False) else ""
            self.failed_cycles += not again
            self.say(f"  ! {what} failed{again}: {clip(event.error, 160)}")
        elif isinstance(event, events.ThreadUpdateEvent):
            self.say(f"  · thread title: {event.new_title}")


def _about_cycles(record: logging.LogRecord) -> bool:
    """Whether a log record reports a cycle or a model call (their events say the same)."""
    cycle_loggers = ("langchain_om.cycles", "langchain_om.retry")
    return record.name in cycle_loggers or record.module in ("cycles", "retry")


class _ConsoleLog(logging.Handler):
    """The ``langchain_om`` logger's warnings as console lines: the message, no traceback."""

    def __init__(self, console: Console) -> None:
        super().__init__(logging.WARNING)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        if _about_cycles(record) and not self.console.verbose:
            return  # a failed cycle or model call is a console line already (its event)
        try:
            self.console.say(f"  ! {clip(record.getMessage(), 300)}")
        except Exception:  # a log line must never break the command
            self.handleError(record)


@contextlib.contextmanager
def notices_through(console: Console) -> Iterator[None]:
    """Route Python warnings and ``langchain_om`` warnings through ``console`` meanwhile."""

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        console.say(f"  ! {category.__name__}: {clip(str(message), 300)}")

    logger = logging.getLogger("langchain_om")
    handler = _ConsoleLog(console)
    propagate, showwarning = logger.propagate, warnings.showwarning
    logger.addHandler(handler)
    logger.propagate = False
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = showwarning
        logger.propagate = propagate
        logger.removeHandler(handler)


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
