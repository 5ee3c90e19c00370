"""pytest plugin: fail any test that builds a real provider chat model or embeddings client.

Enable it in your suite's root ``conftest.py``::

    pytest_plugins = ["langchain_om.testing.pytest_plugin"]

An autouse fixture, ``_no_real_provider_clients``, then fails a test (``pytest.fail``, which
``except Exception`` cannot swallow) the moment it constructs a ``BaseChatModel`` or
``Embeddings`` subclass that is not an allowed fake. Allowed are classes defined in:

- ``langchain_om`` (it ships no provider clients; its fakes live in ``langchain_om.testing``),
- the fakes of ``langchain_core`` and ``langchain_community``
  (``language_models.fake``/``fake_chat_models``, ``chat_models.fake``, ``embeddings.fake``),
- ``langchain_tests``,
- test code: a module named ``test_*``, ``*_test`` or ``conftest``, inside a ``tests``/``test``
  package, or whose file sits directly in a ``tests``/``test`` folder,
- module prefixes listed in the ``langchain_om_allowed_modules`` ini option.

Mark a test ``@pytest.mark.real_provider`` to allow real clients (e.g. to check that a model
spec resolves to ``ChatOpenAI``; construction needs no network). The plugin registers the
marker.

The check hooks ``__new__`` of ``BaseChatModel`` and ``Embeddings`` once per process (so it
also sees ``model_construct``); outside a guarded test the hook only passes through.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

__all__ = ["ALLOWED_MODULE_PREFIXES", "is_allowed_fake"]

ALLOWED_MODULE_PREFIXES: tuple[str, ...] = (
    "langchain_om",
    "langchain_core.language_models.fake",
    "langchain_core.language_models.fake_chat_models",
    "langchain_core.embeddings.fake",
    "langchain_community.chat_models.fake",
    "langchain_community.embeddings.fake",
    "langchain_tests",
    "tests",
)
"""Module prefixes whose chat models and embeddings may be built in any test."""

_INI = "langchain_om_allowed_modules"
_TEST_NAME = re.compile(r"^(test_.*|.*_test|conftest)$")
_TEST_DIRS = frozenset({"tests", "test"})

_check: Callable[[type], None] | None = None
"""The active guard's check, or ``None`` outside a guarded test (set by the fixture)."""


def is_allowed_fake(cls: type, extra_prefixes: tuple[str, ...] = ()) -> bool:
    """Whether a chat model or embeddings class may be built in a guarded test.

    Args:
        cls: the class being instantiated.
        extra_prefixes: more allowed module prefixes.

    Returns:
        True for classes from the allowed modules or from test code.
    """
    module = cls.__module__
    for prefix in (*ALLOWED_MODULE_PREFIXES, *extra_prefixes):
        if module == prefix or module.startswith(prefix + "."):
            return True
    *packages, name = module.split(".")
    if _TEST_NAME.match(name) or not _TEST_DIRS.isdisjoint(packages):
        return True
    file = getattr(sys.modules.get(module), "__file__", None)  # e.g. tests/fakes.py as "fakes"
    return file is not None and PurePath(file).parent.name in _TEST_DIRS


def _guarded_new(base: type[Any]) -> Callable[..., Any]:
    def guarded_new(cls: type, *args: Any, **kwargs: Any) -> Any:
        if _check is not None:
            _check(cls)
        parent_new = super(base, cls).__new__
        return parent_new(cls) if parent_new is object.__new__ else parent_new(cls, *args, **kwargs)

    guarded_new.__langchain_om_guard__ = True  # type: ignore[attr-defined]
    return guarded_new


def _install_hooks() -> None:
    for base in (BaseChatModel, Embeddings):
        if not getattr(base.__dict__.get("__new__"), "__langchain_om_guard__", False):
            # Set once and never removed: CPython cannot cleanly delete a ``__new__`` override.
            base.__new__ = _guarded_new(base)  # type: ignore[method-assign]


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``langchain_om_allowed_modules`` ini option."""
    parser.addini(
        _INI,
        type="linelist",
        default=[],
        help="extra module prefixes whose chat models/embeddings tests may build",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``real_provider`` marker."""
    config.addinivalue_line(
        "markers",
        "real_provider: the test may build real provider chat models or embeddings clients",
    )


@pytest.fixture(autouse=True)
def _no_real_provider_clients(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Fail the test if it builds a real provider client, unless marked ``real_provider``."""
    if request.node.get_closest_marker("real_provider") is not None:
        monkeypatch.setattr(sys.modules[__name__], "_check", None)
        yield
        return
    extra = tuple(str(p) for p in request.config.getini(_INI))
    node_id = request.node.nodeid

    def check(cls: type) -> None:
        if is_allowed_fake(cls, extra):
            return
        kind = "chat model" if issubclass(cls, BaseChatModel) else "embeddings client"
        pytest.fail(
            f"{node_id} built a real provider {kind}: {cls.__module__}.{cls.__qualname__}. "
            "Tests run offline: use langchain_om.testing.ScriptedChatModel or "
            "FunctionChatModel, or mark the test @pytest.mark.real_provider if it only needs "
            "to construct the client.",
            pytrace=True,
        )

    _install_hooks()
    monkeypatch.setattr(sys.modules[__name__], "_check", check)
    yield
