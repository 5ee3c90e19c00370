"""Token counting throughput: langchain-om's TokenCounter against the alternatives.

Builds realistic conversations (a deterministic mix of human, AI and tool messages of 20-400
words, some AI messages with tool calls, one human message in ten with an inline image or a
PDF) and measures, side by side in one process:

* ``om cold``: ``TokenCounter`` bound to the agent's model (``--model``, so the provider's
  image and file rules are on) on fresh message copies (no cache entries yet);
* ``om cached, same objects``: the same counter on the same messages again (cache hits, as
  when a run recounts its window before every model call);
* ``om cached, reloaded copies``: on copies rebuilt from dicts, as a checkpointer returns them
  on the next run (cache hits; each part's key is checked from its length and a fingerprint of
  its ends, so this stays cheap);
* ``om cached, deepcopy``: the same on ``copy.deepcopy`` copies;
* ``om heuristic cold``: ``TokenCounter(source="heuristic")`` on fresh copies;
* ``approximate``: ``langchain_core.messages.utils.count_tokens_approximately``;
* ``tiktoken encode``: raw ``Encoding.encode`` of the same texts (content + tool calls).

Each figure is the median of several interleaved rounds (every measurement once per round, so
a burst of other load hits them alike; within a round the best of a few timings, each on fresh
copies where the measurement needs them; speedups are the median of the per-round ratios),
timed in CPU time of this process (``time.process_time``) so that other work on the machine
skews the ratios less; pass ``--wall`` for wall-clock time. Prints a table and writes
``benchmarks/results/tokens.md``.

Usage::

    python benchmarks/tokens.py            # 10k messages
    python benchmarks/tokens.py --quick    # 1k messages
"""

from __future__ import annotations

import argparse
import base64
import copy
import gc
import json
import math
import platform
import random
import statistics
import struct
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import tiktoken
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)
from langchain_core.messages.utils import count_tokens_approximately

from langchain_om._core.encodings import load_encoding
from langchain_om._core.token_cache import clear_text_memo
from langchain_om._core.tokens import TokenCounter

WORDS = (
    "the of and to in a is that for it as was with be by on not he I this are or his from "
    "at which but have an they you were her she there would their we him been has when who "
    "will more no if out so said what up its about into than them can only other new some "
    "could time these two may then do first any my now such like our over man me even most "
    "made after also did many before must through back years where much your way well down "
    "should because each just those people how too little state good very make world still "
    "own see men work long get here between both life being under never day same another "
    "know while last might us great old year off come since against go came right used take "
    "three memory observation conversation assistant schedule meeting project deadline "
    "database migration deployment customer invoice refund weather Paris Tokyo Berlin "
    "function variable request response timeout retry error config python langchain graph"
).split()
PUNCT = [",", ",", ".", ".", ".", "?", "!", ":", ";", " -", " (see above)", "'s"]
TOOLS = ["search", "get_weather", "run_sql", "send_email", "read_file", "calendar_lookup"]
_PNG = base64.b64encode(
    b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", 1024, 768) + bytes(30_000)
).decode()
_PDF = base64.b64encode(b"%PDF-1.7\n" + bytes(60_000)).decode()


def _sentence_words(rng: random.Random, n: int) -> str:
    out: list[str] = []
    for i in range(n):
        w = rng.choice(WORDS)
        if i == 0 or out[-1].endswith((".", "?", "!")):
            w = w.capitalize()
        if rng.random() < 0.04:
            w = str(rng.randint(0, 99999))
        if rng.random() < 0.12:
            w += rng.choice(PUNCT)
        out.append(w)
    text = " ".join(out)
    if rng.random() < 0.3:
        text = text.replace(". ", ".\n\n", 2)
    return text + "."


def build_specs(n: int, seed: int = 7) -> list[dict[str, object]]:
    """Plain-data descriptions of ``n`` messages (turned into fresh messages per run)."""
    rng = random.Random(seed)
    specs: list[dict[str, object]] = []
    pending: list[str] = []
    for i in range(n):
        if pending:
            call_id = pending.pop(0)
            body = _sentence_words(rng, rng.randint(20, 400))
            if rng.random() < 0.3:
                body = json.dumps({"status": "ok", "rows": body.split(". ")[:8]})
            specs.append({"role": "tool", "content": body, "tool_call_id": call_id})
            continue
        role = "human" if i % 2 == 0 else "ai"
        text = _sentence_words(rng, rng.randint(20, 400))
        if role == "human" and rng.random() < 0.1:
            specs.append({"role": role, "content": text, "media": rng.choice(("image", "pdf"))})
            continue
        if role == "ai" and rng.random() < 0.25:
            calls = []
            for j in range(rng.choice((1, 1, 2))):
                call_id = f"call_{i}_{j}"
                args = {
                    "query": _sentence_words(rng, rng.randint(3, 12)),
                    "limit": rng.randint(1, 50),
                }
                calls.append({"name": rng.choice(TOOLS), "args": args, "id": call_id})
                pending.append(call_id)
            specs.append(
                {"role": "ai", "content": text if rng.random() < 0.5 else "", "calls": calls}
            )
        else:
            specs.append({"role": role, "content": text})
    return specs


def make_messages(specs: list[dict[str, object]]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i, s in enumerate(specs):
        content = str(s["content"])
        if s["role"] == "human" and s.get("media"):
            block = (
                {"type": "image", "base64": _PNG, "mime_type": "image/png"}
                if s["media"] == "image"
                else {"type": "file", "base64": _PDF, "mime_type": "application/pdf"}
            )
            out.append(HumanMessage([{"type": "text", "text": content}, block], id=f"m{i}"))
        elif s["role"] == "human":
            out.append(HumanMessage(content, id=f"m{i}"))
        elif s["role"] == "tool":
            out.append(ToolMessage(content, tool_call_id=str(s["tool_call_id"]), id=f"m{i}"))
        else:
            calls = s.get("calls") or []
            out.append(AIMessage(content, tool_calls=calls, id=f"m{i}"))
    return out


def texts_of(specs: list[dict[str, object]]) -> list[str]:
    texts: list[str] = []
    for s in specs:
        texts.append(str(s["content"]))
        for call in s.get("calls") or []:  # type: ignore[attr-defined]
            texts.append(call["name"] + " " + json.dumps(call["args"], separators=(",", ":")))
    return texts


CLOCK: Callable[[], float] = time.process_time


def raw_encode(encoding: tiktoken.Encoding, texts: list[str]) -> int:
    return sum(len(encoding.encode(t)) for t in texts)


def timed_once(fn: Callable[[], int]) -> tuple[float, int]:
    """Seconds of one call of ``fn`` (no garbage collection inside the timing, like timeit)."""
    gc.collect()
    gc.disable()
    try:
        start = CLOCK()
        result = fn()
        return CLOCK() - start, result
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1k messages instead of 10k")
    parser.add_argument("--runs", type=int, default=7, help="interleaved rounds (median)")
    parser.add_argument("--repeat", type=int, default=3, help="timings per round (best)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "tokens.md")
    parser.add_argument("--wall", action="store_true", help="time wall-clock, not CPU time")
    parser.add_argument(
        "--model",
        default="anthropic/claude-sonnet-4-5",
        help="the agent's provider/model whose image and file rules the counter applies",
    )
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.perf_counter if args.wall else time.process_time
    n = 1_000 if args.quick else 10_000
    specs = build_specs(n)
    texts = texts_of(specs)
    encoding = load_encoding("o200k_base")
    counter = TokenCounter().for_model(args.model)
    heuristic = TokenCounter(source="heuristic").for_model(args.model)
    print(
        f"{n} messages, {sum(len(t) for t in texts):,} characters, counter {counter.source}, "
        f"rules of {args.model}"
    )

    # Every round runs every measurement once, in the same order, so a burst of other load on
    # the machine hits all of them alike; ratios are taken within a round, then the median.
    names = [
        "om cold (tiktoken)",
        "om cached, same objects",
        "om cached, reloaded copies",
        "om cached, deepcopy",
        "om cached, new process",
        "om cold (heuristic)",
        "count_tokens_approximately",
        "raw tiktoken encode",
    ]
    times: dict[str, list[float]] = {name: [] for name in names}
    tokens: dict[str, int] = {}

    def record(name: str, prepare: Callable[[], Callable[[], int]]) -> None:
        """Best of ``--repeat`` timings, each of a call that ``prepare`` builds untimed."""
        best = math.inf
        for _ in range(args.repeat):
            seconds, result = timed_once(prepare())
            best = min(best, seconds)
        times[name].append(best)
        tokens[name] = int(result)

    counted: list[BaseMessage] = []

    def heuristic_cold() -> Callable[[], int]:
        clear_text_memo()
        return partial(heuristic.count_messages, make_messages(specs))

    def new_process() -> Callable[[], int]:
        # Reloaded copies in a process that has not counted them: no memo, cache entries only.
        clear_text_memo()
        return partial(counter.count_messages, messages_from_dict(messages_to_dict(counted)))

    def cold() -> Callable[[], int]:
        clear_text_memo()  # new messages: never counted in this process either
        counted[:] = make_messages(specs)
        return partial(counter.count_messages, counted)

    for _ in range(args.runs):
        calls_before = counter.encode_calls
        record(names[0], cold)
        assert counter.encode_calls > calls_before, "the cold pass hit a cache"
        calls_before = counter.encode_calls
        record(names[1], lambda: partial(counter.count_messages, counted))
        # What a checkpointer hands back on the next run: new objects, from dicts.
        record(
            names[2],
            lambda: partial(counter.count_messages, messages_from_dict(messages_to_dict(counted))),
        )
        record(names[3], lambda: partial(counter.count_messages, copy.deepcopy(counted)))
        assert counter.encode_calls == calls_before, "a cached pass re-tokenized"
        record(names[4], new_process)
        record(names[5], heuristic_cold)
        record(names[6], lambda: partial(count_tokens_approximately, make_messages(specs)))
        record(names[7], lambda: partial(raw_encode, encoding, texts))

    def ratio(slow: str, fast: str) -> float:
        return statistics.median(a / b for a, b in zip(times[slow], times[fast], strict=True))

    rows = [(name, statistics.median(times[name]), tokens[name]) for name in names]
    cold = names[0]
    same, reload_, deep, fresh_process = (ratio(cold, name) for name in names[1:5])
    worst = min(min(a / b for a, b in zip(times[cold], times[x], strict=True)) for x in names[1:3])
    approx_s = statistics.median(times[names[6]])
    cached_s, reloaded_s = (statistics.median(times[name]) for name in names[1:3])
    cold_s = statistics.median(times[cold])
    header = (
        f"| {'method':<28} | {'µs/msg':>8} | {'msgs/s':>10} | {'tokens/s':>12} | {'tokens':>10} |"
    )
    lines = [
        header,
        "|" + "|".join(["-" * 30] + ["-" * (w + 1) + ":" for w in (8, 10, 12, 10)]) + "|",
    ]
    for name, secs, toks in rows:
        lines.append(
            f"| {name:<28} | {secs / n * 1e6:>8.2f} | {n / secs:>10,.0f} | {toks / secs:>12,.0f} "
            f"| {toks:>10,} |"
        )
    ratios = [
        f"- cached vs cold speedup: **{same:.1f}×** on the same message objects "
        f"(recount within a run), **{reload_:.1f}×** on reloaded copies "
        f"(recount in the next run), **{deep:.1f}×** on deep copies; provider rules of "
        f"{args.model}",
        f"- reloaded copies in a process that has not counted them yet (no process memo): "
        f"**{fresh_process:.1f}×**; messages with tool calls, media or several parts check "
        f"the cache entry they carry by the fingerprint of its parts, plain text messages "
        f"carry none (it would be copied into every checkpoint of the window) and are "
        f"counted again, once per process",
        f"- median of the per-round ratios over {args.runs} interleaved rounds (each the best "
        f"of {args.repeat} timings, on fresh copies for cold, reloaded and deepcopy); the "
        f"lowest round: {worst:.1f}× (same objects or reloaded copies)",
        f"- om cold vs count_tokens_approximately: {approx_s / cold_s:.2f}× the speed",
        f"- om cached vs count_tokens_approximately: {approx_s / cached_s:.2f}× the speed "
        f"(same objects), {approx_s / reloaded_s:.2f}× (reloaded copies)",
    ]
    print("\n".join(lines))
    print("\n".join(ratios))

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        "# Token counting throughput\n\n"
        f"`python benchmarks/tokens.py{' --quick' if args.quick else ''}`: {n:,} messages "
        f"(human/AI/tool, 20–400 words, some tool calls), median of {args.runs} interleaved "
        "rounds "
        f"({'wall-clock' if args.wall else 'CPU'} time), "
        f"Python {platform.python_version()} on {platform.machine()}.\n\n"
        + "\n".join(lines)
        + "\n\n"
        + "\n".join(ratios)
        + "\n",
        encoding="utf-8",
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
