"""The ``langchain-om`` command line: ``chat``, ``replay`` and ``inspect``.

- ``langchain-om chat`` — talk to a model with observational memory; after each turn the live
  token windows are shown. ``/status``, ``/observations``, ``/quit`` (or end of input).
- ``langchain-om replay FILE.jsonl`` — feed a recorded conversation (one JSON object a line:
  ``{"role": "user"|"assistant"|"tool", "content": ..., "timestamp": ...}``) through memory,
  with a progress bar, then print what memory holds. Replaying the same file again adds
  nothing (its messages are in the thread already: the same memory both times); ``--fresh``
  empties the thread first.
- ``langchain-om inspect`` — a thread's windows, observation log, generation and archive size:
  agent and graph threads from their checkpoint (``--checkpoint ID`` for an older one,
  ``--checkpoints`` to list them), standalone and history threads from the store.
- ``langchain-om eval`` — score memory against full context, a window and summarization.

Memory lives in one SQLite file (``--db``, default ``langchain-om.db`` in the working
directory) or a PostgreSQL database (``--db postgresql://...``, the ``postgres`` extra).
Models: ``--model provider/name`` (e.g. ``openai/gpt-5-mini``), ``--base-url`` for any
OpenAI-compatible server, ``--scripted`` for instant offline fakes, ``--model local`` for the
bundled SmolLM2 model (the ``local`` extra). With none of these, the models follow the
library's rule for a memory that names no model: the first default that can run here
(``google/gemini-2.5-flash`` with the ``google`` extra and ``GOOGLE_API_KEY``, then
``openai/gpt-5-mini`` with ``OPENAI_API_KEY``), else the offline extractive Observer
(:mod:`langchain_om.offline`), with ``chat`` answering through the local model.

Every error is one line on stderr with exit code 2 (a bug: exit code 1; set
``LANGCHAIN_OM_TRACEBACK=1`` to see its traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import NoReturn

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langchain_om._cli.backend import (
    EXTRACTIVE_THRESHOLDS,
    LOCAL_THRESHOLDS,
    SCRIPTED_THRESHOLDS,
    Backend,
    open_backend,
    open_memory,
)
from langchain_om._cli.console import (
    Console,
    Spinner,
    enable_line_editing,
    notices_through,
    one_line,
    plural,
    read_line,
)
from langchain_om._cli.inspection import inspect_thread, summary
from langchain_om._cli.replay import ReplayFormatError, load_conversation
from langchain_om._cli.storage import CLIError, check_db, shown
from langchain_om.config import ObservationConfig, ReflectionConfig
from langchain_om.display import render_windows
from langchain_om.engine import ObservationalMemory, ThreadSnapshot
from langchain_om.errors import ObservationalMemoryError
from langchain_om.eval.cli import add_eval_command
from langchain_om.events import StatusEvent

__all__ = ["ReplayFormatError", "load_conversation", "main"]

DEFAULT_DB = "langchain-om.db"
DEFAULT_THREAD = "default"
ACTOR_PROMPT = "You are a helpful assistant. Answer briefly and concretely."
TRACEBACK_ENV = "LANGCHAIN_OM_TRACEBACK"
"""Set to 1 to see the traceback of an unexpected error (a bug) instead of its one line."""


EPILOG = """examples:
  langchain-om replay examples/data/demo.jsonl   # no model can run here: the offline Observer
  langchain-om replay examples/data/demo.jsonl --fresh   # empty the thread, then replay
  langchain-om replay examples/data/demo.jsonl --model local   # the bundled SmolLM2 model
  langchain-om replay examples/data/demo.jsonl --scripted --message-tokens 200
  langchain-om chat --model openai/gpt-5-mini     # with OPENAI_API_KEY set
  langchain-om chat --base-url http://127.0.0.1:8080/v1
  langchain-om inspect --thread default
  langchain-om inspect --db postgresql://app@db:5432/app --thread maya --checkpoints
  langchain-om eval --format locomo --data examples/data/eval/locomo_synthetic.json --scripted
"""


def _over_notes(memory: ObservationalMemory, status: StatusEvent) -> list[str]:
    """Why a window shows more tokens than its threshold (``51 / 40 tokens``)."""
    notes: list[str] = []
    config = memory.config
    messages, log = status.messages, status.observations
    if messages.tokens > messages.threshold:
        limit = config.observation.block_after_tokens
        why = (
            "buffered observations are activated at the threshold and the rest waits for the "
            "next background observation"
            if config.buffering_enabled
            else "the last observation failed or is backing off"
        )
        notes.append(
            f"  (messages over {messages.threshold:,}: {why}; memory observes in the turn above "
            f"{limit:,} tokens, observation.block_after)"
        )
    if log.tokens > log.threshold:
        limit = config.reflection.block_after_tokens
        why = (
            "the Reflector condenses the log in the background"
            if config.buffering_enabled and config.scope == "thread"
            else "the last reflection failed or is backing off"
        )
        notes.append(
            f"  (observations over {log.threshold:,}: {why}; memory reflects in the turn above "
            f"{limit:,} tokens, reflection.block_after)"
        )
    return notes


def _windows(memory: ObservationalMemory, status: StatusEvent) -> str:
    return "\n".join([render_windows(status), *_over_notes(memory, status)])


def _summary(memory: ObservationalMemory, snap: ThreadSnapshot, max_lines: int | None) -> str:
    return "\n".join([summary(memory, snap, max_lines), *_over_notes(memory, snap.status)])


def _actor_messages(snap: ThreadSnapshot) -> list[BaseMessage]:
    system = ACTOR_PROMPT
    if not snap.context.is_empty:
        system += "\n\n" + snap.context.text
    return [SystemMessage(system), *snap.window]


def _new_id(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex[:12]}"


CANCELLED_REPLY = "(reply cancelled by the user)"
"""Text of the assistant message that closes a turn whose reply was interrupted with Ctrl-C."""


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
        console.say(f"! the model call failed: {type(exc).__name__}: {one_line(exc)}")
        reply = AIMessage(
            f"(no reply: the model call failed with {type(exc).__name__})",
            id=_new_id("assistant"),
            response_metadata={"langchain_om_cli": {"failed": True}},
        )
    snap = memory.add_messages(thread, [reply], resource_id=resource)
    console.say(_windows(memory, snap.status) + f"  · generation {snap.record['generation']}")


def cmd_chat(args: argparse.Namespace, console: Console) -> int:
    """Interactive chat with memory; the windows are shown after each turn."""
    enable_line_editing()
    check_db(args.db, read_only=False)
    with open_backend(args, console.say) as backend:
        with open_memory(args, backend, console.event) as memory:
            thread = args.thread
            snap = memory.status(thread_id=thread)
            console.say(f"Chatting with {backend.label} · thread {thread!r} · {shown(args.db)}")
            console.say(CHAT_HELP)
            console.say(_windows(memory, snap.status))
            while (line := read_line("you> ")) is not None:
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


def _held_ids(memory: ObservationalMemory, thread: str) -> list[str]:
    """Ids of the messages the thread holds (archive, then window), oldest first."""
    snap = memory.status(thread_id=thread)
    held = [*memory.archived_messages(thread), *snap.window]
    return [m.id for m in held if m.id]


def _to_replay(
    args: argparse.Namespace,
    console: Console,
    memory: ObservationalMemory,
    messages: list[BaseMessage],
) -> list[BaseMessage]:
    """The file's messages the thread does not hold yet (all of them after ``--fresh``).

    A message is known by its id, and a file gives the same ids on every read, so the same file
    replayed again adds nothing: the thread keeps the memory of the first replay.
    """
    if args.fresh:
        memory.forget(thread_id=args.thread)
        return messages
    held = set(_held_ids(memory, args.thread))
    if not held:
        return messages
    todo = [m for m in messages if m.id not in held]
    mine = len(messages) - len(todo)
    others = len(held - {m.id for m in messages})
    where = f"Thread {args.thread!r} of {shown(args.db)}"
    if not todo:
        console.say(
            f"{where} already holds all {plural(len(messages), 'message')} of {args.file}: "
            "nothing to add, memory is as the first replay left it (--fresh empties the thread "
            "and replays the file again)."
        )
    elif mine:
        console.say(
            f"{where} already holds {mine:,} of the file's messages (an earlier replay): adding "
            f"the other {plural(len(todo), 'message')} (--fresh replays the whole file afresh)."
        )
    if others and todo:
        console.say(
            f"{where} already holds {plural(others, 'other message')}: the file's are added "
            "after them (--fresh empties the thread first; --thread NAME uses another thread)."
        )
    return todo


def cmd_replay(args: argparse.Namespace, console: Console) -> int:
    """Feed a recorded conversation through memory, then print what memory holds."""
    messages = load_conversation(args.file)
    if not messages:
        raise CLIError(f"{args.file} holds no messages: one JSON object a line is expected.")
    check_db(args.db, read_only=False)
    with open_backend(args, console.say) as backend:
        with open_memory(args, backend, console.event) as memory:
            todo = _to_replay(args, console, memory, messages)
            if todo:
                console.say(
                    f"Replaying {plural(len(todo), 'message')} from {args.file} into thread "
                    f"{args.thread!r} of {shown(args.db)} (memory model: {backend.label})"
                )
            started = time.monotonic()
            for done, message in enumerate(todo, start=1):
                snap = memory.add_messages(args.thread, [message], resource_id=args.resource)
                usage = snap.status
                note = (
                    f"window {usage.messages.tokens:,} tok · log {usage.observations.tokens:,} tok"
                    f" · {time.monotonic() - started:.0f}s"
                )
                console.progress(done, len(todo), note)
            memory.wait_for_background()
            snap = memory.status(thread_id=args.thread)
            console.say("\nWhat memory holds now:")
            console.say(_summary(memory, snap, args.max_lines))
            if console.failed_cycles:
                console.say(
                    f"({plural(console.failed_cycles, 'memory cycle')} failed, see above: "
                    "nothing was lost, what they did not observe or condense is still there)"
                )
    return 0


def cmd_inspect(args: argparse.Namespace, console: Console) -> int:
    """Print a thread's windows, log, generation and archive size (no model is called).

    Agent and graph threads come from their checkpoint, standalone and history threads from
    the store; the threads are listed when the thread is not found.
    """
    with open_memory(args, None, None) as memory:
        return inspect_thread(memory, args, console.say)


# --- entry point -----------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (with where to find the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of tokens") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive number of tokens")
    return value


def _lines(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 (no log lines) or more")
    return value


def _identifier(what: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"the {what} id must not be empty")
        return text

    parse.__name__ = f"{what} id"
    return parse


def _threshold_help(action: str, role: int, library: object) -> str:
    return (
        f"{action} (default: what this --db was last used with, else "
        f"{SCRIPTED_THRESHOLDS[role]:,} with --scripted, {EXTRACTIVE_THRESHOLDS[role]:,} with "
        f"the offline Observer, {LOCAL_THRESHOLDS[role]:,} with --model local, the "
        f"library's {library:,} otherwise)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (each subcommand takes the common options)."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--db",
        default=DEFAULT_DB,
        help=f"a SQLite file or a postgresql:// URL (default: {DEFAULT_DB})",
    )
    common.add_argument(
        "--thread",
        default=DEFAULT_THREAD,
        type=_identifier("thread"),
        help="thread id (default: default)",
    )
    common.add_argument(
        "--max-lines", type=_lines, default=None, help="show at most N log lines (0: none)"
    )
    models = _Parser(add_help=False)
    models.add_argument(
        "--resource", default=None, type=_identifier("resource"), help="resource (user) id"
    )
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
    models.add_argument(
        "--message-tokens",
        type=_positive,
        help=_threshold_help(
            "observe above this many message tokens",
            0,
            ObservationConfig.model_fields["message_tokens"].default,
        ),
    )
    models.add_argument(
        "--observation-tokens",
        type=_positive,
        help=_threshold_help(
            "reflect above this many log tokens",
            1,
            ReflectionConfig.model_fields["observation_tokens"].default,
        ),
    )

    parser = _Parser(
        prog="langchain-om",
        description="Observational memory for LangChain: chat, replay, inspect, eval.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"langchain-om {version('langchain-om')}"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{chat,replay,inspect,eval}")
    chat = sub.add_parser("chat", parents=[common, models], help="interactive chat with memory")
    chat.set_defaults(handler=cmd_chat)
    replay = sub.add_parser(
        "replay",
        parents=[common, models],
        help="feed a JSONL conversation (again: adds nothing; --fresh: start over)",
    )
    replay.add_argument("file", help="JSONL file: one {role, content, timestamp?} object a line")
    replay.add_argument(
        "--fresh",
        action="store_true",
        help="empty the thread first (default: add only the file's messages it does not hold)",
    )
    replay.set_defaults(handler=cmd_replay)
    inspect = sub.add_parser("inspect", parents=[common], help="show what memory holds")
    inspect.add_argument("--json", action="store_true", help="print the record and status as JSON")
    inspect.add_argument(
        "--receipts",
        action="store_true",
        help="show each observation line's source messages and the tokens saved",
    )
    shown_checkpoint = inspect.add_mutually_exclusive_group()
    shown_checkpoint.add_argument(
        "--checkpoint",
        default=None,
        help="an agent or graph thread's older checkpoint id (default: the latest)",
    )
    shown_checkpoint.add_argument(
        "--checkpoints", action="store_true", help="list the thread's checkpoints, newest first"
    )
    inspect.set_defaults(handler=cmd_inspect)
    add_eval_command(sub)
    return parser


def _fail(exc: BaseException) -> int:
    text = one_line(exc)
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"  # "nope.json: No such file or directory"
    print(f"langchain-om: {text}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    Every error is one line on stderr: exit code 2 for a mistake or an unreachable resource,
    1 for an unexpected error (``LANGCHAIN_OM_TRACEBACK=1`` shows its traceback), 130 for
    Ctrl-C.

    Args:
        argv: the arguments (``sys.argv[1:]`` when None).
    """
    args = build_parser().parse_args(argv)
    console = Console(sys.stdout, verbose=getattr(args, "verbose", False))
    handler: Callable[[argparse.Namespace, Console], int] = args.handler
    try:
        with notices_through(console):
            return handler(args, console)
    except ObservationalMemoryError as exc:
        return _fail(exc)
    except BrokenPipeError:
        return 0
    except OSError as exc:
        return _fail(exc)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get(TRACEBACK_ENV) == "1":
            raise
        print(
            f"langchain-om: unexpected {type(exc).__name__}: {one_line(exc)} (a bug; set "
            f"{TRACEBACK_ENV}=1 for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
