"""Provider plumbing: model strings, provider names, install hints, API keys, settings mapping.

:func:`resolve_model_string` builds (and caches) the chat model a ``"provider/model"`` string
names, with errors that say what to install or which key to set; :func:`apply_settings` binds
sampling settings in each provider's own keyword names; :func:`model_id` gives a model's
``"provider/model"`` identity. The public names are importable from :mod:`langchain_om.models`.

Models are built by LangChain's ``init_chat_model``; the tables here hold only what it does
not know (langchain 1.5): it reads ``"openai:gpt-4o"`` but not the ``"openai/gpt-4o"`` of
Mastra and the AI SDK, nor their provider names (``google``, ``vertex``, ``mistral``, ``grok``,
…); it infers Vertex for a bare ``gemini-*`` (with a deprecation warning) where memory means
Google's API; it names no API key variable, has no check that builds nothing (the config
check and the default model's choice need one), caches no client, and binds no sampling
setting in a provider's own keyword (``max_completion_tokens``, ``num_predict``, …) nor
``providerOptions`` namespaces. Install hints come from its provider registry.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, cast

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from langchain_om._core.output_budget import REASONING_TOKENS
from langchain_om.errors import MissingProviderError, ModelResolutionError

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MODEL",
    "ModelMemo",
    "apply_settings",
    "check_model_string",
    "clear_model_cache",
    "model_id",
    "resolve_model_string",
    "settings_kwargs",
]

DEFAULT_MODEL = "google/gemini-2.5-flash"
"""The model used by the Observer and the Reflector when none is configured."""

DEFAULT_MAX_OUTPUT_TOKENS = 100_000
"""Output-token limit applied when a role runs on the default model and sets none itself."""


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

# init_chat_model provider -> the extra of this package that installs it (other providers: the
# package of LangChain's provider registry).
_EXTRAS: dict[str, str] = {
    "openai": '"langchain-om[openai]"',
    "azure_openai": '"langchain-om[openai]"',
    "google_genai": '"langchain-om[google]"',
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

# API keys a provider also reads besides its main variable.
_API_KEY_ALTERNATIVES: dict[str, tuple[str, ...]] = {
    "google_genai": ("GEMINI_API_KEY",),
    "huggingface": ("HF_TOKEN",),
}
# Providers whose credentials come from a chain (ADC, AWS profiles): no key check up front.
_CREDENTIAL_CHAINS = frozenset({"google_vertexai", "google_anthropic_vertex", "bedrock"})

# Providers whose clients take ``max_retries``: a client built from a string gets 0, so the
# package's retry plan (which honours Retry-After and falls back to the next model) is the only
# retry layer. Instances the user builds keep their own setting.
_SDK_RETRY_PROVIDERS = frozenset(
    {"openai", "azure_openai", "anthropic", "google_genai", "google_vertexai", "mistralai"}
    | {"groq", "deepseek", "xai", "fireworks", "together"}
)

_CACHE_SIZE = 64
_cache: OrderedDict[tuple[Any, ...], BaseChatModel] = OrderedDict()
_cache_lock = threading.Lock()


def _split_model_string(spec: str) -> tuple[str | None, str]:
    """Split ``provider/model`` or ``provider:model`` at whichever separator comes first.

    Raises:
        ModelResolutionError: nothing follows the separator.
    """
    text = spec.strip()
    if text == "default":
        text = DEFAULT_MODEL
    cut = min((i for i in (text.find("/"), text.find(":")) if i > 0), default=-1)
    # A bare model name: gemini-* must not fall to init_chat_model's Vertex default.
    provider = ("google_genai" if text.startswith("gemini") else None) if cut < 0 else None
    if cut >= 0:
        raw = text[:cut].strip().lower().replace("-", "_")
        provider, text = _PROVIDER_ALIASES.get(raw, raw), text[cut + 1 :].strip()
    if not text:
        raise ModelResolutionError(
            f'Model string "{spec}" has no model name; write "provider/model", '
            'e.g. "openai/gpt-5-mini".'
        )
    return provider, text


def _install_hint(provider: str, error: BaseException | None = None) -> str:
    if provider in _EXTRAS:
        return f"pip install {_EXTRAS[provider]}"
    registry = _builtin_providers()
    if provider in registry:
        return f"pip install {registry[provider][0].split('.')[0].replace('_', '-')}"
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
    # Looked up at call time: it loads LangChain's provider registry (and tests patch it).
    from langchain.chat_models import init_chat_model  # noqa: PLC0415 - see above

    label = provider or "inferred"
    kwargs = dict(init_kwargs)
    if (provider or _infer_provider(name)) in _SDK_RETRY_PROVIDERS:
        kwargs.setdefault("max_retries", 0)
    try:
        model = init_chat_model(name, model_provider=provider, **kwargs)
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


def _builtin_providers() -> Mapping[str, tuple[str, str, Any]]:
    # LangChain's provider registry: provider -> (module, class name, factory).
    from langchain.chat_models import base  # noqa: PLC0415 - loaded only when checking a spec

    return cast("Mapping[str, tuple[str, str, Any]]", base._BUILTIN_PROVIDERS)


def _infer_provider(name: str) -> str | None:
    from langchain.chat_models import base  # noqa: PLC0415 - loaded only when checking a spec

    inferred = base._attempt_infer_model_provider(name)
    return str(inferred) if inferred else None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def check_model_string(spec: str) -> str | None:
    """Check a model string without building its client (no network, no SDK objects).

    Checks that the string names a model and a provider LangChain knows, and that the
    provider's package is installed. A missing API key is not an error here (keys can be set
    after the memory is built); it is returned as a warning text instead.

    Args:
        spec: The model string; ``"default"`` names :data:`DEFAULT_MODEL`.

    Returns:
        A warning about a missing API key, or ``None`` when nothing is missing.

    Raises:
        ModelResolutionError: The string has no model name, or its provider is unknown or
            cannot be inferred.
        MissingProviderError: The provider's package is not installed (the message says what to
            ``pip install``).

    Example:
        >>> check_model_string("nosuchprovider/x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        langchain_om.errors.ModelResolutionError: Unknown provider "nosuchprovider" ...
    """
    provider, name = _split_model_string(spec)
    provider = provider or _infer_provider(name)
    if provider is None:
        raise ModelResolutionError(
            f'Cannot tell the provider of model "{spec}"; write it as "provider/model", '
            'e.g. "openai/gpt-5-mini", or pass a chat model instance.'
        )
    registry = _builtin_providers()
    if provider not in registry:
        known = ", ".join(sorted(registry))
        raise ModelResolutionError(
            f'Unknown provider "{provider}" in model "{spec}". Use one of: {known} '
            '(e.g. "openai/gpt-5-mini"), or pass a chat model instance.'
        )
    module = registry[provider][0].split(".")[0]
    if not _installed(module) and not (provider == "ollama" and _installed("langchain_community")):
        hint = _install_hint(provider)
        raise MissingProviderError(
            f'Model "{spec}" needs the {provider} provider package, which is not installed. '
            f"Run: {hint}   (or pass a chat model instance as the model)."
        )
    missing = missing_api_key(provider)
    if missing is None:
        return None
    return (
        f'Model "{spec}" needs an API key and {missing} is not set; set it before the first '
        "observation (or pass a chat model instance built with api_key=...)."
    )


def missing_api_key(provider: str) -> str | None:
    """The API key variable ``provider`` reads when none of its variables is set, else None.

    Providers with credential chains (ADC, AWS profiles) and unknown ones never miss a key.
    """
    if provider in _CREDENTIAL_CHAINS or provider not in _API_KEY_VARS:
        return None
    names = (_API_KEY_VARS[provider], *_API_KEY_ALTERNATIVES.get(provider, ()))
    if any(os.environ.get(var) for var in names):
        return None
    return names[0]


def model_provider(spec: str) -> str | None:
    """The provider (``init_chat_model`` name) a model string names or implies, if known."""
    provider, name = _split_model_string(spec)
    return provider or _infer_provider(name)


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
    return _MODEL_IDS.get(model, _model_id)


_R = TypeVar("_R")


class ModelMemo(Generic[_R]):
    """A value read from a chat model, memoised per model object.

    An entry holds a weak reference to the model and its field values when the value was read;
    it answers while the same object holds equal field values (reassigning a field, changing a
    dict field such as ``profile`` in place, or another model at the same address reads it
    again). Every step reads the agent model's identity, and its tracing parameters cost far
    more than this check.
    """

    def __init__(self, limit: int = 256) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], tuple[Any, Any], _R]] = {}
        self._limit = limit

    def get(self, model: Any, read: Callable[[Any], _R]) -> _R:
        """``read(model)``, or the value read before from this model with these fields."""
        fields = (getattr(model, "__dict__", None), getattr(model, "__pydantic_extra__", None))
        hit = self._entries.get(id(model))
        if hit is not None and hit[0]() is model:
            try:
                if hit[1] == fields:
                    return hit[2]
            except Exception:  # a field value that cannot be compared: read it again
                pass
        value = read(model)
        if isinstance(fields[0], dict):
            try:
                ref = weakref.ref(model)
            except TypeError:
                return value
            if len(self._entries) >= self._limit:
                self._entries.clear()
            self._entries[id(model)] = (ref, (_copied(fields[0]), _copied(fields[1])), value)
        return value


def _copied(fields: Any) -> Any:
    """Field values as they are now: dict fields (``profile``, ``model_kwargs``) copied too."""
    if not isinstance(fields, dict):
        return fields
    return {k: dict(v) if isinstance(v, dict) else v for k, v in fields.items()}


_MODEL_IDS: ModelMemo[str] = ModelMemo()


def _model_id(model: BaseChatModel) -> str:
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


def settings_kwargs(
    model: BaseChatModel,
    *,
    temperature: float | None,
    max_output_tokens: int | None,
    provider_options: Mapping[str, Any] | None,
    is_default_model: bool,
    top_p: float | None = None,
    output_budget: int | None = None,
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
    if output_budget is not None:
        # Providers count a reasoning model's hidden reasoning in its output limit.
        allowed = output_budget + (REASONING_TOKENS if profile.get("reasoning_output") else 0)
        limit = allowed if limit is None else min(limit, allowed)
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
    output_budget: int | None = None,
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
        output_budget: The call's output budget (:mod:`langchain_om._core.output_budget`):
            the output limit becomes the smaller of it (plus room for hidden reasoning on a
            reasoning model) and ``max_output_tokens``.

    Returns:
        ``model`` itself when nothing is bound, else ``model.bind(...)``.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> bound = apply_settings(FakeListChatModel(responses=["x"]), temperature=0.3,
        ...                        is_default_model=True)
        >>> bound.kwargs
        {'temperature': 0.3, 'max_tokens': 100000}
    """
    kwargs = settings_kwargs(
        model,
        temperature=temperature,
        max_output_tokens=max_output_tokens,
        provider_options=provider_options,
        is_default_model=is_default_model,
        top_p=top_p,
        output_budget=output_budget,
    )
    return model.bind(**kwargs) if kwargs else model
