"""``langchain-om inspect``: what memory holds for a thread, read without calling any model.

Agent and graph threads are read from their checkpoints (the latest, or ``--checkpoint ID``;
``--checkpoints`` lists them), standalone and history threads from the store. The database is
a SQLite file or a PostgreSQL URL (``--db``); nothing in it is created or changed.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig

from langchain_om._cli.console import plural
from langchain_om._cli.receipts import receipts_data, receipts_text
from langchain_om._cli.storage import CLIError, shown
from langchain_om.display import render_text
from langchain_om.engine import ObservationalMemory, ThreadSnapshot

CHECKPOINTS_SHOWN = 50
"""Checkpoints ``--checkpoints`` lists (the newest; the total is given)."""


def archived_count(memory: ObservationalMemory, snap: ThreadSnapshot) -> int:
    """Archived messages of the snapshot's branch (a checkpoint's record names its own)."""
    record = snap.record if snap.source == "checkpoint" else None
    return len(memory.archived_messages(snap.thread_id, record=record))


def summary(memory: ObservationalMemory, snap: ThreadSnapshot, max_lines: int | None) -> str:
    """The thread as text: windows, log, generation and archive size."""
    return render_text(snap, archived=archived_count(memory, snap), max_lines=max_lines)


def _checkpoints(memory: ObservationalMemory, thread: str) -> list[Any]:
    """The thread's checkpoint tuples, newest first, every namespace (empty: not a graph's)."""
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    return list(memory.checkpointer.list(config))


def _checkpoint_line(found: Any, latest: bool) -> str:
    checkpoint, metadata = found.checkpoint, found.metadata or {}
    values = checkpoint.get("channel_values") or {}
    messages = values.get("messages")
    record = values.get("om_record") if isinstance(values.get("om_record"), dict) else None
    stamp = str(checkpoint.get("ts") or "")[:19].replace("T", " ")
    parts = [f"{checkpoint['id']}  {stamp}", f"step {metadata.get('step', '?')}"]
    if metadata.get("source"):
        parts[-1] += f" ({metadata['source']})"
    namespace = found.config.get("configurable", {}).get("checkpoint_ns") or ""
    if namespace:
        parts.append(f"namespace {namespace}")
    if isinstance(messages, list):
        parts.append(plural(len(messages), "message"))
    if record is not None:
        parts.append(f"generation {record.get('generation', 0)}")
        parts.append(f"{record.get('observed_message_count', 0)} observed")
    line = " · ".join(parts)
    return line + ("  (latest)" if latest else "")


def _list_checkpoints(
    memory: ObservationalMemory, args: argparse.Namespace, say: Callable[[str], None]
) -> int:
    found = _checkpoints(memory, args.thread)
    if not found:
        say(
            f"Thread {args.thread!r} is kept in the store (standalone or history calls), not "
            "in checkpoints: it has none to list."
        )
        return 0
    say(f"Checkpoints of thread {args.thread!r} in {shown(args.db)}, newest first:")
    for index, item in enumerate(found[:CHECKPOINTS_SHOWN]):
        say("  " + _checkpoint_line(item, latest=index == 0))
    if len(found) > CHECKPOINTS_SHOWN:
        say(f"  … and {len(found) - CHECKPOINTS_SHOWN:,} older ones")
    say(f"Show one with: langchain-om inspect --thread {args.thread} --checkpoint ID")
    return 0


def _check_checkpoint(memory: ObservationalMemory, args: argparse.Namespace) -> None:
    found = _checkpoints(memory, args.thread)
    hint = f"`langchain-om inspect --thread {args.thread} --checkpoints` lists them"
    if not found:
        raise CLIError(
            f"Thread {args.thread!r} is kept in the store (standalone or history calls), so it "
            "has no checkpoints: leave out --checkpoint."
        )
    if all(item.checkpoint["id"] != args.checkpoint for item in found):
        raise CLIError(
            f"No checkpoint {args.checkpoint!r} in thread {args.thread!r} of {shown(args.db)}: "
            f"{hint}."
        )


def inspect_thread(
    memory: ObservationalMemory, args: argparse.Namespace, say: Callable[[str], None]
) -> int:
    """Print the thread (``--json``: as JSON), or list its checkpoints (``--checkpoints``).

    Raises:
        CLIError: the database holds no such thread, or no such checkpoint of it.
    """
    threads = memory.list_threads()
    if args.thread not in threads:
        listed = ", ".join(repr(t) for t in threads) or "none"
        raise CLIError(f"No thread {args.thread!r} in {shown(args.db)}. Threads: {listed}.")
    if args.checkpoints:
        return _list_checkpoints(memory, args, say)
    if args.checkpoint is not None:
        _check_checkpoint(memory, args)
    snap = memory.status(thread_id=args.thread, checkpoint_id=args.checkpoint)
    receipts = bool(getattr(args, "receipts", False))
    if not args.json:
        say(summary(memory, snap, args.max_lines))
        if receipts:
            say(receipts_text(memory, snap))
        return 0
    data: dict[str, object] = {
        "thread_id": snap.thread_id,
        "source": snap.source,
        "checkpoint_id": snap.checkpoint_id,
        "title": snap.title,
        "title_pinned": snap.title_pinned,
        "status": snap.status.to_part()["data"],
        "record": snap.record,
        "extracted": snap.extracted,
        "window_messages": len(snap.window),
        "archived_messages": archived_count(memory, snap),
    }
    if receipts:
        data["receipts"] = receipts_data(memory, snap)
    say(json.dumps(data, ensure_ascii=False, indent=2))
    return 0
