"""The package's version string (the public names are pinned in test_public_surface.py)."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import langchain_om


def test_version() -> None:
    assert langchain_om.__version__.count(".") == 2


def test_the_installed_distribution_has_the_source_version() -> None:
    # ``langchain-om --version`` prints the installed distribution's version; hatch builds it
    # from ``__version__``, so a stale install (the source bumped, not reinstalled) fails here.
    assert version("langchain-om") == langchain_om.__version__


def test_the_version_line_is_one_hatch_can_read() -> None:
    # hatch's version source is a regex over langchain_om/__init__.py: one line, a string literal.
    source = Path(langchain_om.__file__).read_text(encoding="utf-8")
    found = re.search(r"(?m)^__version__ = \"(?P<v>[^\"]+)\"$", source)
    assert found is not None and found["v"] == langchain_om.__version__
