"""Run ``examples/langgraph_app`` the way the LangGraph server does, without the server.

The server loads the exported graph (no checkpointer, no store), attaches its own checkpointer
and store to the compiled graph and runs it asynchronously. Here the server's storage is one
SQLite file, so a second process can resume a thread:

    python -m tests.app_harness DB GRAPH THREAD TEXT   # prints {"reply", "observed"} as JSON
"""

from __future__ import annotations

import asyncio
import importlib
import json
import runpy
import sys
from collections.abc import Callable
from typing import Any

from langchain_core.messages import HumanMessage

from langchain_om.sqlite import open_sqlite
from tests.helpers import ROOT

APP_DIR = ROOT / "examples" / "langgraph_app"


def load_app() -> dict[str, Any]:
    """The app module's globals, loaded from its file as ``langgraph dev`` loads it."""
    return runpy.run_path(str(APP_DIR / "app.py"), run_name="langgraph_app")


def serve(graph: Any, db: str) -> tuple[Any, Any, Callable[[], None]]:
    """``(served graph, server store, close)``: the graph with the server's storage attached.

    ``db`` is a SQLite file, or a ``postgresql://`` URL (the platform's storage).
    """
    if db.startswith("postgresql://"):
        postgres = importlib.import_module("langchain_om.postgres")  # the optional extra
        opened = postgres.open_postgres(db)
        saver, store, close = opened.checkpointer, opened.store, opened.close
    else:
        saver, store, close = open_sqlite(db)
    return graph.copy(update={"checkpointer": saver, "store": store}), store, close


async def turn(graph: Any, thread_id: str, text: str) -> dict[str, Any]:
    """One user turn, run asynchronously as the server runs it."""
    cfg = {"configurable": {"thread_id": thread_id}}
    out = await graph.ainvoke({"messages": [HumanMessage(text)]}, cfg)
    # The agent's record is private state: read it from the checkpoint.
    record = (await graph.aget_state(cfg)).values.get("om_record") or {}
    return {"reply": out["messages"][-1].text, "observed": record.get("observed_message_count", 0)}


def main(argv: list[str]) -> None:
    db, name, thread_id, text = argv
    app = load_app()
    served, _, close = serve(app[name], db)
    try:
        print(json.dumps(asyncio.run(turn(served, thread_id, text))))
    finally:
        for memory in (app["memory"], app["graph_memory"]):
            memory.close()
        close()


if __name__ == "__main__":
    main(sys.argv[1:])
