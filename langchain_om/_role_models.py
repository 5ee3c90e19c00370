"""The Observer's and the Reflector's model calls: which models, with which settings and retries.

:class:`RoleModels` turns a ``ModelCall`` effect into the role's attempt list (model spec,
sampling settings, provider options of ``observation``/``reflection``, and each attempt's
output mode and prompt variant, see :mod:`langchain_om._call_modes`) and calls it with the
engine's retry policy, blocking or async.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware.internal_call_transformer import internal_call_metadata
from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM

from langchain_om._call_modes import adapt_attempt
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
        )
        return [adapt_attempt(a, effect.role, cfg) for a in planned]

    def _kwargs(self, effect: ModelCall) -> dict[str, Any]:
        return {"policy": self.policy, "config": role_call_config(effect)}

    def call(self, effect: ModelCall) -> ModelCallResult:
        """Call the role's models for ``effect`` (blocking), retrying transient errors."""
        kwargs = self._kwargs(effect)
        if self.sleep is not None:
            kwargs["sleep"] = self.sleep
        return invoke_model(self.attempts(effect), list(effect.messages), **kwargs)

    async def acall(self, effect: ModelCall) -> ModelCallResult:
        """Async twin of :meth:`call`."""
        kwargs = self._kwargs(effect)
        if self.sleep is not None:
            kwargs["sleep"] = _async_sleep_of(self.sleep)
        return await ainvoke_model(self.attempts(effect), list(effect.messages), **kwargs)

    def model_id(self, role: str, input_tokens: int) -> str | None:
        """``provider/model`` a role would use for an input of ``input_tokens`` (else ``None``)."""
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
        return attempts[0].model_id if attempts else None


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
