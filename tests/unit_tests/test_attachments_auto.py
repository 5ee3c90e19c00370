"""``observe_attachments="auto"``: images go to an Observer that reads them, and only to one."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory
from langchain_om.testing import FunctionChatModel, memory_model

IMAGE = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png", "filename": "a.png"}


def _observer(**fields: Any) -> FunctionChatModel:
    return FunctionChatModel(function=memory_model().function, **fields)


def _forwarded(model: FunctionChatModel, setting: Any = "auto") -> bool:
    memory = ObservationalMemory(
        model=model, observation={"observe_attachments": setting, "buffer_tokens": False}
    )
    said = "Here is the floor plan of the flat in Porto I told you about, with two bedrooms."
    message = HumanMessage([{"type": "text", "text": said}, IMAGE], id="u1")
    memory.observe(thread_id="t", messages=[message])
    sent = model.calls[0].messages[-1].content
    return isinstance(sent, list) and any(
        isinstance(part, dict) and part.get("type") == "image" for part in sent
    )


@pytest.mark.parametrize(
    ("fields", "forwarded"),
    [
        ({"profile": {"image_inputs": True}}, True),
        ({"profile": {"image_inputs": False}}, False),
        ({}, True),  # nothing known: forwarded
        ({"model_name": "qwen2.5-1.5b-instruct"}, False),  # a small model with no profile
        ({"model_name": "qwen2.5-1.5b-instruct", "profile": {"image_inputs": True}}, True),
    ],
)
def test_auto_follows_the_observer_models_profile(fields: dict[str, Any], forwarded: bool) -> None:
    assert _forwarded(_observer(**fields)) is forwarded


def test_true_and_false_are_taken_as_they_are() -> None:
    assert _forwarded(_observer(profile={"image_inputs": False}), True) is True
    assert _forwarded(_observer(profile={"image_inputs": True}), False) is False
