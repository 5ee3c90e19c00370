"""Mistakes fail when memory is built, with a message that names the fix."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from typing import Any

import pytest

from langchain_om import ObservationalMemory
from langchain_om.errors import CycleFailedError, MissingProviderError, OMConfigError
from langchain_om.models import ModelByInputTokens, ModelWithRetries
from langchain_om.testing import memory_model

NOT_INSTALLED = {"langchain_google_genai", "langchain_anthropic"}


@pytest.fixture(autouse=True)
def _some_packages_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Google's and Anthropic's packages are missing, whatever this machine has."""
    real = __import__("langchain_om._engine.providers", fromlist=["_installed"])._installed
    monkeypatch.setattr(
        "langchain_om._engine.providers._installed", lambda m: m not in NOT_INSTALLED and real(m)
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


def scripted(arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with a scripted model (the case is not about the model)."""
    return {"model": memory_model(), **arguments}


CASES: list[tuple[str, dict[str, Any], type[Exception], str, str]] = [
    # (case, arguments, error, option named, the fix the message gives)
    ("bare unknown name", {"model": "nonsense"}, OMConfigError, "model", '"provider/model"'),
    ("not a model", {"model": 123}, OMConfigError, "model", "Use a model string"),
    (
        "unknown provider",
        {"model": "nosuchprovider/x"},
        OMConfigError,
        "model",
        "Use one of: anthropic",
    ),
    (
        "the default model named, package missing",
        {"model": "google/gemini-2.5-flash"},
        MissingProviderError,
        "",
        'pip install "langchain-om[google]"',
    ),
    (
        "partner package missing",
        {"observation": {"model": "anthropic/claude-sonnet-4-5"}},
        MissingProviderError,
        "",
        "pip install langchain-anthropic",
    ),
    (
        "bad tier",
        {"model": ModelByInputTokens(up_to={1_000: memory_model(), 9_000: "nonsense"})},
        OMConfigError,
        "model",
        '"provider/model"',
    ),
    (
        "bad fallback",
        {"model": [ModelWithRetries(memory_model()), ModelWithRetries(3.5)]},  # type: ignore[arg-type]
        OMConfigError,
        "model",
        "Use a model string",
    ),
    ("empty list", {"model": []}, OMConfigError, "model", "Give at least one ModelWithRetries"),
    (
        "reflector only",
        {"observation": {"model": memory_model()}, "reflection": {"model": 7}},
        OMConfigError,
        "reflection.model",
        "Use a model string",
    ),
    (
        "unknown zone",
        scripted({"timezone": "Mars/Base"}),
        OMConfigError,
        "timezone",
        "IANA zone name",
    ),
    ("zone not a string", scripted({"timezone": 2}), OMConfigError, "timezone", "IANA zone name"),
    ("background", scripted({"background": "sometimes"}), OMConfigError, "background", "'manual'"),
    (
        "naive clock",
        scripted({"clock": lambda: datetime(2026, 1, 1)}),
        OMConfigError,
        "clock",
        "datetime.now(UTC)",
    ),
    (
        "clock not a datetime",
        scripted({"clock": lambda: "now"}),
        OMConfigError,
        "clock",
        "datetime.now(UTC)",
    ),
    (
        "threshold that never fits",
        scripted(
            {"observation": {"message_tokens": 30_000}, "reflection": {"observation_tokens": 500}}
        ),
        OMConfigError,
        "reflection.observation_tokens",
        "Raise reflection.observation_tokens to at least 5000",
    ),
]


@pytest.mark.parametrize(
    ("arguments", "error", "option", "fix"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_construction_errors_name_the_fix(
    arguments: dict[str, Any], error: type[Exception], option: str, fix: str
) -> None:
    with pytest.raises(error) as info:
        ObservationalMemory(**arguments)
    message = str(info.value)
    assert fix in message
    assert ".." not in message.replace("...", "")
    if option:
        assert option in message
        if isinstance(info.value, OMConfigError):
            assert info.value.option == option


def test_valid_arguments_build_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        memory = ObservationalMemory(
            model=memory_model(),
            timezone="Europe/Lisbon",
            clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
            background="manual",
        )
    assert memory.timezone == "Europe/Lisbon"


def test_a_callable_spec_is_left_for_call_time() -> None:
    ObservationalMemory(model=lambda ctx: memory_model())


def test_missing_api_key_warns_at_construction_without_building_a_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    # The provider-client guard fails this test if a ChatOpenAI were built here.
    with pytest.warns(UserWarning, match="OPENAI_API_KEY is not set"):
        ObservationalMemory(model="openai/gpt-5-mini")


@pytest.mark.real_provider  # the call builds ChatOpenAI, which fails on the missing key
def test_missing_api_key_is_a_clear_error_at_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    with pytest.warns(UserWarning, match="OPENAI_API_KEY"):
        memory = ObservationalMemory(model="openai/gpt-5-mini", sleep=lambda s: None)
    with pytest.raises(CycleFailedError) as info:
        memory.observe(thread_id="k", messages=[("user", "hello")])
    message = str(info.value)
    assert "set the OPENAI_API_KEY environment variable" in message
    assert ".." not in message.replace("...", "")  # the only double period was ").."
