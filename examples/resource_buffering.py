"""One memory per user across their threads, observed ahead in the background.

Resource scope (``scope="resource"``) keeps one observation log per user, shared by all their
threads. With ``observation.buffer_tokens`` set, the user's threads are observed ahead in the
background: the chunks wait in the user's shared record and are activated at the threshold
with no model call, exactly once, whichever thread gets there. The transform hooks run in
resource scope too, once per thread (here a hook hides card numbers from the Observer), and a
thread whose user came back after a long pause gets a time-gap reminder
(``temporal_markers``). Another user's threads never see any of it.

Runs offline with a scripted Observer.

    python examples/resource_buffering.py
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.events import ActivationEvent, BufferingEndEvent, OMEvent
from langchain_om.testing import memory_model

CARD = re.compile(r"\b\d{4} \d{4} \d{4} \d{4}\b")


def hide_cards(messages: Sequence[BaseMessage], ctx: Mapping[str, Any]) -> list[BaseMessage]:
    """``hooks.before_observation``: the Observer never reads a card number."""
    return [m.model_copy(update={"content": CARD.sub("[card]", m.text)}) for m in messages]


class Clock:
    """A clock this script moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


PLANS = [
    "I booked the ferry to Bergen for March 3, cabin 12.",
    "My sister Ana joins me in Bergen on March 5.",
    "Pay the hostel with card 4111 1111 1111 1111, please.",
    "We want to hike to Mount Floyen on March 6.",
    "The return ferry leaves Bergen on March 9 at 14:00.",
    "Ana is vegetarian, so book the dinner at Hanne's table.",
]

with tempfile.TemporaryDirectory() as folder:
    clock, events, observer = Clock(), list[OMEvent](), memory_model(words=6)
    memory = ObservationalMemory.from_sqlite(
        str(Path(folder) / "memory.db"),
        model=observer,
        scope="resource",
        message_tokens=160,
        buffer_tokens=0.3,  # set explicitly: resource scope buffers
        hooks={"before_observation": hide_cards},
        clock=clock,
        on_debug_event=events.append,
    )
    for i, text in enumerate(PLANS):  # Jo plans a trip over two threads
        thread = "trip-ferry" if i % 2 == 0 else "trip-people"
        reply = AIMessage(f"Noted: {text.lower()}")
        memory.add_messages(thread, [HumanMessage(text), reply], resource_id="jo")
        memory.wait_for_background()
        clock.now += timedelta(minutes=5)
    memory.add_messages("budget", [HumanMessage("My budget is 900 euros.")], resource_id="kim")
    memory.wait_for_background()

    buffered = [e for e in events if isinstance(e, BufferingEndEvent)]
    activated = [e for e in events if isinstance(e, ActivationEvent)]
    print("buffers stored:", len(buffered), "· chunks activated:", len(activated))
    shared = memory.get_context(thread_id="trip-people", resource_id="jo")[0].text
    print("jo's other thread sees the ferry:", "ferry" in shared.lower())
    read = [call.messages[-1].text for call in observer.calls]
    print("the Observer never read the card:", all("4111" not in text for text in read))
    kims = memory.get_context(thread_id="budget", resource_id="kim")
    print("kim's memory holds nothing of jo:", all("Bergen" not in m.text for m in kims))
    memory.close()
