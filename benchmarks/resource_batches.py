"""Resource scope: the batches of one observation pass run in parallel.

Five threads of about 3k unobserved tokens each, ``max_tokens_per_batch=7000``: three batches.
The Observer is scripted to take ``--delay`` seconds per call (1 s by default). The baseline is
one call's wall time, measured in the same process; a pass over the three batches should take
about that (a serial pass would take three times as long), from sync code (worker threads) and
from async code (tasks).

Run: ``python benchmarks/resource_batches.py [--delay 1.0] [--out benchmarks/results]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_om._core.callable_tokens import as_token_counter
from langchain_om._plans.effects import ModelCall, run_async, run_sync
from langchain_om._plans.resource import (
    ResourceHandler,
    observe_resource_plan,
    save_pending_plan,
)
from langchain_om._plans.types import TurnEnv
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.locks import LocalThreadLock
from langchain_om.testing import FunctionChatModel

ANSWER = "<observations>\nDate: Nov 30, 2026\n* 🔴 (09:00) User said things\n</observations>"


def _env() -> TurnEnv:
    config = ObservationalMemoryConfig.coerce(
        observation={"buffer_tokens": False, "max_tokens_per_batch": 7_000}
    )
    return TurnEnv(
        config=config,
        counter=as_token_counter(None),
        now=lambda: datetime.now(UTC),
        emit=lambda e: None,
        model_id=lambda role, tokens: None,
    )


def _thread(tid: str) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(10):
        out.append(HumanMessage(f"{tid} fact {i}: " + "detail " * 280, id=f"{tid}-h{i}"))
        out.append(AIMessage(f"noted {i}", id=f"{tid}-a{i}"))
    return out


def _handler(delay: float) -> tuple[ResourceHandler, FunctionChatModel]:
    model = FunctionChatModel(function=lambda m, i: ANSWER, delay=delay)

    def call(effect: ModelCall) -> Any:
        return model.invoke(list(effect.messages))

    async def acall(effect: ModelCall) -> Any:
        return await model.ainvoke(list(effect.messages))

    handler = ResourceHandler(
        store=InMemoryStore(), call_model=call, acall_model=acall, lock=LocalThreadLock()
    )
    return handler, model


def _seed(env: TurnEnv, handler: ResourceHandler) -> list[BaseMessage]:
    for i in range(1, 5):
        run_sync(save_pending_plan(env, "u", f"T{i}", _thread(f"T{i}")), handler)
    return _thread("T0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    env = _env()

    handler, model = _handler(args.delay)
    start = time.perf_counter()
    model.invoke("one call")
    single = time.perf_counter() - start

    handler, model = _handler(args.delay)
    current = _seed(env, handler)
    start = time.perf_counter()
    run_sync(observe_resource_plan(env, "u", current=("T0", current)), handler)
    sync_s, sync_calls = time.perf_counter() - start, model.call_count

    handler, model = _handler(args.delay)
    current = _seed(env, handler)

    async def go() -> None:
        await run_async(observe_resource_plan(env, "u", current=("T0", current)), handler)

    start = time.perf_counter()
    asyncio.run(go())
    async_s, async_calls = time.perf_counter() - start, model.call_count

    lines = [
        "# Resource scope: parallel batches",
        "",
        f"5 threads x ~3k tokens, max_tokens_per_batch=7000, Observer delay {args.delay:g} s.",
        "",
        "| pass | Observer calls | wall s | x one call |",
        "|---|---|---|---|",
        f"| one call (baseline) | 1 | {single:.2f} | 1.00 |",
        f"| sync (worker threads) | {sync_calls} | {sync_s:.2f} | {sync_s / single:.2f} |",
        f"| async (tasks) | {async_calls} | {async_s:.2f} | {async_s / single:.2f} |",
        "",
        f"A serial pass would be about {sync_calls:.0f}x one call.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "resource_batches.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
