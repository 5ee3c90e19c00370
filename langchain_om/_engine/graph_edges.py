"""The user's edges into a node (the model node, the end), rerouted through one of memory's nodes.

``add_observational_memory`` sends every edge into the model node through ``om_gate``, and,
with ``observation.buffer_on_idle``, every way the run can end through ``om_idle``: edges and
path-map entries into ``END``, and the nodes with no way out at all (a run ends after them).
Commands are rerouted by :mod:`langchain_om._engine.graph_commands`.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import StateGraph

from langchain_om.errors import OMUsageError

__all__ = ["dead_ends", "reroute_edges"]


def reroute_edges(builder: StateGraph[Any, Any, Any, Any], target: str, via: str) -> None:
    """Every edge of ``builder`` into ``target`` now goes to ``via``.

    Plain edges, edges waiting on several nodes and the path maps of conditional edges.

    Raises:
        OMUsageError: a conditional edge has no path map (its destinations are unknown, so an
            edge into ``target`` could not be redirected).
    """
    for source, branches in builder.branches.items():
        for name, spec in list(branches.items()):
            if spec.ends is None:
                raise OMUsageError(
                    f"The conditional edge {name!r} from {source!r} has no path map, so edges "
                    f"into {target!r} cannot be redirected through memory. Pass a path map to "
                    "add_conditional_edges, e.g. {'model': 'model', 'tools': 'tools'}."
                )
            if target in spec.ends.values():
                ends = {k: (via if v == target else v) for k, v in spec.ends.items()}
                branches[name] = spec._replace(ends=ends)
    builder.edges = {(s, via if e == target else e) for s, e in builder.edges}
    builder.waiting_edges = {
        (starts, via if e == target else e) for starts, e in builder.waiting_edges
    }


def dead_ends(builder: StateGraph[Any, Any, Any, Any]) -> list[str]:
    """The nodes with no edge out, no conditional edge and no declared ``Command`` destination.

    The run ends after such a node (unless it routes with a ``Command`` whose destinations
    it does not declare).
    """
    sources = {s for s, _ in builder.edges}
    sources |= {s for starts, _ in builder.waiting_edges for s in starts}
    sources |= set(builder.branches)
    return [n for n, spec in builder.nodes.items() if n not in sources and not spec.ends]
