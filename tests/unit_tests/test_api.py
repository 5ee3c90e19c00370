"""The package's version string (the public names are pinned in test_public_surface.py)."""

from __future__ import annotations

import langchain_om


def test_version() -> None:
    assert langchain_om.__version__.count(".") == 2
