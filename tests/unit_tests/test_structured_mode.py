"""Structured Observer/Reflector output and the compact prompt, through the front doors."""

from __future__ import annotations

import logging
import re
from datetime import date
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.ai import UsageMetadata

from langchain_om import ObservationalMemory
from langchain_om._core.observer_prompts import (
    COMPACT_OBSERVER_SYSTEM_PROMPT,
    OBSERVER_SYSTEM_PROMPT,
)
from langchain_om._core.record import log_text
from langchain_om._core.structured import (
    STRUCTURED_OBSERVER_NOTE,
    STRUCTURED_REFLECTOR_NOTE,
    StructuredObservation,
    StructuredObserverOutput,
    StructuredReflectorOutput,
    reply_data,
)
from langchain_om._engine.call_modes import (
    STRUCTURED_META_KEY,
    _rendered,
    call_modes,
    served_locally,
)
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import OMConfigError
from langchain_om.eval import MeteredChatModel
from langchain_om.testing import FunctionChatModel, RecordedCall, ScriptedChatModel, memory_model
from tests.helpers import FIXED, build_agent, make_memory

USAGE: UsageMetadata = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
USER_LINE = re.compile(r"^User(?: \((\d{2}:\d{2})\))?: (.+)$", re.MULTILINE)


def _new_messages(call: RecordedCall) -> str:
    text = call.messages[-1].text
    return text.split("## New Messages to Observe", 1)[1].split("## Your Task", 1)[0]


def structured_reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
    """Observe each user line of the prompt as one structured observation; reflect to one line."""
    if info.structured_output is None:
        said = [t for _, t in USER_LINE.findall(_new_messages(info))]
        text = "\n".join(f"* 🟡 (09:00) text-mode reply: User said {t}" for t in said)
        return f"<observations>\nDate: Nov 30, 2026\n{text}\n</observations>"
    if info.structured_output.name == StructuredReflectorOutput.__name__:
        obs = StructuredObservation(
            date=date(2026, 11, 30),
            time="09:00",
            priority="high",
            text="Condensed: user facts 0, 1 and 2: cousin Rui lives in Porto, likes trains",
        )
        return StructuredReflectorOutput(observations=[obs], current_task="Keep helping")
    lines = USER_LINE.findall(_new_messages(info))
    observations = [
        StructuredObservation(
            date=date(2026, 11, 30), time=when or "09:00", priority="high", text=f"User said {t}"
        )
        for when, t in lines
    ]
    return StructuredObserverOutput(
        observations=observations, current_task="Answer the user", thread_title="Trip plans"
    )


def structured_model(**kwargs: Any) -> FunctionChatModel:
    return FunctionChatModel(function=structured_reply, model_name="scripted-structured", **kwargs)


STRUCTURED = {"message_tokens": 60, "buffer_tokens": False, "output": "structured"}


def test_standalone_observes_in_structured_mode() -> None:
    model = structured_model()
    memory = make_memory(model=model, observation=STRUCTURED)
    messages = [HumanMessage("I fly to Lisbon on Friday with my sister Ana.", id="m1")]
    memory.observe(thread_id="t", messages=messages)
    record = memory.status(thread_id="t").record
    assert record is not None
    text = log_text(record["groups"])
    assert "Date: Nov 30, 2026" in text
    assert "* 🔴 (09:00) User said I fly to Lisbon on Friday with my sister Ana." in text
    assert "text-mode reply" not in text
    call = model.last_call
    assert call is not None and call.structured_output is not None
    assert call.structured_output.name == "StructuredObserverOutput"
    assert call.kwargs.get("temperature") == 0.3  # the role's settings reach the model
    system = call.messages[0]
    assert isinstance(system, SystemMessage)
    assert system.text.startswith(OBSERVER_SYSTEM_PROMPT)
    assert system.text.endswith(STRUCTURED_OBSERVER_NOTE)
    assert record["hints"].get("current_task") == "Answer the user"


def test_text_mode_stays_the_default() -> None:
    model = structured_model()
    memory = make_memory(model=model, observation={"message_tokens": 60, "buffer_tokens": False})
    memory.observe(thread_id="t", messages=[HumanMessage("I fly to Lisbon on Friday.", id="m1")])
    record = memory.status(thread_id="t").record
    assert record is not None
    assert "text-mode reply" in log_text(record["groups"])
    call = model.last_call
    assert call is not None and call.structured_output is None
    assert call.messages[0].text == OBSERVER_SYSTEM_PROMPT


def test_reflection_in_structured_mode() -> None:
    model = structured_model()
    memory = make_memory(
        model=model,
        observation=STRUCTURED,
        reflection={"observation_tokens": 40, "output": "structured"},
    )
    for i in range(3):
        text = f"Fact number {i}: my cousin Rui lives in Porto and likes long train rides."
        memory.observe(thread_id="t", messages=[HumanMessage(text, id=f"m{i}")])
    record = memory.status(thread_id="t").record
    assert record is not None and record["generation"] >= 1
    assert "Condensed: user facts" in log_text(record["groups"])
    reflector = [c for c in model.calls if c.structured_output is not None]
    assert any(c.structured_output.name == "StructuredReflectorOutput" for c in reflector)  # type: ignore[union-attr]
    assert any(c.messages[0].text.endswith(STRUCTURED_REFLECTOR_NOTE) for c in reflector)


def test_agent_middleware_in_structured_mode() -> None:
    model = structured_model()
    memory = make_memory(model=model, observation=STRUCTURED)
    actor = FunctionChatModel(function=lambda m, i: f"Reply {i.index}: " + "fine " * 10)
    agent = build_agent(memory, actor)
    thread = {"configurable": {"thread_id": "a"}}
    turns = ("My name is Inês and I live in Braga.", "I work as a nurse.", "Tell me a story.")
    for turn in turns:
        agent.invoke({"messages": [HumanMessage(turn)]}, thread)
    memory.wait_for_background()
    record = memory.read_state(agent.get_state(thread).values)
    assert isinstance(record, dict)
    text = log_text(record["groups"])
    assert "User said My name is Inês and I live in Braga." in text
    assert all(c.structured_output is not None for c in model.calls)


async def test_async_structured_observation() -> None:
    model = structured_model()
    memory = make_memory(model=model, observation=STRUCTURED)
    await memory.aobserve(thread_id="t", messages=[HumanMessage("My dog is called Bolt.", id="x")])
    record = (await memory.astatus(thread_id="t")).record
    assert record is not None
    assert "User said My dog is called Bolt." in log_text(record["groups"])
    assert model.last_call is not None and model.last_call.async_


def test_invalid_observations_are_dropped_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    def reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
        good = {
            "date": "2026-11-30",
            "time": "09:10",
            "priority": "high",
            "text": "User is 30, a nurse in Braga",
        }
        bad = {"date": "2026-11-30", "time": "25:99", "priority": "high", "text": "Bad time"}
        return AIMessage(
            "",
            tool_calls=[
                {
                    "name": "StructuredObserverOutput",
                    "args": {"observations": [good, bad]},
                    "id": "c",
                }
            ],
        )

    model = FunctionChatModel(function=reply, model_name="scripted")
    memory = make_memory(model=model, observation=STRUCTURED)
    with caplog.at_level(logging.WARNING, logger="langchain_om"):
        memory.observe(
            thread_id="t",
            messages=[HumanMessage("I am 30 years old and work as a nurse in Braga.", id="m")],
        )
    record = memory.status(thread_id="t").record
    assert record is not None
    content = log_text(record["groups"])
    assert "User is 30" in content and "Bad time" not in content
    assert any("1 structured observations failed the schema" in r.message for r in caplog.records)


def test_a_reply_without_json_comes_back_as_its_text() -> None:
    raw = AIMessage("I cannot do that.", usage_metadata=USAGE, response_metadata={"m": 1})
    out = _rendered({"raw": raw, "parsed": None, "parsing_error": ValueError("x")}, "observer", "m")
    assert out.text == "I cannot do that."
    assert out.response_metadata == {"m": 1, STRUCTURED_META_KEY: "structured-invalid"}
    assert out.usage_metadata == USAGE


def test_a_parsed_reply_is_rendered_with_the_raw_usage() -> None:
    raw = AIMessage("", usage_metadata=USAGE, id="r1")
    obs = StructuredObservation(date=date(2026, 3, 2), time="7:05", priority="done", text="Paid")
    parsed = StructuredObserverOutput(observations=[obs], suggested_response="Say thanks")
    out = _rendered({"raw": raw, "parsed": parsed, "parsing_error": None}, "observer", "m")
    assert out.text == (
        "<observations>\nDate: Mar 2, 2026\n* ✅ (07:05) Paid\n</observations>\n"
        "<suggested-response>\nSay thanks\n</suggested-response>"
    )
    assert (out.id, out.usage_metadata) == ("r1", USAGE)
    assert out.response_metadata[STRUCTURED_META_KEY] == "structured"
    with pytest.raises(TypeError, match="include_raw"):
        _rendered(parsed, "observer", "m")


class LocalModel(ScriptedChatModel):
    """A scripted model with the base URL of a local OpenAI-compatible server."""

    openai_api_base: str = "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize(
    ("output", "prompt", "model", "expected"),
    [
        ("auto", "auto", LocalModel(model_name="local"), ("text", "compact")),
        ("auto", "auto", ScriptedChatModel(model_name="gpt-5-mini"), ("text", "default")),
        ("auto", "auto", ScriptedChatModel(model_name="SmolLM2-135M"), ("text", "compact")),
        ("auto", "auto", LocalModel(model_name="Llama-3-70B"), ("text", "default")),
        ("text", "compact", LocalModel(model_name="local"), ("text", "compact")),
        ("structured", "default", ScriptedChatModel(), ("structured", "default")),
    ],
)
def test_auto_choices(output: str, prompt: str, model: Any, expected: tuple[str, str]) -> None:
    config = ObservationalMemoryConfig(observation={"output": output, "prompt": prompt})
    assert call_modes(config, "observer", model) == expected
    assert call_modes(config, "reflector", model)[1] == "default"


def test_served_locally() -> None:
    assert served_locally(LocalModel())
    assert not served_locally(ScriptedChatModel())
    assert not served_locally(LocalModel(openai_api_base="https://api.example.com/v1"))


def test_compact_prompt_replaces_the_system_message() -> None:
    model = memory_model()
    memory = make_memory(
        model=model,
        observation={
            "message_tokens": 60,
            "buffer_tokens": False,
            "prompt": "compact",
            "instruction": "Note pets.",
        },
    )
    memory.observe(thread_id="t", messages=[HumanMessage("My cat is called Miso.", id="m")])
    call = model.last_call
    assert call is not None
    system = call.messages[0].text
    assert system.startswith(COMPACT_OBSERVER_SYSTEM_PROMPT)
    assert system.endswith("## Custom Instructions\n\nNote pets.")
    record = memory.status(thread_id="t").record
    assert record is not None and record["groups"]


def test_compact_prompt_examples_are_placeholders() -> None:
    template = COMPACT_OBSERVER_SYSTEM_PROMPT.split("<observations>", 1)[1].split("Rules:")[0]
    lines = [ln for ln in template.splitlines() if ln.startswith("* ")]
    assert lines and all("<" in ln for ln in lines)
    assert "searched" not in COMPACT_OBSERVER_SYSTEM_PROMPT
    assert len(COMPACT_OBSERVER_SYSTEM_PROMPT) < len(OBSERVER_SYSTEM_PROMPT) / 3


def test_options_are_checked() -> None:
    with pytest.raises(OMConfigError, match=r"observation\.output.*'text', 'structured'"):
        ObservationalMemory(
            model=memory_model(), observation={"output": "json"}, clock=lambda: FIXED
        )
    with pytest.raises(OMConfigError, match=r"observation\.prompt.*'compact'"):
        ObservationalMemoryConfig(observation={"prompt": "tiny"})
    with pytest.raises(OMConfigError, match=r"reflection\.output"):
        ObservationalMemoryConfig(reflection={"output": True})
    assert ObservationalMemoryConfig(observation={"output": "auto"}).observation.output == "auto"


def test_a_model_without_structured_output_names_the_fix() -> None:
    memory = make_memory(
        model=FakeListChatModel(responses=["x"]),
        observation={**STRUCTURED, "failure_policy": "raise"},
    )
    with pytest.raises(Exception, match=r"observation\.output='text'"):
        memory.observe(thread_id="t", messages=[HumanMessage("Hi, I am Ana.", id="m")])


def test_a_metered_model_keeps_structured_output_and_counts_its_calls() -> None:
    inner = structured_model()
    metered = MeteredChatModel.wrap(inner)
    memory = make_memory(model=metered, observation=STRUCTURED)
    memory.observe(thread_id="t", messages=[HumanMessage("I moved to Faro in May.", id="m")])
    record = memory.status(thread_id="t").record
    assert record is not None
    assert "User said I moved to Faro in May." in log_text(record["groups"])
    assert inner.last_call is not None and inner.last_call.structured_output is not None
    assert metered.meter.calls == inner.call_count == 1
    assert metered.openai_api_base is None


class _Completion:
    """The shape of openai's ``ChatCompletion`` that a length error carries."""

    class _Usage:
        prompt_tokens, completion_tokens = 120, 40

    class _Choice:
        class _Message:
            content = (
                '{"observations": [{"date": "2026-11-30", "time": "09:00", "priority": "high", '
                '"text": "User owns a red bike"}, {"date": "2026-11-30", "time": "09:0'
            )

        message = _Message()

    choices = [_Choice()]
    usage = _Usage()


class LengthError(Exception):
    completion = _Completion()


def test_a_reply_cut_by_the_output_limit_keeps_its_complete_observations() -> None:
    def reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
        raise LengthError("length limit reached")

    model = FunctionChatModel(function=reply, model_name="scripted")
    memory = make_memory(model=model, observation=STRUCTURED)
    memory.observe(thread_id="t", messages=[HumanMessage("I own a red bike.", id="m")])
    record = memory.status(thread_id="t").record
    assert record is not None
    assert log_text(record["groups"]) == "Date: Nov 30, 2026\n* 🔴 (09:00) User owns a red bike"


def test_other_model_errors_still_fail_the_cycle() -> None:
    def reply(messages: list[BaseMessage], info: RecordedCall) -> Any:
        raise ValueError("boom")

    model = FunctionChatModel(function=reply, model_name="scripted")
    memory = make_memory(model=model, observation=STRUCTURED)
    with pytest.raises(Exception, match="boom"):
        memory.observe(thread_id="t", messages=[HumanMessage("I own a red bike.", id="m")])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('```json\n{"observations": []}\n```', {"observations": []}),
        ('{"observations": [{"text": "a"}, {"te', {"observations": [{"text": "a"}]}),
        (
            '{"current_task": "x", "observations": [{"text": "a"}',
            {"current_task": "x", "observations": [{"text": "a"}]},
        ),
        ('{"observations": [{"text": "a"}, {"text": ', {"observations": [{"text": "a"}]}),
        (  # SmolLM2 under the JSON grammar: a loop in `details` until the output limit
            '{\n  "observations": [\n    {\n      "date": "2026-03-15",\n      "time": "2:20",'
            '\n      "priority": "high",\n      "text": "Sourdough bread and almond croissants",'
            '\n      "details": [\n        "I am going to make the most of my free time. I am '
            "going to make the most of my free time. I",
            {
                "observations": [
                    {
                        "date": "2026-03-15",
                        "time": "2:20",
                        "priority": "high",
                        "text": "Sourdough bread and almond croissants",
                        "details": [],
                    }
                ]
            },
        ),
        ('{"current_task": "say \\"hi', {}),
        ("[1, 2]", None),
        ("not json", None),
    ],
)
def test_reply_data(text: str, expected: Any) -> None:
    assert reply_data(None, text) == expected
    assert reply_data({"observations": []}, text) == {"observations": []}
