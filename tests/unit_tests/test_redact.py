"""Failed-cycle events and hook payloads carry a redacted summary, never the raw error text."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om import CycleFailedError
from langchain_om._core.redact import MASK, error_summary, redact_text
from langchain_om.events import OMEvent
from langchain_om.testing import FunctionChatModel, RecordedCall
from tests.helpers import make_memory

SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


class AuthError(Exception):
    status_code = 401


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"Incorrect API key provided: {SECRET}", SECRET),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdefgh", "eyJhbGciOiJIUzI1NiJ9abcdefgh"),
        ("could not connect to postgresql://app:hunter2pw@db:5432/om", "hunter2pw"),
        ("GET https://api.x.ai/v1?api_key=abcd1234efgh5678 failed", "abcd1234efgh5678"),
        ("anthropic key sk-ant-api03-AbCdEf123456 rejected", "sk-ant-api03-AbCdEf123456"),
    ],
)
def test_redact_text_masks_credentials(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out and MASK in out


def test_redact_text_keeps_plain_text_and_cuts_long_text() -> None:
    assert redact_text("Connection reset by peer") == "Connection reset by peer"
    assert len(redact_text("word " * 500)) <= 200


def test_error_summary_has_type_and_status() -> None:
    summary = error_summary(AuthError(f"Incorrect API key provided: {SECRET}"))
    assert (summary.type, summary.status_code) == ("AuthError", 401)
    assert SECRET not in summary.text() and summary.text().startswith("AuthError (status 401): ")


def _failing(messages: list[BaseMessage], info: RecordedCall) -> AIMessage | str:
    raise AuthError(f"Incorrect API key provided: {SECRET}")


def test_failed_cycle_reports_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    ends: list[dict[str, Any]] = []
    events: list[OMEvent] = []
    memory = make_memory(
        model=FunctionChatModel(function=_failing),
        observation={"message_tokens": 50, "buffer_tokens": False, "failure_policy": "raise"},
        hooks={"on_observation_end": ends.append},
    )
    memory.on_debug_event = events.append
    turns = [HumanMessage("tell me about the weather " * 20), AIMessage("sunny " * 20)]
    with (
        caplog.at_level(logging.WARNING, logger="langchain_om"),
        pytest.raises(CycleFailedError) as raised,
    ):
        memory.add_messages("t", turns)
    assert SECRET not in str(raised.value)
    assert isinstance(raised.value.__cause__, AuthError)  # the full error stays reachable
    failed = [e for e in events if e.type.endswith("failed")]
    assert failed
    for event in failed:
        assert SECRET not in str(event.to_part())
        assert "AuthError (status 401)" in str(event.to_part())
    (end,) = ends
    assert isinstance(end["error"], AuthError)  # the hook's error object is the exception
    assert end["error_type"] == "AuthError" and end["status_code"] == 401
    assert SECRET not in end["error_message"]
    # the logger gets the full traceback, redacted like the events
    assert any("AuthError" in (r.exc_text or "") for r in caplog.records)
    assert not any(SECRET in (r.exc_text or "") + r.getMessage() for r in caplog.records)
