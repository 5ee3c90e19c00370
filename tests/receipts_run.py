"""A scripted run whose Observer writes down which messages each of its calls was shown.

Every message carries its id in its text (``[m0042]``). The Observer parses the messages
under "New Messages to Observe", remembers their ids per call and writes lines that name only
the call (``cycle 7 line 2 …``), never a message. So for any line, the messages its cycle
observed are known from the Observer's own log, independently of memory's bookkeeping: a
receipt is right when it names exactly those.

Memory keeps only observation lines grounded in the messages they observe, and stops a reply
that repeats one line: so every message shares the words of :data:`TOPICS`, and the three
lines of a cycle each say something different with them (no line names a message).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.testing import FunctionChatModel, RecordedCall

TAG = re.compile(r"\[(m\d{4})\]")
LINE = re.compile(r"cycle (\d+) line \d+")

TOPICS = "about my garden, kitchen, bicycle, library, piano and travel"
"""Words every message holds, so the Observer's lines are grounded in any batch."""

CLAIMS = (
    "noted the garden and kitchen facts",
    "covers the bicycle and library details",
    "adds piano and travel plans",
)
"""What line ``k`` of every cycle says (three different claims: a reply is no loop)."""


@dataclass
class ObserverLog:
    """Per Observer call (by its ``cycle`` number): the ids of the messages it was shown."""

    calls: dict[int, list[str]] = field(default_factory=dict)

    def model(self) -> FunctionChatModel:
        """The Observer (and Reflector: it keeps each cycle's first line) that fills this log."""

        def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
            prompt = messages[-1].text if messages else ""
            if "## Observations to Condense" in prompt:  # reflections keep the 🔴 lines
                body = prompt.split("## Observations to Condense", 1)[1].split("\n## ", 1)[0]
                kept = [line for line in body.splitlines() if "🔴" in line or "Date:" in line]
                return "<observations>\n" + "\n".join(dict.fromkeys(kept)) + "\n</observations>"
            shown = prompt.split("## New Messages to Observe", 1)[-1]
            for stop in ("\n---", "\n## "):
                shown = shown.split(stop, 1)[0]
            cycle = len(self.calls)
            self.calls[cycle] = TAG.findall(shown)
            lines = "\n".join(
                f"* {'🔴' if k == 0 else '🟡'} (09:00) cycle {cycle} line {k} {claim}"
                for k, claim in enumerate(CLAIMS)
            )
            return (
                f"<observations>\nDate: Nov 30, 2026\n{lines}\n</observations>\n"
                "<current-task>Keep talking</current-task>"
            )

        return FunctionChatModel(function=reply, model_name="receipt-observer")


def turn(i: int) -> list[BaseMessage]:
    """Turn ``i``: a user message and a reply, each naming its own id."""
    user, reply = f"m{2 * i:04d}", f"m{2 * i + 1:04d}"
    return [
        HumanMessage(f"[{user}] I tell you fact {i} {TOPICS}. " + "detail " * 24, id=user),
        AIMessage(f"[{reply}] Noted fact {i} {TOPICS}. " + "ok " * 4, id=reply),
    ]


def actor(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
    """The agent's model: answers the last user message, naming the reply's id."""
    last = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
    number = int(str(last.id)[1:]) + 1
    reply_id = f"m{number:04d}"
    return AIMessage(f"[{reply_id}] Noted {TOPICS}. " + "ok " * 4, id=reply_id)


def all_lines(record: Mapping[str, Any]) -> list[str]:
    """Every observation line of a record's live log."""
    return [
        line.strip()
        for group in record["groups"]
        for line in group["text"].splitlines()
        if LINE.search(line)
    ]


def check_receipts(
    log: ObserverLog,
    lines: list[str],
    receipt: Callable[[str], dict[str, Any]],
    *,
    sample: int,
    seed: int,
) -> int:
    """Check ``sample`` random lines: each receipt names exactly its cycle's messages.

    Returns how many lines were checked (all of them when there are fewer).
    """
    rng = random.Random(seed)
    chosen = rng.sample(lines, min(sample, len(lines)))
    for text in chosen:
        match = LINE.search(text)
        assert match is not None
        expected = log.calls[int(match.group(1))]
        got = receipt(text)
        assert got["message_ids"] == expected, (text, got["message_ids"], expected)
        assert got["message_count"] == len(expected)
    return len(chosen)


def receipts_memory(log: ObserverLog, **options: Any) -> ObservationalMemory:
    """A memory on the logging Observer (no reflection unless ``options`` ask for it)."""
    settings: dict[str, Any] = {
        "model": log.model(),
        "observation": {"message_tokens": 400, "buffer_tokens": False},
        "reflection": {"observation_tokens": 1_000_000},
        "retrieval": True,
        "sleep": lambda s: None,
    }
    settings.update(options)
    return ObservationalMemory(**settings)
