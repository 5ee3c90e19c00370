"""The storage a graph run brings: its store (``runtime.store``) and its checkpointer.

Inside a LangGraph run the store and the checkpointer belong to the graph: ``compile(store=...,
checkpointer=...)``, ``create_agent(..., store=..., checkpointer=...)``, or the ones LangGraph
Platform and ``langgraph dev`` inject into a graph exported without them. Memory keeps its
archive, buffered chunks and search documents in that store, so every worker of the deployment
shares them; ``memory.store`` is only the default outside a run or when the graph has no store.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_config, get_store
from langgraph.store.base import BaseStore

from langchain_om._core.callable_tokens import CallableTokenCounter
from langchain_om._core.tokens import TokenCounter
from langchain_om.errors import OMUsageError

__all__ = ["load_tokenizer", "require_checkpointer", "run_checkpointer", "run_store"]

_CHECKPOINTER_KEY = "__pregel_checkpointer"
"""Where LangGraph puts the run's checkpointer in ``config["configurable"]``."""


def run_store(runtime: Any = None) -> BaseStore | None:
    """The store of the current graph run: ``runtime.store``, else ``get_store()``, else ``None``.

    Args:
        runtime: the ``Runtime`` a hook or tool was given (``None``: read the run's context).
    """
    store = getattr(runtime, "store", None)
    if isinstance(store, BaseStore):
        return store
    try:
        found = get_store()
    except (RuntimeError, KeyError, AttributeError):  # outside a graph run
        return None
    return found if isinstance(found, BaseStore) else None


def run_checkpointer(config: Any = None) -> BaseCheckpointSaver[Any] | None:
    """The checkpointer of the current graph run (from the run config), else ``None``."""
    if config is None:
        try:
            config = get_config()
        except RuntimeError:
            return None
    configurable = config.get("configurable") if isinstance(config, dict) else None
    saver = (configurable or {}).get(_CHECKPOINTER_KEY)
    return saver if isinstance(saver, BaseCheckpointSaver) else None


def require_checkpointer(door: str, config: Any = None) -> None:
    """Raise when the current graph run has no checkpointer: memory could not last.

    Memory keeps a thread's record and window in the graph's state, and without a checkpointer
    that state ends with each ``invoke``: every turn would start from nothing, observe again
    and remember nothing. A run outside any graph (no run config) is not checked.

    Raises:
        OMUsageError: a graph run with no checkpointer.
    """
    if config is None:
        try:
            config = get_config()
        except RuntimeError:
            return
    if run_checkpointer(config) is not None:
        return
    raise OMUsageError(
        f"{door} runs in a graph without a checkpointer: memory lives in the graph's state, "
        "which is gone after each invoke, so nothing would be remembered. Pass "
        "checkpointer=memory.checkpointer (memory's own SQLite or in-memory saver) or any "
        "checkpointer to create_agent(...) or graph.compile(...); LangGraph Platform and "
        "`langgraph dev` provide their own. For one request without memory, pass "
        'configurable={"langchain_om": {"enabled": False}}.'
    )


def load_tokenizer(counter: TokenCounter) -> None:
    """Load the counter's tokenizer now, where blocking file I/O is allowed.

    Servers such as ``langgraph dev`` forbid blocking calls inside their event loop; loading
    the tiktoken files lazily inside the first async run would fail there and every count
    would fall back to the estimate. A counter over your own function is left alone.
    """
    if not isinstance(counter, CallableTokenCounter):
        counter.count_text("langchain-om")
