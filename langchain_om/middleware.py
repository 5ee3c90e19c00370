"""``create_agent`` middleware: observational memory for LangChain v1 agents.

Example:
    >>> from langchain.agents import create_agent
    >>> from langchain_om import ObservationalMemoryMiddleware
    >>> from langchain_om.testing import ScriptedChatModel
    >>> memory = ObservationalMemoryMiddleware(
    ...     model=ScriptedChatModel(script=["* 🔴 (09:00) hi"]), message_tokens=20_000)
    >>> agent = create_agent(ScriptedChatModel(script=["Hello!"]), [],
    ...     middleware=[memory], checkpointer=memory.checkpointer)
    >>> out = agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}})
    >>> out["messages"][-1].content
    'Hello!'
    >>> memory.memory.status(thread_id="t1").source
    'checkpoint'
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal, NotRequired, cast

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain.agents.middleware.types import (
    ExtendedModelResponse,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AnyMessage, RemoveMessage, SystemMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_config
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime
from langgraph.types import Command

from langchain_om._config.shortcuts import BufferTokens, Threshold
from langchain_om._core.render import MemoryContext, text_parts
from langchain_om._engine.io import EndTurnOptions
from langchain_om._plans.graph_state import (
    memory_enabled,
    run_configurable,
    run_ids,
    split_messages,
    state_update,
    step_number,
    stream_emitter,
)
from langchain_om._plans.types import TurnOutcome
from langchain_om._storage.run_store import require_checkpointer, run_store
from langchain_om.config import RetrievalConfig
from langchain_om.engine import ObservationalMemory
from langchain_om.errors import OMConfigError
from langchain_om.models import ModelSpec

__all__ = ["ObservationalMemoryMiddleware", "ObservationalMemoryState"]


@dataclass(frozen=True)
class _Prepared:
    """A model call's step: the outcome and the state update the call returns with its reply."""

    state: Mapping[str, Any]
    """The graph state the step ran on (a retry of the same call passes the same object)."""
    outcome: TurnOutcome
    update: dict[str, Any]
    request: weakref.ref[ModelRequest] | None = None
    """The request the step ran for: the step is forgotten when it is gone."""


_PREPARED_MAX = 16
"""Most model calls whose step is remembered at once (a bound; see ``_done``)."""


@dataclass(frozen=True)
class _Built:
    """A system message built for a memory context and the agent's own system message."""

    context: MemoryContext
    system: SystemMessage | None
    own: Any
    """``system``'s content when the message was built."""
    own_blocks: list[Any] | None
    """Copies of ``own``'s blocks then (``None``: it was text)."""
    message: SystemMessage
    sent: list[Any]
    """``message``'s content list."""
    blocks: list[Any]
    """Copies of its blocks when built."""

    def intact(self) -> bool:
        """Whether the message and the agent's system message are as they were built.

        Blocks are compared by value (their texts are the same objects, so this is cheap): a
        later middleware may add a key to a block in place.
        """
        message = self.message
        own = self.system.content if self.system is not None else None
        return (
            message.content is self.sent
            and self.sent == self.blocks
            and own is self.own
            and (self.own_blocks is None or own == self.own_blocks)
            and message.id is None
            and not message.name
            and not message.additional_kwargs
        )


def _copies(blocks: Sequence[Any]) -> list[Any]:
    return [dict(b) if isinstance(b, dict) else b for b in blocks]


class ObservationalMemoryState(AgentState[Any]):
    """Agent state with the OM record (JSON-native, private to the middleware)."""

    om_record: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]
    om_activity: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


class ObservationalMemoryMiddleware(AgentMiddleware[ObservationalMemoryState, Any]):
    """Observe, reflect and inject memory around every model call of a ``create_agent`` agent.

    Everything happens in ``wrap_model_call`` (sync and async twins over one implementation),
    so the agent gains no graph node and no checkpoint per model call: the engine step runs
    first with the model about to be called (observed messages go to the store's archive), the
    model gets the smaller window with the memory (preamble, observation log, hints) after the
    agent's own system prompt through ``request.override``, and the state update (per-id
    ``RemoveMessage`` for what left the window, the changed record keys) is returned with the
    model's reply in one write. A wrapper that calls the model again for the same state
    (retries, fallbacks) reuses that step rather than observing twice. With
    ``observation.buffer_on_idle`` an ``after_agent`` hook buffers the rest at turn end;
    without it the agent has no ``after_agent`` node either.

    Build it on a memory (``ObservationalMemoryMiddleware(memory)``) or alone from the
    memory's options: with no ``memory``, the keyword arguments are those of
    :class:`~langchain_om.ObservationalMemory` (``model``, ``message_tokens``,
    ``observation_tokens``, ``buffer_tokens``, ``scope``, ``retrieval``, any other option,
    ``store=``, ...), and the memory it builds is :attr:`memory`. Either way
    ``create_agent(model, tools, middleware=[mw], checkpointer=mw.checkpointer)`` is the whole
    setup.

    Args:
        memory: the engine; ``None`` builds one from the keyword arguments.
        model: the Observer's and Reflector's model (as for ``ObservationalMemory``).
        message_tokens: unobserved-message tokens that trigger observation.
        observation_tokens: observation tokens that trigger reflection.
        buffer_tokens: background buffering interval; ``False`` turns it off.
        scope: ``"thread"`` or ``"resource"``.
        retrieval: ``True`` or a dict: the ``recall`` tool (added to the agent's tools).
        name: the middleware name (override to use two instances in one agent).
        **options: the other options and engine arguments of ``ObservationalMemory``.

    Raises:
        OMConfigError: ``memory`` and options were both given (options belong to the memory).
    """

    state_schema = ObservationalMemoryState
    _built: ObservationalMemory
    """The memory ``__new__`` built or was given, taken by ``__init__``."""

    def __new__(
        cls,
        memory: ObservationalMemory | None = None,
        *,
        model: ModelSpec = None,
        message_tokens: Threshold | None = None,
        observation_tokens: Threshold | None = None,
        buffer_tokens: BufferTokens | None = None,
        scope: Literal["thread", "resource"] | None = None,
        retrieval: bool | RetrievalConfig | dict[str, Any] | None = None,
        name: str | None = None,
        **options: Any,
    ) -> Any:
        """Build (or take) the memory; with ``buffer_on_idle``, also have ``after_agent``.

        ``create_agent`` adds a graph node (and a checkpoint every turn) for each middleware
        whose class defines ``after_agent``; the hook only has work to do with
        ``buffer_on_idle``, so only then is it there. The memory is built here, once, and
        ``__init__`` takes it.
        """
        typed: dict[str, Any] = {
            "model": model,
            "message_tokens": message_tokens,
            "observation_tokens": observation_tokens,
            "buffer_tokens": buffer_tokens,
            "scope": scope,
            "retrieval": retrieval,
        }
        built = _memory_of(memory, {**options, **typed})
        if cls is ObservationalMemoryMiddleware and built.config.observation.buffer_on_idle:
            cls = _IdleBufferingMiddleware
        instance = super().__new__(cls)
        instance._built = built
        return instance

    def __init__(
        self,
        memory: ObservationalMemory | None = None,
        *,
        model: ModelSpec = None,
        message_tokens: Threshold | None = None,
        observation_tokens: Threshold | None = None,
        buffer_tokens: BufferTokens | None = None,
        scope: Literal["thread", "resource"] | None = None,
        retrieval: bool | RetrievalConfig | dict[str, Any] | None = None,
        name: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        memory = self._built  # what __new__ built from these arguments (or was given)
        del self._built
        self.memory: ObservationalMemory = memory
        """The engine: ``status``, ``get_context``, ``checkpointer``, ``store``, ..."""
        memory.counter.prefetch()  # the tokenizer loads while the agent is built, not in turn 1
        self._name = name
        self.tools = list(memory.tools)
        # The agent's model, learned from the model calls (for the turn-end buffering).
        self._actor: Any = None
        self._prepared: dict[int, _Prepared] = {}
        self._prepared_lock = threading.Lock()  # runs of several threads share the middleware
        self._messages: dict[tuple[int, int], _Built] = {}

    @property
    def name(self) -> str:
        """Middleware name used for its graph nodes."""
        return self._name or type(self).__name__

    @property
    def checkpointer(self) -> BaseCheckpointSaver[Any]:
        """The memory's checkpointer, for ``create_agent(..., checkpointer=...)``.

        Any checkpointer keeps the agent's memory (it lives in the agent's state); with this
        one, ``memory.status()``, ``get_context()`` and ``langchain-om inspect`` read the
        agent's threads too. The agent needs no ``store=``: without one, memory uses its own.
        """
        return self.memory.checkpointer

    def _step_args(
        self,
        state: Mapping[str, Any],
        runtime: Runtime[Any],
        record: Any,
        config: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        if config is None:
            config = _run_config()
        thread_id, resource_id = run_ids(config, runtime)
        split = split_messages(state.get("messages", []))
        return {
            "thread_id": thread_id,
            "resource_id": resource_id,
            "record": record,
            "window": split.window,
            "step_number": step_number(split.window),
            "emit": stream_emitter(getattr(runtime, "stream_writer", None)),
            "actor_model": self._actor,
            "configurable": run_configurable(config),
            "store": run_store(runtime),
        }

    def _call_args(
        self, request: ModelRequest, record: Any, config: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The step before this model call (its model is the step's actor)."""
        self._actor = request.model
        return self._step_args(request.state, request.runtime, record, config)

    def _done(self, request: ModelRequest, outcome: TurnOutcome) -> _Prepared:
        """The call's step as run on ``request.state``, remembered for a retry of the call.

        It is remembered while ``request`` lives: a wrapper that calls the model again
        (retries, fallbacks) holds the request it was given, and once the model node is done
        with it the step, and the graph state it holds, go (freed with the request, not kept
        for later calls to free).
        """
        inline = self.memory.config.read_only
        state = request.state
        update = state_update(
            outcome, state["messages"], state=state, restamps=False, inline=inline
        )
        key, forget = id(state), self._forget
        prepared = _Prepared(
            state, outcome, update, weakref.ref(request, lambda ref: forget(key, ref))
        )
        with self._prepared_lock:
            if len(self._prepared) >= _PREPARED_MAX:
                self._prepared.pop(next(iter(self._prepared)))
            self._prepared[key] = prepared
        return prepared

    def _forget(self, key: int, request: weakref.ref[ModelRequest]) -> None:
        """Drop the step remembered under ``key`` if it is still the one run for ``request``.

        Called when the request is freed, at any point of any thread: no lock is taken (one
        held by this very thread would never be released); the dict operations are atomic.
        """
        prepared = self._prepared.get(key)
        if prepared is not None and prepared.request is request:
            self._prepared.pop(key, None)

    def _reused(self, request: ModelRequest) -> _Prepared | None:
        """The step an earlier attempt of this very call ran (same state object), if any."""
        with self._prepared_lock:
            prepared = self._prepared.get(id(request.state))
        return prepared if prepared is not None and prepared.state is request.state else None

    def _sent(self, request: ModelRequest, prepared: _Prepared) -> ModelRequest:
        """``request`` with the step's window and the memory context."""
        outcome = prepared.outcome
        if outcome.removed or outcome.inserted:
            gone = set(outcome.removed_ids)
            kept = [m for m in request.messages if m.id is None or m.id not in gone]
            request = request.override(messages=_with_inserted(kept, outcome))
        return self._with_memory(request, outcome.record)

    def _with_memory(self, request: ModelRequest, record: Any) -> ModelRequest:
        context = self.memory.render(record)
        if not context.blocks:
            return request
        return request.override(system_message=self._system_message(context, request))

    def _system_message(self, context: MemoryContext, request: ModelRequest) -> SystemMessage:
        """The agent's system message with ``context``'s parts after it, memoised.

        A context is rendered once per content, and the agent's own system message is the same
        object at every call, so the message is built once for the pair (runs on several
        threads may send the same message object). A hit is handed out again only while it and
        the agent's system message are as built (another middleware may change a request's
        system message in place): the same blocks with the same values, nothing else set on it.
        """
        system = request.system_message
        key = (id(context), id(system))
        with self._prepared_lock:
            hit = self._messages.get(key)
        if hit is not None and hit.context is context and hit.system is system and hit.intact():
            return hit.message
        own: Any = system.content if system is not None else None
        blocks: list[Any] = [{"type": "text", "text": own}] if isinstance(own, str) else []
        if isinstance(own, list):
            blocks.extend(own)
        blocks += text_parts(context.blocks, first=not blocks)
        message = SystemMessage(content=blocks)
        sent = cast("list[Any]", message.content)  # validation copies the list and its blocks
        own_blocks = _copies(own) if isinstance(own, list) else None
        built = _Built(context, system, own, own_blocks, message, sent, _copies(sent))
        with self._prepared_lock:
            if len(self._messages) >= _PREPARED_MAX:
                self._messages.pop(next(iter(self._messages)))
            self._messages[key] = built  # the objects held: their ids stay their own
        return message

    def _overflow_args(self, request: ModelRequest, prepared: _Prepared) -> dict[str, Any]:
        """The step that frees context after the model call overflowed (state as sent)."""
        outcome = prepared.outcome
        args = self._call_args(request, dict(outcome.record))
        args["window"] = outcome.window
        args["context_overflow"] = True
        return args

    def _recovered(
        self, request: ModelRequest, prepared: _Prepared, recovery: TurnOutcome
    ) -> _Prepared:
        """The call's step covering both the first step and the overflow's."""
        first = prepared.outcome
        both = replace(
            recovery,
            removed=[*first.removed, *recovery.removed],
            stamped=[*first.stamped, *recovery.stamped],
            inserted=[*first.inserted, *recovery.inserted],
            stamps_only=first.stamps_only and recovery.stamps_only,  # both against the state
        )
        return self._done(request, both)

    @staticmethod
    def _response(
        response: ModelResponse, prepared: _Prepared
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        """The reply, with the step's state update when it has one.

        An update that rewrites ``messages`` (a time-gap reminder went in) is applied after the
        model node appends its reply, so the reply is part of the rewrite.
        """
        update = prepared.update
        if not update:
            return response
        messages = update.get("messages")
        if messages and _rewrites(messages):
            update = {**update, "messages": [*messages, *response.result]}
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        """Run the OM step, then call the model with the memory context and the window.

        With ``configurable={"langchain_om": {"enabled": False}}`` in the run config the
        call goes to the model as it came: no step, no memory context, nothing written.

        When the call raises ``ContextOverflowError``, memory observes synchronously (see
        ``context_overflow`` of :meth:`ObservationalMemory.step`, reported as
        ``data-om-context-overflow``) and the call is retried once with the smaller window; the
        error propagates when nothing could be freed, the retry overflows too, or
        ``observation.observe_on_context_overflow`` is off.
        """
        config = _run_config()
        if not memory_enabled(config):
            return handler(request)  # memory is off for this request: the call as it came
        require_checkpointer("ObservationalMemoryMiddleware", config or None)
        store = run_store(request.runtime)
        prepared = self._reused(request)
        if prepared is None:
            record = self.memory.read_state(request.state, store=store)
            args = self._call_args(request, record, config)
            prepared = self._done(request, self.memory.step(**args))
            self.memory.keep_state(prepared.update, request.state, store=store)
        try:
            return self._response(handler(self._sent(request, prepared)), prepared)
        except ContextOverflowError:
            if not self.memory.config.observation.observe_on_context_overflow:
                raise
            recovery = self.memory.step(**self._overflow_args(request, prepared))
            if not recovery.removed:
                raise  # nothing could be freed: retrying would overflow again
        prepared = self._recovered(request, prepared, recovery)
        self.memory.keep_state(prepared.update, request.state, store=store)
        return self._response(handler(self._sent(request, prepared)), prepared)

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        config = _run_config()
        if not memory_enabled(config):
            return await handler(request)
        require_checkpointer("ObservationalMemoryMiddleware", config or None)
        store = run_store(request.runtime)
        prepared = self._reused(request)
        if prepared is None:
            record = await self.memory.aread_state(request.state, store=store)
            outcome = await self.memory.astep(**self._call_args(request, record, config))
            prepared = self._done(request, outcome)
            await self.memory.akeep_state(prepared.update, request.state, store=store)
        try:
            return self._response(await handler(self._sent(request, prepared)), prepared)
        except ContextOverflowError:
            if not self.memory.config.observation.observe_on_context_overflow:
                raise
            recovery = await self.memory.astep(**self._overflow_args(request, prepared))
            if not recovery.removed:
                raise  # nothing could be freed: retrying would overflow again
        prepared = self._recovered(request, prepared, recovery)
        await self.memory.akeep_state(prepared.update, request.state, store=store)
        return self._response(await handler(self._sent(request, prepared)), prepared)


def _memory_of(memory: Any, options: Mapping[str, Any]) -> ObservationalMemory:
    """``memory``, or the memory ``options`` describe when it is ``None``.

    Raises:
        OMConfigError: both were given, or ``memory`` is not an ``ObservationalMemory``.
    """
    given = sorted(k for k, v in options.items() if v is not None)
    if memory is None:
        return ObservationalMemory(**options)
    if not isinstance(memory, ObservationalMemory):
        raise OMConfigError(
            f"ObservationalMemoryMiddleware takes an ObservationalMemory, not "
            f"{type(memory).__name__}. Pass memory options as keyword arguments instead: "
            "ObservationalMemoryMiddleware(model=..., message_tokens=...).",
            option="memory",
        )
    if given:
        raise OMConfigError(
            f"ObservationalMemoryMiddleware got a memory and options for it "
            f"({', '.join(given)}): the memory is built already. Give those options to "
            "ObservationalMemory(...), or drop the memory and let the middleware build it "
            "from them.",
            option=given[0],
        )
    return memory


def _run_config() -> Mapping[str, Any]:
    """The config of the run this call belongs to (empty outside a run)."""
    try:
        return get_config()
    except RuntimeError:
        return {}


def _rewrites(messages: Sequence[Any]) -> bool:
    """Whether a ``messages`` update replaces the whole list (it starts by removing all)."""
    first = messages[0]
    return isinstance(first, RemoveMessage) and first.id == REMOVE_ALL_MESSAGES


def _with_inserted(messages: list[AnyMessage], outcome: TurnOutcome) -> list[AnyMessage]:
    """``messages`` with the step's inserted messages (time-gap reminders) where it put them."""
    if not outcome.inserted:
        return messages
    inserted = {id(m) for m in outcome.inserted}
    window = outcome.window
    before: dict[str | None, list[AnyMessage]] = {}
    for i, message in enumerate(window[:-1]):
        if id(message) in inserted:
            before.setdefault(window[i + 1].id, []).append(cast("AnyMessage", message))
    out: list[AnyMessage] = []
    for message in messages:
        out.extend(before.pop(message.id, []))
        out.append(message)
    return out


class _IdleBufferingMiddleware(ObservationalMemoryMiddleware):
    """The middleware with ``observation.buffer_on_idle``: buffers the rest at turn end."""

    def after_agent(
        self, state: ObservationalMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """At turn end, buffer what is left (``observation.buffer_on_idle``)."""
        if not memory_enabled(_run_config()):
            return None
        record = self.memory.read_state(state, store=run_store(runtime))
        self.memory.end_turn(**self._turn_end(state, runtime, record))
        return None

    async def aafter_agent(
        self, state: ObservationalMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_agent`."""
        if not memory_enabled(_run_config()):
            return None
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
