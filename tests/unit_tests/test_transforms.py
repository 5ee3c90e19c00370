"""Transform hooks: what the Observer and the Reflector see, and what memory keeps."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import CycleFailedError, HookError, OMConfigError
from langchain_om._core.redact import redact_pii
from langchain_om.events import OMEvent
from langchain_om.testing import memory_model
from langchain_om.transforms import redact_messages
from tests.helpers import archived, make_memory

EMAIL = "maya.lopez@example.com"


def messages(n: int = 4, *, planted: str = EMAIL, start: int = 0) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(start, start + n):
        out.append(HumanMessage(f"Message {i}: write to {planted} about the trip", id=f"h{i}"))
        out.append(AIMessage(f"Reply {i}: noted", id=f"a{i}"))
    return out


def prompts(model: Any) -> str:
    return "\n".join(m.text for call in model.calls for m in call.messages)


@pytest.mark.parametrize("archive_transformed", [False, True])
def test_a_redactor_keeps_the_email_from_observer_and_log(archive_transformed: bool) -> None:
    model = memory_model(words=30)
    hooks = {"before_observation": redact_messages, "archive_transformed": archive_transformed}
    memory = make_memory(model=model, hooks=hooks)
    snap = memory.observe(thread_id="t", messages=messages())
    assert model.call_count == 1
    assert EMAIL not in prompts(model)
    assert "[email]" in prompts(model)
    assert EMAIL not in snap.observations and "[email]" in snap.observations
    stored = " ".join(m.text for m in archived(memory, "t"))
    assert (EMAIL in stored) is (not archive_transformed)
    assert [m.id for m in archived(memory, "t")] == [m.id for m in messages()]


def test_an_empty_result_skips_the_model_and_advances_the_cursor() -> None:
    model = memory_model()
    seen: list[Mapping[str, Any]] = []

    def drop_all(batch: Sequence[BaseMessage], ctx: Mapping[str, Any]) -> list[BaseMessage]:
        seen.append(ctx)
        return []

    memory = make_memory(model=model, hooks={"before_observation": drop_all})
    snap = memory.observe(thread_id="t", messages=messages())
    assert model.call_count == 0
    assert snap.record["observed_message_count"] == 8
    assert snap.window == [] and snap.record["groups"] == []
    assert seen[0]["thread_id"] == "t" and seen[0]["operation"] == "observation"


def test_a_filter_drops_messages_and_the_archive_withholds_them() -> None:
    model = memory_model(words=30)

    def humans_only(batch: Sequence[BaseMessage], ctx: Mapping[str, Any]) -> list[BaseMessage]:
        return [m for m in batch if isinstance(m, HumanMessage)]

    hooks = {"before_observation": humans_only, "archive_transformed": True}
    memory = make_memory(model=model, hooks=hooks)
    snap = memory.observe(thread_id="t", messages=messages(2))
    assert "Reply 0" not in prompts(model) and "Reply 0" not in snap.observations
    texts = [m.text for m in archived(memory, "t")]
    assert texts[1] == "[withheld by before_observation]"
    assert texts[0].startswith("Message 0")


def test_after_observation_edits_and_vetoes() -> None:
    memory = make_memory(
        model=memory_model(words=30),
        hooks={"after_observation": lambda text, ctx: text.replace("trip", "journey")},
    )
    snap = memory.observe(thread_id="t", messages=messages(1))
    assert "journey" in snap.observations and "trip" not in snap.observations

    vetoing = make_memory(hooks={"after_observation": lambda text, ctx: False})
    snap = vetoing.observe(thread_id="t", messages=messages(1))
    assert snap.record["groups"] == [] and snap.record["observed_message_count"] == 2


def test_a_failing_hook_fails_the_cycle_and_loses_nothing() -> None:
    def broken(batch: Sequence[BaseMessage], ctx: Mapping[str, Any]) -> list[BaseMessage]:
        raise RuntimeError("redactor down")

    model = memory_model()
    events: list[OMEvent] = []
    memory = make_memory(model=model, hooks={"before_observation": broken})
    memory.on_debug_event = events.append
    with pytest.raises(CycleFailedError) as info:
        memory.observe(thread_id="t", messages=messages(2))
    cause = info.value.__cause__
    assert isinstance(cause, HookError)
    assert cause.reason == "hook_failed" and cause.hook == "before_observation"
    assert model.call_count == 0
    assert archived(memory, "t") == []
    snap = memory.status(thread_id="t")
    assert len(snap.window) == 4 and snap.record["observed_message_count"] == 0
    failed = [e for e in events if e.type == "data-om-observation-failed"]
    assert failed and "HookError" in failed[0].error


def test_a_hook_returning_the_wrong_type_fails_the_cycle() -> None:
    memory = make_memory(hooks={"before_observation": lambda batch, ctx: "oops"})
    with pytest.raises(CycleFailedError) as info:
        memory.observe(thread_id="t", messages=messages(1))
    assert isinstance(info.value.__cause__, HookError)
    assert "must return a list of messages" in str(info.value.__cause__)


def test_async_hooks_run_on_both_drivers() -> None:
    async def redact(batch: Sequence[BaseMessage], ctx: Mapping[str, Any]) -> list[BaseMessage]:
        await asyncio.sleep(0)
        return redact_messages(batch, ctx)

    model = memory_model(words=30)
    memory = make_memory(model=model, hooks={"before_observation": redact})
    memory.observe(thread_id="sync", messages=messages(1))
    asyncio.run(memory.aobserve(thread_id="async", messages=messages(1)))
    assert model.call_count == 2
    assert EMAIL not in prompts(model)


def test_reflection_hooks_edit_and_veto() -> None:
    model = memory_model(words=30, keep=1.0)
    seen: list[str] = []

    def before(text: str, ctx: Mapping[str, Any]) -> str:
        seen.append(text)
        return text.replace("trip", "voyage")

    memory = make_memory(
        model=model,
        hooks={"before_reflection": before, "after_reflection": lambda t, c: t + "\n* 🟢 edited"},
    )
    memory.observe(thread_id="t", messages=messages(2))
    snap = memory.reflect(thread_id="t")
    assert "trip" in seen[0]
    assert "voyage" in model.last_call.messages[-1].text
    assert snap.record["generation"] == 1 and snap.observations.endswith("* 🟢 edited")

    vetoing = make_memory(hooks={"after_reflection": lambda t, c: False})
    before_log = vetoing.observe(thread_id="t", messages=messages(2)).observations
    with pytest.raises(CycleFailedError) as info:
        vetoing.reflect(thread_id="t")
    cause = info.value.__cause__
    assert isinstance(cause, HookError) and cause.reason == "vetoed"
    after = vetoing.status(thread_id="t")
    assert after.record["generation"] == 0 and after.observations == before_log


def test_buffered_chunks_are_redacted_and_so_is_their_archive() -> None:
    model = memory_model(words=30)
    memory = make_memory(
        model=model,
        observation={"message_tokens": 300, "buffer_tokens": 0.2},
        hooks={"before_observation": redact_messages, "archive_transformed": True},
        background="manual",
    )
    events: list[OMEvent] = []
    memory.on_debug_event = events.append
    for i in range(12):
        memory.add_messages("t", messages(1, planted=f"user{i}@example.com", start=i))
        memory.run_background()
    snap = memory.status(thread_id="t")
    assert snap.record["observed_message_count"] > 0
    assert any(e.type == "data-om-activation" for e in events)
    assert "@example.com" not in prompts(model)
    assert "@example.com" not in snap.observations
    assert all("@example.com" not in m.text for m in archived(memory, "t"))


def test_every_hook_call_gets_the_memory_and_the_configurable() -> None:
    seen: list[dict[str, Any]] = []

    def redact(batch: Sequence[BaseMessage], ctx: Mapping[str, Any]) -> list[BaseMessage]:
        seen.append(dict(ctx))
        return redact_messages(batch, ctx)

    memory = make_memory(
        observation={"message_tokens": 300, "buffer_tokens": 0.2},
        hooks={"before_observation": redact, "archive_transformed": True},
        background="manual",
    )
    for i in range(12):
        memory.add_messages("t", messages(1, start=i))
        memory.run_background()
    operations = {ctx["operation"] for ctx in seen}
    assert {"observation", "activation"} <= operations, operations
    assert all(ctx["memory"] is memory and ctx["configurable"] == {} for ctx in seen)


def test_archive_transformed_needs_a_before_observation_hook() -> None:
    with pytest.raises(OMConfigError, match="before_observation") as info:
        make_memory(hooks={"archive_transformed": True})
    assert info.value.option == "hooks.archive_transformed"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail jane.doe+x@example.co.uk now", "mail [email] now"),
        ("call +1 (415) 555-0134 or 415-555-0134.", "call [phone] or [phone]."),
        (
            "card 4111 1111 1111 1111, ref 4111-1111-1111-1112",
            "card [card], ref 4111-1111-1111-1112",
        ),
        ("on 2026-12-01 at 10:30, order 1234567", "on 2026-12-01 at 10:30, order 1234567"),
        ("(09:15) the UK number 07700 900123", "(09:15) the UK number [phone]"),
    ],
)
def test_redact_pii_masks_emails_phones_and_cards_only(text: str, expected: str) -> None:
    assert redact_pii(text) == expected
