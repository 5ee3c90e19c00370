"""Semantic recall in one line: ``embeddings=`` indexes the store, ``retrieval.vector``
without an index fails at construction, and search has a relevance floor."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langchain_om import ObservationalMemory
from langchain_om._storage.backends import OpenedStorage
from langchain_om.errors import OMConfigError, OMUsageError
from langchain_om.testing import HashEmbeddings, memory_model
from tests.helpers import search_facts

VECTOR: dict[str, Any] = {
    "model": memory_model(),
    "observation": {"message_tokens": 2_000, "buffer_tokens": False},
    "retrieval": {"vector": True},
}


def test_vector_without_an_indexed_store_fails_at_construction() -> None:
    with pytest.raises(OMConfigError, match=r"retrieval.vector=True needs .* embeddings="):
        ObservationalMemory(**VECTOR)
    with pytest.raises(OMConfigError, match="InMemoryStore"):
        ObservationalMemory(store=InMemoryStore(), **VECTOR)


def test_embeddings_index_the_default_store_and_search_finds_a_paraphrase() -> None:
    memory = ObservationalMemory(embeddings=HashEmbeddings(dims=128), **VECTOR)
    assert memory.store.index_config["dims"] == 128  # type: ignore[attr-defined]
    found, nothing = search_facts(memory)
    assert found["results"][0]["preview"].startswith("My sister's wedding")
    assert all(r["score"] >= 0.25 for r in found["results"])
    assert "note" not in found
    # A query matching nothing says so instead of listing the nearest noise.
    assert nothing["results"] == [] and nothing["count"] == 0
    assert "Nothing matched" in nothing["note"]


def test_the_relevance_floor_is_configurable() -> None:
    options = {**VECTOR, "retrieval": {"vector": True, "min_score": 0.0}}
    memory = ObservationalMemory(embeddings=HashEmbeddings(dims=128), **options)
    _, nothing = search_facts(memory)
    assert nothing["count"] > 0  # with no floor every document is a "hit"
    with pytest.raises(OMConfigError, match="min_score"):
        ObservationalMemory(model=memory_model(), retrieval={"min_score": 2})


def test_embeddings_with_a_ready_store_or_a_bad_spec_are_refused() -> None:
    with pytest.raises(OMConfigError, match="this store was built already"):
        ObservationalMemory(model=memory_model(), store=InMemoryStore(), embeddings="openai:x")
    with pytest.raises(OMConfigError, match="'provider:model'"):
        ObservationalMemory(model=memory_model(), embeddings="no-provider")


def test_from_sqlite_embeddings_names_the_sqlite_limit_here() -> None:
    if hasattr(sqlite3.connect(":memory:"), "enable_load_extension"):
        pytest.skip("this Python's sqlite3 loads extensions")
    with pytest.raises(OMConfigError, match="cannot load extensions.*from_postgres"):
        ObservationalMemory.from_sqlite(":memory:", embeddings=HashEmbeddings(dims=16), **VECTOR)


def test_a_memory_with_async_storage_closes_with_aclose() -> None:
    memory = ObservationalMemory(model=memory_model())
    closed: list[str] = []

    async def aclose() -> None:
        closed.append("pool")

    opened = OpenedStorage(memory.checkpointer, memory.store, aclose=aclose, is_async=True)
    memory._opened.append(opened)
    with pytest.raises(OMUsageError, match="await memory.aclose"):
        memory.close()

    async def run() -> None:
        async with memory:
            pass

    asyncio.run(run())
    assert closed == ["pool"]
    memory.close()  # nothing left to close: safe
