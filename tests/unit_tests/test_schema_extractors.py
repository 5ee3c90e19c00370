"""Schema extractors: typed values filled by a structured-output call after each cycle."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import typing
from collections.abc import Mapping
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel
from typing_extensions import TypedDict

from langchain_om import Extractor, OMConfigError
from langchain_om._core.bounds import MAX_VALUE_TOKENS
from langchain_om.display import render_html, render_text
from langchain_om.events import OMEvent
from langchain_om.extractors import WorkingMemoryExtractor
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model
from tests.helpers import build_agent, build_graph, make_memory


class Profile(BaseModel):
    name: str
    city: str | None
    allergies: list[str]


class Tasks(TypedDict):
    open: list[str]


TASKS_SCHEMA = {
    "title": "Tasks",
    "type": "object",
    "properties": {"open": {"type": "array", "items": {"type": "string"}}},
    "required": ["open"],
}


def section(prompt: str, title: str) -> str:
    return prompt.split(f"## {title}\n\n", 1)[1].split("\n\n## ", 1)[0]


def fill_profile(prompt: str) -> dict[str, Any]:
    """What a good model answers: the previous value, updated from the new observations."""
    before = section(prompt, "Previous value")
    value: dict[str, Any] = (
        json.loads(before) if before != "none" else {"name": "", "city": None, "allergies": []}
    )
    new = section(prompt, "New observations")
    for name in re.findall(r"my name is (\w+)", new, re.I):
        value["name"] = name
    for city in re.findall(r"(?:live in|moved to) (\w+)", new, re.I):
        value["city"] = city
    for allergy in re.findall(r"allergic to (\w+)", new, re.I):
        if allergy not in value["allergies"]:
            value["allergies"].append(allergy)
    return value


def fill_tasks(prompt: str) -> dict[str, Any]:
    before = section(prompt, "Previous value")
    value: dict[str, Any] = json.loads(before) if before != "none" else {"open": []}
    value["open"] += re.findall(r"remind me to (\w+)", section(prompt, "New observations"), re.I)
    return value


def observer_and_extractor(keep: float = 0.3, **answers: Any) -> FunctionChatModel:
    """``memory_model()`` for the Observer; schema calls answered by ``answers[schema name]``."""
    observer = memory_model(words=30, keep=keep)
    assert observer.function is not None
    observe = observer.function

    def reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
        spec = info.structured_output
        if spec is None:
            return observe(messages, info)
        answer = answers[spec.name]
        return answer(messages[-1].text) if callable(answer) else answer

    return FunctionChatModel(function=reply)


def conversation(turns: int = 30) -> list[list[BaseMessage]]:
    facts = {
        2: "My name is Maya.",
        5: "I live in Lisbon.",
        8: "I'm allergic to peanuts.",
        15: "I'm also allergic to shellfish.",
        21: "Big news: I moved to Porto last week.",
    }
    # filler turns talk about the trip in words of their own (a phrase repeated within a
    # message, or the same message every turn, reads as a loop to the stream cut)
    topics = (
        "trains ferries hostels museums beaches markets cafes bikes bridges castles gardens "
        "harbours tiles trams bakeries viewpoints fountains chapels ceramics lighthouses"
    ).split()
    out = []
    for i in range(turns):
        plan = " ".join(topics[(i + k * 7) % len(topics)] for k in range(12))
        text = facts.get(i, f"Turn {i}: let's keep planning the trip, {plan}")
        out.append([HumanMessage(text, id=f"h{i}"), AIMessage(f"Sure ({i}).", id=f"a{i}")])
    return out


def profile_memory(model: FunctionChatModel, **extractor: Any) -> Any:
    profile = Extractor(
        "Profile", "The user's name, home city and allergies.", schema=Profile, **extractor
    )
    return make_memory(
        model=model,
        observation={"message_tokens": 400, "buffer_tokens": False, "extract": [profile]},
    )


def test_a_profile_over_thirty_turns_ends_with_the_right_value() -> None:
    model = observer_and_extractor(Profile=fill_profile)
    memory = profile_memory(model)
    events: list[OMEvent] = []
    memory.on_debug_event = events.append
    for turn in conversation():
        memory.add_messages("t", turn)
    snap = memory.observe(thread_id="t")
    assert snap.record["extracted"]["profile"] == {
        "name": "Maya",
        "city": "Porto",
        "allergies": ["peanuts", "shellfish"],
    }
    calls = [c for c in model.calls if c.structured_output is not None]
    assert len(calls) >= 3
    # the previous value is in the next extraction prompt
    assert '"name": "Maya"' in section(calls[-1].messages[-1].text, "Previous value")
    assert section(calls[0].messages[-1].text, "Previous value") == "none"
    ends = [e for e in events if e.type == "data-om-observation-end"]
    assert ends and any("profile" in e.extracted_values for e in ends)
    # the Observer's own prompt has no section for a schema extractor
    observer_calls = [c for c in model.calls if c.structured_output is None]
    assert all("<profile>" not in m.text for c in observer_calls for m in c.messages)


def test_an_invalid_reply_records_a_failure_and_keeps_the_rest() -> None:
    model = observer_and_extractor(Profile={"name": 5, "city": None}, Tasks=fill_tasks)
    extract = [
        Extractor("Profile", "Profile.", schema=Profile),
        Extractor("Tasks", "Open tasks.", schema=Tasks),
        Extractor("Mood", "The user's mood, one word."),
    ]
    memory = make_memory(
        model=model,
        observation={"message_tokens": 2000, "buffer_tokens": False, "extract": extract},
    )
    events: list[OMEvent] = []
    memory.on_debug_event = events.append
    snap = memory.observe(thread_id="t", messages=[HumanMessage("Remind me to pack. I'm happy.")])
    assert snap.record["groups"], "the observation is kept"
    assert snap.record["extracted"]["tasks"] == {"open": ["pack"]}
    assert "profile" not in snap.record["extracted"]
    (end,) = [e for e in events if e.type == "data-om-observation-end"]
    (failure,) = end.extraction_failures
    assert failure["slug"] == "profile" and failure["reason"] == "extraction_failed"
    assert "did not fit the schema" in failure["error"]


def test_on_extracted_replaces_and_rejects() -> None:
    def shout(ctx: Mapping[str, Any]) -> dict[str, Any]:
        return {**ctx["current"], "name": str(ctx["current"]["name"]).upper()}

    memory = profile_memory(observer_and_extractor(Profile=fill_profile), on_extracted=shout)
    snap = memory.observe(thread_id="t", messages=[HumanMessage("My name is Maya.")])
    assert snap.record["extracted"]["profile"]["name"] == "MAYA"

    def reject_moves(ctx: Mapping[str, Any]) -> None:
        if ctx["previous"] and ctx["current"]["city"] != ctx["previous"]["city"]:
            raise ValueError("city changes need confirmation")

    events: list[OMEvent] = []
    memory = profile_memory(observer_and_extractor(Profile=fill_profile), on_extracted=reject_moves)
    memory.on_debug_event = events.append
    memory.observe(thread_id="t", messages=[HumanMessage("I live in Lisbon.")])
    snap = memory.observe(thread_id="t", messages=[HumanMessage("I moved to Porto.", id="x")])
    assert snap.record["extracted"]["profile"]["city"] == "Lisbon"
    last = [e for e in events if e.type == "data-om-observation-end"][-1]
    assert last.extraction_failures[0]["slug"] == "profile"
    assert "confirmation" in last.extraction_failures[0]["error"]


def test_an_invalid_replacement_is_rejected_too() -> None:
    memory = profile_memory(
        observer_and_extractor(Profile=fill_profile), on_extracted=lambda ctx: {"name": None}
    )
    snap = memory.observe(thread_id="t", messages=[HumanMessage("My name is Maya.")])
    assert "profile" not in snap.record["extracted"]


def test_json_schema_and_async_calls() -> None:
    model = observer_and_extractor(Tasks=fill_tasks)
    tasks = Extractor("Tasks", "Open tasks.", schema=TASKS_SCHEMA)
    memory = make_memory(
        model=model,
        observation={"message_tokens": 2000, "buffer_tokens": False, "extract": [tasks]},
    )
    snap = asyncio.run(
        memory.aobserve(thread_id="t", messages=[HumanMessage("Remind me to call.")])
    )
    assert snap.record["extracted"]["tasks"] == {"open": ["call"]}


def test_reflection_extract_fills_after_a_reflection() -> None:
    model = observer_and_extractor(Profile=fill_profile)
    profile = Extractor("Profile", "Profile.", schema=Profile)
    memory = make_memory(model=model, reflection={"observation_tokens": 3000, "extract": [profile]})
    memory.observe(thread_id="t", messages=[HumanMessage("My name is Maya. I live in Lisbon.")])
    assert not any(c.structured_output for c in model.calls)
    snap = memory.reflect(thread_id="t")
    assert snap.record["extracted"]["profile"]["city"] == "Lisbon"
    (call,) = [c for c in model.calls if c.structured_output is not None]
    assert "Lisbon" in section(call.messages[-1].text, "New observations")


def test_reflection_extract_takes_schema_extractors_only() -> None:
    with pytest.raises(OMConfigError, match="no schema") as info:
        make_memory(reflection={"observation_tokens": 3000, "extract": [Extractor("Mood", "x")]})
    assert info.value.option == "reflection.extract"


@pytest.mark.parametrize("schema", [dict, {"type": "string"}, 42])
def test_unsupported_schemas_are_refused(schema: Any) -> None:
    with pytest.raises(OMConfigError, match="pydantic model class, a TypedDict"):
        Extractor("Profile", "x", schema=schema)


def test_a_typeddict_pydantic_cannot_validate_is_refused_at_construction() -> None:
    class Plain(typing.TypedDict):
        open: list[str]

    if sys.version_info >= (3, 12):
        assert Extractor("Tasks", "x", schema=Plain).structured
        return
    with pytest.raises(OMConfigError, match="typing_extensions.TypedDict"):
        Extractor("Tasks", "x", schema=Plain)


def test_a_buffered_reflection_carries_its_extraction_to_activation() -> None:
    model = observer_and_extractor(keep=1.0, Profile=fill_profile)
    profile = Extractor("Profile", "Profile.", schema=Profile)
    memory = make_memory(
        model=model,
        observation={"message_tokens": 300},
        reflection={"observation_tokens": 600, "extract": [profile], "buffer_activation": 0.3},
        background="manual",
    )
    events: list[OMEvent] = []
    memory.on_debug_event = events.append
    for turn in conversation(30):
        memory.add_messages("t", turn)
        memory.run_background()
    activations = [
        e for e in events if e.type == "data-om-activation" and e.operation_type == "reflection"
    ]
    assert activations, "a buffered reflection was activated"
    buffered_ends = [
        e for e in events if e.type == "data-om-buffering-end" and e.operation_type == "reflection"
    ]
    assert any("profile" in e.extracted_values for e in buffered_ends)
    assert memory.status(thread_id="t").extracted["profile"]["name"] == "Maya"


def test_the_values_show_in_the_text_and_html_views() -> None:
    memory = profile_memory(observer_and_extractor(Profile=fill_profile))
    snap = memory.observe(thread_id="t", messages=[HumanMessage("My name is Maya.")])
    text = render_text(snap)
    assert 'extracted profile: {"name": "Maya", "city": null, "allergies": []}' in text
    assert "&quot;name&quot;: &quot;Maya&quot;" in render_html(snap)


# -- dynamic instructions and schemas: the run context ---------------------------------------


def context_recorder(seen: list[dict[str, Any]], text: str) -> Any:
    def instructions(ctx: Mapping[str, Any]) -> str:
        seen.append(dict(ctx))
        return text

    return instructions


def by_tenant(ctx: Mapping[str, Any]) -> Any:
    """A per-run schema: the tenant in the request's configurable picks it."""
    return Tasks if ctx["configurable"].get("tenant") == "todo-app" else Profile


def test_dynamic_instructions_and_schema_get_the_agent_run_context() -> None:
    seen: list[dict[str, Any]] = []
    text_seen: list[dict[str, Any]] = []
    model = observer_and_extractor(Profile=fill_profile, Tasks=fill_tasks)
    extract = [
        Extractor("Value", context_recorder(seen, "The value."), schema=by_tenant),
        Extractor("Mood", context_recorder(text_seen, "The user's mood.")),
    ]
    memory = make_memory(
        model=model,
        observation={"message_tokens": 400, "buffer_tokens": False, "extract": extract},
    )
    actor = FunctionChatModel(function=lambda m, i: "Noted.", model_name="gpt-5")
    agent = build_agent(memory, actor, tools=[])
    config: RunnableConfig = {
        "configurable": {"thread_id": "t", "resource_id": "u", "tenant": "todo-app"}
    }
    # each request in words of its own (one sentence written 20 times reads as a loop)
    things = (
        "passport charger sunscreen sandals jacket umbrella camera tickets adapter headphones "
        "notebook toothbrush sweater scarf gloves snacks medicine glasses wallet keys novel "
        "towel swimsuit backpack pillow earplugs blanket map compass torch batteries lotion "
        "hat boots socks shirts trousers belt razor comb"
    ).split()
    for i in range(12):
        bag = ", ".join(things[(i + k * 3) % len(things)] for k in range(len(things)))
        ask = f"Remind me to pack{i}. The bag also needs {bag}."
        agent.invoke({"messages": [HumanMessage(ask)]}, config)
    assert seen and text_seen, "both extractors ran"
    for ctx in (seen[-1], text_seen[-1]):
        assert ctx["memory"] is memory
        assert ctx["configurable"]["tenant"] == "todo-app"
        assert ctx["configurable"]["thread_id"] == "t"
        assert not any(str(k).startswith("__") for k in ctx["configurable"])
        assert (ctx["thread_id"], ctx["resource_id"], ctx["source"]) == ("t", "u", "observation")
        assert ctx["actor_model"] and "gpt-5" in ctx["actor_model"]
    assert len(seen) >= 2, "observed more than once"
    assert seen[-1]["previous"] is not None, "the schema extractor sees its previous value"
    calls = [c.structured_output.name for c in model.calls if c.structured_output is not None]
    assert calls and set(calls) == {"Tasks"}, "the configurable picked the schema"
    record = agent.get_state(config).values["om_record"]
    assert record["extracted"]["value"]["open"][0] == "pack0"


def test_graph_nodes_pass_the_run_configurable_to_hooks_and_extractors() -> None:
    seen: list[dict[str, Any]] = []
    hooked: list[dict[str, Any]] = []

    def keep(messages: list[BaseMessage], ctx: Mapping[str, Any]) -> list[BaseMessage]:
        hooked.append(dict(ctx))
        return messages

    extract = [Extractor("Mood", context_recorder(seen, "The user's mood."))]
    memory = make_memory(
        observation={"message_tokens": 400, "buffer_tokens": False, "extract": extract},
        hooks={"before_observation": keep},
    )
    graph = build_graph(memory, FunctionChatModel(function=lambda m, i: "Noted."))
    config: RunnableConfig = {"configurable": {"thread_id": "g", "tenant": "acme"}}
    for i in range(8):
        graph.invoke({"messages": [HumanMessage(f"Turn {i}: " + "more detail " * 30)]}, config)
    assert seen and hooked
    for ctx in (seen[-1], hooked[-1]):
        assert ctx["memory"] is memory and ctx["configurable"]["tenant"] == "acme"


def test_standalone_calls_get_the_memory_and_an_empty_configurable() -> None:
    seen: list[dict[str, Any]] = []
    model = observer_and_extractor(Profile=fill_profile)
    extract = [Extractor("Profile", context_recorder(seen, "Profile."), schema=by_tenant)]
    memory = make_memory(
        model=model,
        observation={"message_tokens": 2000, "buffer_tokens": False, "extract": extract},
    )
    snap = memory.observe(thread_id="t", messages=[HumanMessage("My name is Maya.")])
    assert snap.record["extracted"]["profile"]["name"] == "Maya"
    (ctx,) = seen
    assert ctx["memory"] is memory and ctx["configurable"] == {}


def test_a_schema_function_returning_no_schema_fails_that_extraction_only() -> None:
    model = observer_and_extractor(Tasks=fill_tasks)
    extract = [
        Extractor("Broken", "x", schema=lambda ctx: {"type": "string"}),
        Extractor("Tasks", "Open tasks.", schema=Tasks),
    ]
    memory = make_memory(
        model=model,
        observation={"message_tokens": 2000, "buffer_tokens": False, "extract": extract},
    )
    events: list[OMEvent] = []
    memory.on_debug_event = events.append
    snap = memory.observe(thread_id="t", messages=[HumanMessage("Remind me to call.")])
    assert snap.record["groups"] and snap.record["extracted"]["tasks"] == {"open": ["call"]}
    (end,) = [e for e in events if e.type == "data-om-observation-end"]
    (failure,) = end.extraction_failures
    assert failure["slug"] == "broken" and "returned no schema" in failure["error"]


def test_the_working_memory_refuses_a_schema_function() -> None:
    with pytest.raises(OMConfigError, match="not a function returning one"):
        WorkingMemoryExtractor(schema=by_tenant)


def test_an_oversized_value_is_refused_with_a_failure_and_the_previous_value_kept() -> None:
    huge = {"name": "Maya", "city": "Lisbon", "allergies": ["x" * 20] * 40_000}  # ~ 900 KB
    replies = iter([{"name": "Maya", "city": "Lisbon", "allergies": []}, huge])
    model = observer_and_extractor(Profile=lambda prompt: next(replies))
    memory = profile_memory(model)
    events: list[OMEvent] = []
    memory.on_debug_event = events.append
    memory.observe(thread_id="t", messages=[HumanMessage("My name is Maya. I live in Lisbon.")])
    more = HumanMessage("More about me: I work as a nurse near the river.", id="x")
    snap = memory.observe(thread_id="t", messages=[more])
    assert snap.record["groups"], "the observation is kept"
    assert snap.record["extracted"]["profile"] == {
        "name": "Maya",
        "city": "Lisbon",
        "allergies": [],
    }
    assert len(json.dumps(snap.record)) < 20_000
    last = [e for e in events if e.type == "data-om-observation-end"][-1]
    (failure,) = last.extraction_failures
    assert failure["slug"] == "profile" and failure["reason"] == "extraction_failed"
    assert str(MAX_VALUE_TOKENS) in failure["error"]


def test_an_oversized_text_section_is_refused_too() -> None:
    observer = memory_model(words=30)
    assert observer.function is not None
    observe = observer.function

    def reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
        # no loop (every word differs in its letters, not only in a number), just far too long
        mood = " ".join(
            "calm-" + "".join(chr(97 + int(d)) for d in f"{i:04d}") for i in range(6_000)
        )
        return str(observe(messages, info)) + f"\n<mood>\n{mood}\n</mood>"

    memory = make_memory(
        model=FunctionChatModel(function=reply),
        observation={
            "message_tokens": 2000,
            "buffer_tokens": False,
            # the scripted reply is oversized on purpose: no output budget cuts it short, so
            # the extraction's own bound is what refuses the section
            "output_budget": False,
            "extract": [Extractor("Mood", "The user's mood, one word.")],
        },
    )
    events: list[OMEvent] = []
    memory.on_debug_event = events.append
    snap = memory.observe(
        thread_id="t", messages=[HumanMessage("I'm calm and relaxed about the move.")]
    )
    assert snap.record["groups"] and "mood" not in snap.record["extracted"]
    (end,) = [e for e in events if e.type == "data-om-observation-end"]
    (failure,) = end.extraction_failures
    assert failure["slug"] == "mood" and str(MAX_VALUE_TOKENS) in failure["error"]
