"""LangGraph front door: observation and reflection as nodes of the user's ``StateGraph``.

:func:`add_observational_memory` puts three nodes in front of the user's model node:

* ``om_gate`` — always runs the engine step without model calls: stamps new messages,
  activates buffered observations, starts background buffering, keeps OM's memory system
  message at the front of ``messages`` (so the user's model node sees memory with no change to
  its code) and emits ``data-om-status``; routes on the token thresholds;
* ``om_observe`` — runs the Observer when the window is over its threshold;
* ``om_reflect`` — runs the Reflector when the observation log is over its threshold.

With ``observation.buffer_on_idle`` a fourth node, ``om_idle``, sits where the run ends (every
edge, path-map entry and ``Command`` into ``END``, and after each node with no way out): it
buffers what is left of the window in the background, as the agent middleware does at turn end.
With ``observation.use_usage_metadata`` the gate routes on the provider-reported usage of the
last AI message (``usage_metadata``) when it is larger than the estimate, as the middleware does.

The OM record lives under the ``om_record`` key of the graph state (JSON-native), so the
checkpointer persists it and time travel or a fork rewinds memory with the messages.

With ``observation.observe_on_context_overflow`` (on by default) the model node is wrapped:
when it raises ``ContextOverflowError``, memory observes what is pending and the node runs
once more on the smaller window (:mod:`langchain_om._engine.graph_overflow`; a compiled subgraph as
the model node is retried whole). A run whose config
says ``configurable={"langchain_om": {"enabled": False}}`` skips memory: the gate only takes
memory's message out of ``messages`` and routes straight to the model node.

Example:
    >>> from langgraph.graph import START, MessagesState, StateGraph
    >>> from langchain_om import ObservationalMemory, add_observational_memory
    >>> from langchain_om.testing import ScriptedChatModel
    >>> llm = ScriptedChatModel(script=["Hi!"])
    >>> memory = ObservationalMemory(model=ScriptedChatModel(script=["* 🔴 (09:00) hi"]))
    >>> builder = StateGraph(MessagesState)
    >>> _ = builder.add_node("model", lambda s: {"messages": [llm.invoke(s["messages"])]})
    >>> _ = builder.add_edge(START, "model")
    >>> graph = add_observational_memory(builder, memory).compile(
    ...     checkpointer=memory.checkpointer)
    >>> graph.invoke({"messages": [("user", "hello")]},
    ...     {"configurable": {"thread_id": "t1"}})["messages"][-1].content
    'Hi!'
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, TypedDict

from langchain_core.messages import AnyMessage, BaseMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.config import get_stream_writer
from langgraph.graph import END, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command

from langchain_om._engine.graph_commands import redirect_commands, route_commands_through
from langchain_om._engine.graph_edges import dead_ends, reroute_edges
from langchain_om._engine.graph_overflow import wrap_model_node
from langchain_om._engine.io import EndTurnOptions
from langchain_om._plans.graph_state import (
    WindowSplit,
    memory_enabled,
    memory_message_id,
    memory_removed,
    merge_memory,
    run_configurable,
    run_ids,
    split_messages,
    state_fields,
    state_update,
    step_number,
    stream_emitter,
)
from langchain_om._plans.types import TurnOutcome
from langchain_om._storage.run_store import require_checkpointer, run_store
from langchain_om.engine import ObservationalMemory
from langchain_om.errors import OMUsageError

__all__ = ["ObservationalMemoryGraphState", "add_observational_memory"]

GATE, OBSERVE, REFLECT, IDLE = "om_gate", "om_observe", "om_reflect", "om_idle"


class ObservationalMemoryGraphState(TypedDict):
    """The state keys the OM nodes read and write."""

    messages: Annotated[list[AnyMessage], add_messages]
    om_record: NotRequired[dict[str, Any]]
    om_activity: NotRequired[dict[str, Any]]


def _writer() -> Any:
    try:
        return get_stream_writer()
    except RuntimeError:
        return None


def _emitter() -> Any:
    return stream_emitter(_writer())


class _Nodes:
    """The OM nodes and their routing, bound to one engine."""

    def __init__(
        self, memory: ObservationalMemory, before: str, actor_model: Any, *, merge: bool = True
    ) -> None:
        self.memory = memory
        self.before = before
        self.actor_model = actor_model
        self.merge = merge

    def _actor(self, config: RunnableConfig | None) -> Any:
        """The run config's ``configurable["actor_model"]``, else the nodes' ``actor_model``."""
        configurable = (config or {}).get("configurable") or {}
        actor = configurable.get("actor_model")
        return self.actor_model if actor is None else actor

    # -- shared pieces --------------------------------------------------------------------

    def _update(
        self, state: dict[str, Any], split: WindowSplit, outcome: TurnOutcome
    ) -> dict[str, Any]:
        context = self.memory.render(outcome.record)
        memory_message: BaseMessage | None = None
        if context.blocks and self.merge and split.head and split.head[-1].id:
            memory_message = merge_memory(split.head[-1], context.blocks)
        elif context.blocks:
            memory_message = context.to_system_message()
            memory_message.id = memory_message_id(split)
        messages = state.get("messages", [])
        return state_update(
            outcome,
            messages,
            memory=memory_message,
            current_memory=split.memory,
            state=state,
            inline=self.memory.config.read_only,
        )

    def _args(
        self, state: dict[str, Any], config: RunnableConfig, record: Any
    ) -> tuple[WindowSplit, dict[str, Any]]:
        split = split_messages(state.get("messages", []))
        thread_id, resource_id = run_ids(config)
        return split, {
            "thread_id": thread_id,
            "resource_id": resource_id,
            "record": record,
            "window": split.window,
            "step_number": step_number(split.window),
            "emit": _emitter(),
            "actor_model": self._actor(config),
            "configurable": run_configurable(config),
            "store": run_store(),
        }

    # -- nodes ----------------------------------------------------------------------------

    def node(self, **flags: Any) -> Any:
        """A node running the engine step with ``flags`` (sync and async over one update).

        With memory off for the request (``configurable["langchain_om"]["enabled"]``), the
        node takes memory's message out of ``messages`` and changes nothing else.
        """

        def run(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
            if not memory_enabled(config):
                return memory_removed(state.get("messages", []))
            return self._stepped(state, config, flags)[0]

        async def arun(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
            if not memory_enabled(config):
                return memory_removed(state.get("messages", []))
            return (await self._astepped(state, config, flags))[0]

        return RunnableLambda(run, afunc=arun)

    def gate(self) -> Any:
        """``om_gate``: the step without model calls, then the route it calls for.

        The gate routes itself (a ``Command``) rather than through a conditional edge: the
        provider-reported usage (``observation.use_usage_metadata``) still describes the window
        only when this step left it unchanged, which only the step knows.
        """
        flags = {"sync_cycles": False}

        def run(state: dict[str, Any], config: RunnableConfig) -> Command[str]:
            if not memory_enabled(config):
                return Command(update=memory_removed(state.get("messages", [])), goto=self.before)
            update, outcome = self._stepped(state, config, flags)
            return Command(update=update, goto=self._route(outcome, config))

        async def arun(state: dict[str, Any], config: RunnableConfig) -> Command[str]:
            if not memory_enabled(config):
                return Command(update=memory_removed(state.get("messages", [])), goto=self.before)
            update, outcome = await self._astepped(state, config, flags)
            return Command(update=update, goto=self._route(outcome, config))

        return RunnableLambda(run, afunc=arun)

    def idle(self) -> Any:
        """``om_idle``: at the end of the run, buffer what is left (``buffer_on_idle``)."""

        def run(state: dict[str, Any], config: RunnableConfig) -> None:
            if memory_enabled(config):
                record = self.memory.read_state(state, store=run_store())
                self.memory.end_turn(**self._turn_end(state, config, record))

        async def arun(state: dict[str, Any], config: RunnableConfig) -> None:
            if memory_enabled(config):
                record = await self.memory.aread_state(state, store=run_store())
                await self.memory.aend_turn(**self._turn_end(state, config, record))

        return RunnableLambda(run, afunc=arun)

    def _stepped(
        self, state: dict[str, Any], config: RunnableConfig, flags: dict[str, Any]
    ) -> tuple[dict[str, Any], TurnOutcome]:
        """Run the step with ``flags`` on ``state``: its state update and its outcome."""
        require_checkpointer("The StateGraph memory nodes", config)
        store = run_store()
        record = self.memory.read_state(state, store=store)
        split, args = self._args(state, config, record)
        outcome = self.memory.step(**args, **flags)
        update = self._update(state, split, outcome)
        self.memory.keep_state(update, state, store=store)
        return update, outcome

    async def _astepped(
        self, state: dict[str, Any], config: RunnableConfig, flags: dict[str, Any]
    ) -> tuple[dict[str, Any], TurnOutcome]:
        """Async twin of :meth:`_stepped`."""
        require_checkpointer("The StateGraph memory nodes", config)
        store = run_store()
        record = await self.memory.aread_state(state, store=store)
        split, args = self._args(state, config, record)
        outcome = await self.memory.astep(**args, **flags)
        update = self._update(state, split, outcome)
        await self.memory.akeep_state(update, state, store=store)
        return update, outcome

    def _turn_end(
        self, state: dict[str, Any], config: RunnableConfig, record: Any
    ) -> EndTurnOptions:
        """The :meth:`ObservationalMemory.end_turn` arguments at the end of this run."""
        _, args = self._args(state, config, record)
        return EndTurnOptions(
            thread_id=args["thread_id"],
            resource_id=args["resource_id"],
            record=record,
            window=args["window"],
            configurable=args["configurable"],
            store=args["store"],
        )

    def overflow(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any] | None:
        """After the model node overflowed: the update of a step that freed context, if any."""
        if not memory_enabled(config):
            return None
        store = run_store()
        record = self.memory.read_state(state, store=store)
        split, args = self._args(state, config, record)
        outcome = self.memory.step(**args, context_overflow=True)
        if not outcome.removed:
            return None
        update = self._update(state, split, outcome)
        self.memory.keep_state(update, state, store=store)
        return update

    async def aoverflow(
        self, state: dict[str, Any], config: RunnableConfig
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`overflow`."""
        if not memory_enabled(config):
            return None
        store = run_store()
        record = await self.memory.aread_state(state, store=store)
        split, args = self._args(state, config, record)
        outcome = await self.memory.astep(**args, context_overflow=True)
        if not outcome.removed:
            return None
        update = self._update(state, split, outcome)
        await self.memory.akeep_state(update, state, store=store)
        return update

    # -- routers --------------------------------------------------------------------------

    def _route(self, outcome: TurnOutcome, config: RunnableConfig) -> str:
        """Where the gate goes after its step: observe, reflect or the model node."""
        actor = self._actor(config)
        if self.memory.should_observe(
            outcome.record,
            outcome.window,
            actor_model=actor,
            reported_tokens=outcome.reported_tokens,
        ):
            return OBSERVE
        if self.memory.should_reflect(outcome.record, actor_model=actor):
            return REFLECT
        return self.before

    def route_observed(self, state: dict[str, Any], config: RunnableConfig) -> str:
        record = state_fields(state)
        reflect = self.memory.should_reflect(record, actor_model=self._actor(config))
        return REFLECT if reflect else self.before


def add_observational_memory(
    builder: StateGraph[Any, Any, Any, Any],
    memory: ObservationalMemory,
    *,
    before: str = "model",
    actor_model: Any = None,
    merge_system_message: bool = True,
) -> StateGraph[Any, Any, Any, Any]:
    """Add observational memory in front of the node ``before`` of ``builder``.

    Every edge into ``before`` (plain edges and conditional edges with a path map) and every
    ``Command(goto=before)`` a node returns is redirected through the OM nodes (a ``Send`` to
    ``before`` keeps its payload and is not). The state must have a ``messages`` key with the
    ``add_messages`` reducer; the ``om_record`` key is added if missing. Returns ``builder``.

    With ``observation.observe_on_context_overflow`` (on by default) the node ``before`` is
    wrapped: a ``ContextOverflowError`` it raises (let it propagate; wrap a provider's own
    error in it) makes memory observe what is pending and the node run once more on the
    smaller window. With ``observation.buffer_on_idle`` every way into ``END`` (edges, path
    maps, ``Command(goto=END)``, and the nodes with no way out) goes through ``om_idle``,
    which buffers the rest of the window in the background before the run ends.

    Args:
        builder: the user's ``StateGraph`` (not compiled yet), with its model node added.
        memory: the engine.
        before: the name of the node that calls the model.
        actor_model: the chat model (or ``"provider/model"``) that node calls: image and file
            estimates, the ``"auto"`` idle TTL and fractional thresholds follow it. A run
            config's ``configurable["actor_model"]`` overrides it for that run.
        merge_system_message: when ``messages`` starts with your system message, append memory
            to it (one system message, same id) instead of adding a second one. On by default:
            the model node may call any provider, one system message works with all of them and
            some take a single system instruction only. ``False`` keeps memory as its own system
            message right after yours (your message stays byte-identical in state).

    Raises:
        OMUsageError: ``before`` is not a node of ``builder``, or a conditional edge routes to
            it without a path map (so it cannot be redirected).
    """
    if before not in builder.nodes:
        raise OMUsageError(
            f"add_observational_memory(before={before!r}): the graph has no node named "
            f"{before!r}. Add your model node first, or pass before='<your model node>'. "
            f"Nodes: {sorted(builder.nodes)}."
        )
    observation = memory.config.observation
    idle = observation.buffer_on_idle
    ends = dead_ends(builder) if idle else []
    reroute_edges(builder, before, GATE)
    targets = {before: GATE}
    if idle:
        reroute_edges(builder, END, IDLE)
        targets[END] = IDLE
    route_commands_through(builder, targets, skip=before)
    nodes = _Nodes(memory, before, actor_model, merge=merge_system_message)
    wrap_model_node(
        builder,
        before,
        recover=(
            (nodes.overflow, nodes.aoverflow) if observation.observe_on_context_overflow else None
        ),
        after=(lambda result: redirect_commands(result, {END: IDLE})) if idle else None,
    )
    schema: Any = ObservationalMemoryGraphState
    # The gate only activates and starts background work; the cycle nodes emit no status.
    observe = nodes.node(reflect=False, emit_status=False)
    reflect = nodes.node(observe=False, emit_status=False)
    builder.add_node(
        GATE, nodes.gate(), input_schema=schema, destinations=(OBSERVE, REFLECT, before)
    )
    builder.add_node(OBSERVE, observe, input_schema=schema)
    builder.add_node(REFLECT, reflect, input_schema=schema)
    builder.add_conditional_edges(OBSERVE, nodes.route_observed, [REFLECT, before])
    builder.add_edge(REFLECT, before)
    if idle:
        builder.add_node(IDLE, nodes.idle(), input_schema=schema)
        for node in ends:
            builder.add_edge(node, IDLE)
        builder.add_edge(IDLE, END)
    return builder
