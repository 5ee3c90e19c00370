"""Every way an Observer or Reflector reply can be unusable fails its cycle with a reason code.

One table row per failure kind: the scripted model answers badly twice; the test checks the
reason code in the failed event and in the end hook, that the messages stay in the window, and
that the second call carried the format reminder.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om._core.acceptance import format_reminder
from langchain_om.events import OMEvent
from langchain_om.testing import ScriptedChatModel, memory_model, server_error
from tests import integrity_examples as ex
from tests.helpers import FIXED, archived_ids

GOOD = (
    "<observations>\nDate: Nov 30, 2026\n* 🔴 (09:00) User is moving to Porto in May\n"
    "</observations>"
)

PROMPT_ECHO = """\
## Your Task
Extract observations from the new messages.
## New Messages to Observe
## Previous Observations
"""

_HTML = (
    "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><center>"
    "<h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>"
)

OBSERVER_CASES: list[tuple[str, Any, str]] = [
    ("empty-string", "", "empty"),
    ("empty-block", "<observations>\n</observations>", "empty"),
    ("refusal", "I'm sorry, but I can't help with that request.", "unparseable"),
    ("html-502", _HTML, "unparseable"),
    ("json", '{"observations": [{"priority": "high", "text": "User moves"}]}', "unparseable"),
    ("echo", PROMPT_ECHO, "echo"),
    ("oversized", None, "oversized"),
    ("loop-with-times", f"<observations>\n{ex.CAROLINE_LOOP}\n</observations>", "degenerate"),
    ("loop-with-numbers", None, "degenerate"),
    ("model-error", server_error(), "model-error"),
]

NUMBER_LOOP = (
    "<observations>\n"
    + "\n".join(f"* 🟡 (10:{i:02d}) Item {i} was checked again." for i in range(40))
    + "\n</observations>"
)


def _memory(
    observer: Any, reflector: Any, sink: list[Any], *, log_tokens: int = 400
) -> ObservationalMemory:
    return ObservationalMemory(
        observation={
            "model": observer,
            "message_tokens": 300,
            "buffer_tokens": False,
            "failure_policy": "continue",
        },
        reflection={"model": reflector, "observation_tokens": log_tokens},
        hooks={"on_observation_end": sink.append, "on_reflection_end": sink.append},
        clock=lambda: FIXED,
        sleep=lambda s: None,
    )


def _turn(i: int) -> list[BaseMessage]:
    return [
        HumanMessage(f"Turn {i}: I am planning the move to Porto, step {i}. " * 4, id=f"h{i}"),
        AIMessage(f"Noted step {i} of the move, and the budget of {i * 100} euros.", id=f"a{i}"),
    ]


def _many() -> list[BaseMessage]:
    """A batch that says every fact of ``LOG_MOVE``, so that log is a grounded observation."""
    return ex.messages_saying(ex.LOG_MOVE)


def _human_text(message: BaseMessage) -> str:
    return message.text if isinstance(message.text, str) else str(message.text)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [pytest.param(r, code, id=name) for name, r, code in OBSERVER_CASES],
)
def test_observer_failure_has_its_reason_everywhere(
    reply: Any, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    if reply is None:
        reply = NUMBER_LOOP if reason == "degenerate" else ex.oversized_reply()
    observer = ScriptedChatModel(script=[reply, reply])
    ends: list[Any] = []
    events: list[OMEvent] = []
    memory = _memory(observer, memory_model(), ends)
    memory.on_debug_event = events.append
    sent: list[str] = []
    with caplog.at_level(logging.WARNING, logger="langchain_om"):
        for i in range(6):
            turn = _turn(i)
            sent.extend(m.id or "" for m in turn)
            snap = memory.add_messages("t", turn)
    failed = [e for e in events if e.type == "data-om-observation-failed"]
    final = [e for e in failed if not getattr(e, "retrying", False)]
    assert final, "no failed event"
    assert {getattr(e, "reason", None) for e in final} == {reason}
    hook_reasons = [h.get("reason") for h in ends if h.get("error") is not None]
    assert hook_reasons and set(hook_reasons) == {reason}
    # Nothing left the window, nothing was archived.
    assert archived_ids(memory, "t") == []
    assert [m.id for m in snap.window] == sent
    # One WARNING per failed cycle, with the code and none of the reply's text.
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"reason={reason}" in r.getMessage() for r in warnings)
    assert all("Porto" not in r.getMessage() and "nginx" not in r.getMessage() for r in warnings)
    if reason != "model-error":
        # Retried once with the reminder: the second call carries it, the first does not.
        first, second = observer.calls[0], observer.calls[1]
        note = format_reminder(reason)  # type: ignore[arg-type]
        assert note not in _human_text(first.messages[-1])
        assert note in _human_text(second.messages[-1])
        retried = [e for e in failed if getattr(e, "retrying", False)]
        assert retried and getattr(retried[0], "reason", None) == reason


def test_a_loop_is_retried_at_temperature_zero() -> None:
    loop = f"<observations>\n{ex.CAROLINE_LOOP}\n</observations>"
    observer = ScriptedChatModel(script=[loop, GOOD])
    memory = _memory(observer, memory_model(), [])
    snap = memory.observe(thread_id="t", messages=_turn(0))
    assert "Porto" in snap.observations
    assert observer.calls[0].kwargs.get("temperature") == 0.3
    assert observer.calls[1].kwargs.get("temperature") == 0


def test_a_good_second_answer_is_kept() -> None:
    observer = ScriptedChatModel(script=["", GOOD])
    ends: list[Any] = []
    memory = _memory(observer, memory_model(), ends)
    snap = memory.observe(thread_id="t", messages=_turn(0))
    assert archived_ids(memory, "t") == ["h0", "a0"]
    assert "Porto" in snap.observations and ends[-1]["error"] is None


REFLECTOR_CASES = [
    ("one-line", "<observations>\n* 🟡 (10:00) ok\n</observations>", "too-small"),
    ("looping", f"<observations>\n{ex.CAROLINE_LOOP}\n</observations>", "degenerate"),
    ("empty", "", "empty"),
    ("vague", f"<observations>\n{ex.VAGUE_MOVE}\n</observations>", "lost-facts"),
    ("model-error", server_error(), "model-error"),
]


@pytest.mark.parametrize(
    ("reply", "reason"), [pytest.param(r, code, id=name) for name, r, code in REFLECTOR_CASES]
)
def test_reflection_failure_keeps_the_log_and_says_why(reply: Any, reason: str) -> None:
    observer = ScriptedChatModel(script=[f"<observations>\n{ex.LOG_MOVE}\n</observations>"])
    reflector = ScriptedChatModel(script=[reply], cycle=True)
    ends: list[Any] = []
    events: list[OMEvent] = []
    memory = _memory(observer, reflector, ends, log_tokens=1_000)
    memory.on_debug_event = events.append
    snap = memory.observe(thread_id="t", messages=_many())
    before = snap.observations
    assert "Farfetch" in before
    with pytest.raises(Exception, match="Reflection failed"):
        memory.reflect(thread_id="t")
    after = memory.status(thread_id="t")
    assert after.record["generation"] == 0 and after.observations == before
    failed = [
        e
        for e in events
        if e.type == "data-om-observation-failed"
        and e.operation_type == "reflection"
        and not getattr(e, "retrying", False)
    ]
    assert failed and getattr(failed[-1], "reason", None) == reason
    hook = [h for h in ends if h.get("error") is not None][-1]
    assert hook["reason"] == reason
    if reason not in ("model-error", "empty", "degenerate"):
        assert isinstance(hook["retention"], float)


def test_good_reflection_reports_retention() -> None:
    observer = ScriptedChatModel(script=[f"<observations>\n{ex.LOG_MOVE}\n</observations>"])
    reflected = f"<observations>\n{ex.LOG_MOVE_REFLECTED}\n</observations>"
    reflector = ScriptedChatModel(script=[reflected])
    ends: list[Any] = []
    events: list[OMEvent] = []
    memory = _memory(observer, reflector, ends, log_tokens=1_000)
    memory.on_debug_event = events.append
    memory.observe(thread_id="t", messages=_many())
    snap = memory.reflect(thread_id="t")
    assert snap.record["generation"] == 1
    end = [e for e in events if e.type == "data-om-observation-end"][-1]
    assert end.operation_type == "reflection"
    assert isinstance(end.retention, float) and end.retention >= 0.6
    assert ends[-1]["retention"] == end.retention


def test_failing_reflection_inside_observe_keeps_the_observation() -> None:
    observer = ScriptedChatModel(script=[f"<observations>\n{ex.LOG_MOVE}\n</observations>"])
    reflector = ScriptedChatModel(script=["* 🟡 (10:00) ok"], cycle=True)
    memory = ObservationalMemory(
        observation={"model": observer, "message_tokens": 300, "buffer_tokens": False},
        reflection={"model": reflector, "observation_tokens": 500},
        clock=lambda: FIXED,
        sleep=lambda s: None,
    )
    snap = memory.observe(thread_id="t", messages=_many())
    assert archived_ids(memory, "t") == [m.id for m in _many()]
    assert snap.window == [] and snap.record["observed_message_count"] == len(_many())
    assert reflector.call_count >= 1  # the reflection ran and failed
    assert memory.status(thread_id="t").record["generation"] == 0
