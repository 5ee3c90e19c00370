"""The graph's model node, retried once after a context overflow with memory's smaller window.

``add_observational_memory`` wraps the user's model node (``observation.
observe_on_context_overflow``, on by default): when the node raises LangChain's
``ContextOverflowError``, memory runs a step that observes what is pending
(``context_overflow=True``), the node runs again once on the state with that step's update
applied (observed messages gone, the memory message renewed), and the node's result is
returned with the update in front of it, so both reach the checkpoint in one write. The error
propagates when the step freed nothing, when the retry overflows too, or when memory is off
for the request.

A compiled subgraph as the model node is retried the same way, whole: its run on the smaller
window starts over (nodes it ran before the overflow run again). LangGraph still finds the
subgraph in the node (``get_state(subgraphs=True)``, ``get_graph(xray=True)``).

The same wrapper applies ``after`` to the node's result (with ``observation.buffer_on_idle``
a ``Command(goto=END)`` is sent through ``om_idle``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import RemoveMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.graph import StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.pregel import Pregel
from langgraph.types import Command

from langchain_om.errors import OMUsageError

__all__ = ["Recover", "wrap_model_node", "with_update"]

Recover = Callable[[dict[str, Any], RunnableConfig], dict[str, Any] | None]
"""Runs memory's overflow step on a state: the state update, or ``None`` when nothing was freed."""
ARecover = Callable[[dict[str, Any], RunnableConfig], Awaitable[dict[str, Any] | None]]
After = Callable[[Any], Any]
"""Applied to the node's result (e.g. rerouting its ``Command``)."""


def _listed(messages: Any) -> list[Any]:
    if messages is None:
        return []
    if isinstance(messages, Sequence) and not isinstance(messages, str):
        return list(messages)
    return [messages]


def applied(state: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` as the node sees it once ``update`` is written (``messages`` reduced)."""
    out = {**state, **update}
    if "messages" in update:
        out["messages"] = add_messages(list(state.get("messages", [])), _listed(update["messages"]))
    return out


def _then(first: list[Any], then: list[Any]) -> list[Any]:
    """The ``messages`` write of ``first`` followed by ``then``.

    After memory's rewrite of the whole list (it starts by removing all) the reducer keeps
    everything that follows as it is, so a result that repeats messages of the window (a
    subgraph returns its whole state) is merged into the rewrite by id here.
    """
    if first and isinstance(first[0], RemoveMessage) and first[0].id == REMOVE_ALL_MESSAGES:
        return [first[0], *add_messages(first[1:], then)]
    return [*first, *then]


def with_update(update: dict[str, Any], result: Any) -> Any:
    """The node's ``result`` with memory's ``update`` written before it.

    A dict result is merged (``messages`` after memory's removals); a ``Command`` gets the
    update merged into its own; ``None`` becomes the update.

    Raises:
        OMUsageError: the node returned something else (a list of commands is kept whole
            after a ``Command`` carrying the update).
    """
    if result is None:
        return update
    if isinstance(result, Mapping):
        merged = {**update, **result}
        if "messages" in update and "messages" in result:
            merged["messages"] = _then(_listed(update["messages"]), _listed(result["messages"]))
        return merged
    if isinstance(result, Command) and (result.update is None or isinstance(result.update, dict)):
        return replace(result, update=with_update(update, result.update))
    if isinstance(result, list | tuple) and all(isinstance(r, Command) for r in result):
        return [Command(update=update), *result]
    raise OMUsageError(
        f"The model node returned a {type(result).__name__} after memory freed context for it; "
        "memory can only add its update to a dict, a Command or a list of Commands. Return "
        "one of those, or set observation.observe_on_context_overflow=False."
    )


class _Retried(Runnable[Any, Any]):
    """The model node, run again once after an overflow; adds no run of its own to a trace.

    A ``RunnableLambda`` around the node would open one more traced run per model call (its
    callbacks cost about as much as the rest of memory's gate); this calls the node with the
    config it was given, so the node's own run is the only one. Without ``recover`` the node
    is not retried; ``after`` sees every result.
    """

    def __init__(
        self,
        runnable: Runnable[Any, Any],
        name: str,
        recover: tuple[Recover, ARecover] | None,
        after: After | None,
    ) -> None:
        self.runnable, self.name = runnable, name
        self.recover, self.after = recover, after or (lambda result: result)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the node; after a context overflow, once more on memory's smaller window."""
        config = config or {}
        try:
            return self.after(self.runnable.invoke(input, config, **kwargs))
        except ContextOverflowError:
            update = self.recover[0](input, config) if self.recover else None
            if update is None:
                raise  # nothing could be freed: retrying would overflow again
        retried = self.runnable.invoke(applied(input, update), config, **kwargs)
        return self.after(with_update(update, retried))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async twin of :meth:`invoke`."""
        config = config or {}
        try:
            return self.after(await self.runnable.ainvoke(input, config, **kwargs))
        except ContextOverflowError:
            update = await self.recover[1](input, config) if self.recover else None
            if update is None:
                raise
        retried = await self.runnable.ainvoke(applied(input, update), config, **kwargs)
        return self.after(with_update(update, retried))


class _RetriedSubgraph(RunnableLambda[Any, Any]):
    """A compiled subgraph as the model node, wrapped so that LangGraph still finds it.

    LangGraph looks for a node's subgraph among the dependencies of a ``RunnableLambda``
    (state snapshots with ``subgraphs=True``, ``get_graph(xray=True)``); this one names the
    subgraph as its only dependency and runs it through :class:`_Retried`.
    """

    def __init__(self, retried: _Retried, subgraph: Pregel[Any, Any, Any, Any]) -> None:
        super().__init__(retried.invoke, afunc=retried.ainvoke, name=retried.name)
        self.subgraph = subgraph

    @property
    def deps(self) -> list[Runnable[Any, Any]]:
        """The subgraph (LangGraph reads it to find the node's subgraph)."""
        return [self.subgraph]


def wrap_model_node(
    builder: StateGraph[Any, Any, Any, Any],
    before: str,
    *,
    recover: tuple[Recover, ARecover] | None = None,
    after: After | None = None,
) -> None:
    """Wrap ``builder``'s node ``before``: recover from a context overflow once, apply ``after``.

    Leaves the node as it is when there is nothing to do (no ``recover``, no ``after``).
    """
    spec = builder.nodes[before]
    if (recover is None and after is None) or not isinstance(spec.runnable, Runnable):
        return
    retried = _Retried(spec.runnable, before, recover, after)
    runnable: Runnable[Any, Any] = retried
    if isinstance(spec.runnable, Pregel):
        runnable = _RetriedSubgraph(retried, spec.runnable)
    builder.nodes[before] = replace(spec, runnable=runnable)
