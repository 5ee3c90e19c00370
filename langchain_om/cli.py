"""The ``langchain-om`` command line: ``chat``, ``replay`` and ``inspect``.

- ``langchain-om chat`` — talk to a model with observational memory; after each turn the live
  token windows are shown. ``/status``, ``/observations``, ``/quit`` (or end of input).
- ``langchain-om replay FILE.jsonl`` — feed a recorded conversation (one JSON object a line:
  ``{"role": "user"|"assistant"|"tool", "content": ..., "timestamp": ...}``) through memory,
  with a progress bar, then print what memory holds.
- ``langchain-om inspect`` — a thread's windows, observation log, generation and archive size:
  agent and graph threads from their checkpoint (``--checkpoint ID`` for an older one),
  standalone and history threads from the store.

Memory lives in one SQLite file (``--db``, default ``langchain-om.db`` in the working
directory). Models: ``--model provider/name`` (e.g. ``openai/gpt-5-mini``), ``--base-url`` for
any OpenAI-compatible server, ``--scripted`` for instant offline fakes, ``--model local`` for
the bundled SmolLM2 model (the ``local`` extra). With none of these and no provider API key
set, ``replay`` runs on the offline extractive Observer (:mod:`langchain_om.offline`) and
``chat`` answers with the local model and observes with the extractive Observer.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from langchain_om._cli_backend import Backend, open_backend, open_memory
from langchain_om._cli_console import Console, Spinner, enable_line_editing, read_line
from langchain_om._cli_receipts import receipts_data, receipts_text
from langchain_om._cli_replay import ReplayFormatError, load_conversation
from langchain_om._version import __version__
from langchain_om.display import render_text, render_windows
from langchain_om.engine import ObservationalMemory, ThreadSnapshot
from langchain_om.errors import ObservationalMemoryError
from langchain_om.eval.cli import add_eval_command

__all__ = ["ReplayFormatError", "load_conversation", "main"]

DEFAULT_DB = "langchain-om.db"
DEFAULT_THREAD = "default"
ACTOR_PROMPT = "You are a helpful assistant. Answer briefly and concretely."


EPILOG = """examples:
  langchain-om replay examples/data/demo.jsonl   # no API key set: the offline Observer
  langchain-om replay examples/data/demo.jsonl --model local   # the bundled SmolLM2 model
  langchain-om replay examples/data/demo.jsonl --scripted --message-tokens 200
  langchain-om chat --model openai/gpt-5-mini     # with OPENAI_API_KEY set
  langchain-om chat --base-url http://127.0.0.1:8080/v1
  langchain-om inspect --thread default
"""


def _summary(memory: ObservationalMemory, snap: ThreadSnapshot, max_lines: int | None) -> str:
    return render_text(snap, archived=_archived(memory, snap), max_lines=max_lines)


def _archived(memory: ObservationalMemory, snap: ThreadSnapshot) -> int:
    """Archived messages of the snapshot's branch (a checkpoint's record names its own)."""
    record = snap.record if snap.source == "checkpoint" else None
    return len(memory.archived_messages(snap.thread_id, record=record))


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
    enable_line_editing()
    with open_backend(args, console.say) as backend:
        with open_memory(args, backend, console.event) as memory:
            thread = args.thread
            snap = memory.status(thread_id=thread)
            console.say(f"Chatting with {backend.label} · thread {thread!r} · {args.db}")
            console.say(CHAT_HELP)
            console.say(render_windows(snap.status))
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
    """Print a thread's windows, log, generation and archive size (no model is called).

    Agent and graph threads come from their checkpoint, standalone and history threads from
    the store; both are listed when the thread is not found.
    """
    if not Path(args.db).exists():
        console.say(f"No memory database at {args.db} (run `langchain-om replay` or `chat` first).")
        return 1
    with open_memory(args, None, None) as memory:
        threads = memory.list_threads()
        if args.thread not in threads:
            listed = ", ".join(repr(t) for t in threads) or "none"
            console.say(f"No thread {args.thread!r} in {args.db}. Threads: {listed}.")
            return 1
        snap = memory.status(thread_id=args.thread, checkpoint_id=args.checkpoint)
        if args.json:
            data = {
                "thread_id": snap.thread_id,
                "source": snap.source,
                "checkpoint_id": snap.checkpoint_id,
                "status": snap.status.to_part()["data"],
                "record": snap.record,
                "extracted": snap.extracted,
                "window_messages": len(snap.window),
                "archived_messages": _archived(memory, snap),
            }
            if args.receipts:
                data["receipts"] = receipts_data(memory, snap)
            console.say(json.dumps(data, ensure_ascii=False, indent=2))
        else:
            console.say(_summary(memory, snap, args.max_lines))
            if args.receipts:
                console.say(receipts_text(memory, snap))
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
    inspect.add_argument(
        "--receipts",
        action="store_true",
        help="show each observation line's source messages and the tokens saved",
    )
    inspect.add_argument(
        "--checkpoint",
        default=None,
        help="an agent or graph thread's older checkpoint id (default: the latest)",
    )
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
