"""Eval systems and metering: the summarization baseline and what memory's model spent."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage

from langchain_om._core.tokens import get_default_counter
from langchain_om.eval import SystemSettings, ingest, load_locomo
from langchain_om.eval.models import MeteredChatModel
from langchain_om.eval.systems import summary_budget
from langchain_om.testing import FunctionChatModel, RecordedCall, memory_model

LOCOMO = (
    Path(__file__).resolve().parents[2] / "examples" / "data" / "eval" / "locomo_synthetic.json"
)
COUNTER = get_default_counter()


def long_summarizer() -> FunctionChatModel:
    """A summary model like the small local one: it writes up to its output limit."""

    def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
        return " ".join(f"Jon and Maya talked about topic {i}." for i in range(80))

    return FunctionChatModel(function=reply, model_name="long-summarizer")


def settings(summary_tokens: int | None = None) -> SystemSettings:
    return SystemSettings(
        memory_model=memory_model(words=10),
        counter=COUNTER,
        message_tokens=300,
        observation_tokens=1_200,
        summarizer=long_summarizer(),
        summary_tokens=summary_tokens,
    )


def test_summary_budget_defaults_to_a_quarter_of_the_trigger() -> None:
    assert summary_budget(settings()) == 75
    assert summary_budget(settings(summary_tokens=40)) == 40


def test_a_long_summary_is_cut_so_the_middleware_does_not_summarize_every_turn() -> None:
    conv = load_locomo(LOCOMO).conversations[0]
    capped = ingest("summarization", conv, settings())
    uncapped = ingest("summarization", conv, settings(summary_tokens=100_000))
    # Uncapped, the summary alone is over the trigger: the middleware summarizes again and
    # again, and the context it leaves is larger than the trigger.
    end = conv.turns[-1].timestamp
    assert COUNTER.count_text(uncapped.render(end)) > 300
    assert uncapped.meter.calls >= 3 * capped.meter.calls
    assert 1 <= capped.meter.calls <= 3
    assert COUNTER.count_text(capped.render(end)) < 300  # summary + kept messages


def test_the_cap_also_asks_a_model_with_max_tokens_for_no_more() -> None:
    model = FunctionChatModel(function=lambda m, i: "x " * 500, model_name="m")
    metered = MeteredChatModel.wrap(model, COUNTER, output_cap=10)
    reply = metered.invoke("hi")
    assert COUNTER.count_text(reply.text) <= 10
    assert metered.meter.output_tokens > 10  # metered as the model made it


class _Usage:
    prompt_tokens = 120
    completion_tokens = 400


class _Completion:
    usage = _Usage()


class _CutOff(Exception):
    """Like openai's LengthFinishReasonError: the reply hit the output limit."""

    completion = _Completion()


def test_a_call_cut_off_by_the_output_limit_is_still_metered() -> None:
    def reply(messages: list[BaseMessage], info: RecordedCall) -> str:
        raise _CutOff("length limit reached")

    metered = MeteredChatModel.wrap(FunctionChatModel(function=reply), COUNTER)
    with pytest.raises(_CutOff):
        metered.invoke("observe this")
    meter = metered.meter
    assert (meter.calls, meter.input_tokens, meter.output_tokens) == (1, 120, 400)


def test_a_rejected_observer_reply_does_not_end_the_run() -> None:
    """A small model's unusable reply (here: the prompt echoed back) fails its cycle: the run
    goes on, the conversation stays in the window, and the failures are counted."""

    def echo(messages: list[BaseMessage], info: RecordedCall) -> str:
        return messages[0].text[:400]

    conv = load_locomo(LOCOMO).conversations[0]
    held = ingest(
        "om",
        conv,
        SystemSettings(
            memory_model=FunctionChatModel(function=echo),
            counter=COUNTER,
            message_tokens=300,
            observation_tokens=1_200,
        ),
    )
    try:
        assert held.details["failed_observations"] > 0
        assert held.details["observed_messages"] == 0
        assert held.details["window_messages"] == len(conv.turns)
        assert "I finished the half marathon in two hours." in held.render(conv.turns[-1].timestamp)
    finally:
        held.close()
