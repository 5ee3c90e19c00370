"""The package's version string (the public names are pinned in test_public_surface.py)."""

from __future__ import annotations

from importlib.metadata import version

import langchain_om


def test_version() -> None:
    assert langchain_om.__version__.count(".") == 2


def test_the_installed_distribution_has_the_source_version() -> None:
    # ``langchain-om --version`` prints the installed distribution's version; hatch builds it
    # from ``__version__``, so a stale install (the source bumped, not reinstalled) fails here.
    assert version("langchain-om") == langchain_om.__version__
