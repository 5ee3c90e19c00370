"""``langgraph dev`` (``langgraph-cli[inmem]``) loads ``examples/langgraph_app`` and serves both
of its graphs over HTTP on loopback, run from the repository root or from the app folder;
memory's archive lands in the server's store."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from tests.app_harness import APP_DIR
from tests.helpers import ROOT

pytestmark = pytest.mark.slow

FACT = "I moved to Lisbon last spring and I work from the old tram depot. "
STARTUP_DEADLINE = 90.0
"""Seconds the server may take to come up (not a timing assertion: it fails only if it never
answers)."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ok(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_DEADLINE
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"langgraph dev did not answer:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and everything it started (its own process group)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # anything of the group still alive


@pytest.fixture(params=["repo root", "app folder"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``langgraph dev`` as the READMEs run it: from the repository root with
    ``--config examples/langgraph_app/langgraph.json``, or from the app folder."""
    pytest.importorskip("langgraph_api")
    pytest.importorskip("langgraph_sdk")
    cli = shutil.which("langgraph", path=str(Path(sys.executable).parent))
    if cli is None:
        pytest.skip("langgraph-cli is not installed (pip install 'langgraph-cli[inmem]')")
    # A copy of the repository's layout: the server writes .langgraph_api/ in its working folder.
    repo = tmp_path / "repo"
    shutil.copytree(APP_DIR, repo / "examples" / "langgraph_app")
    if request.param == "repo root":
        cwd, config = repo, "examples/langgraph_app/langgraph.json"
    else:
        cwd, config = repo / "examples" / "langgraph_app", "langgraph.json"
    port = _free_port()
    log = tmp_path / "server.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    command = [cli, "dev", "--config", config, "--port", str(port)]
    command += ["--host", "127.0.0.1", "--no-browser", "--no-reload"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ok(url, proc, log)
        with get_sync_client(url=url) as client:
            served = {a["graph_id"] for a in client.assistants.search(limit=20)}
        if served != {"agent", "graph"}:
            pytest.fail(f"langgraph dev serves {served}:\n{log.read_text()[-3000:]}")
        yield url, log
    finally:
        _stop(proc)
    assert proc.poll() is not None  # no server outlives its test, failed or not


@pytest.mark.parametrize("graph", ["agent", "graph"])
def test_langgraph_dev_runs_two_turns_into_the_server_store(
    server: tuple[str, Path], graph: str
) -> None:
    url, log = server
    with get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        replies = []
        turn: dict[str, Any] = {"messages": [{"role": "user", "content": FACT * 8}]}
        for _ in range(2):
            run = client.runs.wait(thread, graph, input=turn)
            assert isinstance(run, dict), run
            replies.append(run["messages"][-1]["content"])
        state = client.threads.get_state(thread)["values"]
        # The archive is in the server's store, where every worker sees it.
        found = client.store.search_items(["langchain_om", "archive"], limit=50)
    assert "(0 things remembered)" in replies[0]
    assert "(2 things remembered)" in replies[1]
    assert isinstance(state, dict)
    assert state["om_record"]["observed_message_count"] == 2
    mine = [i for i in found["items"] if i["value"].get("thread_id") == thread]
    assert len(mine) == 2, found
    assert "Blocking call" not in log.read_text(errors="replace")
