from __future__ import annotations

import asyncio
import doctest
import socket
import threading
import time
import warnings
from typing import Any, Literal

import langchain_openai  # noqa: F401  (imported once here so pytester runs reuse it)
import pytest
from langchain.agents import create_agent
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, ValidationError
from pytest_socket import SocketBlockedError
from typing_extensions import TypedDict

import langchain_om.testing
from langchain_om._core.retention import check_reflection
from langchain_om._core.tokens import TokenCounter
from langchain_om.testing import (
    FunctionChatModel,
    RecordedCall,
    ScriptedChatModel,
    ScriptedRateLimitError,
    ScriptExhaustedError,
    _errors,
    _memory,
    _models,
    memory_model,
    pytest_plugin,
    rate_limit_error,
    server_error,
    timeout_error,
)
from langchain_om.testing._memory import _reflect

Mode = Literal["invoke", "ainvoke", "stream", "astream"]
MODES: list[Mode] = ["invoke", "ainvoke", "stream", "astream"]


async def run(model: Any, prompt: Any, mode: Mode, **kwargs: Any) -> Any:
    """Drive a model (or bound runnable) through one API and return the complete reply."""
    if mode == "invoke":
        return model.invoke(prompt, **kwargs)
    if mode == "ainvoke":
        return await model.ainvoke(prompt, **kwargs)
    if mode == "stream":
        chunks = list(model.stream(prompt, **kwargs))
    else:
        chunks = [c async for c in model.astream(prompt, **kwargs)]
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return total


class Answer(BaseModel):
    value: int
    reason: str = ""


class AnswerDict(TypedDict):
    value: int


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# --- scripts and recording -----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_script_order_and_recording(mode: Mode) -> None:
    model = ScriptedChatModel(
        script=["one", AIMessage("two"), lambda msgs: f"echo {msgs[-1].text}"], model="m-1"
    )
    first = await run(model, [SystemMessage("sys"), HumanMessage("a")], mode)
    second = await run(model, "b", mode)
    third = await run(model, "c", mode)

    assert [first.content, second.content, third.content] == ["one", "two", "echo c"]
    calls = model.calls
    assert [c.index for c in calls] == [0, 1, 2]
    assert [m.text for m in calls[0].messages] == ["sys", "a"]
    assert [c.text for c in calls[1:]] == ["b", "c"]
    assert all(c.async_ is mode.startswith("a") for c in calls)
    assert all(c.streamed is mode.endswith("stream") for c in calls)
    assert model.call_count == 3 and model.last_call is calls[-1]
    assert third.response_metadata["model_name"] == "m-1"
    assert third.response_metadata["model_provider"] == "scripted"
    assert model.model_id == "scripted/m-1"


def test_recorded_messages_are_snapshots() -> None:
    model = ScriptedChatModel(script=["ok"])
    messages: list[BaseMessage] = [HumanMessage("before")]
    model.invoke(messages)
    messages[0].content = "after"
    messages.append(HumanMessage("extra"))
    assert [m.text for m in model.last_call.messages] == ["before"]


@pytest.mark.parametrize("mode", MODES)
async def test_usage_metadata_is_a_deterministic_char_count(mode: Mode) -> None:
    model = ScriptedChatModel(script=["hello", AIMessage("x", usage_metadata=_usage(7, 8))])
    reply = await run(model, "abcdefghi", mode)  # 9 chars -> 3 tokens; "hello" -> 2
    assert reply.usage_metadata == _usage(3, 2)
    scripted = await run(model, "abc", mode)
    assert scripted.usage_metadata == _usage(7, 8)  # a scripted usage is kept


def _usage(n_in: int, n_out: int) -> Any:
    return {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}


def test_stream_splits_on_whitespace_and_keeps_tool_calls_for_the_last_chunk() -> None:
    call = {"name": "add", "args": {"a": 1, "b": 2}, "id": "c1", "type": "tool_call"}
    model = ScriptedChatModel(script=[AIMessage("Adding  them\nnow", tool_calls=[call])])
    chunks = list(model.stream("hi"))
    assert [c.content for c in chunks] == ["Adding  ", "them\n", "now", ""]
    assert [c.tool_call_chunks for c in chunks[:-1]] == [[], [], []]
    assert all(c.usage_metadata is None for c in chunks[:-1])
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total.content == "Adding  them\nnow"
    assert total.tool_calls == [call]
    assert total.usage_metadata is not None and total.usage_metadata["input_tokens"] == 1


async def test_stream_by_reply_sends_the_text_in_one_chunk_with_the_same_message() -> None:
    call = {"name": "add", "args": {"a": 1}, "id": "c1", "type": "tool_call"}
    script = [AIMessage("Adding  them\nnow", tool_calls=[call])] * 2
    whole = ScriptedChatModel(script=script, stream_by="reply")
    by_word = ScriptedChatModel(script=script)
    chunks = list(whole.stream("hi"))
    assert [c.content for c in chunks] == ["Adding  them\nnow", ""]
    achunks = [c async for c in whole.astream("hi")]
    assert [c.content for c in achunks] == ["Adding  them\nnow", ""]
    merged, expected = chunks[0] + chunks[1], list(by_word.stream("hi"))
    total = expected[0]
    for chunk in expected[1:]:
        total = total + chunk
    assert (merged.content, merged.tool_calls) == (total.content, total.tool_calls)
    observer = memory_model(stream_by="reply")
    prompt = "## New Messages to Observe\nUser: I moved to Lisbon last week."
    assert len(list(observer.stream(prompt))) == 2
    assert len(list(memory_model().stream(prompt))) > 2
    with pytest.raises(ValidationError):
        ScriptedChatModel(script=["x"], stream_by="token")


def test_exhausted_script_raises_a_clear_assertion_error() -> None:
    model = ScriptedChatModel(script=["only"])
    model.invoke("first")
    with pytest.raises(ScriptExhaustedError) as info:
        model.invoke("the second question")
    err = info.value
    assert isinstance(err, AssertionError)
    assert "1 replies were scripted" in str(err) and "call #2" in str(err)
    assert "the second question" in str(err)
    assert (err.scripted, err.call_index) == (1, 1)
    assert model.call_count == 2 and model.remaining == 0


def test_repeat_last_cycle_and_reset() -> None:
    repeat = ScriptedChatModel(script=["a", "b"], repeat_last=True)
    assert [repeat.invoke("x").content for _ in range(4)] == ["a", "b", "b", "b"]
    cycle = ScriptedChatModel(script=["a", "b"], cycle=True)
    assert [cycle.invoke("x").content for _ in range(5)] == ["a", "b", "a", "b", "a"]
    cycle.reset()
    assert cycle.call_count == 0 and cycle.remaining == 2
    assert cycle.invoke("x").content == "a"


def test_invalid_options_are_rejected() -> None:
    with pytest.raises(ValidationError, match="at most one"):
        ScriptedChatModel(script=["a"], repeat_last=True, cycle=True)
    with pytest.raises(ValidationError, match="non-empty script"):
        ScriptedChatModel(script=[], cycle=True)
    with pytest.raises(ValidationError, match=r"script\[1\]"):
        ScriptedChatModel(script=["a", 42])
    with pytest.raises(ValidationError, match="function"):
        FunctionChatModel()


async def test_async_callables_in_a_script() -> None:
    async def reply(messages: list[BaseMessage]) -> str:
        return f"async {messages[-1].text}"

    model = ScriptedChatModel(script=[reply], repeat_last=True)
    assert (await model.ainvoke("q")).content == "async q"
    with pytest.raises(TypeError, match="ainvoke"):
        model.invoke("q")


def test_concurrent_calls_are_recorded_once_each() -> None:
    model = ScriptedChatModel(script=["a", "b", "c"], cycle=True)

    def worker() -> None:
        for _ in range(15):
            model.invoke("x")

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(c.index for c in model.calls) == list(range(90))


# --- scripted errors -------------------------------------------------------------------------


def test_scripted_rate_limit_on_call_two() -> None:
    model = ScriptedChatModel(script=["ok", rate_limit_error(retry_after=1.5), "after"])
    assert model.invoke("1").content == "ok"
    with pytest.raises(ScriptedRateLimitError) as info:
        model.invoke("2")
    assert info.value.status_code == 429 and info.value.code == 429
    assert info.value.response is not None and info.value.response.status_code == 429
    assert info.value.retry_after == 1.5
    assert info.value.response.headers == {"retry-after": "1.5"}
    assert model.invoke("3").content == "after"
    assert model.call_count == 3


def test_error_helpers_and_exception_classes() -> None:
    model = ScriptedChatModel(script=[server_error(), server_error(500, "boom"), ValueError])
    with pytest.raises(_errors.ScriptedServerError) as first:
        model.invoke("x")
    assert first.value.status_code == 503 and "503" in first.value.message
    with pytest.raises(_errors.ScriptedServerError, match="boom"):
        model.invoke("x")
    with pytest.raises(ValueError):
        model.invoke("x")
    timeout = timeout_error()
    assert isinstance(timeout, TimeoutError) and isinstance(timeout, _errors.ScriptedProviderError)
    assert timeout.status_code is None and timeout.response is None


def test_scripted_errors_drive_with_retry() -> None:
    model = ScriptedChatModel(script=[rate_limit_error(), server_error(502), "recovered"])
    retrying = model.with_retry(
        retry_if_exception_type=(_errors.ScriptedProviderError,),
        wait_exponential_jitter=False,
        stop_after_attempt=3,
    )
    assert retrying.invoke("x").content == "recovered"
    assert model.call_count == 3


# --- function model --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_function_model_computes_replies_from_messages_and_info(mode: Mode) -> None:
    seen: list[RecordedCall] = []

    def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
        seen.append(info)
        return f"{info.index}:{messages[-1].text[::-1]}:{','.join(info.tool_names)}"

    model = FunctionChatModel(function=reply)
    assert (await run(model, "abc", mode)).content == "0:cba:"
    assert (await run(model.bind_tools([add]), "xy", mode)).content == "1:yx:add"
    assert seen == model.calls


async def test_function_model_async_function() -> None:
    async def areply(messages: list[BaseMessage], info: RecordedCall) -> AIMessage:
        await asyncio.sleep(0)
        return AIMessage(f"async #{info.index}")

    only_async = FunctionChatModel(async_function=areply)
    assert (await only_async.ainvoke("x")).content == "async #0"
    with pytest.raises(TypeError, match="only async_function"):
        only_async.invoke("x")
    both = FunctionChatModel(function=lambda m, i: "sync", async_function=areply)
    assert both.invoke("x").content == "sync"
    assert (await both.ainvoke("x")).content == "async #1"


# --- tools, settings, structured output --------------------------------------------------------


def test_bind_tools_and_settings_are_recorded() -> None:
    model = ScriptedChatModel(script=["a", "b"], temperature=0.5, max_tokens=64)
    model.bind_tools([add], tool_choice="add", temperature=0.1).invoke("x", stop=["END"])
    call = model.last_call
    assert call.tool_names == ["add"]
    assert call.tools[0]["function"]["parameters"]["required"] == ["a", "b"]
    assert call.tool_choice == "add"
    assert call.kwargs["temperature"] == 0.1  # bind wins over the constructor
    assert call.kwargs["max_tokens"] == 64
    assert call.kwargs["stop"] == ["END"]
    model.invoke("y")
    assert model.last_call.tools == [] and model.last_call.kwargs == {
        "temperature": 0.5,
        "max_tokens": 64,
    }


@pytest.mark.parametrize("mode", MODES)
async def test_structured_output_from_pydantic_tool_call_and_json(mode: Mode) -> None:
    tool_reply = AIMessage(
        "", tool_calls=[{"name": "Answer", "args": {"value": 2}, "id": "t", "type": "tool_call"}]
    )
    model = ScriptedChatModel(
        script=[Answer(value=1, reason="r"), tool_reply, '```json\n{"value": 3}\n```', {"value": 4}]
    )
    structured = model.with_structured_output(Answer)
    results = [await run(structured, "q", mode) for _ in range(4)]
    assert results == [
        Answer(value=1, reason="r"),
        Answer(value=2),
        Answer(value=3),
        Answer(value=4),
    ]
    spec = model.last_call.structured_output
    assert spec is not None and spec.schema is Answer and spec.method == "function_calling"
    assert model.last_call.tool_names == ["Answer"] and model.last_call.tool_choice == "Answer"


def test_structured_output_typeddict_json_schema_and_methods() -> None:
    model = ScriptedChatModel(script=[{"value": "5"}, '{"value": 6, "extra": true}', {"k": 1}])
    assert model.with_structured_output(AnswerDict).invoke("q") == {"value": 5}
    schema = {"title": "Thing", "type": "object", "properties": {"value": {"type": "integer"}}}
    as_json = model.with_structured_output(schema, method="json_schema")
    assert as_json.invoke("q") == {"value": 6, "extra": True}
    assert model.last_call.kwargs["response_format"]["json_schema"]["name"] == "Thing"
    assert model.last_call.tools == []
    json_mode = model.with_structured_output(Answer, method="json_mode", include_raw=True)
    out = json_mode.invoke("q")
    assert isinstance(out, dict)
    assert out["raw"].content == '{"k": 1}'  # a dict reply becomes JSON text outside tool mode
    assert out["parsed"] is None and isinstance(out["parsing_error"], OutputParserException)


def test_structured_output_parse_errors() -> None:
    model = ScriptedChatModel(script=["not json", "not json"])
    with pytest.raises(OutputParserException, match="tool call named 'Answer' or JSON"):
        model.with_structured_output(Answer).invoke("q")
    raw = model.with_structured_output(Answer, include_raw=True).invoke("q")
    assert isinstance(raw, dict) and raw["raw"].content == "not json"
    with pytest.raises(ValueError, match="unsupported"):
        model.with_structured_output(Answer, method="xml")  # type: ignore[arg-type]


# --- latency -----------------------------------------------------------------------------------


def test_delay_blocks_sync_calls() -> None:
    model = ScriptedChatModel(script=["a"], delay=0.1)
    start = time.perf_counter()
    model.invoke("x")
    assert time.perf_counter() - start >= 0.1


async def test_delay_does_not_block_the_event_loop() -> None:
    model = ScriptedChatModel(script=["a", "b", "c"], delay=0.15)
    start = time.perf_counter()
    replies = await asyncio.gather(*(model.ainvoke(str(i)) for i in range(3)))
    elapsed = time.perf_counter() - start
    assert sorted(r.content for r in replies) == ["a", "b", "c"]
    assert 0.15 <= elapsed < 0.4  # sequential would take 0.45 s


# --- the real agent loop -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_create_agent_runs_tools_with_a_scripted_model(mode: str) -> None:
    call = {"name": "add", "args": {"a": 2, "b": 3}, "id": "call_1", "type": "tool_call"}
    model = ScriptedChatModel(script=[AIMessage("", tool_calls=[call]), "2 + 3 = 5"])
    agent = create_agent(model, tools=[add], system_prompt="Be terse.")
    inputs: Any = {"messages": [HumanMessage("what is 2+3?")]}
    result = agent.invoke(inputs) if mode == "sync" else await agent.ainvoke(inputs)

    assert result["messages"][-1].content == "2 + 3 = 5"
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [(m.content, m.tool_call_id) for m in tool_messages] == [("5", "call_1")]
    first, second = model.calls
    assert first.tool_names == ["add"] and second.tool_names == ["add"]
    assert isinstance(first.messages[0], SystemMessage) and first.messages[0].text == "Be terse."
    assert isinstance(second.messages[-1], ToolMessage) and second.messages[-1].text == "5"
    assert first.async_ is (mode == "async")


def test_create_agent_structured_response_from_a_pydantic_reply() -> None:
    model = ScriptedChatModel(script=[Answer(value=5, reason="sum")])
    agent = create_agent(model, tools=[add], response_format=Answer)
    inputs: Any = {"messages": [HumanMessage("what is 2+3?")]}
    result = agent.invoke(inputs)
    assert result["structured_response"] == Answer(value=5, reason="sum")
    assert model.last_call.tool_names == ["add", "Answer"]


# --- docs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", [langchain_om.testing, _models, _errors, _memory])
def test_docstring_examples_run(module: Any) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# --- the guard ----------------------------------------------------------------------------------

# Plugins the inner runs do not need (hypothesis would be re-imported on every run).
INNER_ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:asyncio")

GUARDED_INNER = """
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from langchain_om.testing import ScriptedChatModel

def test_chat_model_blocked():
    ChatOpenAI(api_key="sk-test", model="gpt-4o-mini")

def test_cannot_be_swallowed():
    try:
        ChatOpenAI(api_key="sk-test", model="gpt-4o-mini")
    except Exception:
        pass

def test_embeddings_blocked():
    OpenAIEmbeddings(api_key="sk-test")

@pytest.mark.real_provider
def test_marked_allowed():
    assert ChatOpenAI(api_key="sk-test", model="gpt-4o-mini").model_name == "gpt-4o-mini"

def test_fakes_allowed():
    class LocalFake(ScriptedChatModel):
        pass

    ScriptedChatModel(script=["x"])
    GenericFakeChatModel(messages=iter(["y"]))
    LocalFake(script=["z"])
"""


@pytest.mark.real_provider  # the inner run's guard is the one under test
def test_guard_blocks_real_provider_clients_unless_marked(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ["langchain_om.testing.pytest_plugin"]')
    pytester.makepyfile(test_inner=GUARDED_INNER)
    result = pytester.runpytest(*INNER_ARGS)
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*test_chat_model_blocked built a real provider chat model: "
            "langchain_openai.*ChatOpenAI*real_provider*",
            "*test_embeddings_blocked built a real provider embeddings client: "
            "langchain_openai.*OpenAIEmbeddings*",
        ]
    )
    assert "FAILED test_inner.py::test_cannot_be_swallowed" in result.stdout.str()


@pytest.mark.real_provider
def test_guard_ini_option_allows_more_modules(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ["langchain_om.testing.pytest_plugin"]')
    pytester.makeini("[pytest]\nlangchain_om_allowed_modules =\n    langchain_openai\n")
    pytester.makepyfile(
        test_inner="from langchain_openai import ChatOpenAI\n"
        "def test_it():\n    ChatOpenAI(api_key='sk-test', model='gpt-4o-mini')\n"
    )
    pytester.runpytest(*INNER_ARGS).assert_outcomes(passed=1)


def test_guard_is_active_in_this_suite() -> None:
    with pytest.raises(pytest.fail.Exception, match="real provider chat model"):
        ChatOpenAI(api_key="sk-test", model="gpt-4o-mini")


def test_is_allowed_fake_rules() -> None:
    assert pytest_plugin.is_allowed_fake(ScriptedChatModel)
    assert pytest_plugin.is_allowed_fake(GenericFakeChatModel)
    assert pytest_plugin.is_allowed_fake(type("Local", (), {"__module__": __name__}))
    assert not pytest_plugin.is_allowed_fake(ChatOpenAI)
    assert not pytest_plugin.is_allowed_fake(BaseChatModel)
    assert pytest_plugin.is_allowed_fake(ChatOpenAI, ("langchain_openai",))


# --- the network guard (tests/conftest.py, pytest-socket) ------------------------------------


def test_unit_tests_cannot_open_network_sockets() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pytest-socket also warns; filterwarnings=error
        with pytest.raises(SocketBlockedError):
            socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        with pytest.raises(SocketBlockedError):
            socket.getaddrinfo("api.openai.com", 443)


def test_unit_tests_keep_unix_sockets_for_the_event_loop() -> None:
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"x")
        assert b.recv(1) == b"x"
    assert asyncio.run(asyncio.sleep(0, result="ran")) == "ran"


def test_memory_model_even_thinning_keeps_enough_of_a_long_log_of_distinct_facts() -> None:
    log = "Date: Dec 1, 2026\n" + "\n".join(
        f"* 🔴 (09:{i % 60:02d}) User said: Turn {i}: item {1000 + i} goes to Porto"
        for i in range(120)
    )
    count = TokenCounter().count_text
    verdicts, sizes = {}, {}
    for even in (False, True):
        out = _reflect(log, 0.3, 8, 1_000, even)
        sizes[even] = count(out)
        verdicts[even] = check_reflection(
            log, out, input_tokens=count(log), output_tokens=count(out), target_tokens=1_000
        )
    assert verdicts[True].accepted, verdicts[True].detail
    assert sizes[True] < 1_000  # under the target at the first attempt: no retry ladder
    assert verdicts[True].kept_facts > verdicts[False].kept_facts  # every k-th keeps fewer
