"""The ``activate_after_idle="auto"`` table: the original's prompt-cache lifetimes."""

from __future__ import annotations

import pytest

from langchain_om import ObservationalMemory
from langchain_om._core.cache_ttl import CACHE_TTL_RULES, DEFAULT_TTL_MS, auto_ttl_ms
from langchain_om._engine.actor import describe_actor
from langchain_om.testing import ScriptedChatModel, memory_model

MIN = 60_000
HOUR = 60 * MIN


@pytest.mark.parametrize(
    ("model_id", "retention", "expected"),
    [
        # OpenAI: per-model defaults.
        ("openai/gpt-4o", None, 5 * MIN),
        ("openai/gpt-4.1-mini", None, 5 * MIN),
        ("openai/gpt-5", None, 5 * MIN),
        ("openai/gpt-5-mini", None, 5 * MIN),
        ("openai/gpt-5.1", None, 5 * MIN),
        ("openai/gpt-5.4-codex", None, 5 * MIN),
        ("openai/gpt-5.5", None, 60 * MIN),
        ("openai/gpt-5.5-pro", None, 60 * MIN),
        ("openai/gpt-5.10", None, 60 * MIN),
        ("openai/gpt-6", None, 60 * MIN),
        ("openai/o3", None, 60 * MIN),
        # OpenAI: promptCacheRetention wins over the model default.
        ("openai/gpt-5", "24h", 60 * MIN),
        ("openai/gpt-4o", "24H", 60 * MIN),
        ("openai/gpt-5.5", "in_memory", 5 * MIN),
        ("azure_openai/gpt-4o", None, 5 * MIN),
        # Provider aliases.
        ("google/gemini-2.5-flash", None, 24 * HOUR),
        ("google_genai/gemini-2.5-pro", None, 24 * HOUR),
        ("google_vertexai/gemini-2.5-pro", None, 24 * HOUR),
        ("gemini/gemini-2.0-flash", None, 24 * HOUR),
        ("deepseek/deepseek-chat", None, HOUR),
        ("groq/llama-3.3-70b", None, 2 * HOUR),
        ("anthropic/claude-sonnet-4-5", None, 5 * MIN),
        ("xai/grok-4", None, 5 * MIN),
        ("openrouter/anthropic/claude-sonnet-4", None, 5 * MIN),
        # Unknown: the shortest common lifetime.
        ("mistralai/mistral-large", None, 5 * MIN),
        ("gpt-5.5", None, 5 * MIN),  # no provider: nothing to match
        (None, None, 5 * MIN),
        ("", "24h", 5 * MIN),
    ],
)
def test_auto_ttl_table(model_id: str | None, retention: str | None, expected: int) -> None:
    assert auto_ttl_ms(model_id, retention=retention) == expected


def test_retention_only_applies_to_openai() -> None:
    assert auto_ttl_ms("anthropic/claude-sonnet-4-5", retention="24h") == 5 * MIN


def test_table_is_data() -> None:
    assert DEFAULT_TTL_MS == 5 * MIN
    assert all(rule.note for rule in CACHE_TTL_RULES)
    # Specific OpenAI rows come before the general one, or they could never match.
    openai = [rule for rule in CACHE_TTL_RULES if rule.provider == "openai"]
    assert openai[-1].model is None and openai[-1].retention is None


def test_retention_is_read_from_the_agent_model() -> None:
    model = ScriptedChatModel(script=["x"], model="gpt-5", provider="openai")
    bound = model.bind(prompt_cache_retention="24h")
    actor = describe_actor(bound)
    assert actor is not None and actor.model_id == "openai/gpt-5"
    assert actor.prompt_cache_retention == "24h"
    assert describe_actor(model) == describe_actor("openai/gpt-5")  # nothing else known
    memory = ObservationalMemory(model=memory_model(), activate_after_idle="auto")
    env = memory._actors.env_for(actor)  # what the engine's step plans see for this agent model
    assert env.cache_retention == "24h"
    assert auto_ttl_ms(actor.model_id, retention=env.cache_retention) == 60 * MIN


def test_the_agent_model_is_read_again_when_its_fields_change() -> None:
    model = ScriptedChatModel(script=["x"], model="gpt-5", provider="openai")
    assert describe_actor(model) == describe_actor(model) == describe_actor("openai/gpt-5")
    model.profile = {"max_input_tokens": 1_000}
    actor = describe_actor(model)
    assert actor is not None and actor.max_input_tokens == 1_000
    model.profile["max_input_tokens"] = 2_000  # changed in place
    actor = describe_actor(model)
    assert actor is not None and actor.max_input_tokens == 2_000
    model.model_name = "gpt-5-mini"
    actor = describe_actor(model)
    assert actor is not None and actor.model_id == "openai/gpt-5-mini"
