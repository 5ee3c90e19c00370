"""Message ids: every message memory keeps carries one.

Buffered chunks, observation groups, the archive index and resource scope's observed sets
find messages by id, so a message written without one is given one where it enters a
thread: a fresh uuid4 string (the form LangGraph's ``add_messages`` reducer gives), on a copy
(the caller's object is never changed). A thread stored before this held may keep id-less
messages; they get ids derived from their thread and position, the same on every read until
the window is saved with them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from langchain_om._core.record import stable_id

__all__ = ["new_message_id", "stored_with_ids", "window_ids", "with_ids"]


def new_message_id() -> str:
    """A fresh message id, unique across threads and processes (``str(uuid4())``)."""
    return str(uuid.uuid4())


def _with_id(message: BaseMessage, message_id: str) -> BaseMessage:
    """A copy of ``message`` with ``message_id`` (deep: stamping the copy leaves the original)."""
    return message.model_copy(update={"id": message_id}, deep=True)


def with_ids(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with a fresh id on a copy of each message that has none (others as given)."""
    return [m if m.id else _with_id(m, new_message_id()) for m in messages]


def stored_with_ids(
    window: Sequence[BaseMessage], *, thread_id: str, first_seq: int
) -> list[BaseMessage]:
    """A stored window whose id-less messages get ids derived from where they are.

    ``first_seq`` is the archive position of ``window[0]`` (the record's observed count): a
    message keeps its position until it is observed, so every read of the same stored state
    gives it the same id, and no two positions of a thread share one.
    """
    return [
        m if m.id else _with_id(m, "om-" + stable_id("message", thread_id, first_seq + k))
        for k, m in enumerate(window)
    ]


def window_ids(messages: Sequence[BaseMessage]) -> list[str]:
    """The ids of ``messages``, which all carry one (turns give every window message an id).

    Raises:
        ValueError: a message has no id (keying it by an empty string would make every
            id-less message the same one).
    """
    ids: list[str] = []
    for message in messages:
        if not message.id:
            raise ValueError("a window message has no id; turns give every message one")
        ids.append(message.id)
    return ids
