"""The ``langchain-om`` command line: ``chat``, ``replay`` and ``inspect``.

- ``langchain-om chat`` — talk to a model with observational memory; after each turn the live
  token windows are shown. ``/status``, ``/observations``, ``/quit`` (or end of input).
- ``langchain-om replay FILE.jsonl`` — feed a recorded conversation (one JSON object a line:
  ``{"role": "user"|"assistant"|"tool", "content": ..., "timestamp": ...}``) through memory,
  with a progress bar, then print what memory holds.
- ``langchain-om inspect`` — a thread's windows, observation log, generation and archive size.

Memory lives in one SQLite file (``--db``, default ``langchain-om.db`` in the working
directory). Models: ``--model provider/name`` (e.g. ``openai/gpt-5-mini``), ``--base-url`` for
any OpenAI-compatible server, ``--scripted`` for instant offline fakes, ``--model local`` for
the bundled SmolLM2 model (the ``local`` extra). With none of these and no provider API key
set, ``replay`` runs on the offline extractive Observer (:mod:`langchain_om.offline`) and
``chat`` answers with the local model and observes with the extractive Observer.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from langchain_om import events, local
from langchain_om._jsonl import json_objects
from langchain_om._version import __version__
from langchain_om.display import render_text, render_windows
from langchain_om.engine import ObservationalMemory, ThreadSnapshot
from langchain_om.errors import MissingProviderError, ObservationalMemoryError, OMUsageError
from langchain_om.eval.cli import add_eval_command
from langchain_om.events import OMEvent
from langchain_om.models import RunContext, resolve_model_string
from langchain_om.offline import OBSERVER_LABEL, extractive_observer
from langchain_om.testing import FunctionChatModel, memory_model

__all__ = ["ReplayFormatError", "load_conversation", "main"]

DEFAULT_DB = "langchain-om.db"
DEFAULT_THREAD = "default"
PROVIDER_KEYS = {"OPENAI_API_KEY": "openai/gpt-5-mini", "GOOGLE_API_KEY": "google/gemini-2.5-flash"}
SCRIPTED_THRESHOLDS = (400, 600)
"""(message_tokens, observation_tokens) for scripted models: observes and reflects quickly."""
LOCAL_THRESHOLDS = (600, 1500)
"""(message_tokens, observation_tokens) for the local model: prompts fit its context."""
LOCAL_CONTEXT = 8192
EXTRACTIVE_THRESHOLDS = (400, 1200)
"""(message_tokens, observation_tokens) for the offline extractive Observer: a few cycles."""
ACTOR_PROMPT = "You are a helpful assistant. Answer briefly and concretely."
SWITCH_HINT = (
    "To use a provider instead: set OPENAI_API_KEY (or GOOGLE_API_KEY) and pass "
    "--model openai/gpt-5-mini (or --model google/gemini-2.5-flash); --base-url URL uses any "
    "OpenAI-compatible server; --scripted uses instant offline fakes."
)


EPILOG = """examples:
  langchain-om replay examples/data/demo.jsonl   # no API key set: the offline Observer
  langchain-om replay examples/data/demo.jsonl --model local   # the bundled SmolLM2 model
  langchain-om replay examples/data/demo.jsonl --scripted --message-tokens 200
  langchain-om chat --model openai/gpt-5-mini     # with OPENAI_API_KEY set
  langchain-om chat --base-url http://127.0.0.1:8080/v1
  langchain-om inspect --thread default
"""


class ReplayFormatError(ObservationalMemoryError, ValueError):
    """A line of a replay file is not a message this command understands."""


# --- models ----------------------------------------------------------------------------------


@dataclass
class Backend:
    """The models a session runs on."""

    label: str
    actor: BaseChatModel | None
    """The agent's model (``None`` where no reply is needed: replay with the offline Observer)."""
    memory_model: Any
    """Observer/Reflector model: a model object or a provider string."""
    thresholds: tuple[int, int] | None = None
    """Default (message_tokens, observation_tokens) for these models; None: the library's."""
    buffering: bool = True
    """Observe ahead in the background (off for the slow local model: one call at a time)."""

    def agent(self) -> BaseChatModel:
        """The agent's model (chat needs one; replay with the offline Observer has none)."""
        if self.actor is None:
            raise ObservationalMemoryError(f"{self.label} has no agent model to reply with")
        return self.actor


SCRIPTED_DELAY_ENV = "LANGCHAIN_OM_SCRIPTED_DELAY"
"""Seconds the scripted actor takes per reply (unset: instant); lets tests interrupt a reply."""


def _scripted_actor_reply(messages: list[BaseMessage], info: Any) -> str:
    delay = float(os.environ.get(SCRIPTED_DELAY_ENV) or 0)
    if delay > 0:
        time.sleep(delay)
    memory = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    notes = [line.strip()[2:] for line in memory.splitlines() if line.lstrip().startswith("* ")]
    asked = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
    reply = f"(scripted) You said: {_clip(asked, 60)}"
    if notes:
        reply += f" | memory holds {len(notes)} observations, latest: {_clip(notes[-1], 70)}"
    return reply


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _openai_client(**kwargs: Any) -> BaseChatModel:
    try:
        from langchain_openai import ChatOpenAI  # noqa: PLC0415 - optional extra "openai"
    except ImportError as exc:
        raise MissingProviderError(
            '--base-url needs langchain-openai: pip install "langchain-om[openai]"'
        ) from exc
    return ChatOpenAI(**kwargs)


@contextlib.contextmanager
def open_backend(args: argparse.Namespace, say: Callable[[str], None]) -> Iterator[Backend]:
    """Pick the models from the options and the environment (starts the local model if so)."""
    if args.scripted:
        actor: BaseChatModel = FunctionChatModel(
            function=_scripted_actor_reply, model_name="scripted-actor"
        )
        yield Backend(
            "scripted offline models (no LLM)", actor, memory_model(), SCRIPTED_THRESHOLDS
        )
        return
    chosen: Any = args.observer_model
    if chosen == "extractive":
        chosen = extractive_observer()
    if args.base_url:
        key = os.environ.get("OPENAI_API_KEY") or "none"
        actor = _openai_client(
            model=args.model or "local", base_url=args.base_url, api_key=key, max_tokens=512
        )
        memory = chosen or actor
        yield Backend(f"{args.model or 'local'} at {args.base_url}", actor, memory)
        return
    spec = None if args.model == "local" else args.model
    spec = spec or next((m for k, m in PROVIDER_KEYS.items() if os.environ.get(k)), None)
    if spec is not None:
        if not args.model:
            say(f"Using {spec} (its API key is set); pass --model to choose another model.")
        actor = resolve_model_string(spec)
        yield Backend(spec, actor, chosen or spec)
        return
    if args.model != "local" and getattr(args, "command", "") == "replay":
        observer: Any = chosen or extractive_observer()
        named = args.observer_model not in (None, "extractive")
        label = str(args.observer_model) if named else OBSERVER_LABEL
        say(f"No provider API key is set: memory runs on the {label}.")
        say(SWITCH_HINT)
        yield Backend(label, None, observer, EXTRACTIVE_THRESHOLDS, buffering=False)
        return
    say(
        f"No provider API key is set: running the small local model {local.MODEL_FILE} "
        "(offline, weak: a demo of the mechanics, not of quality)."
    )
    say(SWITCH_HINT)
    with local.start_local_server(n_ctx=LOCAL_CONTEXT) as server:
        actor = server.chat_model(max_tokens=160, temperature=0.3)
        if args.model == "local":
            observer = chosen or server.chat_model(max_tokens=300, temperature=0.3)
            label, thresholds = f"local {local.MODEL_FILE}", LOCAL_THRESHOLDS
        else:
            observer = chosen or extractive_observer()
            label = f"local {local.MODEL_FILE} (agent) + {OBSERVER_LABEL}"
            thresholds = EXTRACTIVE_THRESHOLDS
        yield Backend(label, actor, observer, thresholds, buffering=False)


_SETTINGS_NS = ("langchain_om", "cli")


def _no_model(ctx: RunContext) -> Any:
    """Model spec of a read-only memory (``inspect``): it never observes, so it never calls."""
    raise OMUsageError(f"this command reads memory only; it does not run the {ctx.role}")


def open_memory(
    args: argparse.Namespace, backend: Backend | None, on_event: Callable[[OMEvent], None] | None
) -> ObservationalMemory:
    """The memory for this run: one SQLite file, thresholds from the options.

    Thresholds: the options when given, else those this database was last used with (kept in
    its store), else the models' demo thresholds, else the library defaults.
    """
    probe = ObservationalMemory.from_sqlite(str(args.db), model=_no_model)
    try:
        item = probe.store.get(_SETTINGS_NS, "thresholds")
    finally:
        probe.close()
    saved: dict[str, Any] = dict(item.value) if item is not None else {}
    defaults = (backend.thresholds if backend else None) or (None, None)
    message_tokens = (
        getattr(args, "message_tokens", None) or saved.get("message_tokens") or defaults[0]
    )
    observation_tokens = (
        getattr(args, "observation_tokens", None) or saved.get("observation_tokens") or defaults[1]
    )
    observation: dict[str, Any] = {"failure_policy": "continue"}
    if backend is not None and not backend.buffering:
        observation["buffer_tokens"] = False
    reflection: dict[str, Any] = {}
    if message_tokens:
        observation["message_tokens"] = message_tokens
    if observation_tokens:
        reflection["observation_tokens"] = observation_tokens
    options: dict[str, Any] = {"observation": observation, "reflection": reflection}
    options["model"] = backend.memory_model if backend is not None else _no_model
    memory = ObservationalMemory.from_sqlite(str(args.db), on_debug_event=on_event, **options)
    if backend is not None:
        effective = {
            "message_tokens": memory.config.observation.message_tokens,
            "observation_tokens": memory.config.reflection.observation_tokens,
        }
        if effective != saved:
            memory.store.put(_SETTINGS_NS, "thresholds", effective)
    return memory


# --- output ----------------------------------------------------------------------------------


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
            self.say(f"  ! {what} failed{again}: {_clip(event.error, 160)}")
        elif isinstance(event, events.ThreadUpdateEvent):
            self.say(f"  · thread title: {event.new_title}")


# --- replay files ----------------------------------------------------------------------------


def _timestamp(value: Any, where: str) -> str:
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            moment = datetime.fromtimestamp(value, UTC)
        else:
            moment = datetime.fromisoformat(str(value))
    except (ValueError, OverflowError, OSError) as exc:
        raise ReplayFormatError(f"{where}: bad timestamp {value!r} ({exc})") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def _message(row: dict[str, Any], where: str, previous: list[BaseMessage]) -> BaseMessage:
    role = str(row.get("role", "")).lower()
    content = row.get("content", "")
    if not isinstance(content, str | list):
        raise ReplayFormatError(f"{where}: content must be a string or a list of content parts")
    meta = (
        {"langchain_om": {"ts": _timestamp(row["timestamp"], where)}} if "timestamp" in row else {}
    )
    ident = str(row.get("id") or f"replay-{uuid.uuid4().hex[:12]}")
    if role in ("user", "human"):
        return HumanMessage(content, id=ident, response_metadata=meta)
    if role == "system":
        return SystemMessage(content, id=ident, response_metadata=meta)
    if role in ("assistant", "ai"):
        calls = [
            {
                "name": str(call["name"]),
                "args": dict(call.get("args") or {}),
                "id": str(call.get("id") or f"call-{uuid.uuid4().hex[:12]}"),
                "type": "tool_call",
            }
            for call in row.get("tool_calls") or []
        ]
        return AIMessage(content, id=ident, tool_calls=calls, response_metadata=meta)
    if role == "tool":
        name = str(row.get("name") or "tool")
        return ToolMessage(
            content,
            id=ident,
            name=name,
            tool_call_id=_tool_call_id(row, name, where, previous),
            response_metadata=meta,
        )
    raise ReplayFormatError(f"{where}: role must be user, assistant or tool, not {role!r}")


def _tool_call_id(row: dict[str, Any], name: str, where: str, previous: list[BaseMessage]) -> str:
    """The call a tool result answers: given, the oldest open call, or one added to the AI turn."""
    if row.get("tool_call_id"):
        return str(row["tool_call_id"])
    answered = {m.tool_call_id for m in previous if isinstance(m, ToolMessage)}
    for message in reversed(previous):
        if isinstance(message, AIMessage):
            open_calls = [c["id"] for c in message.tool_calls if c["id"] not in answered]
            if open_calls and open_calls[0]:
                return str(open_calls[0])
            call_id = f"call-{uuid.uuid4().hex[:12]}"
            message.tool_calls.append(
                {"name": name, "args": {}, "id": call_id, "type": "tool_call"}
            )
            return call_id
        if isinstance(message, HumanMessage):
            break
    raise ReplayFormatError(f"{where}: a tool message must follow an assistant message")


def load_conversation(path: str | Path) -> list[BaseMessage]:
    """Read a JSONL conversation: one ``{"role", "content", "timestamp"?}`` object a line.

    Assistant lines may carry ``tool_calls`` (``[{"name", "args", "id"}]``) and tool lines
    ``name`` and ``tool_call_id``; a tool line without an id answers the open call before it.

    Raises:
        ReplayFormatError: a line is not valid JSON or not a message (the message says where).
    """
    messages: list[BaseMessage] = []
    for where, row in json_objects(path, ReplayFormatError):
        messages.append(_message(row, where, messages))
    return messages


# --- commands --------------------------------------------------------------------------------


def _summary(memory: ObservationalMemory, snap: ThreadSnapshot, max_lines: int | None) -> str:
    archived = len(memory.archived_messages(snap.thread_id))
    return render_text(snap, archived=archived, max_lines=max_lines)


def _actor_messages(snap: ThreadSnapshot) -> list[BaseMessage]:
    system = ACTOR_PROMPT
    if not snap.context.is_empty:
        system += "\n\n" + snap.context.text
    return [SystemMessage(system), *snap.window]


def _new_id(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex[:12]}"


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


CANCELLED_REPLY = "(reply cancelled by the user)"
"""Text of the assistant message that closes a turn whose reply was interrupted with Ctrl-C."""


def _enable_line_editing() -> None:
    """Arrow keys, Ctrl-A/E and the history of this session for ``input()`` on a terminal."""
    if not sys.stdin.isatty():
        return
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401, PLC0415 - importing it turns on input() line editing


def _read_line(prompt: str) -> str | None:
    """One line from the user; ``None`` at end of input (Ctrl-D). Ctrl-C clears the line."""
    while True:
        try:
            return input(prompt)
        except EOFError:
            return None
        except KeyboardInterrupt:
            print("^C", flush=True)  # a fresh prompt; Ctrl-D (or /quit) leaves


CHAT_HELP = "Commands: /status, /observations, /quit · Ctrl-C cancels a reply · Ctrl-D leaves"


def _chat_turn(
    args: argparse.Namespace,
    console: Console,
    backend: Backend,
    memory: ObservationalMemory,
    text: str,
) -> None:
    """One user turn: the reply, or a marked cancelled reply; the thread never stays unanswered."""
    thread, resource = args.thread, args.resource
    user = HumanMessage(text, id=_new_id("user"))
    snap = memory.add_messages(thread, [user], resource_id=resource)
    try:
        with Spinner("thinking"):
            answer = backend.agent().invoke(_actor_messages(snap))
        reply = AIMessage(answer.text, id=_new_id("assistant"))
        console.say(f"assistant> {reply.text}")
    except KeyboardInterrupt:
        reply = AIMessage(
            CANCELLED_REPLY,
            id=_new_id("assistant"),
            response_metadata={"langchain_om_cli": {"cancelled": True}},
        )
        console.say(f"assistant> {CANCELLED_REPLY}")
    except Exception as exc:  # keep the session alive; the turn is closed as failed
        console.say(f"! the model call failed: {type(exc).__name__}: {exc}")
        reply = AIMessage(
            f"(no reply: the model call failed with {type(exc).__name__})",
            id=_new_id("assistant"),
            response_metadata={"langchain_om_cli": {"failed": True}},
        )
    snap = memory.add_messages(thread, [reply], resource_id=resource)
    console.say(render_windows(snap.status) + f"  · generation {snap.record['generation']}")


def cmd_chat(args: argparse.Namespace, console: Console) -> int:
    """Interactive chat with memory; the windows are shown after each turn."""
    _enable_line_editing()
    with open_backend(args, console.say) as backend:
        with open_memory(args, backend, console.event) as memory:
            thread = args.thread
            snap = memory.status(thread_id=thread)
            console.say(f"Chatting with {backend.label} · thread {thread!r} · {args.db}")
            console.say(CHAT_HELP)
            console.say(render_windows(snap.status))
            while (line := _read_line("you> ")) is not None:
                text = line.strip()
                if not text:
                    continue
                if text in ("/quit", "/exit", "/q"):
                    break
                if text == "/status":
                    console.say(_summary(memory, memory.status(thread_id=thread), 0))
                elif text == "/observations":
                    snap = memory.status(thread_id=thread)
                    console.say(snap.observations or "(nothing observed yet)")
                elif text.startswith("/"):
                    console.say(CHAT_HELP)
                else:
                    _chat_turn(args, console, backend, memory, text)
            console.say("bye")
    return 0


def cmd_replay(args: argparse.Namespace, console: Console) -> int:
    """Feed a recorded conversation through memory, then print what memory holds."""
    messages = load_conversation(args.file)
    if not messages:
        console.say(f"{args.file} holds no messages.")
        return 1
    with open_backend(args, console.say) as backend:
        with open_memory(args, backend, console.event) as memory:
            console.say(
                f"Replaying {len(messages)} messages from {args.file} into thread "
                f"{args.thread!r} of {args.db} (memory model: {backend.label})"
            )
            snap = memory.status(thread_id=args.thread)
            started = time.monotonic()
            for done, message in enumerate(messages, start=1):
                snap = memory.add_messages(args.thread, [message], resource_id=args.resource)
                usage = snap.status
                note = (
                    f"window {usage.messages.tokens:,} tok · log {usage.observations.tokens:,} tok"
                    f" · {time.monotonic() - started:.0f}s"
                )
                console.progress(done, len(messages), note)
            memory.wait_for_background()
            snap = memory.status(thread_id=args.thread)
            console.say("\nWhat memory holds now:")
            console.say(_summary(memory, snap, args.max_lines))
    return 0


def cmd_inspect(args: argparse.Namespace, console: Console) -> int:
    """Print a thread's windows, log, generation and archive size (no model is called)."""
    if not Path(args.db).exists():
        console.say(f"No memory database at {args.db} (run `langchain-om replay` or `chat` first).")
        return 1
    with open_memory(args, None, None) as memory:
        threads = memory.list_threads()
        if args.thread not in threads:
            listed = ", ".join(repr(t) for t in threads) or "none"
            console.say(f"No thread {args.thread!r} in {args.db}. Threads: {listed}.")
            return 1
        snap = memory.status(thread_id=args.thread)
        if args.json:
            data = {
                "thread_id": snap.thread_id,
                "status": snap.status.to_part()["data"],
                "record": snap.record,
                "window_messages": len(snap.window),
                "archived_messages": len(memory.archived_messages(snap.thread_id)),
            }
            console.say(json.dumps(data, ensure_ascii=False, indent=2))
        else:
            console.say(_summary(memory, snap, args.max_lines))
    return 0


# --- entry point -----------------------------------------------------------------------------


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive number of tokens")
    return value


def _lines(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 (no log lines) or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (each subcommand takes the common options)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=DEFAULT_DB, help=f"SQLite file (default: {DEFAULT_DB})")
    common.add_argument("--thread", default=DEFAULT_THREAD, help="thread id (default: default)")
    common.add_argument(
        "--max-lines", type=_lines, default=None, help="show at most N log lines (0: none)"
    )
    models = argparse.ArgumentParser(add_help=False)
    models.add_argument("--resource", default=None, help="resource (user) id")
    models.add_argument("-v", "--verbose", action="store_true", help="show background work too")
    models.add_argument(
        "--model",
        help='e.g. "openai/gpt-5-mini", "google/gemini-2.5-flash"; "local": the bundled SmolLM2',
    )
    models.add_argument(
        "--observer-model",
        help='Observer/Reflector model (default: --model); "extractive": the offline Observer',
    )
    models.add_argument(
        "--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1"
    )
    models.add_argument("--scripted", action="store_true", help="offline scripted fake models")
    models.add_argument("--message-tokens", type=_positive, help="observe above this many tokens")
    models.add_argument("--observation-tokens", type=_positive, help="reflect above this many")

    parser = argparse.ArgumentParser(
        prog="langchain-om",
        description="Observational memory for LangChain: chat, replay, inspect.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"langchain-om {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    chat = sub.add_parser("chat", parents=[common, models], help="interactive chat with memory")
    chat.set_defaults(handler=cmd_chat)
    replay = sub.add_parser("replay", parents=[common, models], help="feed a JSONL conversation")
    replay.add_argument("file", help="JSONL file: one {role, content, timestamp?} object a line")
    replay.set_defaults(handler=cmd_replay)
    inspect = sub.add_parser("inspect", parents=[common], help="show what memory holds")
    inspect.add_argument("--json", action="store_true", help="print the record and status as JSON")
    inspect.set_defaults(handler=cmd_inspect)
    add_eval_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    Args:
        argv: the arguments (``sys.argv[1:]`` when None).
    """
    args = build_parser().parse_args(argv)
    console = Console(sys.stdout, verbose=getattr(args, "verbose", False))
    handler: Callable[[argparse.Namespace, Console], int] = args.handler
    try:
        return handler(args, console)
    except ObservationalMemoryError as exc:
        print(f"langchain-om: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:
        print(f"langchain-om: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
