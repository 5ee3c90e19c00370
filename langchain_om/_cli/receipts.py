"""``langchain-om inspect --receipts``: each observation line with the messages it came from.

The receipts are read from the snapshot's record (its branch: a checkpoint names its own) and
the thread's archive; nothing is written and no model is called.
"""

from __future__ import annotations

from typing import Any

from langchain_om._core.line_edits import line_id
from langchain_om._core.receipts import line_spans, savings
from langchain_om._engine.io import ThreadSnapshot
from langchain_om.engine import ObservationalMemory

__all__ = ["receipts_data", "receipts_text"]


def receipts_data(memory: ObservationalMemory, snap: ThreadSnapshot) -> list[dict[str, Any]]:
    """Per observation line of the live log: its id, text and source message ids."""
    record = snap.record
    archived = memory.archived_messages(
        snap.thread_id, record=record if snap.source == "checkpoint" else None
    )
    out: list[dict[str, Any]] = []
    for group in record["groups"]:
        for index, line in enumerate(group["text"].splitlines()):
            text = line.strip()
            if not text or text.startswith("Date:"):
                continue
            spans = line_spans(group, index)
            ids = [
                archived[p].id
                for lo, hi in spans
                for p in range(lo, min(hi, len(archived)))
                if 0 <= p
            ]
            out.append(
                {
                    "line_id": line_id(group["id"], index),
                    "group_id": group["id"],
                    "text": text,
                    "message_ids": ids,
                }
            )
    return out


def receipts_text(memory: ObservationalMemory, snap: ThreadSnapshot) -> str:
    """The receipts as lines for the terminal, then what memory saves."""
    rows = []
    for row in receipts_data(memory, snap):
        ids = row["message_ids"]
        where = f"{ids[0]} … {ids[-1]} ({len(ids)} messages)" if ids else "no receipt"
        rows.append(f"{row['line_id']}  {where}\n    {row['text']}")
    found = savings(snap.record)
    rows.append(
        f"Tokens saved: {found.tokens_saved} (messages observed {found.observed_tokens}, "
        f"memory shown {found.context_tokens})"
    )
    return "Receipts (observation line → source messages):\n" + "\n".join(rows)
