"""One rule for a memory that names no model, in the library and on the command line.

No model named: the first default that can run here (its package installed, its API key set),
else the offline extractive Observer, with one warning saying what is missing and how to name
a model. A model that is named is never replaced. The missing ``[google]`` extra is simulated
the way a venv without it looks to Python: the module cannot be found.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Iterator

import pytest

from langchain_om import ObservationalMemory
from langchain_om._cli.backend import open_backend
from langchain_om._engine import default_model as rule
from langchain_om.cli import build_parser
from langchain_om.errors import MissingProviderError
from langchain_om.offline import ExtractiveObserver

KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY")


@pytest.fixture(autouse=True)
def _bare_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No API key set, ``langchain-google-genai`` not importable, no notice given yet."""
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setitem(sys.modules, "langchain_google_genai", None)  # as if not installed
    monkeypatch.setattr(rule, "_warned", set())
    yield


def test_no_model_and_nothing_runnable_falls_back_to_the_offline_observer_once() -> None:
    with pytest.warns(UserWarning) as caught:
        memory = ObservationalMemory()
    assert len(caught) == 1
    text = str(caught[0].message)
    assert 'pip install "langchain-om[google]"' in text
    assert "OPENAI_API_KEY" in text
    assert "offline extractive Observer" in text
    assert 'model="provider/name"' in text
    assert caught[0].filename == __file__  # points at the caller's line
    assert isinstance(memory.config.model, ExtractiveObserver)
    # It works: the offline Observer observes without any network.
    snap = memory.observe(thread_id="t", messages=[("user", "My budget is 1,400 EUR a month.")])
    assert "1,400 EUR" in snap.observations
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process: the second memory is quiet
        again = ObservationalMemory.from_sqlite(":memory:")
    assert isinstance(again.config.model, ExtractiveObserver)
    again.close()


def test_no_model_with_an_openai_key_uses_the_next_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    with pytest.warns(UserWarning, match=r"\[google\].*memory uses openai/gpt-5-mini"):
        memory = ObservationalMemory()
    assert memory.config.model == "openai/gpt-5-mini"


def test_no_model_with_the_first_default_runnable_uses_it_without_a_word(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        "langchain_om._engine.providers._installed", lambda module: module != "nothing"
    )  # langchain-google-genai "installed"
    monkeypatch.setenv("GEMINI_API_KEY", "test-not-a-key")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        memory = ObservationalMemory()
    assert memory.config.model == "google/gemini-2.5-flash"
    assert memory.config.uses_default_observer_model


def test_a_package_without_its_key_is_passed_over_naming_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("langchain_om._engine.providers._installed", lambda module: True)
    picked = rule.pick_default_model()
    assert picked.spec is None
    assert picked.passed_over == (
        "google/gemini-2.5-flash needs GOOGLE_API_KEY, which is not set",
        "openai/gpt-5-mini needs OPENAI_API_KEY, which is not set",
    )


def test_a_named_model_is_never_replaced() -> None:
    with pytest.raises(MissingProviderError, match=r'pip install "langchain-om\[google\]"'):
        ObservationalMemory(model="google/gemini-2.5-flash")
    with pytest.warns(UserWarning, match="OPENAI_API_KEY is not set"):
        memory = ObservationalMemory(observation={"model": "openai/gpt-5-mini"})
    assert memory.config.observer_model_spec == "openai/gpt-5-mini"


def test_read_only_and_disabled_memories_take_the_rule_quietly() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reader = ObservationalMemory(read_only=True)
        off = ObservationalMemory(False)
    assert isinstance(reader.config.model, ExtractiveObserver)
    assert off.config.model is None


def _replay_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["replay", "x.jsonl", *argv])


def test_the_cli_follows_the_same_rule_and_says_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    said: list[str] = []
    with open_backend(_replay_args(), said.append) as backend:
        assert isinstance(backend.memory_model, ExtractiveObserver)
    assert said[0] == rule.pick_default_model().notice
    with pytest.warns(UserWarning) as caught:
        ObservationalMemory()
    assert str(caught[0].message) == said[0]
