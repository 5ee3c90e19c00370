"""Token accounting that follows the agent's provider and model (the original's arithmetic)."""

from __future__ import annotations

import base64
import copy
import json
import math
import struct
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from langchain_om import ObservationalMemory, TokenCounter
from langchain_om._core.callable_tokens import CallableTokenCounter, as_token_counter
from langchain_om._core.media_tokens import estimate_image_tokens
from langchain_om._core.tokens import CONVERSATION_OVERHEAD, MESSAGE_OVERHEAD, read_cache_entry
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import OMConfigError
from langchain_om.events import ObservationEndEvent, OMEvent, StatusEvent
from langchain_om.testing import ScriptedChatModel, memory_model
from tests.helpers import build_agent


def _png(w: int, h: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", w, h) + b"\x08\x02\0\0\0" * 4


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _tokens(counter: TokenCounter, block: dict[str, Any]) -> int:
    return counter.count_message(HumanMessage(content=[block])) - MESSAGE_OVERHEAD


# -- images: the original's expected values ------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "model", "w", "h", "detail", "extra", "expected"),
    [
        # OpenAI: base + tiles x tile after fitting 2048 / 768; "auto" is high above 768 px.
        ("openai", "gpt-4o", 1024, 1024, None, {}, 85 + 4 * 170),
        ("openai", "gpt-4o", 1024, 1024, "high", {}, 85 + 4 * 170),
        ("openai", "gpt-4o", 1024, 1024, "low", {}, 85),
        ("openai", "gpt-4o", 512, 512, None, {}, 85),  # auto: not over 768 px -> low
        ("openai", "gpt-4o", 512, 512, "high", {}, 85 + 170),
        ("openai", "gpt-4o", 2048, 4096, "high", {}, 85 + 6 * 170),  # -> 768x1536: 2x3 tiles
        ("openai", "gpt-5", 1024, 1024, None, {}, 70 + 4 * 140),
        ("openai", "gpt-5.5", 1024, 1024, None, {}, 70 + 4 * 140),
        ("openai", "gpt-4o-mini", 1024, 1024, None, {}, 2833 + 4 * 5667),  # 25 501
        ("openai", "gpt-4o-mini", 1024, 1024, "low", {}, 2833),
        ("openai", "o3", 1024, 1024, None, {}, 75 + 4 * 150),
        ("openai", "computer-use-preview", 1024, 1024, None, {}, 65 + 4 * 129),
        ("openai", "gpt-4o", None, None, None, {}, 85),  # unknown size: auto -> low
        ("openai", "gpt-4o", None, None, "high", {}, 85 + 4 * 170),  # fallback tiles
        ("openai", "gpt-4o", None, None, None, {"size_bytes": 3 << 20}, 85 + 6 * 170),
        ("openai", "gpt-4o", None, None, "high", {"size_bytes": 100_000}, 85 + 170),
        (None, None, None, None, None, {}, 85),  # unknown provider: OpenAI's default rates
        ("mistralai", "pixtral", 1024, 1024, None, {}, 765),
        # Anthropic: w*h/750 after the long edge is shrunk to 1568.
        ("anthropic", "claude-sonnet-4-5", 1024, 1024, None, {}, 1399),
        ("anthropic", "claude-sonnet-4-5", 200, 200, None, {}, 54),
        ("anthropic", "claude-sonnet-4-5", 3136, 600, None, {}, 628),  # -> 1568x300
        ("anthropic", "claude-sonnet-4-5", None, None, None, {}, 1600),
        ("anthropic", "claude-sonnet-4-5", None, None, None, {"size_bytes": 100_000}, 341),
        ("anthropic", "claude-sonnet-4-5", None, None, None, {"size_bytes": 1 << 20}, 1366),
        # Gemini 2.x: 258 per 768-px tile; Gemini 3: by media resolution.
        ("google_genai", "gemini-2.5-flash", 769, 769, None, {}, 1032),
        ("google_genai", "gemini-2.5-flash", 768, 768, None, {}, 258),
        ("google_genai", "gemini-2.0-flash", None, None, None, {}, 258),
        ("google", "gemini-3-pro-preview", 4000, 3000, None, {"media_resolution": "medium"}, 560),
        ("google", "gemini-3-pro-preview", 4000, 3000, None, {"media_resolution": "low"}, 280),
        ("google", "gemini-3-flash", None, None, None, {"media_resolution": "ultra_high"}, 2240),
        ("google", "gemini-3-flash", None, None, None, {}, 1120),
        ("google_vertexai", "models/gemini-3-pro", 10, 10, None, {}, 1120),
    ],
)
def test_image_table(
    provider: str | None,
    model: str | None,
    w: int | None,
    h: int | None,
    detail: str | None,
    extra: dict[str, Any],
    expected: int,
) -> None:
    assert estimate_image_tokens(provider, w, h, detail, model=model, **extra) == expected


def test_anthropic_cap_differs_from_the_original() -> None:
    # Deliberate difference: the original only shrinks the long edge (2000x1500 -> 1568x1176
    # -> 2459 tokens). Anthropic documents that it also scales an image down until it costs
    # about 1600 tokens, so the estimate is capped there.
    assert estimate_image_tokens("anthropic", 2000, 1500) == 1600


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("openai/gpt-4o", 85),
        ("anthropic/claude-sonnet-4-5", 1),  # ceil(1 * 1 / 750)
        ("google_genai/gemini-2.5-flash", 258),
        (None, 85),
    ],
)
def test_one_pixel_png(model_id: str | None, expected: int) -> None:
    counter = TokenCounter().for_model(model_id)
    block = {"type": "image", "base64": _b64(_png(1, 1)), "mime_type": "image/png"}
    assert _tokens(counter, block) == expected


def test_counter_follows_the_agent_model_unless_pinned() -> None:
    block = {"type": "image", "base64": _b64(_png(1024, 1024)), "mime_type": "image/png"}
    base = TokenCounter()
    assert _tokens(base.for_model("anthropic/claude-sonnet-4-5"), dict(block)) == 1399
    assert _tokens(base.for_model("openai/gpt-4o"), dict(block)) == 765
    assert _tokens(base.for_model("openai/gpt-4o-mini"), dict(block)) == 25_501
    assert base.for_model("openai/gpt-4o") is base.for_model("openai/gpt-4o")
    pinned = TokenCounter(provider="openai")
    assert pinned.for_model("anthropic/claude-sonnet-4-5") is pinned


def test_unknown_size_url_and_octet_stream_png() -> None:
    counter = TokenCounter().for_model("openai/gpt-4o")
    assert _tokens(counter, {"type": "image", "url": "https://x.test/a.png"}) == 85
    octet = {
        "type": "file",
        "url": "https://x.test/photo.png?sig=1",
        "mime_type": "application/octet-stream",
    }
    assert _tokens(counter, dict(octet)) == 85  # counted as an image, not a file
    claude = TokenCounter().for_model("anthropic/claude-sonnet-4-5")
    assert _tokens(claude, dict(octet)) == 1600


# -- files by descriptor -------------------------------------------------------------------------


def test_pdf_by_descriptor_inline_or_url() -> None:
    # Deliberate difference: the newest original estimates inline PDFs from their bytes
    # (max(500, bytes/4): 37 500 for this one, more than the default message_tokens). A
    # descriptor estimate keeps one upload from forcing an observation and costs the same
    # inline or by URL, as the original did before.
    pdf = _b64(b"%PDF-1.7" + b"\0" * 149_992)  # 150 kB
    inline = {"type": "file", "base64": pdf, "mime_type": "application/pdf", "filename": "r.pdf"}
    url = {"type": "file", "url": "https://files.test/r.pdf", "mime_type": "application/pdf"}
    for model_id in ("openai/gpt-4o", "anthropic/claude-sonnet-4-5", "google/gemini-2.5-pro"):
        counter = TokenCounter().for_model(model_id)
        a, b = _tokens(counter, dict(inline)), _tokens(counter, dict(url))
        assert 0 < a < 500 and 0 < b < 500
        assert abs(a - b) <= 50


@pytest.mark.parametrize(
    ("model_id", "block", "per_unit", "units"),
    [
        (
            "anthropic/claude-sonnet-4-5",
            {"mime_type": "application/pdf", "page_count": 10},
            1500,
            10,
        ),
        ("google/gemini-2.5-pro", {"mime_type": "application/pdf", "pages": 10}, 258, 10),
        ("openai/gpt-4o", {"mime_type": "application/pdf", "metadata": {"pages": 3}}, 1000, 3),
        ("google/gemini-2.5-pro", {"mime_type": "audio/wav", "duration": 60}, 32, 60),
        ("openai/gpt-4o-audio", {"mime_type": "audio/mp3", "duration_ms": 30_000}, 10, 30),
        ("google/gemini-2.5-pro", {"mime_type": "video/mp4", "extras": {"seconds": 10}}, 263, 10),
        (None, {"mime_type": "audio/ogg", "duration": 10}, 32, 10),
    ],
)
def test_files_by_pages_and_duration(
    model_id: str | None, block: dict[str, Any], per_unit: int, units: int
) -> None:
    counter = TokenCounter().for_model(model_id)
    described = {"type": "file", "url": "https://files.test/x", **block}
    bare = {k: v for k, v in described.items() if k not in ("page_count", "pages", "duration")}
    bare.pop("duration_ms", None)
    bare.pop("metadata", None)
    bare.pop("extras", None)
    descriptor = _tokens(counter, bare)
    assert descriptor < 50
    assert _tokens(counter, described) == descriptor + per_unit * units


def test_audio_block_without_duration_costs_its_descriptor() -> None:
    clip = {"type": "audio", "base64": _b64(b"\0" * 1_500_000), "mime_type": "audio/wav"}
    assert _tokens(TokenCounter().for_model("openai/gpt-4o"), clip) < 50  # not 375 000


def test_client_token_estimate_is_honoured_and_cached_as_client() -> None:
    block = {
        "type": "file",
        "url": "s3://bucket/blob",
        "mime_type": "application/pdf",
        "metadata": {"token_estimate": 12_345},
    }
    message = HumanMessage(content=[block])
    counter = TokenCounter().for_model("anthropic/claude-sonnet-4-5")
    assert counter.count_message(message) == 12_345 + MESSAGE_OVERHEAD
    entry = read_cache_entry(message)
    assert entry is not None
    (part,) = entry["parts"]
    assert part == {"k": "client=12345", "n": 12_345, "s": "client"}
    image = {"type": "image", "url": "https://x.test/a.png", "extras": {"token_estimate": 7}}
    assert _tokens(counter, image) == 7


# -- LangChain counters --------------------------------------------------------------------------


def test_langchain_callables_are_accepted() -> None:
    memory = ObservationalMemory(model=memory_model(), token_counter=count_tokens_approximately)
    messages: list[BaseMessage] = [HumanMessage("hello there " * 20), AIMessage("fine, thanks")]
    assert isinstance(memory.counter, CallableTokenCounter)
    assert memory.counter.count_messages(messages) == count_tokens_approximately(messages)
    approximate = as_token_counter("approximate")
    assert approximate.count_messages(messages) == count_tokens_approximately(messages)
    with pytest.raises(OMConfigError, match="token_counter") as info:
        as_token_counter(42)
    assert info.value.option == "token_counter"


def test_callable_counts_are_cached_per_message_also_on_reloaded_copies() -> None:
    calls: list[int] = []

    def count(messages: list[BaseMessage]) -> int:
        calls.append(len(messages))
        return sum(len(m.text) for m in messages) + 2 * len(messages) + 1

    counter = as_token_counter(count)
    messages: list[BaseMessage] = [HumanMessage(f"message {i} " * 10) for i in range(5)]
    total = counter.count_messages(messages)
    assert total == count(messages)
    calls.clear()
    assert counter.count_messages(messages) == total
    reloaded = [type(m).model_validate(json.loads(m.model_dump_json())) for m in messages]
    assert counter.count_messages(reloaded) == total
    assert counter.count_messages(copy.deepcopy(messages)) == total
    assert calls == []  # every count came from the cache
    messages[2].content = "changed"
    counter.count_messages(messages)
    assert calls == [1]  # only the changed message was recounted


def test_non_additive_callable_counts_the_whole_list() -> None:
    counter = CallableTokenCounter(lambda ms: len(ms) ** 2, per_message=False)
    assert counter.count_messages([HumanMessage("a")] * 3) == 9


def test_bad_callable_result_names_the_option() -> None:
    counter = as_token_counter(lambda ms: "many")
    with pytest.raises(OMConfigError, match="instead of a token count"):
        counter.count_messages([HumanMessage("x")])


# -- fractional thresholds -----------------------------------------------------------------------


def test_fraction_thresholds_resolve_against_the_context_window() -> None:
    config = ObservationalMemoryConfig.coerce(
        {"observation": {"messageTokens": ("fraction", 0.4)}},
        reflection={"observation_tokens": ["fraction", 0.25]},
    )
    assert config.uses_fractions
    resolved = config.for_context_window(200_000)
    assert resolved.observation.message_tokens == 80_000
    assert resolved.observation.buffer_interval_tokens == 16_000
    assert resolved.observation.block_after_tokens == 96_000
    assert resolved.reflection.observation_tokens == 50_000
    with pytest.raises(OMConfigError, match="max_input_tokens") as info:
        config.for_context_window(None, model="'x/y'")
    assert info.value.option == "observation.message_tokens"
    assert "profile={'max_input_tokens'" in info.value.message
    with pytest.raises(OMConfigError, match="actor_model="):
        _ = config.observation.block_after_tokens
    with pytest.raises(OMConfigError) as bad:
        ObservationalMemoryConfig.coerce(observation={"message_tokens": ("fraction", 1.5)})
    assert bad.value.option == "observation.message_tokens"


def test_standalone_fraction_needs_an_actor_model() -> None:
    memory = ObservationalMemory(
        model=memory_model(), observation={"message_tokens": ("fraction", 0.4)}
    )
    with pytest.raises(OMConfigError, match="actor_model"):
        memory.add_messages("t", [HumanMessage("hi")])
    actor = ScriptedChatModel(script=["ok"], profile={"max_input_tokens": 10_000})
    ok = ObservationalMemory(
        model=memory_model(), observation={"message_tokens": ("fraction", 0.4)}, actor_model=actor
    )
    assert ok.add_messages("t", [HumanMessage("hi")]).status.messages.threshold == 4_000


# -- agents end to end ---------------------------------------------------------------------------


def _run_agent(
    memory: ObservationalMemory, actor: ScriptedChatModel, turns: list[HumanMessage]
) -> tuple[list[int], list[StatusEvent]]:
    """Run the turns; return the turns (1-based) in which an observation ended."""
    observed: list[int] = []
    statuses: list[StatusEvent] = []
    current = [0]

    def on_event(event: OMEvent) -> None:
        if isinstance(event, ObservationEndEvent):
            observed.append(current[0])
        if isinstance(event, StatusEvent):
            statuses.append(event)

    memory.on_debug_event = on_event
    agent = build_agent(memory, actor, tools=[])
    config: Any = {"configurable": {"thread_id": "t1"}}
    for i, message in enumerate(turns, start=1):
        current[0] = i
        agent.invoke({"messages": [message]}, config)
    return observed, statuses


def test_agent_with_uploads_observes_when_the_provider_formula_says() -> None:
    image = _b64(_png(1024, 1024))
    pdf = _b64(b"%PDF-1.7" + b"\0" * 149_992)  # 150 kB: 37 500 tokens if billed by bytes
    turns: list[HumanMessage] = []
    for t in range(1, 31):
        content: list[Any] = [
            {"type": "text", "text": f"Turn {t}: here is the next scan."},
            {"type": "image", "base64": image, "mime_type": "image/png"},
        ]
        if t % 5 == 0:
            content.append(
                {"type": "file", "base64": pdf, "mime_type": "application/pdf", "filename": "s.pdf"}
            )
        turns.append(HumanMessage(content=content))
    threshold = 20_000
    counter = TokenCounter()
    image_tokens = math.ceil(1024 * 1024 / 750)  # Claude: w*h/750
    pdf_tokens = counter.count_text("file application/pdf s.pdf")  # its descriptor
    window = CONVERSATION_OVERHEAD
    predicted = None
    for t, message in enumerate(turns, start=1):
        first = message.content[0]
        assert isinstance(first, dict)
        human = MESSAGE_OVERHEAD + counter.count_text(first["text"]) + image_tokens
        human += pdf_tokens if t % 5 == 0 else 0
        window += human
        if window >= threshold:
            predicted = t
            break
        window += MESSAGE_OVERHEAD + counter.count_text("ok")  # the reply
    assert predicted is not None and predicted > 5  # old accounting observed at the first PDF
    actor = ScriptedChatModel(
        script=["ok"], repeat_last=True, model="claude-sonnet-4-5", provider="anthropic"
    )
    memory = ObservationalMemory(
        model=memory_model(),
        observation={"message_tokens": threshold, "buffer_tokens": False},
    )
    observed, _ = _run_agent(memory, actor, turns)
    assert observed and observed[0] == predicted


def test_agent_with_approximate_counter_and_fraction_thresholds() -> None:
    actor = ScriptedChatModel(
        script=["Noted, thank you."], repeat_last=True, profile={"max_input_tokens": 1_000}
    )
    memory = ObservationalMemory(
        model=memory_model(),
        token_counter=count_tokens_approximately,
        observation={"message_tokens": ("fraction", 0.4), "buffer_tokens": False},
        reflection={"observation_tokens": ("fraction", 0.5)},
    )
    turns = [
        HumanMessage(f"Fact {t}: my cousin number {t} lives in city {t}. " * 3) for t in range(12)
    ]
    window: list[BaseMessage] = []
    predicted = None
    for t, message in enumerate(turns, start=1):
        window.append(message)
        per_message = sum(count_tokens_approximately([m]) for m in window)
        if per_message >= 400:
            predicted = t
            break
        window.append(AIMessage("Noted, thank you."))
    observed, statuses = _run_agent(memory, actor, turns)
    assert {s.messages.threshold for s in statuses} == {400}  # 0.4 x 1 000
    assert {s.observations.threshold for s in statuses} == {500}
    assert predicted is not None and observed and observed[0] == predicted
