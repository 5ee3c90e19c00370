"""Model specs for the Observer and the Reflector, and resilient model calls.

A *model spec* says which chat model a role uses. It is one of:

* a string, ``"provider/model"`` (Mastra style, ``"openai/gpt-5-mini"``) or
  ``"provider:model"`` (LangChain style, ``"google_genai:gemini-2.5-flash"``), built with
  LangChain's ``init_chat_model``; ``"default"`` (or ``None``) names :data:`DEFAULT_MODEL`;
* a ``BaseChatModel`` instance (or one bound with ``.bind(...)``);
* a callable that receives a :class:`RunContext` and returns a spec (dynamic model);
* a :class:`ModelByInputTokens`, which picks a spec by the size of the role's input;
* a list of :class:`ModelWithRetries`, tried in order, each with its own retry budget.

:func:`plan_attempts` turns a spec into the ordered
:class:`~langchain_om.retry.ModelAttempt` list for one call, and
:func:`~langchain_om.retry.invoke_model` / :func:`~langchain_om.retry.ainvoke_model` run it with
retries and fallbacks. Building models from strings, provider names and the mapping of settings
to each provider's keyword names live in ``langchain_om._engine.providers``; the public functions
are importable from here.

Example:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from langchain_om.retry import invoke_model
    >>> model = FakeListChatModel(responses=["🔴 User prefers tea"])
    >>> attempts = plan_attempts([ModelWithRetries(model, max_retries=1)])
    >>> result = invoke_model(attempts, "observe this", sleep=lambda _: None)
    >>> result.message.text, result.attempts
    ('🔴 User prefers tea', 1)
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, Union

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableBinding

from langchain_om._engine.providers import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MODEL,
    apply_settings,
    clear_model_cache,
    model_id,
    resolve_model_string,
    settings_kwargs,
)
from langchain_om.errors import (
    ModelResolutionError,
    ModelTierExceededError,
    OMConfigError,
)
from langchain_om.retry import DEFAULT_MAX_RETRIES, ModelAttempt

__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MODEL",
    "ModelByInputTokens",
    "ModelSpec",
    "ModelWithRetries",
    "Role",
    "RunContext",
    "apply_settings",
    "clear_model_cache",
    "model_id",
    "plan_attempts",
    "resolve_model_string",
]

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
    least the input size wins. An Observer input above the largest tier is split across
    calls that each fit it (a single huge message is cut in the middle for the Observer; the
    archive keeps it whole); elsewhere such an input raises
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


# --------------------------------------------------------------------------- planning


_MAX_DEPTH = 8


def plan_attempts(
    spec: ModelSpec,
    ctx: RunContext | None = None,
    *,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
    provider_options: Mapping[str, Any] | None = None,
    top_p: float | None = None,
    output_budget: int | None = None,
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
        output_budget: See :func:`apply_settings`.

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
        kwargs = settings_kwargs(
            model,
            temperature=temperature,
            max_output_tokens=max_output_tokens,
            provider_options=provider_options,
            is_default_model=is_default,
            top_p=top_p,
            output_budget=output_budget,
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
