from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import json
import struct
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import tiktoken.load
import tiktoken.registry
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_om._core import encodings as offline
from langchain_om._core import token_cache, tokens
from langchain_om._core.token_cache import CACHE_VERSION, read_cache_entry
from langchain_om._core.tokens import (
    CONVERSATION_OVERHEAD,
    HEURISTIC_SOURCE,
    MESSAGE_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    TokenCounter,
    count_tokens,
    get_default_counter,
    heuristic_count,
    reset_fallback_warning,
)
from langchain_om.errors import OMConfigError

HELLO = "Hello, observational memory!"
PARAGRAPHS = [
    "Observational memory keeps long conversations small. When the unobserved messages pass a "
    "token threshold, an Observer model writes short dated notes about what happened, and the "
    "raw messages leave the context window. Later, a Reflector condenses the notes themselves.",
    "The weather in Paris was mild on Tuesday, so we walked along the river for almost two "
    "hours before dinner. My sister, who had just flown in from Tokyo, insisted on trying the "
    "small bakery near the station; it was closed, of course, but the one next door was fine.",
    "To deploy the service, first run the database migration, then restart the workers one at "
    "a time. If a worker fails its health check within thirty seconds, roll back the release "
    "and open an incident. Do not skip the migration: the new code expects the extra column.",
    "Customers who requested a refund before the end of the month will receive it within five "
    "business days. Anyone who paid by bank transfer should double-check the account number "
    "in their profile, because we cannot reverse a payment sent to the wrong account.",
]


@pytest.fixture(autouse=True, scope="module")
def _private_tiktoken_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep this module's seeding out of the system temp folder."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("tiktoken-cache")))
    yield
    mp.undo()


@pytest.fixture
def counter() -> TokenCounter:
    c = TokenCounter()
    assert c.source == "tiktoken:o200k_base"
    return c


def _entry(message: BaseMessage) -> dict[str, Any]:
    entry = read_cache_entry(message)
    assert entry is not None
    return entry


def _stored(message: BaseMessage) -> list[Any]:
    """The entry as stored: [tag, key, count, key, count, ...]."""
    entry = message.response_metadata["langchain_om"]["tok"]
    assert isinstance(entry, list)
    return entry


# -- offline tiktoken ------------------------------------------------------------------------


def test_seeds_cache_from_scratch_and_counts_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_download(blobpath: str) -> bytes:
        raise AssertionError(f"tiktoken tried to download {blobpath}")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.load, "read_file", no_download)
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # force tiktoken to read the file
    monkeypatch.setattr(tokens, "_LOADED", {})

    c = TokenCounter()
    assert not list(tmp_path.iterdir())  # construction is lazy
    assert c.source == "tiktoken:o200k_base"
    assert c.count_text(HELLO) == 5

    cached = tmp_path / "fb374d419588a4632f3f557e76b4b70aebbca790"
    assert cached.is_file()
    assert (
        hashlib.sha256(cached.read_bytes()).hexdigest()
        == offline.ENCODING_FILES["o200k_base"].sha256
    )
    ranks = offline.ranks_path("o200k_base", str(tmp_path))
    # No temp file left behind: the BPE file and the ranks file built from it.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([cached.name, ranks.name])

    # The 5 is right: these are the pieces, each a single entry of the BPE vocabulary.
    enc = tiktoken.registry.ENCODINGS["o200k_base"]
    pieces = [enc.decode([t]) for t in enc.encode_ordinary(HELLO)]
    assert pieces == ["Hello", ",", " observational", " memory", "!"]
    vocab = {line.split()[0] for line in cached.read_bytes().splitlines()}
    assert all(base64.b64encode(p.encode()) in vocab for p in pieces)


def test_later_loads_build_the_encoding_from_the_ranks_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    reference = offline.load_encoding("o200k_base")  # the BPE file, then the ranks file
    ranks = offline.ranks_path("o200k_base", str(tmp_path))
    assert ranks.is_file()

    def no_bpe_file(name: str) -> tiktoken.Encoding:
        raise AssertionError(f"loaded {name} from its BPE file again")

    monkeypatch.setattr(tiktoken, "get_encoding", no_bpe_file)
    fast = offline.load_encoding("o200k_base")
    assert fast._mergeable_ranks == reference._mergeable_ranks
    assert fast._special_tokens == reference._special_tokens
    for text in [HELLO, *PARAGRAPHS, "日本語のテキスト 🎉", "<|endoftext|> x"]:
        assert fast.encode_ordinary(text) == reference.encode_ordinary(text)
    # A corrupt or truncated ranks file is ignored (the BPE file is loaded) and rewritten.
    monkeypatch.undo()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    for damaged in (ranks.read_bytes()[:-10], b"not json\n", b""):
        ranks.write_bytes(damaged)
        again = offline.load_encoding("o200k_base")
        assert again.encode_ordinary(HELLO) == reference.encode_ordinary(HELLO)
        assert offline._read_ranks(ranks, "o200k_base", offline.ENCODING_FILES["o200k_base"].sha256)


def test_an_unwritable_ranks_file_only_costs_speed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    offline.ranks_path("o200k_base", str(tmp_path)).mkdir(parents=True)  # a folder in its way
    encoding = offline.load_encoding("o200k_base")
    assert encoding.encode_ordinary(HELLO) == [13225, 11, 172525, 8197, 0]
    assert "tokenizer_ranks_unwritable" in caplog.text


def test_seed_cache_replaces_a_corrupt_file_atomically(tmp_path: Path) -> None:
    file = offline.ENCODING_FILES["cl100k_base"]
    target = offline.cache_path(file, str(tmp_path))
    target.write_bytes(b"garbage")
    assert offline.seed_cache(file, str(tmp_path)) == target
    assert hashlib.sha256(target.read_bytes()).hexdigest() == file.sha256
    before = target.stat().st_mtime_ns
    offline.seed_cache(file, str(tmp_path))  # valid already: left alone
    assert target.stat().st_mtime_ns == before


def test_seed_cache_errors_say_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(offline.OfflineEncodingError, match="not bundled"):
        offline.seed_cache(offline.ENCODING_FILES["r50k_base"], str(tmp_path))
    with pytest.raises(offline.OfflineEncodingError, match="disables tiktoken's cache"):
        offline.seed_cache(offline.ENCODING_FILES["o200k_base"], "")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(offline.OfflineEncodingError, match="TIKTOKEN_CACHE_DIR"):
        offline.seed_cache(offline.ENCODING_FILES["o200k_base"], str(blocker / "sub"))
    with pytest.raises(offline.OfflineEncodingError, match="unknown encoding"):
        offline.load_encoding("gpt2")


def test_cache_dir_follows_tiktoken_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", "/somewhere")
    assert offline.cache_dir() == "/somewhere"
    monkeypatch.delenv("DATA_GYM_CACHE_DIR")
    assert offline.cache_dir().endswith("data-gym-cache")


# -- construction, loading, fallback ------------------------------------------------------------


class FakeLoader:
    def __init__(self, fail: bool = False, delay: float = 0.0) -> None:
        self.calls = 0
        self.fail = fail
        self.delay = delay

    def __call__(self, name: str) -> Callable[[str], list[int]]:
        self.calls += 1
        time.sleep(self.delay)
        if self.fail:
            raise offline.OfflineEncodingError("no bundled file (simulated)")
        return lambda text: list(range(len(text.split())))


@pytest.fixture
def fake_loader(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeLoader]:
    def install(fail: bool = False, delay: float = 0.0) -> FakeLoader:
        loader = FakeLoader(fail, delay)
        monkeypatch.setattr(tokens, "_load_tiktoken", loader)
        monkeypatch.setattr(tokens, "_LOADED", {})
        monkeypatch.setattr(tokens, "_fallback_warned", False)
        return loader

    return install


def test_construction_is_lazy_and_loading_happens_once(
    fake_loader: Callable[..., FakeLoader],
) -> None:
    loader = fake_loader(delay=0.05)
    counters = [TokenCounter() for _ in range(8)]
    assert loader.calls == 0
    threads = [threading.Thread(target=c.count_text, args=("a b c",)) for c in counters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loader.calls == 1
    assert {c.source for c in counters} == {"tiktoken:o200k_base"}
    assert counters[0].count_text("one two three four") == 4  # the fake tokenizer is used


def test_fallback_warns_once_then_stays_quiet(fake_loader: Callable[..., FakeLoader]) -> None:
    loader = fake_loader(fail=True)
    first = TokenCounter()
    with pytest.warns(UserWarning, match=r"could not load the tiktoken encoding.*TIKTOKEN_CACHE"):
        assert first.source == HEURISTIC_SOURCE
    assert first.count_text(PARAGRAPHS[0]) == heuristic_count(PARAGRAPHS[0])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second = TokenCounter()
        assert second.count_text(HELLO) == heuristic_count(HELLO)
        assert second.source == HEURISTIC_SOURCE
    assert caught == []
    assert loader.calls == 1  # the failure is remembered too

    reset_fallback_warning()
    with pytest.warns(UserWarning):
        TokenCounter().count_text(HELLO)


def test_source_tiktoken_raises_instead_of_falling_back(
    fake_loader: Callable[..., FakeLoader],
) -> None:
    fake_loader(fail=True)
    c = TokenCounter(source="tiktoken")
    with pytest.raises(OMConfigError, match="cannot be loaded offline") as info:
        c.count_text(HELLO)
    assert info.value.option == "source"
    assert isinstance(info.value.__cause__, offline.OfflineEncodingError)


def test_heuristic_source_never_loads(fake_loader: Callable[..., FakeLoader]) -> None:
    loader = fake_loader(fail=True)
    c = TokenCounter(source="heuristic")
    assert c.source == HEURISTIC_SOURCE
    assert c.count_text(HELLO) == heuristic_count(HELLO)
    assert loader.calls == 0


def test_bad_options_raise_config_errors() -> None:
    with pytest.raises(OMConfigError, match="source") as info:
        TokenCounter(source="magic")  # type: ignore[arg-type]
    assert info.value.option == "source"
    with pytest.raises(OMConfigError, match="unknown tiktoken encoding") as info:
        TokenCounter("gpt2")
    assert info.value.option == "encoding"


def test_default_counter_and_count_tokens() -> None:
    assert get_default_counter() is get_default_counter()
    assert count_tokens(HELLO) == get_default_counter().count_text(HELLO)
    assert count_tokens("") == 0


# -- heuristic -------------------------------------------------------------------------------


def test_heuristic_is_deterministic_and_close_to_tiktoken(counter: TokenCounter) -> None:
    h = TokenCounter(source="heuristic")
    for text in PARAGRAPHS:
        exact = counter.count_text(text)
        estimate = h.count_text(text)
        assert estimate == h.count_text(text) == heuristic_count(text)
        assert 0.65 * exact <= estimate <= 1.35 * exact, (exact, estimate)
    whole = "\n\n".join(PARAGRAPHS)
    assert abs(h.count_text(whole) - counter.count_text(whole)) <= 0.2 * counter.count_text(whole)
    assert h.encode_calls == 2 * len(PARAGRAPHS) + 1


def test_heuristic_counts_each_kind_of_text() -> None:
    assert heuristic_count("") == 0
    assert heuristic_count("hello world") == 2
    assert heuristic_count("你好世界") == 4  # one per CJK character
    assert heuristic_count("1234567") == 3  # digit groups of three
    assert heuristic_count("internationalization") == 2  # long words split
    assert heuristic_count("a\n\nb") == 3
    assert heuristic_count("🎉🎉") == 2


# -- message counting and overheads ---------------------------------------------------------


def test_message_is_parts_plus_overhead(counter: TokenCounter) -> None:
    msg = HumanMessage(HELLO)
    assert counter.count_message(msg) == 5 + MESSAGE_OVERHEAD
    msgs = [SystemMessage("Be brief."), msg, AIMessage("Sure.")]
    total = sum(counter.count_message(m) for m in msgs) + CONVERSATION_OVERHEAD
    assert counter.count_messages(msgs) == total
    assert counter(msgs) == total
    assert counter.count_messages([]) == 0
    assert counter.count_message(AIMessage("")) == MESSAGE_OVERHEAD


def test_text_blocks_count_like_string_content(counter: TokenCounter) -> None:
    as_str = counter.count_message(HumanMessage(HELLO + HELLO))
    blocks = HumanMessage(content=[{"type": "text", "text": HELLO}, HELLO])
    assert counter.count_message(blocks) == 2 * 5 + MESSAGE_OVERHEAD
    assert abs(as_str - counter.count_message(blocks)) <= 1


def test_name_counts(counter: TokenCounter) -> None:
    plain = counter.count_message(HumanMessage(HELLO))
    named = counter.count_message(HumanMessage(HELLO, name="alice"))
    assert named == plain + counter.count_text("alice")


def test_reasoning_and_data_parts_count_zero(counter: TokenCounter) -> None:
    base = counter.count_message(AIMessage(content=[{"type": "text", "text": HELLO}]))
    noisy = AIMessage(
        content=[
            {"type": "reasoning", "reasoning": "a long chain of thought " * 50},
            {"type": "thinking", "thinking": "more " * 50, "signature": "abc"},
            {"type": "text", "text": HELLO},
            {"type": "data-om-status", "data": {"tokens": 123456}},
            {"type": "data-anything", "payload": "x" * 1000},
        ]
    )
    assert counter.count_message(noisy) == base
    assert [p["n"] for p in _entry(noisy)["parts"]] == [5]


def test_tool_calls_count_name_and_args(counter: TokenCounter) -> None:
    call = {"name": "get_weather", "args": {"city": "Paris", "days": 3}, "id": "call_1"}
    plain = counter.count_message(AIMessage(HELLO))
    with_call = counter.count_message(AIMessage(HELLO, tool_calls=[call]))
    args_json = json.dumps(call["args"], separators=(",", ":"))
    assert with_call - plain == TOOL_CALL_OVERHEAD + counter.count_text(f"get_weather {args_json}")
    # An Anthropic-style tool_use block duplicating the tool call is not counted twice.
    anthropic = AIMessage(
        content=[
            {"type": "text", "text": HELLO},
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": call["args"]},
        ],
        tool_calls=[call],
    )
    assert counter.count_message(anthropic) == with_call
    # A tool_use block without a matching tool call is counted on its own.
    orphan = AIMessage(content=[{"type": "tool_use", "id": "x", "name": "f", "input": {"a": 1}}])
    assert counter.count_message(orphan) == MESSAGE_OVERHEAD + counter.count_text('f {"a":1}')


def test_tool_message_counts_content_and_call_id(counter: TokenCounter) -> None:
    msg = ToolMessage("72F and sunny", tool_call_id="call_abc123")
    expected = counter.count_text("72F and sunny") + counter.count_text("call_abc123")
    assert counter.count_message(msg) == expected + MESSAGE_OVERHEAD


def test_unknown_blocks_count_their_json(counter: TokenCounter) -> None:
    block = {"type": "server_tool_result", "output": {"rows": [1, 2, 3]}, "status": "ok"}
    msg = AIMessage(content=[block])
    expected = counter.count_text(json.dumps(block, separators=(",", ":")))
    assert counter.count_message(msg) == expected + MESSAGE_OVERHEAD


# -- cache -------------------------------------------------------------------------------------


def test_cached_message_is_not_retokenized(counter: TokenCounter) -> None:
    msg = AIMessage(
        content=[{"type": "text", "text": PARAGRAPHS[0]}, {"type": "text", "text": HELLO}],
        tool_calls=[{"name": "search", "args": {"q": "memory"}, "id": "c1"}],
        response_metadata={"model_name": "m", "langchain_om": {"ts": "2026-01-01T00:00:00+00:00"}},
    )
    first = counter.count_message(msg)
    calls = counter.encode_calls
    assert calls == 3
    entry = _entry(msg)
    assert entry["v"] == CACHE_VERSION and entry["src"] == "tiktoken:o200k_base"
    assert [p["k"].split(":")[0] for p in entry["parts"]] == ["text", "text", "tool_call"]
    # Overheads are not in the cache, but still in the count.
    cached_sum = sum(p["n"] for p in entry["parts"])
    assert first == cached_sum + MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD
    assert counter.count_message(msg) == first
    assert counter.count_messages([msg, msg]) == 2 * first + CONVERSATION_OVERHEAD
    assert counter.encode_calls == calls
    # Other metadata is left alone.
    assert msg.response_metadata["model_name"] == "m"
    assert msg.response_metadata["langchain_om"]["ts"] == "2026-01-01T00:00:00+00:00"


def test_cache_survives_serialisation(counter: TokenCounter) -> None:
    msg = HumanMessage(PARAGRAPHS[1], id="m1")
    n = counter.count_message(msg)
    calls = counter.encode_calls
    restored = HumanMessage.model_validate_json(msg.model_dump_json())
    assert counter.count_message(restored) == n
    assert counter.encode_calls == calls


def test_entry_from_other_version_or_source_is_recomputed(counter: TokenCounter) -> None:
    msg = HumanMessage(HELLO)
    counter.count_message(msg)
    tag, key, _ = _stored(msg)
    assert tag == f"{CACHE_VERSION}:tiktoken:o200k_base"
    for stale in (
        [f"{CACHE_VERSION + 1}:tiktoken:o200k_base", key, 999],
        [f"{CACHE_VERSION}:{HEURISTIC_SOURCE}", key, 999],
        # The dict form of entry version 2 (never released) is ignored too.
        {"v": 2, "src": "tiktoken:o200k_base", "parts": [{"k": f"text:{key}", "n": 999}]},
    ):
        msg.response_metadata["langchain_om"]["tok"] = stale
        calls = counter.encode_calls
        assert counter.count_message(msg) == 5 + MESSAGE_OVERHEAD
        assert counter.encode_calls == calls + 1
        assert _stored(msg) == [tag, key, 5]
        assert _entry(msg) == {
            "v": CACHE_VERSION,
            "src": "tiktoken:o200k_base",
            "parts": [{"k": f"text:{key}", "n": 5}],
        }
    # Same version, source and key: the cached number is trusted (that is the cache).
    msg.response_metadata["langchain_om"]["tok"][2] = 42
    assert counter.count_message(msg) == 42 + MESSAGE_OVERHEAD


def test_changed_content_invalidates_only_changed_parts(counter: TokenCounter) -> None:
    msg = HumanMessage(HELLO)
    counter.count_message(msg)
    msg.content = PARAGRAPHS[2]
    calls = counter.encode_calls
    assert counter.count_message(msg) == counter.count_text(PARAGRAPHS[2]) + MESSAGE_OVERHEAD
    assert counter.encode_calls == calls + 2  # once by the message, once by the check above

    blocks = HumanMessage(content=[{"type": "text", "text": HELLO}, PARAGRAPHS[0]])
    counter.count_message(blocks)
    blocks.content = [{"type": "text", "text": HELLO}, PARAGRAPHS[1]]
    calls = counter.encode_calls
    counter.count_message(blocks)
    assert counter.encode_calls == calls + 1  # the unchanged part was reused


def test_text_keys_agree_across_message_shapes(counter: TokenCounter) -> None:
    plain = HumanMessage(HELLO)
    counter.count_message(plain)
    blocks = HumanMessage(content=[{"type": "text", "text": HELLO}])
    counter.count_message(blocks)
    assert _entry(plain)["parts"] == _entry(blocks)["parts"]

    # Adding a name or a tool call reuses the text part and counts only the new part.
    msg = AIMessage(PARAGRAPHS[0])
    first = counter.count_message(msg)
    calls = counter.encode_calls
    msg.name = "planner"
    assert counter.count_message(msg) == first + counter.count_text("planner")
    assert counter.encode_calls == calls + 2  # the name, here and in the check above
    msg.tool_calls.append({"name": "search", "args": {"q": "x"}, "id": "c9", "type": "tool_call"})
    counter.count_message(msg)
    assert counter.encode_calls == calls + 3
    assert [p["k"].split(":")[0].split("=")[0] for p in _entry(msg)["parts"]] == [
        "text",
        "name",
        "tool_call",
    ]


def test_equal_content_in_a_new_string_hits_the_cache(counter: TokenCounter) -> None:
    msg = HumanMessage(PARAGRAPHS[0])
    n = counter.count_message(msg)
    msg.content = "".join(list(PARAGRAPHS[0]))  # equal but distinct string
    calls = counter.encode_calls
    assert counter.count_message(msg) == n
    assert counter.encode_calls == calls


def test_message_subclasses_are_recognised(counter: TokenCounter) -> None:
    class MyTool(ToolMessage):
        pass

    class MyHuman(HumanMessage):
        pass

    tool = MyTool(content="done", tool_call_id="call_7")
    assert counter.count_message(tool) == (
        counter.count_text("done") + counter.count_text("call_7") + MESSAGE_OVERHEAD
    )
    assert counter.count_message(MyHuman(content=HELLO)) == 5 + MESSAGE_OVERHEAD


def test_switching_source_recomputes(counter: TokenCounter) -> None:
    msg = HumanMessage(PARAGRAPHS[3])
    exact = counter.count_message(msg)
    h = TokenCounter(source="heuristic")
    assert h.count_message(msg) == heuristic_count(PARAGRAPHS[3]) + MESSAGE_OVERHEAD
    assert _entry(msg)["src"] == HEURISTIC_SOURCE
    assert counter.count_message(msg) == exact


@pytest.mark.parametrize(
    "om",
    [
        "not a dict",
        ["a", "list"],
        None,
        {"tok": "garbage"},
        {"tok": []},
        {"tok": [None]},
        {"tok": [f"{CACHE_VERSION}:tiktoken:o200k_base"]},
        {"tok": [f"{CACHE_VERSION}:tiktoken:o200k_base", 1, None]},
        {"tok": [f"{CACHE_VERSION}:tiktoken:o200k_base", [1], 5, "x"]},
        {"tok": {"v": CACHE_VERSION, "src": "tiktoken:o200k_base", "parts": [{"k": 1}]}},
    ],
)
def test_weird_metadata_is_treated_as_absent(counter: TokenCounter, om: object) -> None:
    msg = HumanMessage(HELLO, response_metadata={"langchain_om": om})
    assert counter.count_message(msg) == 5 + MESSAGE_OVERHEAD
    assert _entry(msg)["parts"][0]["n"] == 5


def test_invalid_cached_numbers_are_recomputed(counter: TokenCounter) -> None:
    msg = HumanMessage(HELLO)
    counter.count_message(msg)
    for bad in (-3, True, 2.5, "7", None):
        msg.response_metadata["langchain_om"]["tok"][2] = bad
        assert counter.count_message(msg) == 5 + MESSAGE_OVERHEAD


def _conversation() -> list[BaseMessage]:
    call = {"name": "search", "args": {"q": "memory"}, "id": "c1", "type": "tool_call"}
    return [
        HumanMessage(PARAGRAPHS[0], id="h1"),
        AIMessage(HELLO, tool_calls=[call], id="a1"),  # tool calls: not memoised
        ToolMessage(PARAGRAPHS[1], tool_call_id="c1", id="t1"),
        AIMessage(PARAGRAPHS[2], id="a2"),
        HumanMessage([{"type": "text", "text": HELLO}], id="h2"),  # blocks: not memoised
    ]


def test_reloaded_copies_are_answered_by_the_process_memo(counter: TokenCounter) -> None:
    messages = _conversation()
    total = counter.count_messages(messages)
    assert total == CONVERSATION_OVERHEAD + sum(counter.count_message(m) for m in messages)
    calls = counter.encode_calls
    reloaded = [type(m).model_validate_json(m.model_dump_json()) for m in messages]
    for i in (0, 2, 3):  # text messages without cache entries: only the memo can answer
        del reloaded[i].response_metadata["langchain_om"]
    assert counter.count_messages(reloaded) == total
    assert counter.encode_calls == calls
    # A process that never counted them (an empty memo) reads the cache entries instead.
    token_cache.clear_text_memo()
    reloaded = [type(m).model_validate_json(m.model_dump_json()) for m in messages]
    assert counter.count_messages(reloaded) == total
    assert counter.encode_calls == calls


@pytest.mark.parametrize(
    "change",
    [
        lambda m: setattr(m[0], "content", PARAGRAPHS[3]),
        # Same length and ends (the fingerprint of the cache entries cannot tell):
        lambda m: setattr(m[0], "content", PARAGRAPHS[0].replace("Observer", "Qx7#zK!p")),
        lambda m: m[1].tool_calls[0]["args"].update(q="a much longer query than before"),
        lambda m: setattr(m[2], "tool_call_id", "call_with_a_longer_id_0123456789"),
        lambda m: setattr(m[3], "name", "planner"),
    ],
    ids=["text", "same-length-text", "tool-call-args", "tool-call-id", "name"],
)
def test_the_memo_never_answers_for_a_changed_message(
    counter: TokenCounter, change: Callable[[list[BaseMessage]], None]
) -> None:
    before = counter.count_messages(_conversation())
    # Same ids, something changed, no cache entries: the memo must not answer.
    messages = _conversation()
    change(messages)
    expected = CONVERSATION_OVERHEAD + sum(
        TokenCounter().count_message(copy.deepcopy(m)) for m in messages
    )
    assert expected != before
    assert counter.count_messages(messages) == expected


def test_the_memo_notices_tool_calls_edited_in_place(counter: TokenCounter) -> None:
    messages = _conversation()
    before = counter.count_messages(messages)
    ai = messages[1]
    assert isinstance(ai, AIMessage)
    ai.tool_calls[0]["args"]["q"] = "a much longer query than before, edited in place"
    after = counter.count_messages(messages)
    assert after > before
    assert after == CONVERSATION_OVERHEAD + sum(
        TokenCounter().count_message(copy.deepcopy(m)) for m in messages
    )


def test_the_memo_is_bounded(counter: TokenCounter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(token_cache, "MEMO_MAX_ENTRIES", 5)
    token_cache.clear_text_memo()
    messages = [HumanMessage(PARAGRAPHS[i % 4], id=f"m{i}") for i in range(12)]
    total = counter.count_messages(messages)
    memo = token_cache.TEXT_MEMOS[f"{CACHE_VERSION}:tiktoken:o200k_base"]
    assert 0 < len(memo.entries) <= 5
    assert counter.count_messages(messages) == total


def test_non_dict_response_metadata_counts_without_cache(counter: TokenCounter) -> None:
    msg = HumanMessage(HELLO)
    msg.response_metadata = None  # type: ignore[assignment]
    assert counter.count_message(msg) == 5 + MESSAGE_OVERHEAD


# -- images and files ---------------------------------------------------------------------------


def _png(w: int, h: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", w, h) + b"\x08\x02\0\0\0" * 4


def _gif(w: int, h: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", w, h) + b"\0" * 20


def _jpeg(w: int, h: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0" + b"\0" * 9
    exif = b"\xff\xe1" + struct.pack(">H", 1002) + b"\0" * 1000
    sof = b"\xff\xc0" + struct.pack(">HBHH", 17, 8, h, w) + b"\0" * 10
    return b"\xff\xd8" + app0 + exif + sof + b"\0" * 20


def _webp(w: int, h: int, chunk: bytes) -> bytes:
    head = b"RIFF" + b"\0\0\0\0" + b"WEBP" + chunk + b"\0\0\0\0"
    if chunk == b"VP8X":
        return head + b"\0" * 4 + (w - 1).to_bytes(3, "little") + (h - 1).to_bytes(3, "little")
    if chunk == b"VP8L":
        return head + b"\x2f" + ((w - 1) | (h - 1) << 14).to_bytes(4, "little") + b"\0" * 8
    return head + b"\0\0\0\x9d\x01\x2a" + struct.pack("<HH", w, h) + b"\0" * 8


@pytest.mark.parametrize(
    "data",
    [_png(1024, 1024), _gif(1024, 1024), _jpeg(1024, 1024)]
    + [_webp(1024, 1024, c) for c in (b"VP8X", b"VP8L", b"VP8 ")],
    ids=["png", "gif", "jpeg", "webp-vp8x", "webp-vp8l", "webp-vp8"],
)
def test_image_size_is_read_from_base64_data(data: bytes) -> None:
    b64 = base64.b64encode(data).decode()
    blocks: list[dict[str, Any]] = [
        {"type": "image", "base64": b64, "mime_type": "image/png"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}},
    ]
    for block in blocks:
        msg = HumanMessage(content=[block])
        assert TokenCounter(provider="anthropic").count_message(msg) == 1399 + MESSAGE_OVERHEAD
        assert TokenCounter(provider="openai").count_message(msg) == 765 + MESSAGE_OVERHEAD


def test_media_cache_depends_on_provider() -> None:
    msg = HumanMessage(content=[{"type": "image", "url": "https://x/a.png"}])
    assert TokenCounter(provider="google").count_message(msg) == 258 + MESSAGE_OVERHEAD
    assert TokenCounter(provider="anthropic").count_message(msg) == 1600 + MESSAGE_OVERHEAD


# -- properties --------------------------------------------------------------------------------

any_text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=300)


@settings(max_examples=150, deadline=None)
@given(text=any_text)
def test_count_text_never_raises(text: str) -> None:
    for c in (get_default_counter(), TokenCounter(source="heuristic")):
        n = c.count_text(text)
        assert n >= 0
        assert (n == 0) == (text == "")


@settings(max_examples=100, deadline=None)
@given(text=any_text, name=st.none() | st.text(max_size=10))
def test_cache_round_trip_returns_the_same_number(text: str, name: str | None) -> None:
    c = TokenCounter()
    msg = HumanMessage(text, name=name)
    first = c.count_message(msg)
    calls = c.encode_calls
    assert c.count_message(copy.deepcopy(msg)) == first
    assert c.count_message(msg) == first
    assert c.encode_calls == calls


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
block_types = st.sampled_from(
    [
        "text",
        "image",
        "image_url",
        "file",
        "document",
        "reasoning",
        "data-x",
        "tool_use",
        "tool_call",
        "media",
        "text-plain",
        "input_audio",
        "weird",
        3,
    ]
)
block_keys = st.sampled_from(
    [
        "text",
        "url",
        "base64",
        "data",
        "image_url",
        "file",
        "source",
        "width",
        "height",
        "detail",
        "mime_type",
        "id",
        "name",
        "input",
        "metadata",
    ]
)
blocks = st.builds(
    lambda t, extra: {**extra, "type": t},
    block_types,
    st.dictionaries(block_keys, json_values, max_size=5),
) | st.text(max_size=20)


@settings(max_examples=100, deadline=None)
@given(
    content=st.lists(blocks, max_size=5),
    provider=st.sampled_from([None, "openai", "anthropic", "google"]),
)
def test_any_content_blocks_are_counted_without_raising(
    content: list[Any], provider: str | None
) -> None:
    c = TokenCounter(provider=provider)
    msg = AIMessage(content=content)
    n = c.count_message(msg)
    assert n >= MESSAGE_OVERHEAD
    assert c.count_message(msg) == n
    json.dumps(msg.response_metadata)  # the cache entry stays JSON-native


def test_bundled_file_is_byte_identical_to_openai(tmp_path: Path) -> None:
    path = offline._bundled_path(offline.ENCODING_FILES["o200k_base"])
    assert path is not None
    data = gzip.decompress(path.read_bytes())
    assert len(data) == 3_613_922
    assert hashlib.sha256(data).hexdigest() == offline.ENCODING_FILES["o200k_base"].sha256


def test_text_with_a_lone_surrogate_is_counted_and_cached() -> None:
    counter = TokenCounter(source="heuristic")
    message = HumanMessage("broken \ud800 pair " * 20)
    first = counter.count_message(message)
    calls = counter.encode_calls
    assert counter.count_message(message) == first
    assert counter.encode_calls == calls  # the key was computed again, without an error


def test_prefetch_loads_in_the_background_and_counts_the_same(
    fake_loader: Callable[..., FakeLoader], monkeypatch: pytest.MonkeyPatch
) -> None:
    loader = fake_loader(delay=0.2)
    monkeypatch.setattr(tokens, "_PREFETCHING", set())
    c = TokenCounter()
    c.prefetch()
    c.prefetch()  # already loading: no second thread
    assert c.count_text("a b c") == TokenCounter().count_text("a b c")
    assert loader.calls == 1
    TokenCounter(source="heuristic").prefetch()  # never loads
    assert loader.calls == 1


def test_a_long_text_counted_again_is_not_tokenized_again() -> None:
    counter = TokenCounter()
    prompt = "Observe the conversation below and write dated notes. " * 60  # ~3 300 chars
    first = counter.count_text(prompt)
    calls = counter.encode_calls
    assert counter.count_text("".join(list(prompt))) == first  # an equal text, a new object
    assert counter.encode_calls == calls
    other = prompt + " One more line."
    assert counter.count_text(other) > first and counter.encode_calls == calls + 1
    short = "a short message"
    counter.count_text(short)
    counter.count_text(short)
    assert counter.encode_calls == calls + 3  # short texts are tokenized each time
    for i in range(40):  # more long texts than are remembered: the memo starts again
        counter.count_text(f"{i} {prompt}")
    assert len(counter._long) <= 32
    assert counter.count_text(prompt) == first
