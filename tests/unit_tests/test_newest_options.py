"""The pure parts of the newest features (issue #28): prompts per instruction mode and hint
switch, the options' validation, the per-request options, titles and the graph's merge of
memory's update into the model node's result. The front doors run on SQLite in
``tests/integration_tests/test_newest_features.py``."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.types import Command

from langchain_om._core.observer import ObserverOutput, build_observer_messages, without_hints
from langchain_om._core.observer_input import FormattedHistory
from langchain_om._core.observer_prompts import (
    ALL_HINTS,
    NO_HINTS,
    OBSERVATION_CONTENT_GUIDE,
    OBSERVATION_FORMAT_GUIDE,
    OBSERVER_SYSTEM_PROMPT,
    HintSwitch,
    observation_guide,
    observer_system_prompt,
)
from langchain_om._core.reflector import (
    REFLECTOR_SYSTEM_PROMPT,
    build_reflector_messages,
    reflector_system_prompt,
)
from langchain_om._core.render import MEMORY_PREAMBLE, memory_preamble
from langchain_om._engine.graph_overflow import applied, with_update
from langchain_om._plans.graph_state import memory_enabled, memory_removed, merge_memory
from langchain_om._plans.titles import clean_title, with_pin
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import OMConfigError, OMUsageError
from tests.helpers import make_memory

RULES = "Record the user's lockers and nothing else."


def test_the_default_prompts_are_composed_of_their_parts() -> None:
    assert OBSERVATION_FORMAT_GUIDE.endswith(OBSERVATION_CONTENT_GUIDE)
    assert observer_system_prompt() == OBSERVER_SYSTEM_PROMPT
    assert reflector_system_prompt() == REFLECTOR_SYSTEM_PROMPT
    assert memory_preamble() == MEMORY_PREAMBLE
    assert observation_guide() == OBSERVATION_FORMAT_GUIDE


def test_replace_swaps_the_content_guidance_and_keeps_the_contract() -> None:
    replaced = observer_system_prompt(RULES, "replace")
    assert RULES in replaced and OBSERVATION_CONTENT_GUIDE not in replaced
    assert "## Custom Instructions" not in replaced
    for kept in ("Layout:", "Priorities:", "<observations>", "## Output format", "## Your input"):
        assert kept in replaced
    appended = observer_system_prompt(RULES, "append")
    assert appended == f"{OBSERVER_SYSTEM_PROMPT}\n\n## Custom Instructions\n\n{RULES}"


def test_the_reflector_is_told_the_observer_guidance_in_effect() -> None:
    replaced = reflector_system_prompt(observer_instruction=RULES, observer_mode="replace")
    assert RULES in replaced and OBSERVATION_CONTENT_GUIDE not in replaced
    appended = reflector_system_prompt(observer_instruction=RULES)
    assert RULES in appended and OBSERVATION_CONTENT_GUIDE in appended
    own = reflector_system_prompt("Keep one line per locker.", "replace")
    assert "Keep one line per locker." in own and "Merge related lines." not in own
    assert "## How to consolidate" in own and "<observations>" in own


@pytest.mark.parametrize(
    "hints",
    [ALL_HINTS, NO_HINTS, HintSwitch(current_task=False), HintSwitch(suggested_response=False)],
)
def test_every_prompt_names_only_the_hints_that_are_on(hints: HintSwitch) -> None:
    history = FormattedHistory(text="User (09:00): hi", attachments=[], message_ids=["m"])
    prior = {"current-task": "Old task", "suggested-response": "Old hint"}
    system, human = build_observer_messages(
        history=history,
        previous=None,
        prior_hints=prior,
        instruction=None,
        thread_title=False,
        hints=hints,
    )
    ref_system, ref_human = build_reflector_messages(
        observations="Date: Nov 30, 2026\n* 🔴 (09:00) x", level=0, instruction=None,
        target_tokens=100, hints=hints,
    )  # fmt: skip
    texts = [str(m.content) for m in (system, human, ref_system, ref_human)]
    for tag, on in (
        ("current-task", hints.current_task),
        ("suggested-response", hints.suggested_response),
    ):
        assert all((f"<{tag}>" in t) is on for t in texts), tag
        assert (f"prior {tag}" in str(human.content)) is on
        assert (f"<{tag}>" in memory_preamble(hints)) is on


def test_without_hints_drops_the_hints_a_reply_should_not_have_had() -> None:
    out = ObserverOutput("* x", "task", "next", "Title", {}, degenerate=False, raw="")
    assert without_hints(out, ALL_HINTS) is out
    dropped = without_hints(out, HintSwitch(current_task=False))
    assert (dropped.current_task, dropped.suggested_response) == (None, "next")
    assert without_hints(out, NO_HINTS).thread_title == "Title"  # titles are not hints


def test_the_rendered_context_hides_hints_that_are_off() -> None:
    memory = make_memory(observation={"message_tokens": 100, "buffer_tokens": False})
    snap = memory.observe(thread_id="t", messages=[HumanMessage("I live in Lisbon " * 10)])
    assert "<current-task>" in snap.context.text
    quiet = make_memory(observation={"message_tokens": 100, "continuation_hints": False})
    text = quiet.render(snap.record).text  # the record holds hints; the context shows none
    assert "<observations>" in text
    assert "<current-task>" not in text and "<suggested-response>" not in text


# -- options -----------------------------------------------------------------------------------


def test_instruction_mode_and_hints_accept_mastra_keys() -> None:
    config = ObservationalMemoryConfig.coerce(
        {
            "observation": {
                "instruction": RULES,
                "instructionMode": "replace",
                "continuationHints": {"suggestedResponse": False},
                "observeOnContextOverflow": False,
            },
            "reflection": {"continuationHints": False},
        }
    )
    assert config.observation.instruction_mode == "replace"
    assert config.observer_hints == HintSwitch(suggested_response=False)
    assert config.reflector_hints == NO_HINTS
    assert config.shown_hints == HintSwitch(suggested_response=False)
    assert config.observation.observe_on_context_overflow is False
    assert ObservationalMemoryConfig.coerce(config.to_mastra()) == config
    inherits = ObservationalMemoryConfig.coerce({"observation": {"continuation_hints": False}})
    assert inherits.reflector_hints == NO_HINTS == inherits.shown_hints


@pytest.mark.parametrize(
    ("options", "option", "phrase"),
    [
        (
            {"observation": {"instruction_mode": "replace"}},
            "observation.instruction_mode",
            "instruction",
        ),
        (
            {"reflection": {"instruction_mode": "replace"}},
            "reflection.instruction_mode",
            "instruction",
        ),
        (
            {
                "observation": {
                    "instruction": RULES,
                    "instruction_mode": "replace",
                    "prompt": "auto",
                }
            },
            "observation.instruction_mode",
            "prompt='default'",
        ),
        ({"observation": {"instruction_mode": "swap"}}, "observation.instruction_mode", "'append'"),
        ({"observation": {"continuation_hints": "off"}}, "observation.continuation_hints", "False"),
        (
            {"observation": {"continuation_hints": {"task": False}}},
            "observation.continuation_hints.task",
            "current_task",
        ),
        (
            {"observation": {"observe_on_context_overflow": "yes"}},
            "observation.observe_on_context_overflow",
            "bool",
        ),
    ],
)
def test_bad_values_are_refused_naming_the_option_and_the_fix(
    options: dict[str, Any], option: str, phrase: str
) -> None:
    with pytest.raises(OMConfigError) as info:
        ObservationalMemoryConfig.coerce(options)
    assert info.value.option == option
    assert phrase in str(info.value)


@pytest.mark.parametrize(
    ("configurable", "enabled"),
    [
        ({}, True),
        ({"langchain_om": {}}, True),
        ({"langchain_om": {"enabled": True}}, True),
        ({"langchain_om": {"enabled": False}}, False),
    ],
)
def test_per_request_enabled(configurable: dict[str, Any], enabled: bool) -> None:
    assert memory_enabled({"configurable": configurable}) is enabled
    assert memory_enabled({}) is True and memory_enabled(None) is True


@pytest.mark.parametrize(
    ("value", "phrase"),
    [(False, "must be a dict"), ({"enable": False}, "'enable'"), ({"enabled": 0}, "True or False")],
)
def test_bad_per_request_options(value: Any, phrase: str) -> None:
    with pytest.raises(OMUsageError, match=phrase):
        memory_enabled({"configurable": {"langchain_om": value}})


def test_memory_leaves_the_state_for_a_request_without_it() -> None:
    user = HumanMessage("hi", id="h")
    merged = merge_memory(AIMessage("x", id="s").model_copy(update={"type": "system"}), ["mem"])
    (restored,) = memory_removed([merged, user])["messages"]
    assert restored.id == "s" and restored.content == "x"
    assert memory_removed([user]) == {}


# -- titles and the graph's update merge --------------------------------------------------------


def test_clean_title() -> None:
    assert clean_title("  Trip \n to   Lisbon ") == "Trip to Lisbon"
    for bad, phrase in ((None, "string"), ("  ", "blank"), ("y" * 201, "at most 200")):
        with pytest.raises(OMUsageError, match=phrase):
            clean_title(bad)


def test_with_pin() -> None:
    record: Any = {"title": "Observer's", "thread_id": "t"}
    assert with_pin(record, None) is record
    assert with_pin(record, "Mine")["title"] == "Mine" and record["title"] == "Observer's"


def test_memory_update_goes_in_front_of_the_model_nodes_result() -> None:
    update: dict[str, Any] = {"messages": [RemoveMessage(id="h0")], "om_record": {"v": 1}}
    reply = AIMessage("ok", id="a1")
    merged = with_update(update, {"messages": [reply]})
    assert merged["messages"] == [*update["messages"], reply] and merged["om_record"] == {"v": 1}
    assert with_update(update, None) == update
    command = with_update(update, Command(goto="tools", update={"messages": reply}))
    assert command.goto == "tools" and command.update["messages"] == [*update["messages"], reply]
    assert with_update(update, [Command(goto="x")])[0] == Command(update=update)
    with pytest.raises(OMUsageError, match="dict, a Command"):
        with_update(update, "text")
    state = {"messages": [HumanMessage("old", id="h0"), HumanMessage("new", id="h1")]}
    assert [m.id for m in applied(state, update)["messages"]] == ["h1"]
