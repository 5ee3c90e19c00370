"""Resource scope runs the option families thread scope runs, one user's data at a time.

Each test drives the scripted three-thread, two-user run of ``tests.isolation_scenarios``
(Alice on threads A and B, Bob on thread C) through the public API on a real SQLite file,
sync and async, and checks both what the option does and that nothing of one user reaches
what is computed, stored or shown for the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from langchain_om import Extractor, ObservationalMemory
from langchain_om.testing import FunctionChatModel
from tests.helpers import FIXED, Clock, build_agent, thread_memory_reply
from tests.isolation_scenarios import (
    ALICE_SECRET,
    BOB_SECRET,
    RESOURCE_THREADS,
    Codes,
    family_reply,
    other_user,
    run_three_threads,
)
from tests.unit_tests.test_resource_frontdoors import actor, cfg, system_text

MODES = ["sync", "async"]


def open_memory(path: Path, **overrides: Any) -> ObservationalMemory:
    """A resource-scope memory on the SQLite file ``path``; ``overrides`` merge into the
    options (``observation`` and ``reflection`` key by key)."""
    options: dict[str, Any] = {
        "model": FunctionChatModel(function=thread_memory_reply),
        "scope": "resource",
        "observation": {"message_tokens": 250, "buffer_tokens": False},
        "reflection": {"observation_tokens": 100_000},
        "clock": lambda: FIXED,
        "sleep": lambda s: None,
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(options.get(key), dict):
            options[key] = {**options[key], **value}
        else:
            options[key] = value
    return ObservationalMemory.from_sqlite(str(path), **options)


def run(
    memory: ObservationalMemory,
    mode: str,
    turns: int = 6,
    before_round: Callable[[int], object] | None = None,
) -> None:
    go = run_three_threads(memory, sync=mode == "sync", turns=turns, before_round=before_round)
    asyncio.run(go)


def log_of(memory: ObservationalMemory, thread: str, resource: str) -> str:
    return memory.status(thread_id=thread, resource_id=resource).observations


def owner(thread: str) -> str:
    return dict(RESOURCE_THREADS)[thread]


def text_of(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(m.text for m in messages)


# -- transform hooks ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_observation_hooks_run_per_thread_and_change_what_is_observed(
    tmp_path: Path, mode: str
) -> None:
    before: list[tuple[Mapping[str, Any], list[BaseMessage]]] = []
    after: list[tuple[Mapping[str, Any], str]] = []

    def redact(batch: Sequence[BaseMessage], ctx: Mapping[str, Any]) -> list[BaseMessage]:
        before.append((dict(ctx), list(batch)))
        return [m.model_copy(update={"content": m.text.replace("locker", "[x]")}) for m in batch]

    def stamp(text: str, ctx: Mapping[str, Any]) -> str:
        after.append((dict(ctx), text))
        return text + f"\n* 🟢 (09:00) checked for thread {ctx['thread_id']}"

    model = FunctionChatModel(function=thread_memory_reply)
    hooks = {"before_observation": redact, "after_observation": stamp}
    with open_memory(tmp_path / "om.db", model=model, hooks=hooks) as memory:
        run(memory, mode)
        alice, bob = log_of(memory, "A", "alice"), log_of(memory, "C", "bob")
    assert before and after
    prompts = "\n".join(m.text for call in model.calls for m in call.messages)
    assert "locker" not in prompts and "[x] code 4921" in prompts  # the Observer read the hook's
    assert "checked for thread A" in alice and "checked for thread B" in alice
    assert "checked for thread C" in bob and "4921" not in bob and "7788" not in alice
    for ctx, batch in before:  # one thread's messages per call, of the thread it names
        assert ctx["resource_id"] == owner(ctx["thread_id"]) and ctx["thread_ids"] == [
            ctx["thread_id"]
        ]
        assert {m.id.split("-")[0] for m in batch if m.id} == {ctx["thread_id"]}
        secret, _ = other_user(ctx["resource_id"])
        assert secret not in text_of(batch)
    for ctx, text in after:
        secret, threads = other_user(ctx["resource_id"])
        assert secret not in text and not threads & set(ctx["thread_ids"])
        assert ctx["operation"] == "observation" and ctx["memory"] is memory


@pytest.mark.parametrize("mode", MODES)
def test_reflection_hooks_see_and_change_one_users_log(tmp_path: Path, mode: str) -> None:
    seen: list[tuple[str, Mapping[str, Any], str]] = []

    def before(text: str, ctx: Mapping[str, Any]) -> str:
        seen.append(("before", dict(ctx), text))
        return text

    def after(text: str, ctx: Mapping[str, Any]) -> str:
        seen.append(("after", dict(ctx), text))
        return text + "\n* 🟢 (09:00) condensed by the hook"

    hooks = {"before_reflection": before, "after_reflection": after}
    reflection = {"observation_tokens": 150, "block_after": 1_000}
    with open_memory(tmp_path / "om.db", hooks=hooks, reflection=reflection) as memory:
        run(memory, mode, turns=8)
        snap = memory.status(thread_id="B", resource_id="alice")
    assert {"before", "after"} <= {when for when, _, _ in seen}
    assert snap.record["generation"] >= 1 and "condensed by the hook" in snap.observations
    for when, ctx, text in seen:
        secret, _ = other_user(ctx["resource_id"])
        assert ctx["operation"] == "reflection" and secret not in text
        assert ("4921" if ctx["resource_id"] == "alice" else "7788") in text or when == "after"


@pytest.mark.parametrize("mode", MODES)
def test_an_after_reflection_veto_keeps_the_shared_log(tmp_path: Path, mode: str) -> None:
    hooks = {"after_reflection": lambda text, ctx: False}
    reflection = {"observation_tokens": 150, "block_after": 100_000}
    with open_memory(tmp_path / "om.db", hooks=hooks, reflection=reflection) as memory:
        run(memory, mode, turns=8)
        snap = memory.status(thread_id="A", resource_id="alice")
    assert snap.record["generation"] == 0
    assert ALICE_SECRET.split(" in ")[0] in snap.observations
    assert BOB_SECRET.split(" in ")[0] not in snap.observations


@pytest.mark.parametrize("transformed", [False, True])
def test_archive_transformed_keeps_what_the_hook_made_of_each_threads_messages(
    tmp_path: Path, transformed: bool
) -> None:
    def redact(batch: Sequence[BaseMessage], ctx: Mapping[str, Any]) -> list[BaseMessage]:
        return [m.model_copy(update={"content": m.text.replace("locker", "[x]")}) for m in batch]

    hooks = {"before_observation": redact, "archive_transformed": transformed}
    with open_memory(tmp_path / "om.db", hooks=hooks) as memory:
        run(memory, "sync")
        stored = {t: text_of(memory.archived_messages(t)) for t in ("A", "B", "C")}
    assert all(stored.values())
    assert ("locker code 4921" in stored["A"]) is not transformed
    assert ("[x] code 7788" in stored["C"]) is transformed
    assert "7788" not in stored["A"] + stored["B"] and "4921" not in stored["C"]


# -- temporal markers -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_pause_in_one_thread_inserts_its_reminder_in_that_thread_only(
    tmp_path: Path, mode: str
) -> None:
    clock = Clock()
    events: list[Any] = []

    def pause(i: int) -> None:
        clock.now += timedelta(minutes=1)
        if i == 3:
            clock.now += timedelta(hours=3)

    model = FunctionChatModel(function=thread_memory_reply)
    with open_memory(
        tmp_path / "om.db",
        model=model,
        temporal_markers=True,
        clock=clock,
        on_debug_event=events.append,
    ) as memory:
        run(memory, mode, before_round=pause)
        windows = {t: memory.status(thread_id=t).window for t, _ in RESOURCE_THREADS}
        archived = {t: memory.archived_messages(t) for t, _ in RESOURCE_THREADS}
    gaps = [e for e in events if e.type == "data-om-temporal-gap"]
    assert sorted(e.thread_id for e in gaps) == ["A", "B", "C"]  # each thread's own pause
    assert all(e.precedes_message_id == f"{e.thread_id}-h3" for e in gaps)
    for thread, _ in RESOURCE_THREADS:
        reminders = [
            m
            for m in [*archived[thread], *windows[thread]]
            if m.id and m.id.startswith("__temporal_gap_")
        ]
        assert [m.id for m in reminders] == [f"__temporal_gap_{thread}-h3"]
        assert "3 hours" in reminders[0].text
    prompts = [call.messages[-1].text for call in model.calls]
    assert any("3 hours" in p for p in prompts), "the Observer reads the reminder"


# -- read_only --------------------------------------------------------------------------------


def store_items(memory: ObservationalMemory) -> list[tuple[tuple[str, ...], str, Any]]:
    """Everything in the store (namespace, key, value), to compare before and after."""
    out = []
    for namespace in memory.store.list_namespaces(limit=10_000):
        for item in memory.store.search(namespace, limit=10_000):
            if item.namespace == namespace:
                out.append((item.namespace, item.key, item.value))
    return sorted(out, key=repr)


@pytest.mark.parametrize("mode", MODES)
def test_a_read_only_reader_sees_its_users_shared_log_and_writes_nothing(
    tmp_path: Path, mode: str
) -> None:
    with open_memory(tmp_path / "om.db") as writer:
        run(writer, mode, turns=5)
        memory_model = FunctionChatModel(function=thread_memory_reply)
        reader = ObservationalMemory(
            model=memory_model,
            scope="resource",
            read_only=True,
            store=writer.store,
            checkpointer=writer.checkpointer,
            observation={"message_tokens": 250, "buffer_tokens": False},
            clock=lambda: FIXED,
        )
        before = store_items(writer)
        model = actor()
        agent = build_agent(reader, model)
        question = {"messages": [HumanMessage("What is my locker code? " + "Tell me. " * 80)]}
        for thread, resource in (("R", "alice"), ("A", "alice"), ("S", "bob")):
            config = cfg(thread, resource)
            if mode == "sync":
                agent.invoke(question, config)
                agent.invoke(question, config)  # a second turn: still nothing observed
                context = reader.get_context(thread_id=thread, resource_id=resource)
            else:
                asyncio.run(agent.ainvoke(question, config))
                asyncio.run(agent.ainvoke(question, config))
                context = asyncio.run(reader.aget_context(thread_id=thread, resource_id=resource))
            seen = "\n".join(system_text(c) for c in model.calls[-2:]) + text_of(context)
            mine, (theirs, _) = ("4921" if resource == "alice" else "7788"), other_user(resource)
            assert mine in seen and theirs not in seen
        after = store_items(writer)
        assert after == before, "a read-only memory writes nothing"
        assert memory_model.calls == []


# -- thread titles ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_the_observer_titles_each_thread_of_a_batch(tmp_path: Path, mode: str) -> None:
    events: list[Any] = []
    model = FunctionChatModel(function=family_reply)
    with open_memory(
        tmp_path / "om.db",
        model=model,
        observation={"thread_title": True},
        on_debug_event=events.append,
    ) as memory:
        run(memory, mode, turns=3)
        memory.rename_thread("B", "Alice's own title")
        run(memory, mode, turns=6)
        titles = {t: memory.status(thread_id=t).title for t, _ in RESOURCE_THREADS}
    assert titles["B"] == "Alice's own title"  # a pin wins
    assert titles["A"] and titles["A"].startswith(("Alice keeps", "A turn"))
    assert titles["C"] and titles["C"].startswith(("Bob keeps", "C turn"))
    updates = [e for e in events if e.type == "data-om-thread-update"]
    assert {e.thread_id for e in updates} == {"A", "B", "C"}
    for event in updates:  # each title is drawn from its own thread's messages
        assert event.new_title.startswith((owner(event.thread_id).title(), event.thread_id))
    assert not [e for e in updates if e.thread_id == "B" and e.new_title.startswith("B turn")]
    prompts = [call.messages for call in model.calls]
    batched = [p for p in prompts if "one line per thread" in p[0].text]
    assert batched, "a batch of several threads asks for a title per thread"


# -- extractors and the working memory --------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_extracted_values_are_per_resource_from_its_own_observations(
    tmp_path: Path, mode: str
) -> None:
    events: list[Any] = []
    model = FunctionChatModel(function=family_reply)
    inline = Extractor("Codes", "The locker codes the user named.")
    typed = Extractor("Typed codes", "The locker codes, as a list.", schema=Codes)
    reflected = Extractor("Kept codes", "The codes the condensed log keeps.", schema=Codes)
    with open_memory(
        tmp_path / "om.db",
        model=model,
        observation={"extract": [inline, typed], "manage_working_memory": True},
        reflection={"observation_tokens": 150, "block_after": 1_000, "extract": [reflected]},
        on_debug_event=events.append,
    ) as memory:
        run(memory, mode, turns=8)
        values = {t: memory.status(thread_id=t).extracted for t, _ in RESOURCE_THREADS}
        working = {t: memory.get_working_memory(thread_id=t) for t, _ in RESOURCE_THREADS}
    assert values["A"] == values["B"], "one set of values per resource"
    alice, bob = values["A"], values["C"]
    assert "4921" in alice["codes"] and alice["typed-codes"]["codes"] == ["4921"]
    assert "7788" in bob["codes"] and bob["typed-codes"]["codes"] == ["7788"]
    assert alice["kept-codes"]["codes"] == ["4921"] and bob["kept-codes"]["codes"] == ["7788"]
    assert "7788" not in repr(alice) + working["A"] and "4921" not in repr(bob) + working["C"]
    assert working["A"] == working["B"] and "4921" in working["A"]
    ends = [e for e in events if e.type == "data-om-observation-end" and e.extracted_values]
    assert ends and all(
        "4921" not in repr(e.extracted_values) or "7788" not in repr(e.extracted_values)
        for e in ends
    )
    for call in model.calls:  # every model call reads one user's messages
        text = "\n".join(m.text for m in call.messages)
        assert not ("4921" in text and "7788" in text)


@pytest.mark.parametrize("mode", MODES)
def test_the_working_memory_is_updated_for_every_thread_of_the_resource(
    tmp_path: Path, mode: str
) -> None:
    model = FunctionChatModel(function=family_reply)
    with open_memory(
        tmp_path / "om.db", model=model, observation={"manage_working_memory": True}
    ) as memory:
        run(memory, mode, turns=3)
        if mode == "sync":
            memory.update_working_memory("# Alice\n- prefers tea", thread_id="A")
        else:
            asyncio.run(memory.aupdate_working_memory("# Alice\n- prefers tea", thread_id="A"))
        assert memory.get_working_memory(thread_id="B") == "# Alice\n- prefers tea"
        assert "prefers tea" not in (memory.get_working_memory(thread_id="C") or "")
        model.reset()
        memory.add_messages("B", [HumanMessage("What do I drink?")], resource_id="alice")
        shown = [m for m in memory.get_context(thread_id="B") if m.type == "system"]
        assert "prefers tea" in shown[0].text


# -- keep_last_messages -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_every_thread_keeps_its_own_floor_of_raw_messages(tmp_path: Path, mode: str) -> None:
    def windows(keep: int) -> dict[str, list[str]]:
        with open_memory(tmp_path / f"om-{keep}.db", keep_last_messages=keep) as memory:
            run(memory, mode, turns=8)
            assert memory.archived_messages("A") and memory.archived_messages("C")
            return {t: [str(m.id) for m in memory.status(thread_id=t).window] for t in "ABC"}

    bare, floored = windows(0), windows(6)
    assert any(len(ids) < 6 for ids in bare.values())
    for thread in "ABC":
        assert len(floored[thread]) >= 6
        assert floored[thread][-6:] == [
            f"{thread}-{k}" for k in ("h5", "a5", "h6", "a6", "h7", "a7")
        ]
