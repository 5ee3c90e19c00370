from __future__ import annotations

import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from langchain_om.config import (
    DEFAULT_MODEL,
    Hooks,
    ModelSettings,
    ObservationalMemoryConfig,
    ObservationConfig,
    ReflectionConfig,
    RetrievalConfig,
    parse_duration,
)
from langchain_om.errors import OMConfigError

Config = ObservationalMemoryConfig
coerce = ObservationalMemoryConfig.coerce


def camel_keys(data: Any) -> Any:
    """Rename every dict key to Mastra's camelCase, recursively."""
    if isinstance(data, dict):
        return {to_camel(key): camel_keys(value) for key, value in data.items()}
    return data


def config_error(value: Any = None, **kwargs: Any) -> OMConfigError:
    with pytest.raises(OMConfigError) as caught:
        coerce(value, **kwargs)
    assert not isinstance(caught.value, ValidationError)
    return caught.value


# --- defaults and coercion forms ----------------------------------------------------------


def test_defaults_follow_the_spec() -> None:
    config = coerce()
    obs, ref = config.observation, config.reflection
    assert config.enabled and config.scope == "thread" and config.model is None
    assert not config.share_token_budget and not config.temporal_markers
    assert config.retrieval is None and config.hooks == Hooks()
    assert (obs.message_tokens, obs.max_tokens_per_batch, obs.tool_result_max_tokens) == (
        30_000,
        10_000,
        10_000,
    )
    assert (obs.buffer_tokens, obs.buffer_activation, obs.block_after) == (0.2, 0.8, 1.2)
    assert obs.previous_observer_tokens == 2_000 and obs.failure_policy == "continue"
    assert obs.observe_attachments is True and obs.extract == () and not obs.thread_title
    assert (obs.output, obs.prompt, ref.output) == ("text", "default", "text")
    assert obs.model_settings == ModelSettings(temperature=0.3)
    assert ref.model_settings == ModelSettings(temperature=0.0)
    assert (ref.observation_tokens, ref.buffer_activation, ref.block_after) == (40_000, 0.5, 1.2)
    assert DEFAULT_MODEL == "google/gemini-2.5-flash"


@pytest.mark.parametrize("value", [None, True, {}])
def test_none_true_and_empty_dict_give_defaults(value: Any) -> None:
    assert coerce(value) == Config()


def test_false_disables() -> None:
    config = coerce(False)
    assert config.enabled is False
    assert not config.buffering_enabled
    assert coerce(False, enabled=True).enabled is True


def test_existing_config_is_returned_as_is() -> None:
    config = coerce({"scope": "thread"})
    assert coerce(config) is config


def test_keyword_arguments_and_overrides() -> None:
    assert coerce(observation={"message_tokens": 9_000}).observation.message_tokens == 9_000
    base = coerce({"observation": {"messageTokens": 20_000, "instruction": "be brief"}})
    changed = coerce(base, observation={"bufferTokens": 0.3}, temporalMarkers=True)
    assert changed.temporal_markers is True
    # nested dicts merge into what was set before instead of replacing it
    assert changed.observation.message_tokens == 20_000
    assert changed.observation.instruction == "be brief"
    assert changed.observation.buffer_tokens == 0.3
    assert base.observation.buffer_tokens == 0.2  # the original is untouched
    replaced = coerce(base, observation=ObservationConfig(message_tokens=5_000))
    assert replaced.observation.instruction is None
    from_dict = coerce({"model": "openai/gpt-5-mini"}, scope="thread", model="default")
    assert from_dict.model == "default"


def test_override_merges_model_settings_and_keeps_explicit_none() -> None:
    base = coerce(observation={"model_settings": {"temperature": None, "max_output_tokens": 900}})
    merged = coerce(base, observation={"modelSettings": {"topP": 0.5}})
    assert merged.observation.model_settings == ModelSettings(
        temperature=None, max_output_tokens=900, top_p=0.5
    )
    # a ModelSettings object counts as given whole: its unset temperature stays None
    own = coerce(reflection={"model_settings": ModelSettings(max_output_tokens=10)})
    merged = coerce(own, reflection={"model_settings": {"top_p": 0.5}})
    assert merged.reflection.model_settings == ModelSettings(max_output_tokens=10, top_p=0.5)


def test_override_errors_name_the_nested_key() -> None:
    error = config_error(coerce(), observation={"bufer_tokens": 1})
    assert error.option == "observation.bufer_tokens"
    assert "did you mean 'buffer_tokens'?" in error.message.lower()


@pytest.mark.parametrize("bad", [42, "thread", ["observation"]])
def test_coerce_rejects_other_values(bad: Any) -> None:
    error = config_error(bad)
    assert error.option is None and "ObservationalMemoryConfig" in error.message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (False, None),
        (True, RetrievalConfig()),
        ({"vector": True, "scope": "thread"}, RetrievalConfig(vector=True, scope="thread")),
        (RetrievalConfig(instructions="x"), RetrievalConfig(instructions="x")),
    ],
)
def test_retrieval_forms(value: Any, expected: RetrievalConfig | None) -> None:
    config = coerce(retrieval=value)
    assert config.retrieval == expected
    assert config.retrieval_enabled is (expected is not None)


@pytest.mark.parametrize("field", ["observation", "reflection", "hooks"])
@pytest.mark.parametrize("value", [None, True, {}])
def test_nested_configs_accept_true_none_and_dict(field: str, value: Any) -> None:
    assert coerce({field: value}) == Config()


def test_nested_config_objects_are_accepted() -> None:
    obs = ObservationConfig(message_tokens=12_000)
    ref = ReflectionConfig(observation_tokens=50_000)
    config = Config(observation=obs, reflection=ref)
    assert config.observation is obs and config.reflection.observation_tokens == 50_000


def test_hooks_accept_sync_and_async_callables() -> None:
    async def on_end(context: Any) -> None:
        return None

    config = coerce(hooks={"onObservationStart": print, "on_reflection_end": on_end})
    assert config.hooks.on_observation_start is print
    assert config.hooks.on_reflection_end is on_end
    assert config.hooks.on_observation_end is None


def test_configs_are_frozen() -> None:
    config = coerce()
    with pytest.raises(ValidationError):
        config.scope = "resource"  # type: ignore[misc]


# --- camelCase -----------------------------------------------------------------------------

SNAKE = {
    "model": "openai/gpt-5-mini",
    "scope": "thread",
    "activate_after_idle": "5m",
    "activate_on_provider_change": True,
    "share_token_budget": True,
    "temporal_markers": True,
    "obscure_thread_ids": True,
    "retrieval": {"vector": True, "scope": "thread", "instructions": "look back"},
    "observation": {
        "message_tokens": 20_000,
        "buffer_tokens": False,
        "max_tokens_per_batch": 8_000,
        "thread_title": True,
        "observe_attachments": ["image/*", "application/pdf"],
        "model_settings": {"temperature": 0.1, "max_output_tokens": 4_000},
        "provider_options": {"google": {"thinkingBudget": 215}},
        "buffer_on_idle": False,
        "buffer_activation": 0.7,
        "block_after": 1.5,
        "previous_observer_tokens": False,
        "failure_policy": "continue",
        "manage_working_memory": True,
        "activate_after_idle": False,
        "activate_on_provider_change": False,
        "tool_result_max_tokens": 5_000,
        "output": "auto",
        "prompt": "compact",
    },
    "reflection": {
        "output": "structured",
        "observation_tokens": 30_000,
        "buffer_activation": 0.4,
        "block_after": 50_000,
        "activate_after_idle": "1h",
        "activate_on_provider_change": True,
        "model_settings": {"max_output_tokens": 2_000},
    },
}


def test_mastra_paste_example() -> None:
    pasted = coerce({"observation": {"messageTokens": 20000, "bufferTokens": False}})
    snake = coerce({"observation": {"message_tokens": 20000, "buffer_tokens": False}})
    assert pasted == snake
    assert pasted.observation.message_tokens == 20_000
    assert pasted.observation.buffer_tokens is False and not pasted.buffering_enabled


def test_camel_and_snake_dicts_give_equal_configs() -> None:
    camel = camel_keys(SNAKE)
    assert camel["observation"]["maxTokensPerBatch"] == 8_000  # really camelCase
    assert camel["reflection"]["modelSettings"] == {"maxOutputTokens": 2_000}
    assert coerce(camel) == coerce(SNAKE)


def test_camel_spelling_for_every_field_round_trips() -> None:
    config = coerce(SNAKE)
    dumped = config.model_dump(by_alias=True)
    assert dumped["observation"]["messageTokens"] == 20_000
    assert dumped["shareTokenBudget"] is True and dumped["obscureThreadIds"] is True
    assert coerce(dumped) == config
    assert coerce(config.to_mastra()) == config
    assert config.to_mastra()["observation"]["bufferTokens"] is False
    assert coerce(config.to_mastra(exclude_unset=False)) == config


def test_to_mastra_keeps_objects_and_only_explicit_options() -> None:
    class FakeModel:
        pass

    model, extractor = FakeModel(), object()
    config = coerce(observation={"model": model, "extract": [extractor]})
    assert config.to_mastra() == {"observation": {"model": model, "extract": (extractor,)}}
    assert coerce(config.to_mastra()) == config


def test_both_spellings_of_one_option_are_an_error() -> None:
    error = config_error({"observation": {"messageTokens": 1_000, "message_tokens": 2_000}})
    assert error.option == "observation.message_tokens"
    assert "twice" in error.message


# --- validation rules: every row must name the option --------------------------------------

RULES: list[tuple[str, dict[str, Any], str, str]] = [
    # (id, options, option path, a phrase of the message)
    (
        "model+obs.model",
        {"model": "a/b", "observation": {"model": "c/d"}},
        "model",
        "observation.model",
    ),
    (
        "model+ref.model",
        {"model": "a/b", "reflection": {"model": "c/d"}},
        "model",
        "reflection.model",
    ),
    ("share budget", {"shareTokenBudget": True}, "share_token_budget", "buffer_tokens=False"),
    (
        "share budget explicit",
        {"share_token_budget": True, "observation": {"buffer_tokens": 0.1}},
        "share_token_budget",
        "buffer_tokens=False",
    ),
    (
        "buffer 0",
        {"observation": {"buffer_tokens": 0}},
        "observation.buffer_tokens",
        "greater than 0",
    ),
    (
        "buffer <0",
        {"observation": {"bufferTokens": -0.2}},
        "observation.buffer_tokens",
        "greater than 0",
    ),
    ("buffer True", {"observation": {"buffer_tokens": True}}, "observation.buffer_tokens", "True"),
    ("buffer str", {"observation": {"buffer_tokens": "0.2"}}, "observation.buffer_tokens", "'0.2'"),
    (
        "buffer nan",
        {"observation": {"buffer_tokens": float("nan")}},
        "observation.buffer_tokens",
        "nan",
    ),
    (
        "buffer = limit",
        {"observation": {"buffer_tokens": 30_000}},
        "observation.buffer_tokens",
        "below message_tokens",
    ),
    (
        "buffer > limit",
        {"observation": {"message_tokens": 5_000, "buffer_tokens": 6_000}},
        "observation.buffer_tokens",
        "below message_tokens",
    ),
    (
        "buffer fraction rounds to 0",
        {"observation": {"buffer_tokens": 0.00001}},
        "observation.buffer_tokens",
        "at least 1",
    ),
    (
        "buffer fraction rounds to limit",
        {"observation": {"message_tokens": 10, "buffer_tokens": 0.99}},
        "observation.buffer_tokens",
        "below message_tokens",
    ),
    (
        "activation 0",
        {"observation": {"buffer_activation": 0}},
        "observation.buffer_activation",
        "(0, 1]",
    ),
    (
        "activation 1.5",
        {"observation": {"bufferActivation": 1.5}},
        "observation.buffer_activation",
        "at least 1000",
    ),
    (
        "activation 999",
        {"observation": {"buffer_activation": 999}},
        "observation.buffer_activation",
        "at least 1000",
    ),
    (
        "activation <0",
        {"observation": {"buffer_activation": -0.5}},
        "observation.buffer_activation",
        "(0, 1]",
    ),
    (
        "activation >= limit",
        {"observation": {"message_tokens": 5_000, "buffer_activation": 5_000}},
        "observation.buffer_activation",
        "message_tokens",
    ),
    (
        "block_after <1",
        {"observation": {"block_after": 0.9}},
        "observation.block_after",
        "at least 1",
    ),
    (
        "block_after abs <= limit",
        {"observation": {"blockAfter": 30_000}},
        "observation.block_after",
        "above message_tokens",
    ),
    (
        "block_after abs 100",
        {"observation": {"block_after": 100}},
        "observation.block_after",
        "above message_tokens",
    ),
    (
        "ref block_after <1",
        {"reflection": {"block_after": 0}},
        "reflection.block_after",
        "at least 1",
    ),
    (
        "ref block_after abs",
        {"reflection": {"blockAfter": 40_000}},
        "reflection.block_after",
        "above observation_tokens",
    ),
    (
        "ref activation 0",
        {"reflection": {"buffer_activation": 0}},
        "reflection.buffer_activation",
        "(0, 1]",
    ),
    (
        "ref activation 1.01",
        {"reflection": {"bufferActivation": 1.01}},
        "reflection.buffer_activation",
        "(0, 1]",
    ),
    (
        "ref activation abs",
        {"reflection": {"buffer_activation": 5_000}},
        "reflection.buffer_activation",
        "(0, 1]",
    ),
    ("idle top True", {"activate_after_idle": True}, "activate_after_idle", "True"),
    ("idle top word", {"activateAfterIdle": "soon"}, "activate_after_idle", "'soon'"),
    (
        "idle obs unit",
        {"observation": {"activate_after_idle": "5 fortnights"}},
        "observation.activate_after_idle",
        "'5 fortnights'",
    ),
    (
        "idle obs negative",
        {"observation": {"activateAfterIdle": -1}},
        "observation.activate_after_idle",
        "-1",
    ),
    (
        "idle ref empty",
        {"reflection": {"activate_after_idle": ""}},
        "reflection.activate_after_idle",
        "''",
    ),
    (
        "idle ref list",
        {"reflection": {"activate_after_idle": [5]}},
        "reflection.activate_after_idle",
        "[5]",
    ),
    (
        "message_tokens 0",
        {"observation": {"message_tokens": 0}},
        "observation.message_tokens",
        "at least 1",
    ),
    (
        "message_tokens <0",
        {"observation": {"messageTokens": -5}},
        "observation.message_tokens",
        "at least 1",
    ),
    (
        "message_tokens frac",
        {"observation": {"message_tokens": 10.5}},
        "observation.message_tokens",
        "whole number",
    ),
    (
        "message_tokens bool",
        {"observation": {"message_tokens": True}},
        "observation.message_tokens",
        "True",
    ),
    (
        "observation_tokens 0",
        {"reflection": {"observationTokens": 0}},
        "reflection.observation_tokens",
        "at least 1",
    ),
    (
        "previous <0",
        {"observation": {"previous_observer_tokens": -1}},
        "observation.previous_observer_tokens",
        "0 or more",
    ),
    (
        "previous True",
        {"observation": {"previousObserverTokens": True}},
        "observation.previous_observer_tokens",
        "True",
    ),
    (
        "batch <0",
        {"observation": {"max_tokens_per_batch": -1}},
        "observation.max_tokens_per_batch",
        "at least 1",
    ),
    (
        "tool result 0",
        {"observation": {"tool_result_max_tokens": 0}},
        "observation.tool_result_max_tokens",
        "at least 1",
    ),
    ("scope", {"scope": "user"}, "scope", "'thread' or 'resource'"),
    (
        "retrieval scope",
        {"retrieval": {"scope": "global"}},
        "retrieval.scope",
        "'resource' or 'thread'",
    ),
    (
        "failure policy",
        {"observation": {"failurePolicy": "ignore"}},
        "observation.failure_policy",
        "'raise' or 'continue'",
    ),
    (
        "attachments str",
        {"observation": {"observe_attachments": "image/*"}},
        "observation.observe_attachments",
        "in a list",
    ),
    (
        "attachments item",
        {"observation": {"observeAttachments": ["image/*", "pdf"]}},
        "observation.observe_attachments",
        "'pdf'",
    ),
    (
        "attachments non-str",
        {"observation": {"observe_attachments": [3]}},
        "observation.observe_attachments",
        "MIME",
    ),
    (
        "temperature",
        {"observation": {"model_settings": {"temperature": -1}}},
        "observation.model_settings.temperature",
        "greater than or equal to 0",
    ),
    (
        "max output",
        {"reflection": {"modelSettings": {"maxOutputTokens": 0}}},
        "reflection.model_settings.max_output_tokens",
        "greater than 0",
    ),
    (
        "top_p",
        {"observation": {"model_settings": {"top_p": 2}}},
        "observation.model_settings.top_p",
        "less than or equal to 1",
    ),
    (
        "model settings type",
        {"observation": {"model_settings": 0.3}},
        "observation.model_settings",
        "dict",
    ),
    (
        "strict bool",
        {"observation": {"thread_title": "yes"}},
        "observation.thread_title",
        "boolean",
    ),
    ("output", {"observation": {"output": "json"}}, "observation.output", "'structured'"),
    ("reflection output", {"reflection": {"output": 1}}, "reflection.output", "'auto'"),
    ("prompt", {"observation": {"prompt": "small"}}, "observation.prompt", "'compact'"),
    ("enabled", {"enabled": "no"}, "enabled", "boolean"),
    ("instruction", {"observation": {"instruction": 5}}, "observation.instruction", "string"),
    (
        "provider options",
        {"reflection": {"providerOptions": [1]}},
        "reflection.provider_options",
        "dictionary",
    ),
    ("empty model", {"model": "  "}, "model", "empty string"),
    ("empty obs model", {"observation": {"model": ""}}, "observation.model", "empty string"),
    ("extract", {"observation": {"extract": "title"}}, "observation.extract", "list"),
    ("hook", {"hooks": {"on_observation_end": "log"}}, "hooks.on_observation_end", "callable"),
    ("observation False", {"observation": False}, "observation", "enabled=False"),
    ("reflection int", {"reflection": 3}, "reflection", "dict"),
    ("retrieval int", {"retrieval": 1}, "retrieval", "dict"),
    ("unknown top", {"shareBudget": True}, "shareBudget", "unknown option"),
    (
        "unknown nested",
        {"reflection": {"observationToken": 1}},
        "reflection.observationToken",
        "unknown option",
    ),
    ("engine argument", {"storage": object()}, "storage", "ObservationalMemory(...)"),
]


@pytest.mark.parametrize(
    ("options", "option", "phrase"), [row[1:] for row in RULES], ids=[row[0] for row in RULES]
)
def test_rule_errors_name_the_option(options: dict[str, Any], option: str, phrase: str) -> None:
    error = config_error(options)
    assert error.option == option
    assert f"'{option}'" in error.message
    assert phrase in error.message
    assert isinstance(error, ValueError)


def test_direct_construction_raises_config_errors_too() -> None:
    with pytest.raises(OMConfigError) as top:
        Config(observation={"messageTokens": 0})
    assert top.value.option == "observation.message_tokens"
    with pytest.raises(OMConfigError) as nested:
        ObservationConfig(buffer_tokens=True)
    assert nested.value.option == "buffer_tokens"
    with pytest.raises(OMConfigError) as validated:
        ReflectionConfig.model_validate({"blockAfter": 0.5})
    assert validated.value.option == "block_after"


def test_several_problems_are_all_reported() -> None:
    error = config_error({"observation": {"message_tokens": 0, "buffer_tokens": -1}})
    assert error.option == "observation.message_tokens"
    assert "'observation.buffer_tokens'" in error.message


def test_valid_edge_values() -> None:
    obs = coerce(
        observation={"buffer_activation": 1, "block_after": 1, "previous_observer_tokens": 0}
    ).observation
    assert obs.retention_floor_tokens == 0 and obs.block_after_tokens == 30_000
    assert obs.previous_observer_tokens == 0
    assert coerce(observation={"buffer_tokens": 1}).observation.buffer_interval_tokens == 1
    assert coerce(observation={"block_after": 30_001}).observation.block_after_tokens == 30_001
    assert coerce(reflection={"buffer_activation": 1}).reflection.buffer_start_tokens == 40_000


def test_share_token_budget_is_allowed_without_buffering() -> None:
    config = coerce(share_token_budget=True, observation={"buffer_tokens": False})
    assert config.share_token_budget and not config.buffering_enabled
    # resource scope buffers only when buffer_tokens is given: no conflict by default
    assert coerce(share_token_budget=True, scope="resource").share_token_budget


# --- unknown keys ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "option", "suggestion"),
    [
        ({"observation": {"message_token": 1}}, "observation.message_token", "message_tokens"),
        ({"observation": {"messageToken": 1}}, "observation.messageToken", "messageTokens"),
        ({"observation": {"bufferToken": 0.1}}, "observation.bufferToken", "bufferTokens"),
        ({"obsrvation": {}}, "obsrvation", "observation"),
        ({"temporalMarker": True}, "temporalMarker", "temporalMarkers"),
        ({"share_budget_tokens": True}, "share_budget_tokens", "share_token_budget"),
        (
            {"reflection": {"observation_token": 1}},
            "reflection.observation_token",
            "observation_tokens",
        ),
        (
            {"observation": {"modelSettings": {"maxTokens": 1}}},
            "observation.model_settings.maxTokens",
            "maxOutputTokens",
        ),
        (
            {"observation": {"model_settings": {"max_tokens": 1}}},
            "observation.model_settings.max_tokens",
            "max_output_tokens",
        ),
        ({"retrieval": {"vectors": True}}, "retrieval.vectors", "vector"),
        (
            {"hooks": {"onObservationStarted": print}},
            "hooks.onObservationStarted",
            "onObservationStart",
        ),
    ],
)
def test_unknown_keys_suggest_the_closest_option(
    options: dict[str, Any], option: str, suggestion: str
) -> None:
    error = config_error(options)
    assert error.option == option
    assert f"Did you mean {suggestion!r}?" in error.message


def test_unknown_key_without_close_match_lists_the_options() -> None:
    error = config_error({"observation": {"zzz": 1}})
    assert error.option == "observation.zzz"
    assert "message_tokens" in error.message and "Did you mean" not in error.message


# --- durations ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (False, None),
        (0, 0),
        (1_500, 1_500),
        (2_000.0, 2_000),
        ("300000", 300_000),
        ("300ms", 300),
        ("45s", 45_000),
        ("5m", 300_000),
        ("5 min", 300_000),
        ("1h", 3_600_000),
        ("1hr", 3_600_000),
        (" 1HR ", 3_600_000),
        ("2h30m", 9_000_000),
        ("2h 30m", 9_000_000),
        ("1.5h", 5_400_000),
        ("1d", 86_400_000),
        ("auto", "auto"),
        ("AUTO", "auto"),
    ],
)
def test_parse_duration(value: Any, expected: int | str | None) -> None:
    assert parse_duration(value) == expected
    assert coerce(activate_after_idle=value).observation_activate_after_idle_ms == expected


@pytest.mark.parametrize(
    "value", [True, -1, "soon", "", "5 fortnights", "h5", "1h-5m", float("inf")]
)
def test_parse_duration_rejects(value: Any) -> None:
    with pytest.raises(OMConfigError) as caught:
        parse_duration(value, option="reflection.activate_after_idle")
    assert caught.value.option == "reflection.activate_after_idle"
    assert repr(value) in caught.value.message


# --- resource scope -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"observation": {"buffer_activation": 0.5}}, "observation.buffer_activation"),
        ({"observation": {"block_after": 2}}, "observation.block_after"),
        ({"observation": {"buffer_on_idle": True}}, "observation.buffer_on_idle"),
        ({"reflection": {"bufferActivation": 0.3}}, "reflection.buffer_activation"),
    ],
)
def test_resource_scope_warns_about_explicit_buffering(options: dict[str, Any], named: str) -> None:
    with pytest.warns(UserWarning, match="resource scope") as record:
        config = coerce(options, scope="resource")
    assert named in str(record[0].message)
    assert record[0].filename == __file__  # points at the caller, not at langchain_om
    assert not config.buffering_enabled


@pytest.mark.parametrize(
    "observation",
    [
        {"bufferTokens": 0.1},
        {"buffer_tokens": 300, "buffer_activation": 0.5, "block_after": 2},
        {"buffer_tokens": 300, "buffer_on_idle": True},
    ],
)
def test_resource_scope_buffers_when_buffer_tokens_is_given(observation: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = coerce({"observation": observation}, scope="resource")
    assert config.buffering_enabled


def test_resource_scope_warns_that_its_reflection_is_not_buffered() -> None:
    with pytest.warns(UserWarning, match="observations only") as record:
        config = coerce(
            {"observation": {"buffer_tokens": 300}, "reflection": {"buffer_activation": 0.3}},
            scope="resource",
        )
    assert "reflection.buffer_activation" in str(record[0].message)
    assert "observation." not in str(record[0].message)
    assert config.buffering_enabled


def test_share_token_budget_needs_buffering_off_in_resource_scope_too() -> None:
    with pytest.raises(OMConfigError) as caught:
        coerce(share_token_budget=True, scope="resource", observation={"buffer_tokens": 300})
    assert caught.value.option == "share_token_budget"


def test_resource_scope_warning_points_at_direct_construction() -> None:
    with pytest.warns(UserWarning) as record:
        Config(scope="resource", observation={"block_after": 2})
    assert record[0].filename == __file__


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"observation": {"message_tokens": 10_000}},
        {"observation": {"buffer_tokens": False, "block_after": 2}},
        {"observation": {"buffer_on_idle": False}},
    ],
)
def test_resource_scope_without_explicit_buffering_is_quiet(options: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = coerce(options, scope="resource")
        assert coerce(config.to_mastra()) == config
    assert not config.buffering_enabled
    assert config.effective_obscure_thread_ids


# --- resolved properties --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("observation", "interval", "floor", "block"),
    [
        ({}, 6_000, 6_000, 36_000),
        ({"message_tokens": 20_000, "buffer_tokens": 0.25}, 5_000, 4_000, 24_000),
        ({"buffer_tokens": 5_000, "buffer_activation": 2_000}, 5_000, 2_000, 36_000),
        ({"buffer_tokens": False, "block_after": 2}, None, 6_000, 60_000),
        ({"buffer_activation": 0.5, "block_after": 45_000}, 6_000, 15_000, 45_000),
        (
            {"message_tokens": 1_001, "buffer_tokens": 0.2, "buffer_activation": 0.75},
            200,
            250,
            1_201,
        ),
    ],
)
def test_observation_thresholds(
    observation: dict[str, Any], interval: int | None, floor: int, block: int
) -> None:
    obs = coerce(observation=observation).observation
    assert obs.buffer_interval_tokens == interval
    assert obs.retention_floor_tokens == floor
    assert obs.block_after_tokens == block


@pytest.mark.parametrize(
    ("reflection", "block", "start"),
    [
        ({}, 48_000, 20_000),
        (
            {"observation_tokens": 10_000, "buffer_activation": 0.75, "block_after": 2},
            20_000,
            7_500,
        ),
        ({"block_after": 60_000}, 60_000, 20_000),
    ],
)
def test_reflection_thresholds(reflection: dict[str, Any], block: int, start: int) -> None:
    ref = coerce(reflection=reflection).reflection
    assert ref.block_after_tokens == block
    assert ref.buffer_start_tokens == start


@pytest.mark.parametrize(
    ("options", "enabled"),
    [
        ({}, True),
        ({"enabled": False}, False),
        ({"scope": "resource"}, False),
        ({"scope": "resource", "observation": {"buffer_tokens": 100}}, True),
        ({"scope": "resource", "read_only": True, "observation": {"buffer_tokens": 100}}, False),
        ({"observation": {"buffer_tokens": False}}, False),
        ({"observation": {"buffer_tokens": 100}}, True),
    ],
)
def test_buffering_enabled(options: dict[str, Any], enabled: bool) -> None:
    assert coerce(options).buffering_enabled is enabled


@pytest.mark.parametrize(
    ("options", "observer", "reflector", "default_obs", "default_ref"),
    [
        ({}, "default", "default", True, True),
        ({"model": "default"}, "default", "default", True, True),
        ({"model": DEFAULT_MODEL}, DEFAULT_MODEL, DEFAULT_MODEL, True, True),
        ({"model": "openai/gpt-5-mini"}, "openai/gpt-5-mini", "openai/gpt-5-mini", False, False),
        ({"observation": {"model": "o/x"}}, "o/x", "o/x", False, False),
        ({"reflection": {"model": "r/y"}}, "r/y", "r/y", False, False),
        (
            {"observation": {"model": "o/x"}, "reflection": {"model": "r/y"}},
            "o/x",
            "r/y",
            False,
            False,
        ),
        (
            {"observation": {"model": "default"}, "reflection": {"model": "r/y"}},
            "default",
            "r/y",
            True,
            False,
        ),
    ],
)
def test_model_specs(
    options: dict[str, Any], observer: str, reflector: str, default_obs: bool, default_ref: bool
) -> None:
    config = coerce(options)
    assert config.observer_model_spec == observer
    assert config.reflector_model_spec == reflector
    assert config.uses_default_observer_model is default_obs
    assert config.uses_default_reflector_model is default_ref


def test_model_objects_are_kept_and_not_the_default() -> None:
    model = object()
    config = coerce(model=model)
    assert config.observer_model_spec is model and config.reflector_model_spec is model
    assert not config.uses_default_observer_model


@pytest.mark.parametrize(
    ("options", "observation_ms", "reflection_ms"),
    [
        ({}, None, None),
        ({"activate_after_idle": "5m"}, 300_000, None),
        ({"activate_after_idle": False}, None, None),
        ({"activateAfterIdle": "auto"}, "auto", None),
        ({"activate_after_idle": "5m", "observation": {"activate_after_idle": False}}, None, None),
        (
            {"activate_after_idle": "5m", "observation": {"activate_after_idle": "1h"}},
            3_600_000,
            None,
        ),
        ({"observation": {"activate_after_idle": 1_000}}, 1_000, None),
        (
            {"activate_after_idle": "5m", "reflection": {"activate_after_idle": "2h30m"}},
            300_000,
            9_000_000,
        ),
        ({"reflection": {"activateAfterIdle": "auto"}}, None, "auto"),
        ({"reflection": {"activate_after_idle": False}}, None, None),
    ],
)
def test_activate_after_idle_inheritance(
    options: dict[str, Any], observation_ms: int | str | None, reflection_ms: int | str | None
) -> None:
    config = coerce(options)
    assert config.observation_activate_after_idle_ms == observation_ms
    assert config.reflection_activate_after_idle_ms == reflection_ms


@pytest.mark.parametrize(
    ("options", "observation", "reflection"),
    [
        ({}, False, False),
        ({"activate_on_provider_change": True}, True, False),
        (
            {"activateOnProviderChange": True, "observation": {"activateOnProviderChange": False}},
            False,
            False,
        ),
        ({"observation": {"activate_on_provider_change": True}}, True, False),
        ({"reflection": {"activate_on_provider_change": True}}, False, True),
    ],
)
def test_activate_on_provider_change_inheritance(
    options: dict[str, Any], observation: bool, reflection: bool
) -> None:
    config = coerce(options)
    assert config.observation_activate_on_provider_change is observation
    assert config.reflection_activate_on_provider_change is reflection


@pytest.mark.parametrize(
    ("options", "obscure"),
    [
        ({}, False),
        ({"scope": "resource"}, True),
        ({"scope": "resource", "obscure_thread_ids": False}, False),
        ({"obscureThreadIds": True}, True),
    ],
)
def test_effective_obscure_thread_ids(options: dict[str, Any], obscure: bool) -> None:
    assert coerce(options).effective_obscure_thread_ids is obscure


# --- single options -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        (True, True),
        (False, False),
        ("auto", "auto"),
        ([], ()),
        (["image/*", "application/pdf"], ("image/*", "application/pdf")),
        (("*",), ("*",)),
        (["*/*", "text/plain", "application/vnd.ms-excel", "image/svg+xml"], None),
    ],
)
def test_observe_attachments(value: Any, stored: Any) -> None:
    obs = coerce(observation={"observeAttachments": value}).observation
    assert obs.observe_attachments == (tuple(value) if stored is None else stored)


@pytest.mark.parametrize(
    ("given", "policy"),
    [
        ("raise", "raise"),
        ("throw", "raise"),
        ("continue", "continue"),
        ("warn", "continue"),
        ("bypass", "continue"),
        ("THROW", "raise"),
    ],
)
def test_failure_policy_accepts_mastra_names(given: str, policy: str) -> None:
    assert coerce(observation={"failurePolicy": given}).observation.failure_policy == policy


def test_model_settings_keep_the_role_temperature_unless_given() -> None:
    config = coerce(
        observation={"modelSettings": {"maxOutputTokens": 8_000}},
        reflection={"model_settings": {"top_p": 0.9}},
    )
    assert config.observation.model_settings == ModelSettings(
        temperature=0.3, max_output_tokens=8_000
    )
    assert config.reflection.model_settings == ModelSettings(temperature=0.0, top_p=0.9)
    explicit = coerce(observation={"model_settings": {"temperature": None}}).observation
    assert explicit.model_settings.temperature is None
    own = coerce(reflection={"model_settings": ModelSettings(max_output_tokens=10)}).reflection
    assert own.model_settings == ModelSettings(max_output_tokens=10)


def test_numbers_keep_a_natural_type() -> None:
    obs = coerce(observation={"buffer_tokens": 5_000.0, "message_tokens": 20_000.0}).observation
    assert obs.buffer_tokens == 5_000 and isinstance(obs.buffer_tokens, int)
    assert isinstance(obs.message_tokens, int)
    assert obs.previous_observer_tokens == 2_000
    assert (
        coerce(observation={"previous_observer_tokens": False}).observation.previous_observer_tokens
        is False
    )


def test_field_docstrings_become_descriptions() -> None:
    for model in (
        Config,
        ObservationConfig,
        ReflectionConfig,
        RetrievalConfig,
        Hooks,
        ModelSettings,
    ):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no docstring"
            assert field.alias == to_camel(name)


# --- properties (hypothesis) ----------------------------------------------------------------


@st.composite
def valid_options(draw: st.DrawFn) -> dict[str, Any]:
    message_tokens = draw(st.integers(2_000, 200_000))
    observation: dict[str, Any] = {"message_tokens": message_tokens}
    buffer = draw(
        st.one_of(st.just(False), st.floats(0.01, 0.9), st.integers(1, message_tokens - 1))
    )
    observation["buffer_tokens"] = buffer
    observation["buffer_activation"] = draw(
        st.one_of(st.floats(0.01, 1.0), st.integers(1_000, message_tokens - 1))
        if message_tokens > 1_000
        else st.floats(0.01, 1.0)
    )
    observation["block_after"] = draw(
        st.one_of(st.floats(1.0, 99.0), st.integers(message_tokens + 1, 10 * message_tokens))
    )
    observation["previous_observer_tokens"] = draw(
        st.one_of(st.just(False), st.integers(0, 10_000))
    )
    observation["activate_after_idle"] = draw(
        st.one_of(st.none(), st.just(False), st.just("auto"), st.integers(0, 10**8))
    )
    # A reflection threshold below what one honest observation adds is rejected: a 3x
    # compression of a full batch must fit one observation (at most 2x observation_tokens).
    observation_tokens = draw(st.integers(max(1_000, -(-message_tokens // 6)), 200_000))
    reflection: dict[str, Any] = {
        "observation_tokens": observation_tokens,
        "buffer_activation": draw(st.floats(0.01, 1.0)),
        "block_after": draw(st.floats(1.0, 5.0)),
        "activate_on_provider_change": draw(st.booleans()),
    }
    options: dict[str, Any] = {"observation": observation, "reflection": reflection}
    options["temporal_markers"] = draw(st.booleans())
    options["activate_after_idle"] = draw(
        st.one_of(st.none(), st.sampled_from(["5m", "1h", "auto"]))
    )
    return options


@settings(max_examples=100, deadline=None)
@given(valid_options())
def test_valid_options_round_trip_and_keep_invariants(options: dict[str, Any]) -> None:
    config = coerce(options)
    assert coerce(camel_keys(options)) == config
    assert coerce(config.to_mastra()) == config
    assert coerce(config.model_dump(by_alias=True)) == config
    obs, ref = config.observation, config.reflection
    interval = obs.buffer_interval_tokens
    assert interval is None or 1 <= interval < obs.message_tokens_abs
    assert 0 <= obs.retention_floor_tokens < obs.message_tokens_abs
    assert obs.block_after_tokens >= obs.message_tokens_abs
    assert ref.block_after_tokens >= ref.observation_tokens_abs
    assert 0 <= ref.buffer_start_tokens <= ref.observation_tokens_abs
    assert config.buffering_enabled is (obs.buffer_tokens is not False)
