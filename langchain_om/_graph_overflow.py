"""The graph's model node, retried once after a context overflow with memory's smaller window.

``add_observational_memory`` wraps the user's model node (``observation.
observe_on_context_overflow``, on by default): when the node raises LangChain's
``ContextOverflowError``, memory runs a step that observes what is pending
(``context_overflow=True``), the node runs again once on the state with that step's update
applied (observed messages gone, the memory message renewed), and the node's result is
returned with the update in front of it, so both reach the checkpoint in one write. The error
propagates when the step freed nothing, when the retry overflows too, or when memory is off
for the request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.exceptions import ContextOverflowError
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.graph import StateGraph
from langgraph.graph.message import add_messages
from langgraph.pregel import Pregel
from langgraph.types import Command

from langchain_om.errors import OMUsageError

__all__ = ["Recover", "recover_overflows", "with_update"]

Recover = Callable[[dict[str, Any], RunnableConfig], dict[str, Any] | None]
"""Runs memory's overflow step on a state: the state update, or ``None`` when nothing was freed."""
ARecover = Callable[[dict[str, Any], RunnableConfig], Awaitable[dict[str, Any] | None]]


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
            merged["messages"] = [*_listed(update["messages"]), *_listed(result["messages"])]
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
    config it was given, so the node's own run is the only one.
    """

    def __init__(
        self, runnable: Runnable[Any, Any], name: str, recover: Recover, arecover: ARecover
    ) -> None:
        self.runnable, self.name = runnable, name
        self.recover, self.arecover = recover, arecover

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the node; after a context overflow, once more on memory's smaller window."""
        config = config or {}
        try:
            return self.runnable.invoke(input, config, **kwargs)
        except ContextOverflowError:
            update = self.recover(input, config)
            if update is None:
                raise  # nothing could be freed: retrying would overflow again
        return with_update(update, self.runnable.invoke(applied(input, update), config, **kwargs))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async twin of :meth:`invoke`."""
        config = config or {}
        try:
            return await self.runnable.ainvoke(input, config, **kwargs)
        except ContextOverflowError:
            update = await self.arecover(input, config)
            if update is None:
                raise
        retried = await self.runnable.ainvoke(applied(input, update), config, **kwargs)
        return with_update(update, retried)


def recover_overflows(
    builder: StateGraph[Any, Any, Any, Any], before: str, recover: Recover, arecover: ARecover
) -> None:
    """Wrap ``builder``'s node ``before`` so a context overflow is recovered from once.

    A compiled subgraph as the model node is left alone (its own nodes call the model).
    """
    spec = builder.nodes[before]
    if isinstance(spec.runnable, Pregel) or not isinstance(spec.runnable, Runnable):
        return
    builder.nodes[before] = replace(
        spec, runnable=_Retried(spec.runnable, before, recover, arecover)
    )
