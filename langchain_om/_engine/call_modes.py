"""Output mode and prompt variant of one Observer/Reflector model call.

The cycles build a text-mode prompt and parse a text reply. :func:`adapt_attempt` changes one
attempt of a ``ModelCall`` (each attempt's model decides for itself, see
:mod:`langchain_om._core.output_modes`) without changing that contract:

- with the compact prompt, the Observer's system message is swapped for the compact one (the
  role's ``instruction`` still appended);
- in structured mode, the system message ends with the schema note, the model is called
  through ``with_structured_output(..., include_raw=True)`` with the role's sampling settings
  bound, and the answer is rendered to the tagged text
  (:func:`~langchain_om._core.structured.structured_to_text`) by the attempt's ``finish``,
  returned as an ``AIMessage`` carrying the raw reply's usage and metadata. The model is called
  without LangChain's parser so the reply streams (and is cut when it loops, see
  :mod:`langchain_om._core.loop_cut`); the cycles then parse and check it as any text reply.
  A reply that fails the schema keeps its valid observations
  (:func:`~langchain_om._core.structured.lenient_structured`; the drop is logged with a
  count); one that holds no JSON object comes back as its raw text, which the text checks reject.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import (
    Runnable,
    RunnableBinding,
    RunnableLambda,
    RunnableParallel,
    RunnableSequence,
)
from pydantic import ValidationError

from langchain_om._core.observer_prompts import COMPACT_OBSERVER_SYSTEM_PROMPT
from langchain_om._core.output_modes import (
    OutputMode,
    PromptVariant,
    choose_output,
    choose_prompt,
    is_loopback_url,
    parameter_billions,
)
from langchain_om._core.redact import redacted_logger
from langchain_om._core.structured import (
    STRUCTURED_OBSERVER_NOTE,
    STRUCTURED_REFLECTOR_NOTE,
    StructuredObserverOutput,
    StructuredReflectorOutput,
    lenient_structured,
    reply_data,
    structured_to_text,
)
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import OMConfigError
from langchain_om.retry import ModelAttempt

__all__ = [
    "SMALL_MODEL_FREQUENCY_PENALTY",
    "STRUCTURED_META_KEY",
    "adapt_attempt",
    "call_modes",
    "frequency_penalty",
    "rebind_structured",
    "served_locally",
    "small_model",
]

logger = redacted_logger("langchain_om")

Role = Literal["observer", "reflector"]

STRUCTURED_META_KEY = "langchain_om_output"
"""``response_metadata`` key of a rendered structured reply: ``"structured"``, or
``"structured-invalid"`` when the reply held no JSON object the schema accepts."""


def served_locally(model: BaseChatModel) -> bool:
    """Whether ``model`` talks to an OpenAI-compatible server on this machine (llama.cpp)."""
    for attr in ("openai_api_base", "base_url"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and is_loopback_url(value):
            return True
    return False


def _model_name(model: BaseChatModel) -> str:
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return ""


def small_model(model: BaseChatModel) -> bool:
    """Whether ``model`` is small (the rule of ``prompt="auto"``).

    Its name states at most 4B parameters, or it is served locally with no size in its name.
    """
    return (
        choose_prompt(
            "auto",
            local_server=served_locally(model),
            billions=parameter_billions(_model_name(model)),
        )
        == "compact"
    )


def call_modes(
    config: ObservationalMemoryConfig, role: Role, model: BaseChatModel
) -> tuple[OutputMode, PromptVariant]:
    """The output mode and prompt variant ``model`` gets for a call of ``role``."""
    local = served_locally(model)
    options = config.observation if role == "observer" else config.reflection
    output = choose_output(options.output, local_server=local)
    if role != "observer":
        return output, "default"
    billions = parameter_billions(_model_name(model))
    return output, choose_prompt(config.observation.prompt, local_server=local, billions=billions)


SMALL_MODEL_FREQUENCY_PENALTY = 1.0
"""``frequency_penalty`` that ``"auto"`` gives small models.

Measured on Qwen2.5-Coder-1.5B through llama.cpp at temperature 0: with no penalty (or 0.3)
the Observer repeats one line from its fourth until the budget runs out; with 1.0 (frequency
or presence) the same batch is observed message by message without a loop; a llama.cpp
``repeat_penalty`` of 1.3 stops the loop but makes the model invent facts."""

_FAKE_MODULES = ("langchain_om.testing", "langchain_core.language_models.fake_chat_models")


def _takes_penalty(model: BaseChatModel) -> bool:
    return "frequency_penalty" in type(model).model_fields or type(model).__module__.startswith(
        _FAKE_MODULES
    )


def frequency_penalty(
    config: ObservationalMemoryConfig, role: Role, model: BaseChatModel
) -> float | None:
    """The ``frequency_penalty`` a call of ``role`` sends to ``model`` (``None``: none).

    Raises:
        OMConfigError: a number is configured and ``model`` has no such setting.
    """
    section = "observation" if role == "observer" else "reflection"
    options = config.observation if role == "observer" else config.reflection
    setting: float | str | None = options.model_settings.frequency_penalty
    if setting == "auto":
        return (
            SMALL_MODEL_FREQUENCY_PENALTY if small_model(model) and _takes_penalty(model) else None
        )
    if setting is not None and not _takes_penalty(model):
        raise OMConfigError(
            f"{role} model {type(model).__name__} has no frequency_penalty setting; set "
            f"{section}.model_settings.frequency_penalty='auto' or None for it."
        )
    return None if isinstance(setting, str) else setting


def _with_penalty(
    attempt: ModelAttempt, role: Role, config: ObservationalMemoryConfig
) -> ModelAttempt:
    """``attempt`` with the role's ``frequency_penalty`` bound, unless the user set one.

    A penalty the model instance was built with, or bound by the user, wins.
    """
    value = frequency_penalty(config, role, attempt.model)
    if value is None or "frequency_penalty" in attempt.model.model_fields_set:
        return attempt
    bound = attempt.bound
    if bound is None:
        return attempt._replace(bound=attempt.model.bind(frequency_penalty=value))
    if isinstance(bound, RunnableBinding) and bound.bound is attempt.model:
        if "frequency_penalty" in bound.kwargs:
            return attempt
        kwargs = {**bound.kwargs, "frequency_penalty": value}
        return attempt._replace(bound=bound.model_copy(update={"kwargs": kwargs}))
    return attempt


def _system_text(
    config: ObservationalMemoryConfig,
    role: Role,
    current: str,
    output: OutputMode,
    variant: PromptVariant,
) -> str:
    text = current
    if variant == "compact":
        text = COMPACT_OBSERVER_SYSTEM_PROMPT
        instruction = config.observation.instruction
        if instruction and instruction.strip():
            text += "\n\n## Custom Instructions\n\n" + instruction.strip()
    if output == "structured":
        note = STRUCTURED_OBSERVER_NOTE if role == "observer" else STRUCTURED_REFLECTOR_NOTE
        text += "\n\n" + note
    return text


def _prompt_rewriter(
    config: ObservationalMemoryConfig, role: Role, output: OutputMode, variant: PromptVariant
) -> RunnableLambda[Any, Any]:
    def rewrite(messages: Any) -> Any:
        if not isinstance(messages, Sequence) or isinstance(messages, str):
            return messages
        out: list[BaseMessage] = list(messages)
        if out and isinstance(out[0], SystemMessage) and isinstance(out[0].content, str):
            out[0] = SystemMessage(_system_text(config, role, out[0].content, output, variant))
        return out

    return RunnableLambda(rewrite, name="langchain_om_prompt")


def _settings(attempt: ModelAttempt) -> dict[str, Any]:
    bound = attempt.bound
    if isinstance(bound, RunnableBinding) and bound.bound is attempt.model:
        return dict(bound.kwargs)
    return {}


def rebind_structured(
    chain: Runnable[Any, Any],
    *,
    settings: dict[str, Any] | None = None,
    model: BaseChatModel | None = None,
) -> Runnable[Any, Any] | None:
    """A ``with_structured_output`` chain with ``settings`` bound to its model call.

    ``model`` (when given) takes the place of the chain's model, keeping what the chain
    binds to it (the schema as tools or ``response_format``); a wrapper that forwards call
    options to the model it wraps uses this to keep the wrapped model's structured output.

    Returns:
        The new chain, or ``None`` when the chain is not the usual ``model.bind(...) | parser``
        (or ``{"raw": model.bind(...)} | parser``) shape.
    """
    if not settings and model is None:
        return chain
    if not isinstance(chain, RunnableSequence):
        return None

    def rebound(binding: RunnableBinding[Any, Any]) -> Runnable[Any, Any]:
        target: Runnable[Any, Any] = binding.bound if model is None else model
        return target.bind(**{**binding.kwargs, **(settings or {})})

    first = chain.first
    if isinstance(first, RunnableBinding):
        new_first: Runnable[Any, Any] = rebound(first)
    elif (
        isinstance(first, RunnableParallel)
        and list(first.steps__) == ["raw"]
        and isinstance(first.steps__["raw"], RunnableBinding)
    ):
        new_first = RunnableParallel(raw=rebound(first.steps__["raw"]))
    else:
        return None
    return RunnableSequence(new_first, *chain.middle, chain.last)


def _schema(role: Role) -> type[StructuredReflectorOutput]:
    return StructuredObserverOutput if role == "observer" else StructuredReflectorOutput


def _tool_args(raw: AIMessage) -> dict[str, Any] | None:
    return dict(raw.tool_calls[0]["args"]) if raw.tool_calls else None


def _rendered(out: Any, role: Role, model_id: str) -> AIMessage:
    if not isinstance(out, dict) or not isinstance(out.get("raw"), AIMessage):
        raise TypeError(
            f"{model_id}'s with_structured_output(include_raw=True) returned "
            f"{type(out).__name__}, not a dict with the raw AIMessage"
        )
    raw: AIMessage = out["raw"]
    schema = _schema(role)
    parsed = out.get("parsed")
    state = "structured"
    answer: StructuredReflectorOutput | None = None
    if isinstance(parsed, schema):
        answer = parsed
    else:
        data = parsed if isinstance(parsed, dict) else reply_data(_tool_args(raw), str(raw.text))
        if data is not None:
            try:
                answer, dropped = lenient_structured(data, schema)
            except ValidationError:
                answer = None
            else:
                if dropped:
                    logger.warning(
                        "%s (%s): %d structured observations failed the schema and were dropped",
                        role,
                        model_id,
                        dropped,
                    )
    if answer is None:
        state = "structured-invalid"
        logger.warning("%s (%s): the structured reply did not fit the schema", role, model_id)
        content = str(raw.text)
    else:
        content = structured_to_text(answer)
    return AIMessage(
        content=content,
        id=raw.id,
        usage_metadata=raw.usage_metadata,
        response_metadata={**raw.response_metadata, STRUCTURED_META_KEY: state},
    )


def _raw_step(chain: Runnable[Any, Any]) -> Runnable[Any, Any] | None:
    """The model call of a ``with_structured_output`` chain (its first step), else ``None``."""
    if not isinstance(chain, RunnableSequence):
        return None
    first = chain.first
    if isinstance(first, RunnableBinding):
        return first
    if isinstance(first, RunnableParallel) and list(first.steps__) == ["raw"]:
        return first.steps__["raw"]
    return None


def _structured(
    attempt: ModelAttempt, role: Role, local: bool
) -> tuple[Runnable[Any, Any], Callable[[AIMessage], AIMessage]]:
    """The structured call of ``attempt``: the model bound with the schema, and the renderer.

    The model is called without the chain's parser, so the reply can be streamed (and cut when
    it loops); the renderer reads the raw reply leniently (:func:`_rendered`).
    """
    kwargs: dict[str, Any] = {"include_raw": True}
    if local:
        kwargs["method"] = "json_schema"  # llama.cpp turns the schema into a decoding grammar
    try:
        chain = attempt.model.with_structured_output(_schema(role), **kwargs)
    except NotImplementedError as exc:
        raise OMConfigError(
            f"{role} model {attempt.model_id} has no with_structured_output; set "
            f"{'observation' if role == 'observer' else 'reflection'}.output='text'."
        ) from exc
    bound = rebind_structured(chain, settings=_settings(attempt))
    raw = _raw_step(bound) if bound is not None else None
    if raw is None:
        raise OMConfigError(
            f"{role} model {attempt.model_id}: its structured-output chain does not take the "
            f"role's model settings ({', '.join(sorted(_settings(attempt)))}); set "
            f"{'observation' if role == 'observer' else 'reflection'}.output='text'."
        )
    model_id = attempt.model_id

    def finish(reply: AIMessage) -> AIMessage:
        return _rendered({"raw": reply, "parsed": None}, role, model_id)

    return raw, finish


def adapt_attempt(
    attempt: ModelAttempt, role: Role, config: ObservationalMemoryConfig
) -> ModelAttempt:
    """``attempt`` asking in the output mode and prompt variant its model gets.

    The role's ``frequency_penalty`` is bound first (see :func:`frequency_penalty`).
    """
    attempt = _with_penalty(attempt, role, config)
    output, variant = call_modes(config, role, attempt.model)
    if output == "text" and variant == "default":
        return attempt
    rewrite = _prompt_rewriter(config, role, output, variant)
    if output == "text":
        return attempt._replace(bound=rewrite | attempt.runnable)
    raw, finish = _structured(attempt, role, served_locally(attempt.model))
    return attempt._replace(bound=rewrite | raw, finish=finish)
