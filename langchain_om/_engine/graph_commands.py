"""Commands that route into the model node go through memory's gate too (and to the end, idle).

``add_observational_memory`` redirects edges into the model node through ``om_gate``; a node
that routes with ``Command(goto="model")`` instead would reach the model with memory skipped.
LangGraph has no public hook to rewrite a node's ``Command``, so each node of the user's graph
(compiled subgraphs excepted: they route their parent with ``Command.PARENT``) is wrapped once:
a ``goto`` naming the model node now names the gate, and the node's declared destinations
(``destinations=`` / a ``Command[Literal[...]]`` annotation) follow, so the drawn graph shows it.
With ``observation.buffer_on_idle`` a ``goto`` to ``END`` names ``om_idle`` the same way.
A ``Send`` to the model node keeps its own payload and is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, Send

__all__ = ["redirect_commands", "redirect_ends", "route_commands_through"]

Targets = Mapping[str, str]
"""Destinations to replace: ``{"model": "om_gate"}`` sends a ``goto="model"`` to the gate."""


def _goto(goto: Any, targets: Targets) -> Any:
    if isinstance(goto, str):
        return targets.get(goto, goto)
    if isinstance(goto, Sequence) and not isinstance(goto, Send):
        return [targets.get(g, g) if isinstance(g, str) else g for g in goto]
    return goto


def redirect_commands(value: Any, targets: Targets) -> Any:
    """``value`` (a node's result) with every ``goto`` named in ``targets`` replaced."""
    if isinstance(value, Command):
        if value.graph == Command.PARENT:
            return value
        return replace(value, goto=_goto(value.goto, targets))
    if isinstance(value, list | tuple) and any(isinstance(v, Command) for v in value):
        return type(value)(redirect_commands(v, targets) for v in value)
    return value


def _wrapped(runnable: Runnable[Any, Any], name: str, targets: Targets) -> Runnable[Any, Any]:
    def run(state: Any, config: RunnableConfig) -> Any:
        return redirect_commands(runnable.invoke(state, config), targets)

    async def arun(state: Any, config: RunnableConfig) -> Any:
        return redirect_commands(await runnable.ainvoke(state, config), targets)

    return RunnableLambda(run, afunc=arun, name=name)


def redirect_ends(ends: Any, targets: Targets) -> Any:
    """A node's declared destinations with those named in ``targets`` replaced."""
    if isinstance(ends, dict):
        return {targets.get(k, k): v for k, v in ends.items()}
    if ends:
        return tuple(targets.get(e, e) for e in ends)
    return ends


def route_commands_through(
    builder: StateGraph[Any, Any, Any, Any], targets: Targets, *, skip: str
) -> None:
    """Wrap ``builder``'s nodes (not ``skip``, not subgraphs) so their gotos follow ``targets``."""
    for name, spec in list(builder.nodes.items()):
        if name == skip or isinstance(spec.runnable, Pregel):
            continue
        if not isinstance(spec.runnable, Runnable):  # add_node stores runnables
            continue
        runnable = _wrapped(spec.runnable, name, targets)
        ends = redirect_ends(spec.ends, targets)
        builder.nodes[name] = replace(spec, runnable=runnable, ends=ends)
