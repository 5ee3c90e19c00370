"""Model specs for the Observer and the Reflector, and resilient model calls.

A *model spec* says which chat model a role uses. It is one of:

* a string, ``"provider/model"`` (Mastra style, ``"openai/gpt-5-mini"``) or
  ``"provider:model"`` (LangChain style, ``"google_genai:gemini-2.5-flash"``), built with
  LangChain's ``init_chat_model``; ``"default"`` (or ``None``) names :data:`DEFAULT_MODEL`;
* a ``BaseChatModel`` instance (or one bound with ``.bind(...)``);
* a callable that receives a :class:`RunContext` and returns a spec (dynamic model);
* a :class:`ModelByInputTokens`, which picks a spec by the size of the role's input;
* a list of :class:`ModelWithRetries`, tried in order, each with its own retry budget.

:func:`plan_attempts` turns a spec into the ordered :class:`ModelAttempt` list for one call, and
:func:`invoke_model` / :func:`ainvoke_model` run it: transient provider errors (timeouts, 408,
425, 429, 5xx) are retried with exponential backoff and jitter, then the next model is tried.
Both drivers execute the same retry plan, so sync and async behave identically. The retry half
lives in :mod:`langchain_om.retry`; its names are re-exported here.

Example:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> model = FakeListChatModel(responses=["🔴 User prefers tea"])
    >>> attempts = plan_attempts([ModelWithRetries(model, max_retries=1)])
    >>> result = invoke_model(attempts, "observe this", sleep=lambda _: None)
    >>> result.message.text, result.attempts
    ('🔴 User prefers tea', 1)
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeAlias, Union, cast

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableBinding

from langchain_om.errors import (
    MissingProviderError,
    ModelResolutionError,
    ModelTierExceededError,
    OMConfigError,
)
from langchain_om.retry import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_POLICY,
    ModelCallResult,
    ModelUsage,
    RetryEvent,
    RetryPolicy,
    ainvoke_model,
    invoke_model,
    is_transient,
)

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MODEL",
    "DEFAULT_RETRY_POLICY",
    "ModelAttempt",
    "ModelByInputTokens",
    "ModelCallResult",
    "ModelSpec",
    "ModelUsage",
    "ModelWithRetries",
    "RetryEvent",
    "RetryPolicy",
    "Role",
    "RunContext",
    "ainvoke_model",
    "apply_settings",
    "clear_model_cache",
    "invoke_model",
    "is_transient",
    "model_id",
    "plan_attempts",
    "resolve_model_string",
]

DEFAULT_MODEL = "google/gemini-2.5-flash"
"""The model used by the Observer and the Reflector when none is configured."""

DEFAULT_MAX_OUTPUT_TOKENS = 100_000
"""Output-token limit applied when a role runs on the default model and sets none itself."""

Role = Literal["observer", "reflector"]


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True, kw_only=True)
class RunContext:
    """What a dynamic (callable) model spec is told about the call it is choosing for.

    Example:
        >>> pick = lambda ctx: "openai/gpt-5-mini" if ctx.role == "reflector" else "default"
        >>> pick(RunContext(role="reflector", input_tokens=12_000))
        'openai/gpt-5-mini'
    """

    thread_id: str | None = None
    resource_id: str | None = None
    role: Role = "observer"
    input_tokens: int = 0
    """Token estimate of the role's input (prompt + messages or observations)."""
    config: dict[str, Any] | None = None
    """The LangChain ``RunnableConfig`` of the run, when there is one."""


class ModelByInputTokens:
    """Chooses a model by the size of the Observer's or Reflector's input.

    Each key of ``up_to`` is an inclusive upper bound in tokens; the smallest tier that is at
    least the input size wins. An input above the largest tier raises
    :class:`~langchain_om.errors.ModelTierExceededError` and the OM cycle aborts.

    Args:
        up_to: Tier upper bounds (positive ints) mapped to model specs.
        upTo: Mastra spelling of ``up_to``, accepted so a pasted config works.

    Raises:
        OMConfigError: If no tiers are given, a bound is not a positive int, or both
            spellings are used.

    Example:
        >>> tiers = ModelByInputTokens(up_to={40_000: "openai/gpt-5", 10_000: "openai/gpt-5-mini"})
        >>> tiers.thresholds()
        [10000, 40000]
        >>> tiers.resolve(10_000), tiers.resolve(10_001)
        ('openai/gpt-5-mini', 'openai/gpt-5')
    """

    __slots__ = ("_tiers",)

    def __init__(
        self,
        up_to: Mapping[int, ModelSpec] | None = None,
        *,
        upTo: Mapping[int, ModelSpec] | None = None,
    ) -> None:
        if up_to is not None and upTo is not None:
            raise OMConfigError(
                "ModelByInputTokens got both up_to and upTo; pass the tiers once (up_to=...).",
                option="model.up_to",
            )
        tiers = up_to if up_to is not None else upTo
        if not isinstance(tiers, Mapping) or not tiers:
            raise OMConfigError(
                "ModelByInputTokens needs at least one tier, e.g. "
                'ModelByInputTokens(up_to={30_000: "openai/gpt-5-mini"}).',
                option="model.up_to",
            )
        for bound in tiers:
            if isinstance(bound, bool) or not isinstance(bound, int) or bound <= 0:
                raise OMConfigError(
                    f"ModelByInputTokens tier {bound!r} is not a positive number of tokens; "
                    "use int keys such as 10_000.",
                    option="model.up_to",
                )
        self._tiers: tuple[tuple[int, ModelSpec], ...] = tuple(sorted(tiers.items()))

    def thresholds(self) -> list[int]:
        """Return the tier bounds in ascending order."""
        return [bound for bound, _ in self._tiers]

    def resolve(self, input_tokens: int) -> ModelSpec:
        """Return the spec of the smallest tier that holds ``input_tokens``.

        Raises:
            ModelTierExceededError: If the input is larger than the largest tier.
        """
        for bound, spec in self._tiers:
            if input_tokens <= bound:
                return spec
        largest = self._tiers[-1][0]
        raise ModelTierExceededError(
            f"The input has {input_tokens:,} tokens, more than the largest ModelByInputTokens "
            f"tier ({largest:,} tokens), so no model was chosen and the cycle was aborted. "
            f"Add a larger tier (up_to={{..., {_round_up(input_tokens):_}: <model>}}) or lower "
            "the observation/reflection thresholds.",
            input_tokens=input_tokens,
            largest_tier=largest,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModelByInputTokens):
            return NotImplemented
        return self._tiers == other._tiers

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{bound}: {spec!r}" for bound, spec in self._tiers)
        return f"ModelByInputTokens(up_to={{{inner}}})"


def _round_up(tokens: int) -> int:
    step: int = pow(10, max(3, len(str(tokens)) - 1))
    return -(-tokens // step) * step


@dataclass(frozen=True)
class ModelWithRetries:
    """A model and how many times a transient failure of it is retried.

    In a list, models are tried in order: when one fails on every retry (or fails with an
    error that retrying cannot fix), the next one is tried. In a pasted Mastra config the
    items may also be mappings: ``{"model": ..., "maxRetries": 2}``.

    Example:
        >>> specs = [ModelWithRetries("openai/gpt-5-mini", max_retries=2),
        ...          ModelWithRetries("google/gemini-2.5-flash", max_retries=0)]
        >>> [s.max_retries for s in specs]
        [2, 0]
    """

    model: ModelSpec
    max_retries: int = DEFAULT_MAX_RETRIES

    def __post_init__(self) -> None:
        retries = self.max_retries
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise OMConfigError(
                f"ModelWithRetries.max_retries must be an int >= 0, got {retries!r}.",
                option="model.max_retries",
            )


ModelSpec: TypeAlias = Union[
    str,
    BaseChatModel,
    "Runnable[LanguageModelInput, BaseMessage]",
    ModelByInputTokens,
    Sequence[Union[ModelWithRetries, Mapping[str, Any]]],  # noqa: UP007
    ModelWithRetries,
    Callable[[RunContext], "ModelSpec"],
    None,
]
"""Anything that names the model of a role (see the module docstring)."""


# --------------------------------------------------------------------------- strings

# Mastra / AI SDK provider names (and common spellings) -> init_chat_model provider names.
_PROVIDER_ALIASES: dict[str, str] = {
    "google": "google_genai",
    "gemini": "google_genai",
    "google_genai": "google_genai",
    "google_generative_ai": "google_genai",
    "vertex": "google_vertexai",
    "google_vertex": "google_vertexai",
    "azure": "azure_openai",
    "mistral": "mistralai",
    "togetherai": "together",
    "amazon_bedrock": "bedrock_converse",
    "bedrock": "bedrock_converse",
    "grok": "xai",
    "hf": "huggingface",
}

# init_chat_model provider -> what to pip install.
_EXTRAS: dict[str, str] = {
    "openai": '"langchain-om[openai]"',
    "azure_openai": '"langchain-om[openai]"',
    "google_genai": '"langchain-om[google]"',
}
_PACKAGES: dict[str, str] = {
    "anthropic": "langchain-anthropic",
    "google_vertexai": "langchain-google-vertexai",
    "google_anthropic_vertex": "langchain-google-vertexai",
    "bedrock": "langchain-aws",
    "bedrock_converse": "langchain-aws",
    "anthropic_bedrock": "langchain-aws",
    "mistralai": "langchain-mistralai",
    "nvidia": "langchain-nvidia-ai-endpoints",
    "azure_ai": "langchain-azure-ai",
}

# init_chat_model provider -> API key environment variable.
_API_KEY_VARS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "azure_openai": "AZURE_OPENAI_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "together": "TOGETHER_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "perplexity": "PPLX_API_KEY",
    "cohere": "COHERE_API_KEY",
    "nvidia": "NVIDIA_API_KEY",
    "huggingface": "HUGGINGFACEHUB_API_TOKEN",
    "google_vertexai": "GOOGLE_APPLICATION_CREDENTIALS",
}

_CACHE_SIZE = 64
_cache: OrderedDict[tuple[Any, ...], BaseChatModel] = OrderedDict()
_cache_lock = threading.Lock()


def _split_model_string(spec: str) -> tuple[str | None, str]:
    """Split ``provider/model`` or ``provider:model`` at whichever separator comes first."""
    text = spec.strip()
    if text == "default":
        text = DEFAULT_MODEL
    cut = min((i for i in (text.find("/"), text.find(":")) if i > 0), default=-1)
    if cut < 0:
        # A bare model name: gemini-* must not fall to init_chat_model's Vertex default.
        return ("google_genai" if text.startswith("gemini") else None), text
    raw = text[:cut].strip().lower().replace("-", "_")
    return _PROVIDER_ALIASES.get(raw, raw), text[cut + 1 :].strip()


def _install_hint(provider: str, error: BaseException) -> str:
    if provider in _EXTRAS:
        return f"pip install {_EXTRAS[provider]}"
    if provider in _PACKAGES:
        return f"pip install {_PACKAGES[provider]}"
    found = re.search(r"pip install ([\w.\-\[\]]+)", str(error))
    return f"pip install {found.group(1)}" if found else f"pip install langchain-{provider}"


def _api_key_var(provider: str, error: BaseException) -> str:
    if provider in _API_KEY_VARS:
        return _API_KEY_VARS[provider]
    found = re.search(r"\b[A-Z][A-Z0-9_]*_(?:API_KEY|API_TOKEN|CREDENTIALS)\b", str(error))
    if found:
        return found.group(0)
    return f"{provider.upper()}_API_KEY" if provider else "provider API key"


def resolve_model_string(spec: str, **init_kwargs: Any) -> BaseChatModel:
    """Build (or reuse) the chat model a model string names.

    ``"provider/model"`` and ``"provider:model"`` are both accepted; everything after the
    first separator is the model name (``"openrouter/meta/llama-3"`` keeps
    ``"meta/llama-3"``). Mastra provider names are mapped to LangChain's (``google`` →
    ``google_genai``, never Vertex; ``mistral`` → ``mistralai``; …), LangChain names pass
    through. Models are cached per ``(spec, init_kwargs)`` so repeated cycles reuse clients.

    Args:
        spec: The model string; ``"default"`` names :data:`DEFAULT_MODEL`.
        **init_kwargs: Passed to ``init_chat_model`` (e.g. ``temperature=0``).

    Returns:
        The chat model.

    Raises:
        MissingProviderError: If the provider package is not installed (the message says what
            to ``pip install``) or its API key is not set (the message names the variable).
        ModelResolutionError: If the string or provider is not understood.

    Example:
        >>> resolve_model_string("google/gemini-2.5-flash")  # doctest: +SKIP
        ChatGoogleGenerativeAI(model='models/gemini-2.5-flash', ...)
    """
    provider, name = _split_model_string(spec)
    if not name:
        raise ModelResolutionError(
            f'Model string "{spec}" has no model name; write "provider/model", '
            'e.g. "openai/gpt-5-mini".'
        )
    try:
        key: tuple[Any, ...] | None = (provider, name, tuple(sorted(init_kwargs.items())))
        hash(key)
    except TypeError:
        key = None
    if key is not None:
        with _cache_lock:
            if key in _cache:
                _cache.move_to_end(key)
                return _cache[key]
    model = _build_model(spec, provider, name, init_kwargs)
    if key is not None:
        with _cache_lock:
            _cache[key] = model
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    return model


def _build_model(
    spec: str, provider: str | None, name: str, init_kwargs: Mapping[str, Any]
) -> BaseChatModel:
    from langchain.chat_models import init_chat_model

    label = provider or "inferred"
    try:
        model = init_chat_model(name, model_provider=provider, **init_kwargs)
    except ImportError as exc:
        hint = _install_hint(provider or "", exc)
        raise MissingProviderError(
            f'Model "{spec}" needs the {label} provider package, which is not installed. '
            f"Run: {hint}   (or pass a chat model instance as the model)."
        ) from exc
    except Exception as exc:
        text = str(exc)
        if re.search(r"api[_ ]?key|credentials", text, re.IGNORECASE):
            var = _api_key_var(provider or "", exc)
            raise MissingProviderError(
                f'Model "{spec}" needs an API key: set the {var} environment variable '
                "(or pass a chat model instance built with api_key=... as the model)."
            ) from exc
        if "unsupported" in text.lower() and "provider" in text.lower():
            raise ModelResolutionError(
                f'Unknown provider "{label}" in model "{spec}". Use a LangChain provider name '
                '("openai:gpt-5-mini", "google_genai:gemini-2.5-flash", "anthropic:…") or pass '
                "a chat model instance."
            ) from exc
        if provider is None and "infer" in text.lower():
            raise ModelResolutionError(
                f'Cannot tell the provider of model "{spec}"; write it as "provider/model", '
                'e.g. "openai/gpt-5-mini".'
            ) from exc
        raise ModelResolutionError(f'Could not build model "{spec}": {exc}') from exc
    if not isinstance(model, BaseChatModel):  # pragma: no cover - init_chat_model contract
        raise ModelResolutionError(f'Model "{spec}" did not build a chat model: {model!r}')
    return model


def clear_model_cache() -> None:
    """Forget the models built from strings (e.g. after changing API keys)."""
    with _cache_lock:
        _cache.clear()


# --------------------------------------------------------------------------- identity

# LangChain ls_provider -> Mastra-style provider name used in model ids.
_ID_PROVIDERS: dict[str, str] = {
    "google_genai": "google",
    "google_vertexai": "vertex",
    "azure_openai": "azure",
    "mistralai": "mistral",
    "together": "togetherai",
}


def _ls_params(model: BaseChatModel) -> Mapping[str, Any]:
    try:
        return cast("Mapping[str, Any]", model._get_ls_params())
    except Exception:  # a model with a broken tracing hook still has an identity
        return {}


def model_id(model: BaseChatModel) -> str:
    """Return the ``"provider/model"`` identity of a chat model.

    Used to detect a provider change and to pick the Reflector's starting compression level.
    Built from the model's tracing parameters, then its ``model_name``/``model``/``model_id``
    attribute, then ``_llm_type``. Google GenAI reads ``google/…``, like Mastra's ids.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> model_id(FakeListChatModel(responses=["x"]))
        'fakelistchatmodel/fake-list-chat-model'
    """
    params = _ls_params(model)
    raw_provider = str(params.get("ls_provider") or "") or model._llm_type
    provider = _ID_PROVIDERS.get(raw_provider, raw_provider)
    name = params.get("ls_model_name")
    if not name:
        for attr in ("model_name", "model", "model_id"):
            value = getattr(model, attr, None)
            if isinstance(value, str) and value:
                name = value
                break
    name = str(name or model._llm_type)
    return f"{provider}/{name.removeprefix('models/')}"


def _provider(model: BaseChatModel) -> str:
    """LangChain provider name (``ls_provider``) of a model, or ``""``."""
    return str(_ls_params(model).get("ls_provider") or "")


# --------------------------------------------------------------------------- settings

_MAX_TOKENS_KWARG: dict[str, str] = {
    "openai": "max_completion_tokens",
    "google_genai": "max_output_tokens",
    "google_vertexai": "max_output_tokens",
    "ollama": "num_predict",
}
_KNOWN_PROVIDERS = frozenset(
    {*_MAX_TOKENS_KWARG, "anthropic", "azure", "mistralai", "groq", "deepseek", "xai"}
    | {"fireworks", "together", "openrouter", "perplexity", "cohere", "bedrock", "nvidia"}
)
_FAKE_MODULES = ("langchain_om.testing", "langchain_core.language_models.fake_chat_models")

# Mastra providerOptions namespaces -> LangChain provider names they apply to.
_OPTION_NAMESPACES: dict[str, frozenset[str]] = {
    "google": frozenset({"google_genai"}),
    "vertex": frozenset({"google_vertexai"}),
    "openai": frozenset({"openai", "azure"}),
    "azure": frozenset({"azure"}),
    "anthropic": frozenset({"anthropic"}),
    "mistral": frozenset({"mistralai"}),
    "xai": frozenset({"xai"}),
    "groq": frozenset({"groq"}),
    "deepseek": frozenset({"deepseek"}),
    "openrouter": frozenset({"openrouter"}),
    "ollama": frozenset({"ollama"}),
    "bedrock": frozenset({"bedrock", "amazon_bedrock"}),
}


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _snake_keys(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {_snake(str(k)): _snake_keys(v) for k, v in value.items()}
    return value


def _provider_kwargs(provider: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Turn ``provider_options`` into call kwargs for a model of ``provider``.

    Options keyed by Mastra provider namespace (``{"google": {"thinkingConfig": {...}}}``)
    keep only this provider's entry, with camelCase keys made snake_case and Google's
    ``thinking_config`` flattened into ``thinking_budget``/``thinking_level``/
    ``include_thoughts``. Anything else is passed through unchanged.
    """
    namespaced = all(k in _OPTION_NAMESPACES and isinstance(v, Mapping) for k, v in options.items())
    if not namespaced:
        return dict(options)
    picked: dict[str, Any] = {}
    for namespace, entry in options.items():
        if provider in _OPTION_NAMESPACES[namespace]:
            picked.update(_snake_keys(entry))
    if provider.startswith("google") and isinstance(picked.get("thinking_config"), Mapping):
        picked.update(picked.pop("thinking_config"))
    return picked


def _accepts(model: BaseChatModel, provider: str, kwarg: str) -> bool:
    if provider in _KNOWN_PROVIDERS:
        return True
    if type(model).__module__.startswith(_FAKE_MODULES):
        return True
    return kwarg in type(model).model_fields


_TOKEN_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens", "num_predict")


def _settings_kwargs(
    model: BaseChatModel,
    *,
    temperature: float | None,
    max_output_tokens: int | None,
    provider_options: Mapping[str, Any] | None,
    is_default_model: bool,
    top_p: float | None = None,
) -> dict[str, Any]:
    provider = _provider(model)
    profile: Mapping[str, Any] = getattr(model, "profile", None) or {}
    explicit = model.model_fields_set
    kwargs: dict[str, Any] = {}
    if (
        temperature is not None
        and "temperature" not in explicit
        and profile.get("temperature") is not False
        and _accepts(model, provider, "temperature")
    ):
        kwargs["temperature"] = temperature
    if top_p is not None and "top_p" not in explicit and _accepts(model, provider, "top_p"):
        kwargs["top_p"] = top_p
    limit = max_output_tokens
    if limit is None and is_default_model:
        limit = DEFAULT_MAX_OUTPUT_TOKENS
    if limit is not None and explicit.isdisjoint(_TOKEN_FIELDS):
        cap = profile.get("max_output_tokens")
        if isinstance(cap, int) and cap > 0:
            limit = min(limit, cap)
        name = _MAX_TOKENS_KWARG.get(provider, "max_tokens")
        if _accepts(model, provider, name):
            kwargs[name] = limit
    if provider_options:
        kwargs.update(_provider_kwargs(provider, provider_options))
    return kwargs


def apply_settings(
    model: BaseChatModel,
    *,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
    provider_options: Mapping[str, Any] | None = None,
    is_default_model: bool = False,
    top_p: float | None = None,
) -> Runnable[LanguageModelInput, BaseMessage]:
    """Bind sampling settings to a model in its provider's own keyword names.

    The output limit is ``max_completion_tokens`` for OpenAI, ``max_output_tokens`` for
    Google, ``num_predict`` for Ollama and ``max_tokens`` elsewhere; it is capped at the
    model profile's ``max_output_tokens`` when the profile knows it. ``temperature`` is left
    out for models whose profile says they take none (OpenAI reasoning models). A setting
    the model instance was explicitly built with (``ChatOpenAI(temperature=0.7)``) is kept:
    the instance is the more specific choice. For a model of an unknown provider a setting
    is bound only if the model has a field of that name (fake and scripted test models
    accept both). ``provider_options`` are bound last; options keyed by Mastra provider
    namespace (``{"google": {"thinkingConfig": {"thinkingBudget": 215}}}``) keep only the
    model's provider entry, with keys made snake_case.

    Args:
        model: The chat model.
        temperature: Sampling temperature, or ``None`` for the model's own.
        max_output_tokens: Output-token limit, or ``None``.
        provider_options: Extra call keyword arguments (e.g. ``{"thinking_budget": 215}``).
        is_default_model: The role runs on the default model; when ``max_output_tokens`` is
            ``None`` it becomes :data:`DEFAULT_MAX_OUTPUT_TOKENS`.
        top_p: Nucleus sampling probability, or ``None``.

    Returns:
        ``model`` itself when nothing is bound, else ``model.bind(...)``.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> bound = apply_settings(FakeListChatModel(responses=["x"]), temperature=0.3,
        ...                        is_default_model=True)
        >>> bound.kwargs
        {'temperature': 0.3, 'max_tokens': 100000}
    """
    kwargs = _settings_kwargs(
        model,
        temperature=temperature,
        max_output_tokens=max_output_tokens,
        provider_options=provider_options,
        is_default_model=is_default_model,
        top_p=top_p,
    )
    return model.bind(**kwargs) if kwargs else model


# --------------------------------------------------------------------------- planning


class ModelAttempt(NamedTuple):
    """One model to call for a role, with its retry budget.

    ``max_retries`` of ``None`` means "use the :class:`RetryPolicy`'s". ``bound`` is the
    model with settings bound (see :func:`apply_settings`); :attr:`runnable` is what is called.
    """

    model: BaseChatModel
    max_retries: int | None
    model_id: str
    bound: Runnable[LanguageModelInput, BaseMessage] | None = None

    @property
    def runnable(self) -> Runnable[LanguageModelInput, BaseMessage]:
        """The runnable to call: the bound model, else the model."""
        return self.bound if self.bound is not None else self.model


_MAX_DEPTH = 8


def plan_attempts(
    spec: ModelSpec,
    ctx: RunContext | None = None,
    *,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
    provider_options: Mapping[str, Any] | None = None,
    top_p: float | None = None,
) -> list[ModelAttempt]:
    """Expand a model spec into the ordered models to try for one call.

    Callables are called with ``ctx``, tiers are chosen by ``ctx.input_tokens``, strings are
    resolved (and cached), lists of :class:`ModelWithRetries` keep their order and budgets. A
    plain spec gets ``max_retries=None`` (the policy's default, :data:`DEFAULT_MAX_RETRIES`).
    The settings are bound with :func:`apply_settings`; the default output limit applies
    to attempts that come from ``None``/``"default"``.

    Args:
        spec: The model spec.
        ctx: The run context (a default one when omitted).
        temperature: See :func:`apply_settings`.
        max_output_tokens: See :func:`apply_settings`.
        provider_options: See :func:`apply_settings`.
        top_p: See :func:`apply_settings`.

    Returns:
        At least one attempt.

    Raises:
        ModelTierExceededError: If the input is larger than the largest tier.
        ModelResolutionError: If the spec cannot be turned into a chat model.
        OMConfigError: If a list of models is empty or malformed.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> small, big = FakeListChatModel(responses=["s"]), FakeListChatModel(responses=["b"])
        >>> spec = ModelByInputTokens(up_to={1_000: small, 50_000: big})
        >>> [a.model is big for a in plan_attempts(spec, RunContext(input_tokens=4_000))]
        [True]
    """
    ctx = ctx if ctx is not None else RunContext()
    attempts: list[ModelAttempt] = []
    for model, user_binding, retries, is_default in _expand(spec, ctx, None, 0):
        kwargs = _settings_kwargs(
            model,
            temperature=temperature,
            max_output_tokens=max_output_tokens,
            provider_options=provider_options,
            is_default_model=is_default,
            top_p=top_p,
        )
        bound: Runnable[LanguageModelInput, BaseMessage] | None = None
        if user_binding is not None:
            # The user's own .bind(...) kwargs win over OM's settings.
            bound = user_binding.model_copy(update={"kwargs": {**kwargs, **user_binding.kwargs}})
        elif kwargs:
            bound = model.bind(**kwargs)
        attempts.append(ModelAttempt(model, retries, model_id(model), bound))
    return attempts


_Expanded: TypeAlias = tuple[BaseChatModel, RunnableBinding[Any, Any] | None, int | None, bool]


def _expand(
    spec: ModelSpec, ctx: RunContext, retries: int | None, depth: int
) -> Generator[_Expanded, None, None]:
    if depth > _MAX_DEPTH:
        raise ModelResolutionError(
            f"Model spec nests more than {_MAX_DEPTH} levels (a callable returning itself?)."
        )
    if spec is None or (isinstance(spec, str) and spec.strip() == "default"):
        yield resolve_model_string(DEFAULT_MODEL), None, retries, True
    elif isinstance(spec, str):
        yield resolve_model_string(spec), None, retries, False
    elif isinstance(spec, BaseChatModel):
        yield spec, None, retries, False
    elif isinstance(spec, RunnableBinding) and isinstance(spec.bound, BaseChatModel):
        yield spec.bound, spec, retries, False
    elif isinstance(spec, ModelByInputTokens):
        yield from _expand(spec.resolve(ctx.input_tokens), ctx, retries, depth + 1)
    elif isinstance(spec, ModelWithRetries | Mapping):
        item = _with_retries(spec)
        yield from _expand(item.model, ctx, item.max_retries, depth + 1)
    elif isinstance(spec, Sequence):
        if not spec:
            raise OMConfigError(
                "The model list is empty; give at least one ModelWithRetries(model, max_retries).",
                option="model",
            )
        for entry in spec:
            yield from _expand(_with_retries(entry), ctx, retries, depth + 1)
    elif callable(spec):
        yield from _expand(spec(ctx), ctx, retries, depth + 1)
    else:
        raise ModelResolutionError(
            f"Unsupported model spec {spec!r}: use a model string, a chat model, a callable, "
            "ModelByInputTokens or a list of ModelWithRetries."
        )


def _with_retries(item: object) -> ModelWithRetries:
    if isinstance(item, ModelWithRetries):
        return item
    if isinstance(item, Mapping) and "model" in item:
        unknown = set(item) - {"model", "max_retries", "maxRetries"}
        if not unknown:
            retries = item.get("max_retries", item.get("maxRetries", DEFAULT_MAX_RETRIES))
            return ModelWithRetries(item["model"], retries)
    raise OMConfigError(
        f"Model list item {item!r} is not a ModelWithRetries; write "
        "ModelWithRetries(model, max_retries=3) (or {'model': ..., 'maxRetries': 3}).",
        option="model",
    )
