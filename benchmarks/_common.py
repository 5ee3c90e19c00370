"""Helpers shared by the benchmark scripts.

* a deterministic synthetic conversation (``user_text(turn)``, ``reply_text(prompt)``);
* :class:`InstantChatModel`, a chat model that answers at once and records nothing (the
  testing models deep-copy every call's messages, which would dominate long runs);
* :class:`LatestCheckpointSaver`, an ``InMemorySaver`` that keeps only each thread's latest
  checkpoint, so that RAM holds one state per thread however many turns run;
* :class:`HookTimer` and :func:`time_middleware`: time a middleware's own hooks (model call
  excluded);
* small formatting helpers (markdown tables, the machine line, peak RSS).
"""

from __future__ import annotations

import functools
import platform
import random
import resource
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver

RESULTS = Path(__file__).parent / "results"

WORDS = (
    "the of and to in a is that for it as was with be by on not he I this are or his from at "
    "which but have an they you were her she there would their we him been has when who will "
    "more no if out so said what up its about into than them can only other new some could "
    "time these two may then do first any my now such like our over me even most made after "
    "also did many before must through back years where much your way well down should "
    "because each just those people how too little state good very make world still own see "
    "work long get here between both life being under never day same another know while last "
    "might us great old year off come since against go came right used take three memory "
    "garden tomato basil flight Lisbon invoice meeting budget report python cello salmon "
    "winter tyres wedding sister venue deadline review draft weather Oslo snow database "
    "migration deployment customer refund schedule project Paris Tokyo Berlin function"
).split()


def _words(rng: random.Random, low: int, high: int) -> str:
    out = []
    for i in range(rng.randint(low, high)):
        word = rng.choice(WORDS)
        if rng.random() < 0.05:
            word = str(rng.randint(1, 9999))
        if i and rng.random() < 0.1:
            word += rng.choice([",", ".", "?"])
        out.append(word)
    return " ".join(out).capitalize() + "."


def user_text(turn: int) -> str:
    """The user's message of ``turn`` (20-60 words, the same on every run)."""
    return f"Turn {turn}: " + _words(random.Random(turn), 20, 60)


def reply_text(prompt: str) -> str:
    """The assistant's answer to ``prompt`` (40-100 words, a function of the prompt only)."""
    return _words(random.Random(zlib.crc32(prompt.encode())), 40, 100)


def history(turns: int) -> list[BaseMessage]:
    """The ``2 * turns`` messages of a plain conversation's first ``turns`` turns."""
    out: list[BaseMessage] = []
    for turn in range(1, turns + 1):
        text = user_text(turn)
        out += [HumanMessage(text), AIMessage(reply_text(text))]
    return out


class InstantChatModel(BaseChatModel):
    """Answers at once, records nothing.

    With ``reply`` unset, the answer is :func:`reply_text` of the last human message, so a
    conversation's state depends only on its user turns. With ``reply`` set, always that text
    (a scripted summarizer).
    """

    reply: str | None = None

    @property
    def _llm_type(self) -> str:
        return "instant"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = self.reply
        if text is None:
            last = next((m for m in reversed(messages) if m.type == "human"), None)
            text = reply_text(last.text if last is not None else "")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


class LatestCheckpointSaver(InMemorySaver):
    """``InMemorySaver`` that drops a thread's older checkpoints, blobs and writes on each put.

    The stock saver keeps every checkpoint; for an agent whose state grows every turn that is
    quadratic in RAM. Each turn still deserializes and serializes its whole state, as with any
    persistent checkpointer.
    """

    def __init__(self, *, serde: Any = None) -> None:
        super().__init__(serde=serde)
        self._live: dict[tuple[str, str], dict[str, Any]] = {}

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        out = super().put(config, checkpoint, metadata, new_versions)
        thread = config["configurable"]["thread_id"]
        ns = config["configurable"]["checkpoint_ns"]
        saved = self.storage[thread][ns]
        for old in [cid for cid in saved if cid != checkpoint["id"]]:
            del saved[old]
            self.writes.pop((thread, ns, old), None)
        current = checkpoint["channel_versions"]
        for channel, version in self._live.get((thread, ns), {}).items():
            if current.get(channel) != version:
                self.blobs.pop((thread, ns, channel, version), None)
        self._live[(thread, ns)] = dict(current)
        return out

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        for key in [k for k in self._live if k[0] == thread_id]:
            del self._live[key]


CLOCK: Callable[[], float] = time.process_time


class HookTimer:
    """Accumulates the seconds spent in hooks; :meth:`take` returns and resets the total."""

    def __init__(self) -> None:
        self.total = 0.0
        self.calls = 0
        self.by_hook: dict[str, float] = {}

    def add(self, seconds: float, hook: str = "") -> None:
        self.total += seconds
        self.calls += 1
        self.by_hook[hook] = self.by_hook.get(hook, 0.0) + seconds

    def take(self) -> float:
        total, self.total = self.total, 0.0
        return total


def time_middleware(middleware: Any, timer: HookTimer) -> Any:
    """Time ``middleware``'s sync hooks into ``timer`` (call before ``create_agent``).

    ``before_model``, ``after_model``, ``before_agent`` and ``after_agent`` are timed whole;
    ``wrap_model_call`` is timed minus the time spent in the handler it calls (the model call
    and any inner middleware). The wrappers replace the bound methods on the instance, which is
    what ``create_agent`` reads.
    """
    from langchain.agents.middleware import AgentMiddleware

    cls = type(middleware)
    for name in ("before_agent", "before_model", "after_model", "after_agent"):
        if getattr(cls, name) is getattr(AgentMiddleware, name):
            continue
        hook = getattr(middleware, name)

        def timed(*args: Any, __hook: Any = hook, __name: str = name, **kwargs: Any) -> Any:
            started = CLOCK()
            try:
                return __hook(*args, **kwargs)
            finally:
                timer.add(CLOCK() - started, __name)

        setattr(middleware, name, functools.wraps(hook)(timed))
    if cls.wrap_model_call is not AgentMiddleware.wrap_model_call:
        wrap = middleware.wrap_model_call

        @functools.wraps(wrap)
        def timed_wrap(request: Any, handler: Callable[[Any], Any]) -> Any:
            inner = 0.0

            def timed_handler(req: Any) -> Any:
                nonlocal inner
                started = CLOCK()
                try:
                    return handler(req)
                finally:
                    inner += CLOCK() - started

            started = CLOCK()
            try:
                return wrap(request, timed_handler)
            finally:
                timer.add(CLOCK() - started - inner, "wrap_model_call")

        middleware.wrap_model_call = timed_wrap
    return middleware


def peak_rss_mb() -> float:
    """Peak resident set size of this process, in MiB.

    On Linux this is ``VmHWM`` from ``/proc/self/status``: ``ru_maxrss`` survives ``exec`` and
    so reports the parent's size for a freshly started subprocess when the parent was larger.
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def machine() -> str:
    """One line naming the interpreter and machine."""
    import os

    return (
        f"Python {platform.python_version()} on {platform.machine()} "
        f"({os.cpu_count()} CPUs, {platform.system()})"
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    """A markdown table; the first ``left`` columns are left-aligned, the rest right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(parts) + " |"

    rule = "|" + "|".join(
        "-" * (w + 2) if i < left else "-" * (w + 1) + ":" for i, w in enumerate(widths)
    )
    return [line(headers), rule + "|", *(line(r) for r in rows)]


def size(n: float) -> str:
    """Bytes as B/KB/MB/GB (powers of 1024)."""
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GB"
