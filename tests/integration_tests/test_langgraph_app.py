"""``examples/langgraph_app`` under a harness that runs it like the LangGraph server."""

from __future__ import annotations

import asyncio
import importlib.machinery
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from langchain_om import ObservationalMemory
from langchain_om.testing import memory_model
from tests.app_harness import APP_DIR, load_app, serve, turn
from tests.helpers import POSTGRES_URL, ROOT, require_postgres

FACT = "I moved to Lisbon last spring and I work from the old tram depot. "


def _dev_sys_path(cwd: Path, dependencies: list[str]) -> list[str]:
    """The folders ``langgraph dev`` adds to ``sys.path``: the working folder, then each
    ``dependencies`` entry that is a folder there (langgraph-cli resolves them, and the
    graphs, against the working folder, not the config's)."""
    return [str(cwd)] + [str(cwd / dep) for dep in dependencies if (cwd / dep).is_dir()]


@pytest.mark.parametrize("cwd", [ROOT, APP_DIR], ids=["repo root", "app folder"])
def test_langgraph_json_finds_both_graphs_from_the_root_and_from_the_app_folder(
    cwd: Path,
) -> None:
    config = json.loads((APP_DIR / "langgraph.json").read_text(encoding="utf-8"))
    search = _dev_sys_path(cwd, config["dependencies"])
    # Every dependency exists next to the config too (what `langgraph build` requires).
    assert all((APP_DIR / dep).is_dir() for dep in config["dependencies"])
    app = load_app()
    for name, target in config["graphs"].items():
        module, attr = target.split(":")
        assert "/" not in module  # a module, found on sys.path, not a cwd-relative file
        package, _, leaf = module.rpartition(".")
        found = importlib.machinery.PathFinder.find_spec(package.split(".")[0], search)
        assert found is not None and found.submodule_search_locations, (name, search)
        roots = [Path(p) for p in found.submodule_search_locations]
        assert any(
            (r / "langgraph_app" / f"{leaf}.py").resolve() == APP_DIR / "app.py" for r in roots
        )
        graph = app[attr]
        # The server refuses graphs that bring their own storage.
        assert graph.checkpointer is None and graph.store is None, name


@pytest.mark.parametrize("name", ["agent", "graph"])
def test_two_turns_land_in_the_server_store_and_a_second_process_resumes(
    name: str, tmp_path: Path
) -> None:
    db = str(tmp_path / "server.db")
    app = load_app()
    served, store, close = serve(app[name], db)
    try:

        async def two_turns() -> list[dict[str, object]]:
            return [await turn(served, "maya", FACT * 8) for _ in range(2)]

        first, second = asyncio.run(two_turns())
        for memory in (app["memory"], app["graph_memory"]):
            memory.close()
        assert first["observed"] == 0
        assert second["observed"] == 2  # the first turn left the window
        archived = ObservationalMemory(model=memory_model(), store=store).archived_messages("maya")
        assert [m.type for m in archived] == ["human", "ai"]
        assert archived[0].text.startswith("I moved to Lisbon")
        # The memory's own store stayed empty: the server's store holds everything.
        assert list(app["memory"].store.list_namespaces()) == []
        assert list(app["graph_memory"].store.list_namespaces()) == []
    finally:
        close()

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.app_harness", db, name, "maya", "Where do I live?"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    resumed = json.loads(proc.stdout.strip().splitlines()[-1])
    remembered = re.search(r"\((\d+) things remembered\)", str(resumed["reply"]))
    assert remembered and int(remembered.group(1)) > 0, resumed
    assert resumed["observed"] >= 2


@pytest.mark.postgres
def test_two_server_workers_on_one_postgres_share_the_store() -> None:
    """Two worker processes serve the app on one PostgreSQL: each thread's archive lands in
    the shared store, and a third process resumes both threads with their memory."""
    require_postgres()
    tag = uuid.uuid4().hex[:8]
    threads = [f"app-{tag}-a", f"app-{tag}-b"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = (
        "import asyncio, json, sys\n"
        "from tests.app_harness import load_app, serve, turn\n"
        "app = load_app(); served, _, close = serve(app['agent'], sys.argv[1])\n"
        "async def main():\n"
        "    return [await turn(served, sys.argv[2], sys.argv[3]) for _ in range(2)]\n"
        "print(json.dumps(asyncio.run(main()))); app['memory'].close(); close()\n"
    )
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, POSTGRES_URL, thread, FACT * 8],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for thread in threads
    ]
    for proc in workers:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1])[1]["observed"] == 2
    app = load_app()
    served, store, close = serve(app["agent"], POSTGRES_URL)
    try:
        reader = ObservationalMemory(model=memory_model(), store=store)
        for thread in threads:
            assert [m.type for m in reader.archived_messages(thread)] == ["human", "ai"]
            resumed = asyncio.run(turn(served, thread, "Where do I live?"))
            remembered = re.search(r"\((\d+) things remembered\)", str(resumed["reply"]))
            assert remembered and int(remembered.group(1)) >= 2, resumed
            served.checkpointer.delete_thread(thread)
    finally:
        app["memory"].close()
        app["graph_memory"].close()
        close()
