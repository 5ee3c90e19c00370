"""Model specs, string resolution, settings and the retrying model-call drivers."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from collections.abc import Callable
from typing import Any, Literal

import httpx
import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig, RunnableLambda

from langchain_om import models
from langchain_om.errors import (
    MissingProviderError,
    ModelResolutionError,
    ModelTierExceededError,
    OMConfigError,
)
from langchain_om.models import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MODEL,
    ModelByInputTokens,
    ModelWithRetries,
    RunContext,
    apply_settings,
    clear_model_cache,
    model_id,
    plan_attempts,
    resolve_model_string,
)
from langchain_om.retry import (
    ModelAttempt,
    ModelCallResult,
    RetryEvent,
    RetryPolicy,
    ainvoke_model,
    invoke_model,
    is_transient,
)
from langchain_om.testing import (
    ScriptedChatModel,
    rate_limit_error,
    server_error,
    timeout_error,
)

Mode = Literal["sync", "async"]


pytestmark = pytest.mark.usefixtures("fresh_model_cache")


def scripted(
    *script: Any, name: str = "m", provider: str = "scripted", **kw: Any
) -> ScriptedChatModel:
    return ScriptedChatModel(script=list(script), model=name, provider=provider, **kw)


def recorded(model: object) -> ScriptedChatModel:
    assert isinstance(model, ScriptedChatModel)
    return model


class FakeInit:
    """Stands in for ``init_chat_model``: records (model, provider, kwargs), returns fakes."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.calls: list[tuple[str, str | None, dict[str, Any]]] = []
        self.error = error

    def __call__(self, model: str, *, model_provider: str | None = None, **kw: Any) -> Any:
        self.calls.append((model, model_provider, kw))
        if self.error is not None:
            raise self.error
        return ScriptedChatModel(script=["ok"], model=model, provider=model_provider or "x")


@pytest.fixture
def fake_init(monkeypatch: pytest.MonkeyPatch) -> FakeInit:
    fake = FakeInit()
    monkeypatch.setattr("langchain.chat_models.init_chat_model", fake)
    return fake


# --------------------------------------------------------------------------- tiers


def test_tiers_pick_the_smallest_tier_holding_the_input_at_exact_boundaries() -> None:
    tiers = ModelByInputTokens(up_to={40_000: "big", 10_000: "small", 1_000_000: "huge"})
    assert tiers.thresholds() == [10_000, 40_000, 1_000_000]
    assert [tiers.resolve(n) for n in (0, 1, 10_000, 10_001, 40_000, 40_001, 1_000_000)] == [
        "small",
        "small",
        "small",
        "big",
        "big",
        "huge",
        "huge",
    ]


def test_input_above_the_largest_tier_raises_with_size_tier_and_fix() -> None:
    tiers = ModelByInputTokens(up_to={10_000: "small", 40_000: "big"})
    with pytest.raises(ModelTierExceededError) as info:
        tiers.resolve(40_001)
    err = info.value
    assert (err.input_tokens, err.largest_tier) == (40_001, 40_000)
    assert "40,001" in err.message and "40,000" in err.message
    assert "Add a larger tier" in err.message


@settings(max_examples=150, deadline=None)
@given(
    bounds=st.sets(st.integers(min_value=1, max_value=2_000_000), min_size=1, max_size=8),
    tokens=st.integers(min_value=0, max_value=2_100_000),
)
def test_tier_choice_matches_the_definition(bounds: set[int], tokens: int) -> None:
    tiers = ModelByInputTokens(up_to={b: f"m{b}" for b in bounds})
    assert tiers.thresholds() == sorted(bounds)
    holding = [b for b in bounds if b >= tokens]
    if holding:
        assert tiers.resolve(tokens) == f"m{min(holding)}"
    else:
        with pytest.raises(ModelTierExceededError):
            tiers.resolve(tokens)


def test_tiers_accept_mastra_spelling_and_compare_by_content() -> None:
    pasted = ModelByInputTokens(upTo={10_000: "a", 20_000: "b"})
    assert pasted == ModelByInputTokens(up_to={20_000: "b", 10_000: "a"})
    assert pasted.resolve(15_000) == "b"
    assert "10000: 'a'" in repr(pasted)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"up_to": {}},
        {"up_to": {0: "a"}},
        {"up_to": {-5: "a"}},
        {"up_to": {True: "a"}},
        {"up_to": {"10000": "a"}},
        {"up_to": {1.5: "a"}},
        {"up_to": {10: "a"}, "upTo": {10: "a"}},
    ],
)
def test_bad_tiers_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(OMConfigError) as info:
        ModelByInputTokens(**kwargs)
    assert info.value.option == "model.up_to"


def test_plan_attempts_chooses_the_tier_by_context_input_tokens() -> None:
    small, big = scripted(name="small"), scripted(name="big")
    spec = ModelByInputTokens(up_to={1_000: small, 50_000: big})
    assert plan_attempts(spec, RunContext(input_tokens=1_000))[0].model is small
    assert plan_attempts(spec, RunContext(input_tokens=1_001))[0].model is big
    with pytest.raises(ModelTierExceededError):
        plan_attempts(spec, RunContext(input_tokens=50_001))


# --------------------------------------------------------------------------- planning


def test_callable_spec_receives_the_run_context() -> None:
    observer_model, reflector_model = scripted(name="obs"), scripted(name="ref")
    seen: list[RunContext] = []

    def pick(ctx: RunContext) -> BaseChatModel:
        seen.append(ctx)
        return reflector_model if ctx.role == "reflector" else observer_model

    ctx = RunContext(thread_id="t1", resource_id="u1", role="reflector", input_tokens=7)
    [attempt] = plan_attempts(pick, ctx)
    assert attempt.model is reflector_model
    assert seen == [ctx]
    assert plan_attempts(pick, RunContext(role="observer"))[0].model is observer_model


def test_callables_and_tiers_nest() -> None:
    small, big = scripted(name="small"), scripted(name="big")

    def by_role(ctx: RunContext) -> ModelByInputTokens:
        return ModelByInputTokens(up_to={100: small, 10_000: big})

    assert plan_attempts(by_role, RunContext(input_tokens=5_000))[0].model is big


def test_a_callable_returning_itself_is_stopped() -> None:
    def loop(ctx: RunContext) -> Any:
        return loop

    with pytest.raises(ModelResolutionError, match="nests more than"):
        plan_attempts(loop)


def test_list_of_models_keeps_order_and_retry_budgets() -> None:
    a, b, c = scripted(name="a"), scripted(name="b"), scripted(name="c")
    spec: list[Any] = [ModelWithRetries(a, 2), {"model": b, "maxRetries": 0}, {"model": c}]
    attempts = plan_attempts(spec)
    assert [(x.model, x.max_retries, x.model_id) for x in attempts] == [
        (a, 2, "scripted/a"),
        (b, 0, "scripted/b"),
        (c, 3, "scripted/c"),
    ]


def test_plain_spec_leaves_retries_to_the_policy() -> None:
    model = scripted()
    assert plan_attempts(model)[0].max_retries is None
    assert plan_attempts(ModelWithRetries(model))[0].max_retries == 3


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ([], OMConfigError),
        (["openai/gpt-5-mini"], OMConfigError),
        ([{"model": "x", "retries": 2}], OMConfigError),
        (42, ModelResolutionError),
        (object(), ModelResolutionError),
    ],
)
def test_malformed_specs_are_rejected(spec: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        plan_attempts(spec)


@pytest.mark.parametrize("retries", [-1, True, 1.5, "3"])
def test_model_with_retries_validates_the_budget(retries: Any) -> None:
    with pytest.raises(OMConfigError):
        ModelWithRetries("openai/gpt-5-mini", max_retries=retries)


# --------------------------------------------------------------------------- strings


@pytest.mark.parametrize(
    ("spec", "model", "provider"),
    [
        ("google/gemini-2.5-flash", "gemini-2.5-flash", "google_genai"),
        ("google_genai:gemini-2.5-flash", "gemini-2.5-flash", "google_genai"),
        ("gemini-2.5-flash", "gemini-2.5-flash", "google_genai"),
        ("default", "gemini-2.5-flash", "google_genai"),
        ("openai/gpt-5-mini", "gpt-5-mini", "openai"),
        ("openai:gpt-5-mini", "gpt-5-mini", "openai"),
        ("openai:ft:gpt-4o:org", "ft:gpt-4o:org", "openai"),
        ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5", "anthropic"),
        ("openrouter/meta/llama-3", "meta/llama-3", "openrouter"),
        ("ollama:llama3:8b", "llama3:8b", "ollama"),
        ("Mistral/mistral-large", "mistral-large", "mistralai"),
        ("vertex/gemini-2.5-pro", "gemini-2.5-pro", "google_vertexai"),
        ("google-vertex/gemini-2.5-pro", "gemini-2.5-pro", "google_vertexai"),
        ("gpt-4o", "gpt-4o", None),
    ],
)
def test_model_strings_map_to_init_chat_model(
    fake_init: FakeInit, spec: str, model: str, provider: str | None
) -> None:
    resolve_model_string(spec)
    # Clients built from strings retry nothing themselves: the package's retry plan does.
    sdk_retries = provider in (None, "google_genai", "openai", "anthropic", "mistralai")
    sdk_retries = sdk_retries or provider == "google_vertexai"
    assert fake_init.calls == [(model, provider, {"max_retries": 0} if sdk_retries else {})]


def test_string_models_keep_a_max_retries_the_caller_passes(fake_init: FakeInit) -> None:
    resolve_model_string("openai/gpt-5-mini", max_retries=5)
    assert fake_init.calls == [("gpt-5-mini", "openai", {"max_retries": 5})]


def test_string_models_are_cached_per_spec_and_settings(fake_init: FakeInit) -> None:
    first = resolve_model_string("openai/gpt-5-mini")
    assert resolve_model_string("openai:gpt-5-mini") is first
    warm = resolve_model_string("openai/gpt-5-mini", temperature=0.3)
    assert warm is not first
    assert resolve_model_string("openai/gpt-5-mini", temperature=0.3) is warm
    assert len(fake_init.calls) == 2
    unhashable = resolve_model_string("openai/gpt-5-mini", model_kwargs={"a": 1})
    assert resolve_model_string("openai/gpt-5-mini", model_kwargs={"a": 1}) is not unhashable
    clear_model_cache()
    assert resolve_model_string("openai/gpt-5-mini") is not first


def test_default_spec_uses_the_default_model_and_its_output_limit(fake_init: FakeInit) -> None:
    for spec in (None, "default"):
        [attempt] = plan_attempts(spec, temperature=0.3)
        assert attempt.model_id == DEFAULT_MODEL
        assert attempt.runnable.invoke("hi").text == "ok"
        assert recorded(attempt.model).last_call.kwargs == {
            "temperature": 0.3,
            "max_output_tokens": DEFAULT_MAX_OUTPUT_TOKENS,
        }
        clear_model_cache()
    assert {c[:2] for c in fake_init.calls} == {("gemini-2.5-flash", "google_genai")}
    # Naming the same model explicitly is not "the default": no implicit output limit.
    [explicit] = plan_attempts(DEFAULT_MODEL, temperature=0.3)
    explicit.runnable.invoke("hi")
    assert recorded(explicit.model).last_call.kwargs == {"temperature": 0.3}


@pytest.mark.skipif(
    importlib.util.find_spec("langchain_google_genai") is not None,
    reason="langchain-google-genai is installed",
)
def test_missing_google_package_points_to_the_google_extra() -> None:
    with pytest.raises(MissingProviderError) as info:
        resolve_model_string("google/gemini-2.5-flash")
    assert 'pip install "langchain-om[google]"' in info.value.message
    assert isinstance(info.value, ImportError)
    assert isinstance(info.value.__cause__, ImportError)


@pytest.mark.skipif(
    importlib.util.find_spec("langchain_anthropic") is not None,
    reason="langchain-anthropic is installed",
)
def test_missing_partner_package_names_the_package() -> None:
    with pytest.raises(MissingProviderError, match="pip install langchain-anthropic"):
        resolve_model_string("anthropic/claude-x")


def test_missing_openai_package_points_to_the_openai_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err = ImportError("Initializing ChatOpenAI requires the langchain-openai package.")
    monkeypatch.setattr("langchain.chat_models.init_chat_model", FakeInit(err))
    with pytest.raises(MissingProviderError, match=r'pip install "langchain-om\[openai\]"'):
        resolve_model_string("openai/gpt-5-mini")


def test_unknown_partner_package_hint_comes_from_the_import_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err = ImportError("Please install it with `pip install langchain-upstage`")
    monkeypatch.setattr("langchain.chat_models.init_chat_model", FakeInit(err))
    with pytest.raises(MissingProviderError, match="pip install langchain-upstage"):
        resolve_model_string("upstage/solar-pro")


@pytest.mark.parametrize(
    ("spec", "message", "var"),
    [
        (
            "google/gemini-2.5-flash",
            "API key required for Gemini Developer API. Set GOOGLE_API_KEY/GEMINI_API_KEY.",
            "GOOGLE_API_KEY",
        ),
        ("anthropic/claude-x", "Did not find anthropic_api_key", "ANTHROPIC_API_KEY"),
        ("upstage/solar", "Did not find api_key; set UPSTAGE_API_KEY", "UPSTAGE_API_KEY"),
        ("foo/bar", "api_key missing", "FOO_API_KEY"),
        ("gpt-4o", "Missing credentials; set the `OPENAI_API_KEY`", "OPENAI_API_KEY"),
        (
            "vertex/gemini-2.5-pro",
            "default credentials not found",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ),
    ],
)
def test_missing_api_key_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, spec: str, message: str, var: str
) -> None:
    monkeypatch.setattr("langchain.chat_models.init_chat_model", FakeInit(ValueError(message)))
    with pytest.raises(MissingProviderError) as info:
        resolve_model_string(spec)
    assert f"set the {var} environment variable" in info.value.message


@pytest.mark.real_provider
def test_missing_openai_key_names_openai_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    with pytest.raises(MissingProviderError, match="set the OPENAI_API_KEY environment variable"):
        resolve_model_string("openai/gpt-4o-mini")


@pytest.mark.real_provider
def test_real_openai_model_gets_provider_kwarg_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    [attempt] = plan_attempts("openai/gpt-4.1", temperature=0.3, max_output_tokens=2_000)
    assert attempt.model_id == "openai/gpt-4.1"
    assert attempt.bound is not None
    assert attempt.bound.kwargs == {"temperature": 0.3, "max_completion_tokens": 2_000}  # type: ignore[attr-defined]
    # gpt-5-mini's profile says it takes no temperature.
    [reasoner] = plan_attempts("openai/gpt-5-mini", temperature=0.3)
    assert reasoner.bound is None


def test_unknown_provider_is_a_resolution_error_not_a_missing_package() -> None:
    with pytest.raises(ModelResolutionError, match='Unknown provider "nosuchprovider"') as info:
        resolve_model_string("nosuchprovider/x")
    assert not isinstance(info.value, MissingProviderError)


@pytest.mark.parametrize("spec", ["", "openai/", "  "])
def test_model_string_without_model_name_is_rejected(spec: str) -> None:
    with pytest.raises(ModelResolutionError):
        resolve_model_string(spec)


# --------------------------------------------------------------------------- identity


@pytest.mark.parametrize(
    ("provider", "name", "expected"),
    [
        ("google_genai", "models/gemini-2.5-flash", "google/gemini-2.5-flash"),
        ("openai", "gpt-5-mini", "openai/gpt-5-mini"),
        ("anthropic", "claude-sonnet-4-5", "anthropic/claude-sonnet-4-5"),
        ("mistralai", "mistral-large", "mistral/mistral-large"),
    ],
)
def test_model_id_reads_tracing_params(provider: str, name: str, expected: str) -> None:
    assert model_id(scripted(name=name, provider=provider)) == expected


def test_model_id_of_the_same_model_is_read_again_when_its_fields_change() -> None:
    model = scripted(name="first", provider="openai")
    assert model_id(model) == model_id(model) == "openai/first"
    model.model_name = "second"
    assert model_id(model) == "openai/second"
    model.provider = "anthropic"
    assert model_id(model) == "anthropic/second"
    # Another object with the same fields has the same id.
    assert model_id(scripted(name="second", provider="anthropic")) == "anthropic/second"


def test_model_id_falls_back_to_class_and_llm_type() -> None:
    fake = GenericFakeChatModel(messages=iter(["x"]))
    assert model_id(fake) == "genericfakechatmodel/generic-fake-chat-model"


# --------------------------------------------------------------------------- settings


class BareModel(BaseChatModel):
    """A chat model of an unknown provider with no settings fields."""

    @property
    def _llm_type(self) -> str:
        return "bare"

    def _generate(self, messages: list[BaseMessage], *a: Any, **kw: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage("bare"))])


def bound_kwargs(runnable: Any) -> dict[str, Any]:
    return dict(getattr(runnable, "kwargs", {}))


@pytest.mark.parametrize(
    ("provider", "kwarg"),
    [
        ("openai", "max_completion_tokens"),
        ("google_genai", "max_output_tokens"),
        ("anthropic", "max_tokens"),
        ("ollama", "num_predict"),
        ("scripted", "max_tokens"),
    ],
)
def test_output_limit_uses_the_providers_kwarg(provider: str, kwarg: str) -> None:
    model = scripted("done", provider=provider)
    bound = apply_settings(model, temperature=0.0, max_output_tokens=1_234)
    assert bound.invoke("x").text == "done"
    assert model.last_call.kwargs == {"temperature": 0.0, kwarg: 1_234}


def test_top_p_is_bound_when_given() -> None:
    model = scripted("a", provider="anthropic")
    [attempt] = plan_attempts(model, top_p=0.9)
    attempt.runnable.invoke("x")
    assert model.last_call.kwargs == {"top_p": 0.9}
    assert bound_kwargs(apply_settings(BareModel(), top_p=0.9)) == {}


def test_default_output_limit_applies_only_to_the_default_model() -> None:
    model = scripted()
    assert bound_kwargs(apply_settings(model, is_default_model=True)) == {
        "max_tokens": DEFAULT_MAX_OUTPUT_TOKENS
    }
    assert apply_settings(model, is_default_model=False) is model
    explicit = apply_settings(model, max_output_tokens=500, is_default_model=True)
    assert bound_kwargs(explicit) == {"max_tokens": 500}


def test_profile_caps_output_and_drops_unsupported_temperature() -> None:
    model = scripted(profile={"max_output_tokens": 8_192, "temperature": False})
    assert bound_kwargs(apply_settings(model, temperature=0.3, is_default_model=True)) == {
        "max_tokens": 8_192
    }


def test_settings_the_instance_was_built_with_are_kept() -> None:
    model = scripted("a", temperature=0.9, max_tokens=64)
    assert apply_settings(model, temperature=0.3, max_output_tokens=1_000) is model
    model.invoke("x")
    assert model.last_call.kwargs == {"temperature": 0.9, "max_tokens": 64}


def test_unknown_provider_without_fields_gets_no_generic_kwargs() -> None:
    model = BareModel()
    assert apply_settings(model, temperature=0.3, max_output_tokens=100) is model
    bound = apply_settings(model, provider_options={"seed": 7})
    assert bound_kwargs(bound) == {"seed": 7}


def test_plain_provider_options_pass_through() -> None:
    model = scripted("a", provider="google_genai")
    bound = apply_settings(model, provider_options={"thinking_budget": 215, "topK": 3})
    bound.invoke("x")
    assert model.last_call.kwargs == {"thinking_budget": 215, "topK": 3}


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        ("google_genai", {"thinking_budget": 215, "include_thoughts": False}),
        ("openai", {"reasoning_effort": "low"}),
        ("anthropic", {}),
    ],
)
def test_mastra_namespaced_provider_options_pick_the_models_provider(
    provider: str, expected: dict[str, Any]
) -> None:
    options = {
        "google": {"thinkingConfig": {"thinkingBudget": 215, "includeThoughts": False}},
        "openai": {"reasoningEffort": "low"},
    }
    model = scripted(provider=provider)
    assert bound_kwargs(apply_settings(model, provider_options=options)) == expected


def test_user_binding_is_kept_and_wins_over_om_settings() -> None:
    model = scripted("a")
    [attempt] = plan_attempts(
        model.bind(temperature=0.9, stop=["END"]), temperature=0.3, max_output_tokens=10
    )
    assert attempt.model is model
    attempt.runnable.invoke("x")
    assert model.last_call.kwargs == {"temperature": 0.9, "max_tokens": 10, "stop": ["END"]}


# --------------------------------------------------------------------------- transient errors


class RateLimitError(Exception):
    pass


class APITimeoutError(Exception):
    pass


class AuthenticationError(Exception):
    pass


class Wrapper(Exception):
    pass


def with_attr(name: str, value: Any) -> Exception:
    exc = Exception("boom")
    setattr(exc, name, value)
    return exc


def caused(outer: Exception, inner: Exception) -> Exception:
    outer.__cause__ = inner
    return outer


class _Response:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


_REQUEST = httpx.Request("POST", "https://api.example.invalid/v1")
_OPENAI_REQUEST = httpx2.Request("POST", "https://api.example.invalid/v1")  # openai 3 uses httpx2


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (rate_limit_error(), True),
        (server_error(503), True),
        (server_error(500), True),
        (server_error(529), True),
        (with_attr("status_code", 408), True),
        (with_attr("status", 425), True),
        (with_attr("code", 429), True),
        (with_attr("response", _Response(502)), True),
        (with_attr("status", "RESOURCE_EXHAUSTED"), True),
        (with_attr("status", "INVALID_ARGUMENT"), False),
        (caused(with_attr("status", "UNAVAILABLE"), with_attr("code", 400)), True),
        (server_error(401), False),
        (server_error(403), False),
        (server_error(400), False),
        (server_error(404), False),
        (with_attr("status_code", True), False),
        (TimeoutError(), True),
        (TimeoutError(), True),
        (timeout_error(), True),
        (ConnectionResetError(), True),
        (RateLimitError(), True),
        (APITimeoutError(), True),
        (AuthenticationError(), False),
        (ValueError("bad"), False),
        (TypeError("bad"), False),
        (KeyboardInterrupt(), False),
        (asyncio.CancelledError(), False),
        (caused(Wrapper("wrapped"), server_error(503)), True),
        (caused(Wrapper("wrapped"), server_error(401)), False),
        (caused(ValueError("parse"), server_error(503)), False),
        (openai.APITimeoutError(request=_OPENAI_REQUEST), True),
        (openai.APIConnectionError(request=_OPENAI_REQUEST), True),
        (
            openai.RateLimitError(
                "slow down", response=httpx2.Response(429, request=_OPENAI_REQUEST), body=None
            ),
            True,
        ),
        (
            openai.AuthenticationError(
                "no", response=httpx2.Response(401, request=_OPENAI_REQUEST), body=None
            ),
            False,
        ),
        (
            openai.BadRequestError(
                "bad", response=httpx2.Response(400, request=_OPENAI_REQUEST), body=None
            ),
            False,
        ),
        (httpx.ReadTimeout("slow", request=_REQUEST), True),
        (httpx.ConnectError("down", request=_REQUEST), True),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v),
)
def test_transient_classification(exc: BaseException, transient: bool) -> None:
    assert is_transient(exc) is transient


# --------------------------------------------------------------------------- backoff


def test_backoff_doubles_then_caps() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=10.0, jitter=0.2, rng=lambda: 0.5)
    assert [policy.delay(n) for n in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert policy.delay(10_000) == 10.0


def test_jitter_extremes() -> None:
    low = RetryPolicy(base_delay=2.0, max_delay=60.0, jitter=0.25, rng=lambda: 0.0)
    high = RetryPolicy(base_delay=2.0, max_delay=60.0, jitter=0.25, rng=lambda: 0.999_999)
    assert low.delay(2) == pytest.approx(8.0 * 0.75)
    assert high.delay(2) == pytest.approx(8.0 * 1.25, rel=1e-5)
    assert high.delay(10) == 60.0  # jitter never pushes past the cap


@settings(max_examples=150, deadline=None)
@given(
    retry=st.integers(min_value=0, max_value=40),
    r=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    base=st.floats(min_value=0.01, max_value=5.0),
    cap=st.floats(min_value=0.01, max_value=300.0),
    jitter=st.floats(min_value=0.0, max_value=1.0),
)
def test_backoff_stays_within_jitter_bounds_and_cap(
    retry: int, r: float, base: float, cap: float, jitter: float
) -> None:
    policy = RetryPolicy(base_delay=base, max_delay=cap, jitter=jitter, rng=lambda: r)
    nominal = min(cap, base * 2.0**retry)
    delay = policy.delay(retry)
    assert nominal * (1 - jitter) - 1e-9 <= delay <= min(cap, nominal * (1 + jitter)) + 1e-9
    assert policy.delay(retry + 1) >= delay - 1e-9


def test_retry_after_header_lengthens_the_wait_up_to_the_cap() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=30.0, jitter=0.0)
    assert policy.delay(0, rate_limit_error(retry_after=7)) == 7.0
    assert policy.delay(0, rate_limit_error(retry_after=120)) == 30.0
    assert policy.delay(3, rate_limit_error(retry_after=2)) == 8.0


@pytest.mark.parametrize(
    "kwargs", [{"max_retries": -1}, {"base_delay": -1.0}, {"jitter": 1.5}, {"jitter": -0.1}]
)
def test_retry_policy_validates(kwargs: dict[str, Any]) -> None:
    with pytest.raises(OMConfigError):
        RetryPolicy(**kwargs)


# --------------------------------------------------------------------------- drivers

FIXED = RetryPolicy(base_delay=1.0, max_delay=60.0, jitter=0.2, rng=lambda: 0.5)


def run(
    mode: Mode,
    attempts: list[ModelAttempt],
    messages: Any = "observe",
    *,
    policy: RetryPolicy = FIXED,
    on_retry: Callable[[RetryEvent], object] | None = None,
) -> tuple[ModelCallResult, list[float]]:
    slept: list[float] = []
    if mode == "sync":
        result = invoke_model(
            attempts, messages, policy=policy, sleep=slept.append, on_retry=on_retry
        )
        return result, slept

    async def asleep(seconds: float) -> None:
        slept.append(seconds)

    coro = ainvoke_model(attempts, messages, policy=policy, sleep=asleep, on_retry=on_retry)
    return asyncio.run(coro), slept


modes = pytest.mark.parametrize("mode", ["sync", "async"])


@modes
def test_429_then_success_retries_once(mode: Mode) -> None:
    err = rate_limit_error()
    model = scripted(err, "🔴 User likes tea", name="obs")
    result, slept = run(mode, plan_attempts(model))
    assert result.text == "🔴 User likes tea"
    assert (result.model_id, result.attempts, result.retries) == ("scripted/obs", 2, 1)
    assert slept == [1.0]
    assert result.errors == (("scripted/obs", err),)
    assert result.usage is not None
    assert result.usage.input_tokens == result.message.usage_metadata["input_tokens"]  # type: ignore[index]
    assert result.provider_metadata["model_name"] == "obs"
    assert model.call_count == 2
    assert [c.async_ for c in model.calls] == [mode == "async"] * 2


@modes
def test_list_falls_over_to_the_next_model_after_its_retries(mode: Mode) -> None:
    first = scripted(server_error(503), server_error(502), server_error(500), name="first")
    second = scripted("from second", name="second")
    events: list[RetryEvent] = []
    spec = [ModelWithRetries(first, max_retries=2), ModelWithRetries(second, max_retries=1)]
    result, slept = run(mode, plan_attempts(spec), on_retry=events.append)
    assert result.text == "from second"
    assert (result.model_id, result.attempts, result.retries) == ("scripted/second", 4, 2)
    assert slept == [1.0, 2.0]
    assert [(e.model_id, e.attempt, e.delay, e.next_model_id) for e in events] == [
        ("scripted/first", 1, 1.0, None),
        ("scripted/first", 2, 2.0, None),
        ("scripted/first", 3, None, "scripted/second"),
    ]
    assert (first.call_count, second.call_count) == (3, 1)


@modes
def test_non_transient_error_moves_on_without_retrying(mode: Mode) -> None:
    first = scripted(server_error(401), name="first")
    second = scripted("ok", name="second")
    spec = [ModelWithRetries(first, 5), ModelWithRetries(second, 5)]
    result, slept = run(mode, plan_attempts(spec))
    assert (result.text, result.attempts, result.retries, slept) == ("ok", 2, 0, [])
    assert first.call_count == 1


@modes
def test_when_everything_fails_the_last_error_is_raised(mode: Mode) -> None:
    last = server_error(503, "second is down")
    first = scripted(server_error(503), server_error(503), name="first")
    second = scripted(ValueError("bad request shape"), last, name="second")
    spec = [ModelWithRetries(first, 1), ModelWithRetries(second, 1)]
    # ValueError is not transient: second model stops after its first call.
    with pytest.raises(ValueError, match="bad request shape") as info:
        run(mode, plan_attempts(spec))
    assert (first.call_count, second.call_count) == (2, 1)
    assert any("3 model calls failed" in note for note in info.value.__notes__)


@modes
def test_plain_spec_uses_the_policy_budget(mode: Mode) -> None:
    model = scripted(timeout_error(), timeout_error(), "late", name="slow")
    policy = RetryPolicy(max_retries=1, jitter=0.0)
    with pytest.raises(TimeoutError):
        run(mode, plan_attempts(model), policy=policy)
    assert model.call_count == 2


@modes
def test_zero_retries_means_one_call(mode: Mode) -> None:
    model = scripted(rate_limit_error(), "never", name="once")
    with pytest.raises(Exception, match="Rate limit"):
        run(mode, plan_attempts([ModelWithRetries(model, 0)]))
    assert model.call_count == 1


@modes
def test_custom_retry_classifier(mode: Mode) -> None:
    model = scripted(ValueError("flaky parse"), "fine", name="m")
    policy = RetryPolicy(jitter=0.0, retry_on=lambda e: isinstance(e, ValueError))
    result, slept = run(mode, plan_attempts(model), policy=policy)
    assert (result.text, slept) == ("fine", [1.0])


@modes
def test_failing_retry_callback_is_logged_not_raised(
    mode: Mode, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(event: RetryEvent) -> None:
        raise RuntimeError("hook bug")

    model = scripted(server_error(503), "ok", name="m")
    with caplog.at_level(logging.ERROR, logger="langchain_om.retry"):
        result, _ = run(mode, plan_attempts(model), on_retry=broken)
    assert result.text == "ok"
    assert "on_retry callback failed" in caplog.text


def not_a_message(_: object) -> Any:
    return {"not": "a message"}


@modes
def test_non_message_output_is_a_type_error(mode: Mode) -> None:
    model = scripted(name="m")
    attempt = ModelAttempt(model, 3, "scripted/m", RunnableLambda(not_a_message))
    with pytest.raises(TypeError, match="not an AIMessage"):
        run(mode, [attempt])


@modes
def test_no_attempts_is_a_resolution_error(mode: Mode) -> None:
    with pytest.raises(ModelResolutionError):
        run(mode, [])


def test_keyboard_interrupt_is_never_retried() -> None:
    model = scripted(KeyboardInterrupt(), "never", name="m")
    slept: list[float] = []
    with pytest.raises(KeyboardInterrupt):
        invoke_model(plan_attempts(model), "x", sleep=slept.append)
    assert (model.call_count, slept) == (1, [])


async def test_cancellation_is_never_retried() -> None:
    model = scripted("too late", "never", name="m", delay=30.0)
    slept: list[float] = []

    async def asleep(seconds: float) -> None:
        slept.append(seconds)

    task = asyncio.create_task(ainvoke_model(plan_attempts(model), "x", sleep=asleep))
    while model.call_count == 0:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (model.call_count, slept) == (1, [])


def _script() -> list[Any]:
    return [
        server_error(503),
        rate_limit_error(retry_after=5),
        timeout_error(),
        server_error(500),
        "answer",
    ]


def test_sync_and_async_drivers_agree_on_the_same_script() -> None:
    outcomes = []
    for mode in ("sync", "async"):
        first = ScriptedChatModel(script=_script()[:3], model="a")
        second = ScriptedChatModel(script=_script()[3:], model="b")
        events: list[RetryEvent] = []
        spec = [ModelWithRetries(first, 2), ModelWithRetries(second, 2)]
        result, slept = run(mode, plan_attempts(spec, temperature=0.1), on_retry=events.append)
        outcomes.append(
            (
                result.text,
                result.model_id,
                result.attempts,
                result.retries,
                slept,
                [(e.model_id, e.attempt, e.delay, e.next_model_id) for e in events],
                [(c.text, c.kwargs) for c in first.calls + second.calls],
            )
        )
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][:5] == ("answer", "scripted/b", 5, 3, [1.0, 5.0, 1.0])


class TagSpy(BaseCallbackHandler):
    def __init__(self) -> None:
        self.tags: list[list[str]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.tags.append(list(kwargs.get("tags") or []))


@modes
def test_run_config_reaches_every_model_call(mode: Mode) -> None:
    spy = TagSpy()
    model = scripted(server_error(503), "ok", name="m")
    config: RunnableConfig = {"tags": ["langchain_om:observer"], "callbacks": [spy]}
    attempts = plan_attempts(model)
    if mode == "sync":
        result = invoke_model(attempts, "x", config=config, sleep=lambda _: None)
    else:

        async def nosleep(_: float) -> None:
            return None

        result = asyncio.run(ainvoke_model(attempts, "x", config=config, sleep=nosleep))
    assert result.text == "ok"
    assert spy.tags == [["langchain_om:observer"], ["langchain_om:observer"]]


def test_models_module_exports_what_it_documents() -> None:
    assert set(models.__all__) <= set(dir(models))
