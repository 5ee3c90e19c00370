"""Engine-side rules of the user-control options (``read_only``, ...)."""

from __future__ import annotations

from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import OMUsageError


def refuse_in_read_only(config: ObservationalMemoryConfig, method: str) -> None:
    """Raise when ``method`` would write to a ``read_only`` memory.

    Raises:
        OMUsageError: ``config.read_only`` is set.
    """
    if config.read_only:
        raise OMUsageError(
            f"memory.{method}() writes to the store, but this memory is read_only=True; use a "
            "memory built without read_only to change it."
        )
