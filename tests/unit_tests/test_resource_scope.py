"""Resource scope pieces: batching, thread labels, merging, compare-and-set, parallel batches.

These tests drive the resource plans directly on an in-memory store; the front doors are
tested in ``test_resource_frontdoors``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from langchain_om._core.callable_tokens import as_token_counter
from langchain_om._core.resource import (
    ResourceDelta,
    Section,
    ThreadPending,
    ThreadSection,
    apply_delta,
    apply_reflection,
    bounded_log,
    log_text,
    merge_sections,
    new_resource_record,
    plan_batches,
    split_threads,
    thread_label,
    thread_titles,
)
from langchain_om._plans.effects import ModelCall, run_async, run_sync
from langchain_om._plans.resource import (
    CompareAndSet,
    ResourceHandler,
    commit_plan,
    load_resource_plan,
    observe_resource_plan,
    save_pending_plan,
)
from langchain_om._plans.types import TurnEnv
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.locks import LocalThreadLock
from langchain_om.testing import FunctionChatModel, RecordedCall
from tests.helpers import FIXED, thread_observer_reply

# -- batching ---------------------------------------------------------------------------------


def pending(tokens: list[int]) -> list[ThreadPending]:
    return [ThreadPending(f"t{i}", n, f"2026-11-30T09:0{i}:00+00:00") for i, n in enumerate(tokens)]


def test_five_threads_of_3k_with_a_7k_cap_make_three_batches() -> None:
    batches = plan_batches(pending([3_000] * 5), threshold=0, max_tokens_per_batch=7_000)
    assert [[t.thread_id for t in b] for b in batches] == [["t0", "t1"], ["t2", "t3"], ["t4"]]
    assert all(sum(t.tokens for t in b) <= 7_000 for b in batches)


def test_a_thread_is_never_split_and_batches_follow_the_oldest_message() -> None:
    threads = [
        ThreadPending("late", 2_000, "2026-11-30T10:00:00+00:00"),
        ThreadPending("huge", 12_000, "2026-11-30T09:30:00+00:00"),
        ThreadPending("early", 1_000, "2026-11-30T09:00:00+00:00"),
    ]
    batches = plan_batches(threads, threshold=0, max_tokens_per_batch=7_000)
    assert [[t.thread_id for t in b] for b in batches] == [["early"], ["huge"], ["late"]]


def test_threads_are_taken_largest_first_until_the_threshold() -> None:
    chosen = plan_batches(
        pending([500, 4_000, 100, 3_000]), threshold=6_000, max_tokens_per_batch=10**6
    )
    assert sorted(t.thread_id for b in chosen for t in b) == ["t1", "t3"]
    nothing = plan_batches(pending([0, 0]), threshold=0, max_tokens_per_batch=100)
    assert nothing == []


# -- labels, splitting, merging -----------------------------------------------------------------


def test_thread_labels_are_stable_short_hashes_unless_shown() -> None:
    label = thread_label("user-42/thread-7", obscure=True)
    assert label == thread_label("user-42/thread-7", obscure=True)
    assert len(label) == 8 and int(label, 16) >= 0 and "thread-7" not in label
    assert label != thread_label("user-42/thread-8", obscure=True)
    assert thread_label("user-42/thread-7", obscure=False) == "user-42/thread-7"


def test_answer_is_split_by_thread_and_date_and_merged_in_place() -> None:
    answer = (
        '<thread id="aa">\nDate: Nov 30, 2026\n* 🔴 (09:00) lives in Oslo\n'
        '<thread id="bb">\nDate: Nov 30, 2026\n* 🔴 (09:05) likes tea\n'
        "Date: Dec 1, 2026\n* 🟡 (08:00) asked about trains"
    )  # the answer parser drops the closing tags
    sections = split_threads(answer, ["aa", "bb"])
    assert [(s.thread, s.date) for s in sections] == [
        ("aa", "Nov 30, 2026"),
        ("bb", "Nov 30, 2026"),
        ("bb", "Dec 1, 2026"),
    ]
    log = merge_sections([], sections)
    later = merge_sections(log, [Section("aa", "Nov 30, 2026", ("* 🔴 (10:00) moved to Bergen",))])
    assert len(later) == 3  # same thread and date: merged into its section
    assert later[0]["lines"] == ["* 🔴 (09:00) lives in Oslo", "* 🔴 (10:00) moved to Bergen"]
    assert log[0]["lines"] == ["* 🔴 (09:00) lives in Oslo"]  # the input is not mutated
    text = log_text(later)
    assert (
        text.startswith('<thread id="aa">\nDate: Nov 30, 2026\n') and text.count("</thread>") == 3
    )


def test_text_outside_thread_blocks_is_labelled_with_every_thread_of_the_batch() -> None:
    [joint] = split_threads("Date: Nov 30, 2026\n* 🔴 (09:00) something", ["aa", "bb"])
    assert joint.thread == "aa,bb"
    [single] = split_threads("* 🔴 (09:00) something", ["aa"])
    assert (single.thread, single.date) == ("aa", "")


def test_titles_are_read_per_thread_and_never_given_to_another_thread() -> None:
    answer = (
        "<observations>\n* x\n</observations>\n<thread-title>\n"
        '<thread id="aa">Trip to Lisbon</thread>\n<thread id="zz">Not in the batch</thread>\n'
        '<thread id="bb">ok</thread>\n</thread-title>'
    )
    assert thread_titles(answer, {"A": "aa", "B": "bb"}) == {"A": "Trip to Lisbon"}  # "ok": short
    bare = "<observations>\n* x\n</observations>\n<thread-title>Garden plans</thread-title>"
    assert thread_titles(bare, {"A": "aa"}) == {"A": "Garden plans"}
    assert thread_titles(bare, {"A": "aa", "B": "bb"}) == {}  # whose? nobody's


# -- applying a delta: exactly once ---------------------------------------------------------------


def delta(delta_id: str, thread: str, ids: list[str], line: str) -> ResourceDelta:
    return ResourceDelta(
        delta_id,
        {thread: ids},
        [Section(thread, "Nov 30, 2026", (line,))],
        labels={thread: thread},
    )


def test_apply_delta_advances_cursors_and_versions() -> None:
    base = new_resource_record("u")
    one, changed = apply_delta(base, delta("d1", "A", ["a1", "a2"], "* A"))
    assert changed and one["version"] == 1 and one["cursors"] == {"A": ["a1", "a2"]}
    two, _ = apply_delta(one, delta("d2", "B", ["b1"], "* B"))
    assert two["version"] == 2 and [s["thread"] for s in two["sections"]] == ["A", "B"]


def test_apply_delta_never_applies_twice() -> None:
    one, _ = apply_delta(new_resource_record("u"), delta("d1", "A", ["a1", "a2"], "* A"))
    again, changed = apply_delta(one, delta("d1", "A", ["a1", "a2"], "* A"))
    assert not changed and again is one
    # another writer observed a1 first: this delta's part for A is dropped whole
    overlap, changed = apply_delta(one, delta("d3", "A", ["a2", "a3"], "* A again"))
    assert not changed and overlap is one


def test_a_stale_thread_is_dropped_and_the_fresh_one_kept() -> None:
    one, _ = apply_delta(new_resource_record("u"), delta("d1", "A", ["a1"], "* A"))
    both = ResourceDelta(
        "d2",
        {"A": ["a1"], "B": ["b1"]},
        [Section("A", "Nov 30, 2026", ("* A dup",)), Section("B", "Nov 30, 2026", ("* B",))],
        labels={"A": "A", "B": "B"},
    )
    out, changed = apply_delta(one, both)
    assert changed and out["cursors"] == {"A": ["a1"], "B": ["b1"]}
    assert [s["lines"] for s in out["sections"]] == [["* A"], ["* B"]]


# -- plans on a store ------------------------------------------------------------------------


def make_env(**observation: Any) -> TurnEnv:
    config = ObservationalMemoryConfig.coerce(observation={"buffer_tokens": False, **observation})
    return TurnEnv(
        config=config,
        counter=as_token_counter(None),
        now=lambda: FIXED,
        emit=lambda e: None,
        model_id=lambda role, tokens: None,
    )


def make_handler(model: FunctionChatModel, store: InMemoryStore | None = None) -> ResourceHandler:
    def call(effect: ModelCall) -> Any:
        return model.invoke(list(effect.messages))

    async def acall(effect: ModelCall) -> Any:
        return await model.ainvoke(list(effect.messages))

    return ResourceHandler(
        store=store or InMemoryStore(), call_model=call, acall_model=acall, lock=LocalThreadLock()
    )


def thread_messages(tid: str, n: int, words: int = 20) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(n):
        out.append(HumanMessage(f"{tid} fact {i}: " + "detail " * words, id=f"{tid}-h{i}"))
        out.append(AIMessage(f"noted {i}", id=f"{tid}-a{i}"))
    return out


def test_commit_retries_on_a_conflict_without_losing_the_other_write() -> None:
    handler = make_handler(FunctionChatModel(function=thread_observer_reply))
    base = new_resource_record("u")
    # another writer commits between our read and our write
    run_sync(commit_plan("u", base, delta("theirs", "B", ["b1"], "* B")), handler)
    ours = run_sync(commit_plan("u", base, delta("ours", "A", ["a1"], "* A")), handler)
    assert ours["version"] == 2 and set(ours["cursors"]) == {"A", "B"}
    stored, _ = run_sync(load_resource_plan("u"), handler)
    assert stored == ours


def test_compare_and_set_writes_only_on_the_expected_version() -> None:
    handler = make_handler(FunctionChatModel(function=thread_observer_reply))
    first, _ = apply_delta(new_resource_record("u"), delta("d1", "A", ["a1"], "* A"))

    def cas(expected: int) -> Any:
        result = yield CompareAndSet("u", expected, first)
        return result

    assert run_sync(cas(0), handler) is None  # written
    conflict = run_sync(cas(0), handler)  # the stored version is 1 now
    assert conflict is not None and conflict["version"] == 1


def test_observing_all_threads_in_parallel_batches_of_the_cap() -> None:
    env = make_env(max_tokens_per_batch=7_000)
    windows = {f"T{i}": thread_messages(f"T{i}", 10, words=280) for i in range(5)}
    tokens = {tid: env.counter.count_messages(m) for tid, m in windows.items()}
    assert all(2_800 <= n <= 3_400 for n in tokens.values()), tokens
    barrier = threading.Barrier(3, timeout=10)

    def observer(messages: list[BaseMessage], info: RecordedCall) -> str:
        barrier.wait()  # only passes when the three batches are in flight at once
        return thread_observer_reply(messages, info)

    model = FunctionChatModel(function=observer)
    handler = make_handler(model)
    for tid, messages in list(windows.items())[1:]:
        run_sync(save_pending_plan(env, "u", tid, messages), handler)
    record = run_sync(observe_resource_plan(env, "u", current=("T0", windows["T0"])), handler)
    assert model.call_count == 3
    assert {tid: len(ids) for tid, ids in record["cursors"].items()} == {t: 20 for t in windows}
    labels = {thread_label(t, obscure=False) for t in windows}  # ids shown in thread scope config
    assert {s["thread"] for s in record["sections"]} == labels
    assert "T3 fact 0" in log_text(record["sections"])
    # nothing left: a second pass observes nothing
    again = run_sync(observe_resource_plan(env, "u", current=("T0", windows["T0"])), handler)
    assert again == record and model.call_count == 3


def test_async_batches_run_as_concurrent_tasks() -> None:
    env = make_env(max_tokens_per_batch=1_000)
    in_flight: list[int] = [0]
    peak: list[int] = [0]
    three = asyncio.Event()

    async def observer(messages: list[BaseMessage], info: RecordedCall) -> str:
        in_flight[0] += 1
        peak[0] = max(peak[0], in_flight[0])
        if in_flight[0] == 3:
            three.set()
        await asyncio.wait_for(three.wait(), timeout=10)
        in_flight[0] -= 1
        return thread_observer_reply(messages, info)

    model = FunctionChatModel(async_function=observer)
    handler = make_handler(model)

    async def go() -> Any:
        for tid in ("B", "C"):
            messages = thread_messages(tid, 4, words=150)  # ~700 tokens: one batch each
            await run_async(save_pending_plan(env, "u", tid, messages), handler)
        current = ("A", thread_messages("A", 4, words=150))
        return await run_async(observe_resource_plan(env, "u", current=current), handler)

    record = asyncio.run(go())
    assert peak[0] == 3 and model.call_count == 3
    assert sorted(record["cursors"]) == ["A", "B", "C"]


def test_thread_ids_are_obscured_in_the_log_when_asked() -> None:
    config_env = make_env()
    config_env.config = ObservationalMemoryConfig.coerce(
        observation={"buffer_tokens": False}, obscure_thread_ids=True
    )
    handler = make_handler(FunctionChatModel(function=thread_observer_reply))
    record = run_sync(
        observe_resource_plan(config_env, "u", current=("secret-thread", thread_messages("S", 2))),
        handler,
    )
    text = log_text(record["sections"])
    assert "secret-thread" not in text and thread_label("secret-thread", obscure=True) in text


@pytest.mark.parametrize("cap", [1, 10**6])
def test_no_message_is_observed_twice_across_passes(cap: int) -> None:
    env = make_env(max_tokens_per_batch=cap)
    handler = make_handler(FunctionChatModel(function=thread_observer_reply))
    window = thread_messages("A", 2)
    first = run_sync(observe_resource_plan(env, "u", current=("A", window)), handler)
    window = window + thread_messages("A2", 1)
    second = run_sync(observe_resource_plan(env, "u", current=("A", window)), handler)
    ids = second["cursors"]["A"]
    assert len(ids) == len(set(ids)) == 6 and first["cursors"]["A"] == ids[:4]


def test_a_reflection_keeps_what_was_observed_meanwhile_and_never_runs_twice() -> None:
    base, _ = apply_delta(new_resource_record("u"), delta("d1", "A", ["a1"], "* A one"))
    latest, _ = apply_delta(base, delta("d2", "A", ["a2"], "* A two"))  # observed meanwhile
    latest, _ = apply_delta(latest, delta("d3", "B", ["b1"], "* B one"))
    condensed = [Section("A", "Nov 30, 2026", ("* A condensed",))]
    out, changed = apply_reflection(latest, base, condensed)
    assert changed and out["generation"] == 1 and out["version"] == latest["version"] + 1
    assert [(s["thread"], s["lines"]) for s in out["sections"]] == [
        ("A", ["* A condensed", "* A two"]),
        ("B", ["* B one"]),
    ]
    again, changed = apply_reflection(out, base, condensed)  # the generation moved on
    assert not changed and again is out


def test_bounded_log_keeps_the_newest_sections_then_the_newest_lines() -> None:
    sections = [
        ThreadSection(thread="a", date="Nov 29, 2026", lines=[f"* a{i}" for i in range(10)]),
        ThreadSection(thread="b", date="Nov 30, 2026", lines=[f"* b{i}" for i in range(10)]),
    ]
    count = as_token_counter(None).count_text
    whole = log_text(sections)
    assert bounded_log(sections, count(whole), count) == (whole, 0)
    only_b = log_text(sections[1:])
    text, hidden = bounded_log(sections, count(only_b) + 25, count)
    assert count(text) <= count(only_b) + 25
    assert text.endswith(only_b) and "* a9" in text and "* a0" not in text
    assert hidden == 20 - text.count("* ")
    text, hidden = bounded_log(sections, count(only_b) - 10, count)
    assert "* b9" in text and "* b0" not in text and '<thread id="a">' not in text
    assert hidden == 20 - text.count("* ")
