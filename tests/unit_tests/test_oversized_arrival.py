"""When a message that crosses the threshold on its own leaves the window.

A user message that big is observed at the step it arrives; a large tool result the agent
just asked for stays until its turn is over (the agent needs it to finish the turn).
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool

from langchain_om import ObservationalMemoryMiddleware
from langchain_om._core.render import bounded_groups
from langchain_om._core.retention import MIN_RETENTION, check_reflection, required_retention
from langchain_om._core.tokens import get_default_counter
from langchain_om._plans.turn_rules import arrives_oversized
from langchain_om.testing import FunctionChatModel
from tests.helpers import archived_ids, make_memory

COUNTER = get_default_counter()
OPTIONS: dict[str, Any] = {"message_tokens": 200, "buffer_tokens": False}
BIG = "Quarterly audit report: revenue 1234 euros, costs 5678 euros. " + (
    "line of a very long report with numbers 1234 and 5678 " * 60
)
"""A message above the threshold on its own; its opening carries enough facts for the
information floor of a batch this size (the scripted Observer quotes a message's first words)."""


@tool
def report(name: str) -> str:
    """Fetch a long report."""
    return f"Report {name}: " + BIG


def test_the_rule_takes_only_a_newest_user_message() -> None:
    count = COUNTER.count_messages
    big_user = [AIMessage("hi", id="a0"), HumanMessage(BIG, id="h1")]
    call = {"name": "report", "args": {"name": "q"}, "id": "c1"}
    big_tool = [
        HumanMessage("fetch it", id="h1"),
        AIMessage("", tool_calls=[call], id="a1"),
        ToolMessage(BIG, tool_call_id="c1", id="t1"),
    ]
    assert arrives_oversized(big_user, count, 200)
    assert not arrives_oversized(big_user, count, 10_000)  # below the threshold
    assert not arrives_oversized(big_tool, count, 200)  # the agent's own work on the turn
    assert not arrives_oversized([], count, 200)


def test_a_large_tool_result_stays_until_the_agent_finished_its_turn() -> None:
    memory = make_memory(observation=OPTIONS)
    seen: list[list[str]] = []

    def actor(messages: list[BaseMessage], info: Any) -> str | AIMessage:
        seen.append([m.type for m in messages])
        if isinstance(messages[-1], ToolMessage):
            return "The report says 1234."
        if "report" in messages[-1].text:
            call = {"name": "report", "args": {"name": "q3"}, "id": f"r{info.index}"}
            return AIMessage("", tool_calls=[call])
        return "ok"

    agent = create_agent(
        FunctionChatModel(function=actor),
        [report],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t", "resource_id": "u"}}
    out = agent.invoke({"messages": [HumanMessage("get the report", id="h1")]}, config)
    assert out["messages"][-1].text == "The report says 1234."
    assert seen[-1][-1] == "tool"  # the model saw the result it asked for
    assert len(seen) == 2  # no second tool call: it did not lose the result
    agent.invoke({"messages": [HumanMessage("thanks", id="h2")]}, config)
    archive = archived_ids(memory, "t")
    assert archive[:1] == ["h1"] and len(archive) >= 3  # observed once the turn was over


def test_a_huge_user_message_is_observed_at_the_step_it_arrives() -> None:
    memory = make_memory(observation=OPTIONS)
    memory.add_messages("s", [HumanMessage("hi", id="h0"), AIMessage("hello", id="a0")])
    snap = memory.add_messages("s", [HumanMessage(BIG, id="h1")])
    assert archived_ids(memory, "s") == ["h0", "a0", "h1"]
    assert [m.id for m in snap.window] == []


# ------------------------------------------------ reflections of a log of critical facts only


def _critical_log(lines: int) -> str:
    body = "\n".join(f"* 🔴 (09:{i % 60:02d}) User paid invoice {1000 + i}." for i in range(lines))
    return "Date: Nov 30, 2026\n" + body


def test_a_log_of_only_critical_facts_may_forget_its_oldest_to_fit() -> None:
    log = _critical_log(120)
    tokens = COUNTER.count_text(log)
    newest = "Date: Nov 30, 2026\n" + "\n".join(log.splitlines()[-40:])
    target = tokens // 2
    assert required_retention(log, input_tokens=tokens, target_tokens=target) < MIN_RETENTION
    verdict = check_reflection(
        log,
        newest,
        input_tokens=tokens,
        output_tokens=COUNTER.count_text(newest),
        target_tokens=target,
    )
    assert verdict.accepted, verdict.detail
    vague = "Date: Nov 30, 2026\n* 🔴 (09:00) User paid many invoices over the morning."
    rejected = check_reflection(
        log,
        vague,
        input_tokens=tokens,
        output_tokens=COUNTER.count_text(vague),
        target_tokens=target,
    )
    assert not rejected.accepted


def test_a_mixed_log_keeps_the_full_requirement() -> None:
    log = _critical_log(5) + "\n" + "\n".join(f"* 🟡 (10:00) chatter {i} " * 6 for i in range(40))
    tokens = COUNTER.count_text(log)
    assert required_retention(log, input_tokens=tokens, target_tokens=tokens // 3) == MIN_RETENTION


# ------------------------------------ the memory context stays bounded while reflections fail


def test_a_log_above_block_after_is_shown_from_its_newest_groups() -> None:
    memory = make_memory(
        observation={"message_tokens": 60, "buffer_tokens": False},
        reflection={"observation_tokens": 200, "block_after": 1.2},
        model=FunctionChatModel(
            function=lambda messages, info: (
                (
                    "<observations>\nDate: Nov 30, 2026\n"
                    + "\n".join(f"* 🔴 (09:00) User fact {info.index}-{i} kept" for i in range(6))
                    + "\n</observations>"
                )
                if "## Observations to Condense" not in messages[-1].text
                else ""
            )  # every reflection fails: the log is never condensed
        ),
    )
    for i in range(12):
        memory.add_messages("b", [HumanMessage(f"fact {i} " * 30, id=f"h{i}")])
    record = memory.status(thread_id="b").record
    assert record is not None and record["observation_tokens"] > 240  # nothing was lost
    text = memory.render(record).text
    body = text.split("\n<observations>\n", 1)[1].rsplit("\n</observations>", 1)[0]
    assert "older observation lines are not shown" in body
    shown = [line for line in body.splitlines() if line.startswith("* ")]
    assert COUNTER.count_text("\n".join(shown)) <= 240
    newest = record["groups"][-1]["text"].splitlines()[-1]
    assert newest in body  # the newest observations are the ones shown


def test_a_single_group_above_the_cap_shows_its_newest_lines_under_their_date() -> None:
    lines = [f"* 🔴 (09:{i:02d}) User paid invoice {1000 + i}." for i in range(40)]
    text = "Date: Nov 29, 2026\n" + "\n".join(lines[:20]) + "\nDate: Nov 30, 2026\n"
    text += "\n".join(lines[20:])
    group: Any = {"id": "g", "kind": "observation", "text": text, "tokens": 10_000}
    shown, hidden = bounded_groups([group], 60, COUNTER.count_text)
    assert len(shown) == 1 and hidden > 0
    out = shown[0]["text"].splitlines()
    assert out[0] == "Date: Nov 30, 2026" and out[-1] == lines[-1]
    assert COUNTER.count_text(shown[0]["text"]) <= 60
    assert hidden + len(out) - 1 == 40  # every line is either shown or counted as hidden
