"""``model_settings.frequency_penalty``: small models get one that stops their loops.

``"auto"`` (the default) sends ``SMALL_MODEL_FREQUENCY_PENALTY`` to models on a local server
or named as small, nothing to other models; a number goes to every model of the role; ``None``
sends nothing; a penalty the model instance or the user's ``.bind`` already holds wins.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory
from langchain_om._engine.call_modes import SMALL_MODEL_FREQUENCY_PENALTY
from langchain_om.errors import CycleFailedError, OMConfigError
from langchain_om.testing import FunctionChatModel, memory_model


class _Served(FunctionChatModel):
    """A model with the OpenAI-style ``base_url`` and ``frequency_penalty`` settings."""

    base_url: str | None = None
    frequency_penalty: float | None = None


class _NoPenalty(FunctionChatModel):
    """A model on a local server whose class has no ``frequency_penalty`` setting."""

    base_url: str | None = None


LOCAL = "http://127.0.0.1:8765/v1"
REMOTE = "https://api.example.com/v1"


def _say(i: int) -> str:
    return f"Priya booked flight {100 + i} to Lisbon for the conference on May {i + 1}, 2026."


BATCH = [HumanMessage(_say(i), id=f"u{i}") for i in range(6)]


def _sent(model: FunctionChatModel, **options: Any) -> list[Any]:
    """The ``frequency_penalty`` of every Observer call ``model`` got for one observe."""
    memory = ObservationalMemory(
        model=model, observation={"message_tokens": 200, "buffer_tokens": False, **options}
    )
    memory.observe(thread_id="t", messages=BATCH)
    assert model.calls
    return [c.kwargs.get("frequency_penalty") for c in model.calls]


def _served(base_url: str | None, **fields: Any) -> _Served:
    return _Served(function=memory_model().function, base_url=base_url, **fields)


def test_auto_gives_a_local_model_the_small_model_penalty() -> None:
    assert set(_sent(_served(LOCAL))) == {SMALL_MODEL_FREQUENCY_PENALTY}


def test_auto_sends_nothing_to_a_remote_model() -> None:
    assert set(_sent(_served(REMOTE))) == {None}


def test_a_number_goes_to_every_model_and_none_sends_nothing() -> None:
    fixed = {"model_settings": {"frequency_penalty": 0.4}}
    assert set(_sent(_served(REMOTE), **fixed)) == {0.4}
    assert set(_sent(_served(LOCAL), **fixed)) == {0.4}
    off = {"model_settings": {"frequency_penalty": None}}
    assert set(_sent(_served(LOCAL), **off)) == {None}


def test_the_instance_setting_wins() -> None:
    model = _served(LOCAL, frequency_penalty=0.2)
    assert set(_sent(model)) == {None}  # not sent per call: the instance's 0.2 applies
    bound = _served(LOCAL)
    memory = ObservationalMemory(
        model=bound.bind(frequency_penalty=0.1),
        observation={"message_tokens": 200, "buffer_tokens": False},
    )
    memory.observe(thread_id="t", messages=BATCH)
    assert bound.calls and {c.kwargs["frequency_penalty"] for c in bound.calls} == {0.1}


def test_auto_skips_a_model_without_the_setting_and_a_number_is_refused() -> None:
    local = _NoPenalty(function=memory_model().function, base_url=LOCAL)
    assert set(_sent(local)) == {None}
    fixed = _NoPenalty(function=memory_model().function, base_url=LOCAL)
    with pytest.raises(CycleFailedError, match=r"observation\.model_settings\.frequency_penalty"):
        _sent(fixed, model_settings={"frequency_penalty": 0.4})  # the call fails, naming it
    assert not fixed.calls


async def test_the_reflector_gets_its_own_setting_async() -> None:
    observer, reflector = _served(LOCAL), _served(LOCAL)
    memory = ObservationalMemory(
        observation={"model": observer, "message_tokens": 200, "buffer_tokens": False},
        reflection={"model": reflector, "model_settings": {"frequency_penalty": 0.7}},
    )
    await memory.aobserve(thread_id="t", messages=BATCH)
    await memory.areflect(thread_id="t")
    assert {c.kwargs.get("frequency_penalty") for c in observer.calls} == {1.0}
    assert reflector.calls
    assert {c.kwargs.get("frequency_penalty") for c in reflector.calls} == {0.7}


def test_out_of_range_is_refused_naming_the_fix() -> None:
    with pytest.raises(OMConfigError, match="from -2 to 2"):
        ObservationalMemory(
            model=memory_model(), observation={"model_settings": {"frequency_penalty": 3}}
        )
