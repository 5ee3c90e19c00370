"""Commands that route into the model node go through memory's gate too.

``add_observational_memory`` redirects edges into the model node through ``om_gate``; a node
that routes with ``Command(goto="model")`` instead would reach the model with memory skipped.
LangGraph has no public hook to rewrite a node's ``Command``, so each node of the user's graph
(compiled subgraphs excepted: they route their parent with ``Command.PARENT``) is wrapped once:
a ``goto`` naming the model node now names the gate, and the node's declared destinations
(``destinations=`` / a ``Command[Literal[...]]`` annotation) follow, so the drawn graph shows it.
A ``Send`` to the model node keeps its own payload and is left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, Send

__all__ = ["route_commands_through"]


def _goto(goto: Any, before: str, gate: str) -> Any:
    if isinstance(goto, str):
        return gate if goto == before else goto
    if isinstance(goto, Sequence) and not isinstance(goto, Send):
        return [gate if g == before else g for g in goto]
    return goto


def _redirect(value: Any, before: str, gate: str) -> Any:
    """``value`` (a node's result) with every ``goto`` to ``before`` sent to ``gate``."""
    if isinstance(value, Command):
        if value.graph == Command.PARENT:
            return value
        return replace(value, goto=_goto(value.goto, before, gate))
    if isinstance(value, list | tuple) and any(isinstance(v, Command) for v in value):
        return type(value)(_redirect(v, before, gate) for v in value)
    return value


def _wrapped(runnable: Runnable[Any, Any], name: str, before: str, gate: str) -> Runnable[Any, Any]:
    def run(state: Any, config: RunnableConfig) -> Any:
        return _redirect(runnable.invoke(state, config), before, gate)

    async def arun(state: Any, config: RunnableConfig) -> Any:
        return _redirect(await runnable.ainvoke(state, config), before, gate)

    return RunnableLambda(run, afunc=arun, name=name)


def _ends(ends: Any, before: str, gate: str) -> Any:
    if isinstance(ends, dict):
        return {(gate if k == before else k): v for k, v in ends.items()}
    if ends:
        return tuple(gate if e == before else e for e in ends)
    return ends


def route_commands_through(builder: StateGraph[Any, Any, Any, Any], before: str, gate: str) -> None:
    """Wrap ``builder``'s nodes (not ``before``, not subgraphs) so ``goto=before`` hits ``gate``."""
    for name, spec in list(builder.nodes.items()):
        if name == before or isinstance(spec.runnable, Pregel):
            continue
        if not isinstance(spec.runnable, Runnable):  # add_node stores runnables
            continue
        runnable = _wrapped(spec.runnable, name, before, gate)
        builder.nodes[name] = replace(spec, runnable=runnable, ends=_ends(spec.ends, before, gate))
