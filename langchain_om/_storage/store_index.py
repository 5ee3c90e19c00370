"""The store's vector index: the embedder ``embeddings=`` names, and the check for one.

``from_sqlite(..., embeddings=...)``, ``from_postgres(..., embeddings=...)`` and
``ObservationalMemory(embeddings=...)`` take an ``Embeddings`` object or a
``"provider:model"`` string (``init_embeddings``) and build the store's index over the
``text`` field of memory's search documents. ``retrieval={"vector": True}`` on a store without
an index is refused at construction, not when the agent first calls ``recall``.
"""

from __future__ import annotations

from langchain.embeddings import init_embeddings
from langchain_core.embeddings import Embeddings
from langgraph.store.base import BaseStore, IndexConfig
from langgraph.store.memory import InMemoryStore

from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import OMConfigError

__all__ = ["EmbeddingsSpec", "check_vector_store", "default_store", "has_index", "store_index"]

EmbeddingsSpec = Embeddings | str
"""An ``Embeddings`` object or a ``"provider:model"`` string such as
``"openai:text-embedding-3-small"``."""

INDEX_FIELDS = ["text"]
"""The field of memory's search documents that is embedded."""


def resolve_embeddings(embeddings: EmbeddingsSpec) -> Embeddings:
    """``embeddings`` as an ``Embeddings`` object (a string goes through ``init_embeddings``)."""
    if isinstance(embeddings, Embeddings):
        return embeddings
    if not isinstance(embeddings, str) or ":" not in embeddings:
        raise OMConfigError(
            f"embeddings must be an Embeddings object or a 'provider:model' string, got "
            f"{embeddings!r}; e.g. embeddings='openai:text-embedding-3-small'."
        )
    try:
        return init_embeddings(embeddings)
    except ImportError as exc:
        provider = embeddings.split(":", 1)[0]
        raise OMConfigError(
            f"embeddings={embeddings!r} needs the {provider} provider package ({exc}); "
            f'install it, e.g. pip install "langchain-om[{provider}]", or pass an Embeddings '
            "object."
        ) from None


def store_index(embeddings: EmbeddingsSpec, dims: int | None = None) -> IndexConfig:
    """The store index for ``embeddings`` (``dims`` found by embedding one probe text)."""
    embedder = resolve_embeddings(embeddings)
    if dims is None:
        dims = len(embedder.embed_query("dimension probe"))
    if dims < 1:
        raise OMConfigError(f"embeddings dims must be positive, got {dims}.")
    return IndexConfig(embed=embedder, dims=dims, fields=list(INDEX_FIELDS))


def default_store(store: BaseStore | None, embeddings: EmbeddingsSpec | None) -> BaseStore:
    """``store``, else an in-memory store (indexed over ``embeddings`` when given)."""
    if store is None:
        return (
            InMemoryStore(index=store_index(embeddings))
            if embeddings is not None
            else (InMemoryStore())
        )
    if embeddings is not None:
        raise OMConfigError(
            "embeddings= indexes a store memory opens itself; this store was built already. "
            "Build it with index={'embed': ..., 'dims': ..., 'fields': ['text']} instead, or "
            "pass embeddings= to from_sqlite / from_postgres."
        )
    return store


def has_index(store: BaseStore) -> bool:
    """Whether ``store`` was built with a vector index (``index={"embed": ..., "dims": ...}``)."""
    return bool(getattr(store, "index_config", None))


def check_vector_store(config: ObservationalMemoryConfig, store: BaseStore) -> None:
    """Refuse ``retrieval.vector`` on a store without a vector index, naming the fix."""
    retrieval = config.retrieval
    if retrieval is None or not retrieval.vector or has_index(store):
        return
    raise OMConfigError(
        "retrieval.vector=True needs a store with a vector index, and this store has none "
        f"({type(store).__name__}). Pass embeddings=... (an Embeddings object or "
        "'provider:model') to ObservationalMemory, from_sqlite or from_postgres, or a store "
        "built with index={'embed': ..., 'dims': ..., 'fields': ['text']}; or set "
        "retrieval={'vector': False}."
    )
