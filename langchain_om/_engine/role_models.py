"""The Observer's and the Reflector's model calls: which models, with which settings and retries.

:class:`RoleModels` turns a ``ModelCall`` effect into the role's attempt list (model spec,
sampling settings, provider options of ``observation``/``reflection``, and each attempt's
output mode and prompt variant, see :mod:`langchain_om._engine.call_modes`) and calls it with the
engine's retry policy, blocking or async. Every call is streamed and stopped as soon as the
reply loops or reaches the call's output budget (:mod:`langchain_om._core.loop_cut`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain.agents.middleware.internal_call_transformer import internal_call_metadata
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.constants import TAG_NOSTREAM

from langchain_om._core.loop_cut import StreamCut
from langchain_om._core.observer_input import AttachmentPolicy
from langchain_om._core.schemas import StructuredRequest, schema_title
from langchain_om._engine.call_modes import adapt_attempt, small_model
from langchain_om._plans.effects import ModelCall
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.models import RunContext, plan_attempts
from langchain_om.retry import (
    ModelAttempt,
    ModelCallResult,
    RetryPolicy,
    ainvoke_model,
    invoke_model,
)

SMALL_MODEL_PART_TOKENS = 1_500
"""Batch tokens one Observer call of a small model reads with ``part_tokens="auto"``."""


class RoleModels:
    """Calls the model of a role for the engine's ``ModelCall`` effects.

    Args:
        config: the memory's options (model specs and per-role settings).
        policy: backoff for transient model errors.
        sleep: the blocking sleep between retries (tests pass a no-op); async calls run it too.
    """

    def __init__(
        self,
        config: ObservationalMemoryConfig,
        policy: RetryPolicy,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.config = config
        self.policy = policy
        self.sleep = sleep

    def attempts(self, effect: ModelCall) -> list[ModelAttempt]:
        """The models to try for ``effect``, in order, with the role's settings bound."""
        cfg = self.config
        observer = effect.role == "observer"
        spec = cfg.observer_model_spec if observer else cfg.reflector_model_spec
        role = cfg.observation if observer else cfg.reflection
        context = RunContext(
            thread_id=effect.thread_id,
            resource_id=effect.resource_id,
            role=effect.role,
            input_tokens=effect.input_tokens,
        )
        planned = plan_attempts(
            spec,
            context,
            temperature=role.model_settings.temperature
            if effect.temperature is None
            else effect.temperature,
            max_output_tokens=role.model_settings.max_output_tokens,
            provider_options=role.provider_options,
            top_p=role.model_settings.top_p,
            output_budget=effect.output_budget,
        )
        return [adapt_attempt(a, effect.role, cfg) for a in planned]

    def _kwargs(self, config: RunnableConfig, *, asynchronous: bool) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"policy": self.policy, "config": config}
        if self.sleep is not None:
            kwargs["sleep"] = _async_sleep_of(self.sleep) if asynchronous else self.sleep
        return kwargs

    def _call_kwargs(self, effect: ModelCall, *, asynchronous: bool) -> dict[str, Any]:
        def watch() -> StreamCut:
            return StreamCut(budget=effect.output_budget, source=effect.source)

        kwargs = self._kwargs(role_call_config(effect), asynchronous=asynchronous)
        return {**kwargs, "watch": watch}

    def call(self, effect: ModelCall) -> ModelCallResult:
        """Call the role's models for ``effect`` (blocking), retrying transient errors."""
        kwargs = self._call_kwargs(effect, asynchronous=False)
        return invoke_model(self.attempts(effect), list(effect.messages), **kwargs)

    async def acall(self, effect: ModelCall) -> ModelCallResult:
        """Async twin of :meth:`call`."""
        kwargs = self._call_kwargs(effect, asynchronous=True)
        return await ainvoke_model(self.attempts(effect), list(effect.messages), **kwargs)

    def _structured_attempts(
        self, request: StructuredRequest
    ) -> tuple[list[ModelAttempt], RunnableConfig]:
        """The role's models asked through ``with_structured_output`` (raw reply kept)."""
        probe = ModelCall(
            role=request.role,
            messages=request.messages,
            input_tokens=request.input_tokens,
            thread_id=request.thread_id,
            resource_id=request.resource_id,
            cycle_id=request.cycle_id,
            trigger="extract",
        )
        attempts = []
        for attempt in self.attempts(probe):
            chain = attempt.model.with_structured_output(request.schema, include_raw=True)
            bound = chain | RunnableLambda(_carry_parsed, name="langchain_om_extract")
            attempts.append(attempt._replace(bound=bound))
        config = role_call_config(probe)
        config["run_name"] = f"langchain_om:extract:{request.slug}"
        return attempts, config

    def structured(self, request: StructuredRequest) -> Any:
        """A schema extractor's structured value (blocking), retrying transient errors.

        Raises:
            ValueError: the reply did not parse into the schema.
        """
        attempts, config = self._structured_attempts(request)
        kwargs = self._kwargs(config, asynchronous=False)
        return _parsed(invoke_model(attempts, list(request.messages), **kwargs), request)

    async def astructured(self, request: StructuredRequest) -> Any:
        """Async twin of :meth:`structured`."""
        attempts, config = self._structured_attempts(request)
        kwargs = self._kwargs(config, asynchronous=True)
        result = await ainvoke_model(attempts, list(request.messages), **kwargs)
        return _parsed(result, request)

    def _first_attempt(self, role: str, input_tokens: int) -> ModelAttempt | None:
        """The attempt a ``role`` call over ``input_tokens`` goes to first, or ``None``."""
        if role not in ("observer", "reflector"):
            return None
        try:
            probe = ModelCall(
                role=role,  # type: ignore[arg-type]
                messages=[],
                input_tokens=input_tokens,
                thread_id="",
                resource_id=None,
            )
            attempts = self.attempts(probe)
        except Exception:
            return None
        return attempts[0] if attempts else None

    def _observer_model(self, input_tokens: int) -> Any:
        """The model an Observer call over ``input_tokens`` goes to first, or ``None``."""
        attempt = self._first_attempt("observer", input_tokens)
        return attempt.model if attempt is not None else None

    def _small_observer(self, input_tokens: int) -> bool:
        model = self._observer_model(input_tokens)
        return model is not None and small_model(model)

    def attachments(self, input_tokens: int) -> AttachmentPolicy:
        """``observation.observe_attachments`` for an Observer call over ``input_tokens``.

        ``"auto"`` forwards images and files when the model's LangChain profile says it reads
        images (``image_inputs``) and drops them (keeping placeholders) when it says it does
        not. With no profile, a small model (the rule of ``prompt="auto"``: a name stating at
        most 4B parameters, or a local server) is taken as text-only, any other is forwarded.
        """
        setting = self.config.observation.observe_attachments
        if setting != "auto":
            return setting
        model = self._observer_model(input_tokens)
        if model is None:
            return True
        profile = getattr(model, "profile", None)
        reads = profile.get("image_inputs") if isinstance(profile, Mapping) else None
        if isinstance(reads, bool):
            return reads
        return not small_model(model)

    def hides_previous(self, input_tokens: int) -> bool:
        """Whether an Observer call over ``input_tokens`` is shown no previous observations.

        A small model (the rule of ``prompt="auto"``) copies the previous observations it is
        shown back into its reply instead of observing the new messages; it is shown none
        unless ``observation.previous_observer_tokens`` was set explicitly.
        """
        if "previous_observer_tokens" in self.config.observation.model_fields_set:
            return False
        return self._small_observer(input_tokens)

    def part_tokens(self, input_tokens: int) -> int | None:
        """The part size of an Observer call over ``input_tokens`` (``None``: one call).

        ``observation.part_tokens``: a number is used as it is; ``"auto"`` gives
        :data:`SMALL_MODEL_PART_TOKENS` to a small model (the rule of ``prompt="auto"``: a
        name stating at most 4B parameters, or a local server) and no parts to others.
        """
        setting = self.config.observation.part_tokens
        if setting is False:
            return None
        if setting != "auto":
            return int(setting)
        return SMALL_MODEL_PART_TOKENS if self._small_observer(input_tokens) else None

    def model_id(self, role: str, input_tokens: int) -> str | None:
        """``provider/model`` a role would use for an input of ``input_tokens`` (else ``None``)."""
        attempt = self._first_attempt(role, input_tokens)
        return attempt.model_id if attempt is not None else None


def role_call_config(effect: ModelCall) -> RunnableConfig:
    """The ``RunnableConfig`` of an Observer/Reflector call: run name, tags and metadata.

    Calls are named ``langchain_om:observer`` / ``langchain_om:reflector`` and carry
    ``lc_source`` plus the thread, resource, cycle id and trigger, so a tracer shows them
    nested under the agent run that caused them, like LangChain's own middleware calls. They
    are tagged ``nostream`` (LangGraph leaves them out of ``stream_mode="messages"``) and
    marked as internal middleware calls. No message text is put in the metadata.
    """
    name = f"langchain_om:{effect.role}"
    metadata: dict[str, Any] = {
        "lc_source": name,
        "langchain_om_role": effect.role,
        "thread_id": effect.thread_id,
        "resource_id": effect.resource_id,
        "langchain_om_cycle_id": effect.cycle_id,
        "langchain_om_trigger": effect.trigger,
        **internal_call_metadata(),
    }
    return {
        "run_name": name,
        "tags": ["langchain_om", name, TAG_NOSTREAM],
        "metadata": {k: v for k, v in metadata.items() if v is not None},
    }


def _async_sleep_of(sleep: Callable[[float], None]) -> Callable[[float], Any]:
    async def asleep(seconds: float) -> None:
        sleep(seconds)

    return asleep


_PARSED_KEY = "langchain_om_structured"


def _carry_parsed(out: Any) -> AIMessage:
    """The raw reply of ``with_structured_output(include_raw=True)``, carrying the parsed value."""
    if not isinstance(out, dict) or "raw" not in out:
        return AIMessage("", additional_kwargs={_PARSED_KEY: {"parsed": out, "error": None}})
    raw = out["raw"] if isinstance(out["raw"], AIMessage) else AIMessage(str(out["raw"]))
    error = out.get("parsing_error")
    carried = {"parsed": out.get("parsed"), "error": str(error) if error is not None else None}
    return raw.model_copy(
        update={"additional_kwargs": {**raw.additional_kwargs, _PARSED_KEY: carried}}
    )


def _parsed(result: ModelCallResult, request: StructuredRequest) -> Any:
    carried = result.message.additional_kwargs.get(_PARSED_KEY) or {}
    if carried.get("error") or carried.get("parsed") is None:
        reason = carried.get("error") or "no structured value in the reply"
        raise ValueError(
            f"the {schema_title(request.schema)} reply did not fit the schema: {reason}"
        )
    return carried["parsed"]
