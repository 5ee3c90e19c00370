"""Every docstring example in the package runs (offline, with the scripted models)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from types import ModuleType

import pytest

import langchain_om


def _modules() -> list[ModuleType]:
    names = [langchain_om.__name__] + [
        m.name
        for m in pkgutil.walk_packages(langchain_om.__path__, prefix="langchain_om.")
        if not m.name.endswith("pytest_plugin")
    ]
    modules = [importlib.import_module(n) for n in names]
    return [m for m in modules if ">>> " in (m.__loader__.get_source(m.__name__) or "")]  # type: ignore[union-attr]


@pytest.mark.parametrize("module", _modules(), ids=lambda m: m.__name__)
def test_docstring_examples_run(module: ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
