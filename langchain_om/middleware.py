"""``create_agent`` middleware: observational memory for LangChain v1 agents.

Example:
    >>> from langchain.agents import create_agent
    >>> from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
    >>> from langchain_om.testing import ScriptedChatModel
    >>> memory = ObservationalMemory(model=ScriptedChatModel(script=["* 🔴 (09:00) hi"]))
    >>> agent = create_agent(ScriptedChatModel(script=["Hello!"]), [],
    ...     middleware=[ObservationalMemoryMiddleware(memory)],
    ...     checkpointer=memory.checkpointer, store=memory.store)
    >>> out = agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}})
    >>> out["messages"][-1].content
    'Hello!'
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain.agents.middleware.types import (
    ExtendedModelResponse,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import SystemMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command

from langchain_om._engine_io import EndTurnOptions
from langchain_om._plans.graph_state import (
    OM_ACTIVITY_KEY,
    OM_STATE_KEY,
    record_update,
    run_configurable,
    run_ids,
    split_messages,
    state_record,
    state_update,
    step_number,
)
from langchain_om._plans.types import TurnOutcome
from langchain_om._run_store import run_store
from langchain_om.engine import ObservationalMemory
from langchain_om.events import OMEvent
from langchain_om.models import model_id

__all__ = ["ObservationalMemoryMiddleware", "ObservationalMemoryState"]


@dataclass(frozen=True)
class _ActorStep:
    """The step to run inside a model call, before the model is called.

    Either the provider changed (buffered work activates first) or the first step was deferred
    until the agent's model was known (fractional thresholds).
    """

    args: dict[str, Any]
    """Arguments of :meth:`ObservationalMemory.step` for the current state."""
    actor: BaseChatModel | str
    """The model about to be called, or its ``provider/model``."""


class ObservationalMemoryState(AgentState[Any]):
    """Agent state with the OM record (JSON-native, private to the middleware)."""

    om_record: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]
    om_activity: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


class ObservationalMemoryMiddleware(AgentMiddleware[ObservationalMemoryState, Any]):
    """Observe, reflect and inject memory around every model call of a ``create_agent`` agent.

    ``before_model`` runs the engine step (observed messages go to the store's archive, then
    leave state through per-id ``RemoveMessage``); ``wrap_model_call`` renders the memory
    (preamble, observation log, hints) after the agent's own system prompt through
    ``request.override``. Both have sync and async variants over one implementation. With
    ``observation.buffer_on_idle`` an ``after_agent`` hook buffers the rest at turn end;
    without it the agent has no ``after_agent`` node (no extra checkpoint per turn).

    Args:
        memory: the engine.
        name: the middleware name (override to use two instances in one agent).
    """

    state_schema = ObservationalMemoryState

    def __new__(cls, memory: ObservationalMemory, *, name: str | None = None) -> Any:
        """With ``observation.buffer_on_idle``, an instance that also has ``after_agent``.

        ``create_agent`` adds a graph node (and a checkpoint every turn) for each middleware
        whose class defines ``after_agent``; the hook only has work to do with
        ``buffer_on_idle``, so only then is it there.
        """
        if cls is ObservationalMemoryMiddleware and memory.config.observation.buffer_on_idle:
            cls = _IdleBufferingMiddleware
        return super().__new__(cls)

    def __init__(self, memory: ObservationalMemory, *, name: str | None = None) -> None:
        super().__init__()
        self.memory = memory
        memory.counter.prefetch()  # the tokenizer loads while the agent is built, not in turn 1
        self._name = name
        self.tools = list(memory.tools)
        # The agent's model, learned from the first model call (counting rules, fractions).
        self._actor: Any = None
        self._deferred: set[str | None] = set()

    @property
    def name(self) -> str:
        """Middleware name used for its graph nodes."""
        return self._name or type(self).__name__

    def _step_args(
        self, state: dict[str, Any], runtime: Runtime[Any], record: Any
    ) -> dict[str, Any]:
        try:
            config = get_config()
        except RuntimeError:
            config = {}
        thread_id, resource_id = run_ids(config, runtime)
        split = split_messages(state.get("messages", []))
        writer = getattr(runtime, "stream_writer", None)

        def emit(event: OMEvent) -> None:
            if writer is not None:
                writer(event.to_part())

        return {
            "thread_id": thread_id,
            "resource_id": resource_id,
            "record": record,
            "window": split.window,
            "step_number": step_number(split.window),
            "emit": emit,
            "actor_model": self._actor,
            "configurable": run_configurable(config),
            "store": run_store(runtime),
        }

    def before_model(
        self, state: ObservationalMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Run the OM step before each model call."""
        store = run_store(runtime)
        record = self.memory.read_state(state, store=store)
        args = self._step_args(dict(state), runtime, record)
        if self._defer(args):
            return None
        update = self._update(state, self.memory.step(**args))
        self.memory.keep_state(update, state, store=store)
        return update

    def _defer(self, args: dict[str, Any]) -> bool:
        """Fractional thresholds need the agent's model: before its first call, step later."""
        if args["actor_model"] is not None or not self.memory.needs_actor_model:
            return False
        self._deferred.add(args["thread_id"])
        return True

    async def abefore_model(
        self, state: ObservationalMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`before_model`."""
        store = run_store(runtime)
        record = await self.memory.aread_state(state, store=store)
        args = self._step_args(dict(state), runtime, record)
        if self._defer(args):
            return None
        update = self._update(state, await self.memory.astep(**args))
        await self.memory.akeep_state(update, state, store=store)
        return update

    def _update(self, state: Mapping[str, Any], outcome: TurnOutcome) -> dict[str, Any]:
        """The state update for ``outcome`` (removals, changed record keys; order).

        New messages' timestamps are not written back: they are set on the message objects
        in state, and the model node that always follows (``before_model``, or this model
        call) writes ``messages`` with its reply, which stores them.
        """
        inline = self.memory.config.read_only
        return state_update(outcome, state["messages"], state=state, restamps=False, inline=inline)

    def _with_memory(self, request: ModelRequest, record: Any) -> ModelRequest:
        context = self.memory.render(record)
        if not context.blocks:
            return request
        blocks: list[Any] = []
        if request.system_message is not None:
            content = request.system_message.content
            blocks.extend(
                [{"type": "text", "text": content}] if isinstance(content, str) else content
            )
        blocks.extend({"type": "text", "text": b} for b in context.blocks)
        return request.override(system_message=SystemMessage(content=blocks))

    def _actor_change(
        self, request: ModelRequest, record: Any
    ) -> tuple[ModelRequest, dict[str, Any] | _ActorStep | None]:
        """Note the actor model; on a provider change, activate buffered work first.

        Returns the request to send and a state update (``None`` when nothing changed), or the
        step to run first when the provider changed.
        """
        actor = model_id(request.model)
        self._actor = request.model
        state = dict(request.state)
        if self._deferred:
            args = self._step_args(state, request.runtime, record)
            del args["actor_model"]  # passed as the step's actor
            if args["thread_id"] in self._deferred:
                self._deferred.discard(args["thread_id"])
                return request, _ActorStep(args, request.model)
        if not isinstance(record, dict) or record.get("last_actor_model") == actor:
            return request, None
        cfg = self.memory.config
        changed = record.get("last_actor_model") is not None
        if changed and (
            cfg.observation_activate_on_provider_change
            or cfg.reflection_activate_on_provider_change
        ):
            args = self._step_args(state, request.runtime, record)
            args["emit"] = None
            del args["actor_model"]  # passed as the step's actor
            return request, _ActorStep(args, actor)
        updated = {**record, "last_actor_model": actor}
        return request, record_update(updated, state, inline=cfg.read_only)

    def _respond(
        self,
        request: ModelRequest,
        update: dict[str, Any] | _ActorStep | None,
        outcome: TurnOutcome | None,
        record: Any,
    ) -> tuple[ModelRequest, Command[Any] | None]:
        if outcome is not None:
            new_update = self._update(request.state, outcome)
            window = [m for m in request.messages if m.id not in set(outcome.removed_ids)]
            new_request = request.override(messages=window)
            record = dict(outcome.record)
            return self._with_memory(new_request, record), Command(update=new_update)
        if update is None:
            return self._with_memory(request, record), None
        assert not isinstance(update, _ActorStep)
        return self._with_memory(request, record), Command(update=update)

    def _overflow_args(
        self,
        request: ModelRequest,
        command: Command[Any] | None,
        outcome: TurnOutcome | None,
        record: Any,
    ) -> dict[str, Any]:
        """The step that frees context after the model call overflowed (state as sent)."""
        state = dict(request.state)
        if command is not None and isinstance(command.update, dict):
            for key in (OM_STATE_KEY, OM_ACTIVITY_KEY):
                state[key] = command.update.get(key, state.get(key))
            if OM_STATE_KEY in command.update:
                record = state_record(state)  # just written: its groups are cached
        args = self._step_args(state, request.runtime, record)
        if outcome is not None:
            args["window"] = outcome.window
        args["actor_model"] = request.model
        args["context_overflow"] = True
        return args

    def _recovered(
        self,
        request: ModelRequest,
        outcome: TurnOutcome | None,
        recovery: TurnOutcome,
        record: Any,
    ) -> tuple[ModelRequest, Command[Any] | None]:
        """The request to retry and the state update covering both steps of this call."""
        if outcome is not None:
            recovery = replace(
                recovery,
                removed=[*outcome.removed, *recovery.removed],
                stamped=[*outcome.stamped, *recovery.stamped],
                inserted=[*outcome.inserted, *recovery.inserted],
            )
        return self._respond(request, None, recovery, record)

    @staticmethod
    def _kept(request: ModelRequest, command: Command[Any] | None) -> dict[str, Any] | None:
        """The arguments of ``keep_state`` for ``command``'s update (``None``: nothing)."""
        if command is None or not isinstance(command.update, dict):
            return None
        return {
            "update": command.update,
            "state": request.state,
            "store": run_store(request.runtime),
        }

    @staticmethod
    def _response(
        response: ModelResponse, command: Command[Any] | None
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        if command is None:
            return response
        return ExtendedModelResponse(model_response=response, command=command)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        """Give the model the memory context (activating first on a provider change).

        When the call raises ``ContextOverflowError``, memory observes synchronously (see
        ``context_overflow`` of :meth:`ObservationalMemory.step`, reported as
        ``data-om-context-overflow``) and the call is retried once with the smaller window; the
        error propagates when nothing could be freed or the retry overflows too.
        """
        record = self.memory.read_state(request.state, store=run_store(request.runtime))
        request, update = self._actor_change(request, record)
        outcome = None
        if isinstance(update, _ActorStep):
            outcome = self.memory.step(**update.args, actor_model=update.actor)
        sent, command = self._respond(request, update, outcome, record)
        if (kept := self._kept(request, command)) is not None:
            self.memory.keep_state(**kept)
        try:
            return self._response(handler(sent), command)
        except ContextOverflowError:
            overflow = self._overflow_args(request, command, outcome, record)
            recovery = self.memory.step(**overflow)
            if not recovery.removed:
                raise  # nothing could be freed: retrying would overflow again
        sent, command = self._recovered(request, outcome, recovery, record)
        if (kept := self._kept(request, command)) is not None:
            self.memory.keep_state(**kept)
        return self._response(handler(sent), command)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        record = await self.memory.aread_state(request.state, store=run_store(request.runtime))
        request, update = self._actor_change(request, record)
        outcome = None
        if isinstance(update, _ActorStep):
            outcome = await self.memory.astep(**update.args, actor_model=update.actor)
        sent, command = self._respond(request, update, outcome, record)
        if (kept := self._kept(request, command)) is not None:
            await self.memory.akeep_state(**kept)
        try:
            return self._response(await handler(sent), command)
        except ContextOverflowError:
            overflow = self._overflow_args(request, command, outcome, record)
            recovery = await self.memory.astep(**overflow)
            if not recovery.removed:
                raise  # nothing could be freed: retrying would overflow again
        sent, command = self._recovered(request, outcome, recovery, record)
        if (kept := self._kept(request, command)) is not None:
            await self.memory.akeep_state(**kept)
        return self._response(await handler(sent), command)


class _IdleBufferingMiddleware(ObservationalMemoryMiddleware):
    """The middleware with ``observation.buffer_on_idle``: buffers the rest at turn end."""

    def after_agent(
        self, state: ObservationalMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """At turn end, buffer what is left (``observation.buffer_on_idle``)."""
        record = self.memory.read_state(state, store=run_store(runtime))
        self.memory.end_turn(**self._turn_end(state, runtime, record))
        return None

    async def aafter_agent(
        self, state: ObservationalMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`."""
        record = await self.memory.aread_state(state, store=run_store(runtime))
        await self.memory.aend_turn(**self._turn_end(state, runtime, record))
        return None

    def _turn_end(
        self, state: ObservationalMemoryState, runtime: Runtime[Any], record: Any
    ) -> EndTurnOptions:
        """The :meth:`ObservationalMemory.end_turn` arguments of this run."""
        args = self._step_args(dict(state), runtime, record)
        return EndTurnOptions(
            thread_id=args["thread_id"],
            resource_id=args["resource_id"],
            record=args["record"],
            window=args["window"],
            configurable=args["configurable"],
            store=args["store"],
        )
