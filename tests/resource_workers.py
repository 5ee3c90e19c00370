"""Worker processes for the resource-scope multi-process test.

Each worker drives one thread of a shared resource: it appends a turn, stores the thread's
unobserved messages, observes every thread of the resource (its own live window and the
others' stored ones) and commits with compare-and-set. Message ids name the thread and turn, so
the parent can check that every message was observed exactly once.
"""

from __future__ import annotations

import random
import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_om._core.callable_tokens import as_token_counter
from langchain_om._core.resource import ResourceRecord
from langchain_om._plans.effects import ModelCall, run_sync
from langchain_om._plans.resource import (
    ResourceHandler,
    load_resource_plan,
    observe_resource_plan,
    save_pending_plan,
)
from langchain_om._plans.types import TurnEnv
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.testing import FunctionChatModel
from tests.helpers import FIXED, thread_observer_reply
from tests.mp_workers import open_memory

RESOURCE = "shared-user"
TOPICS = "about the garden, the rainy weather, a trip to the coast and the book I started"
"""A user message's words (varied: the scripted Observer quotes them, and repeated words
would read as a looping reply)."""


def resource_env() -> TurnEnv:
    """Small batches (so a pass has several), ids shown (the checks read them)."""
    config = ObservationalMemoryConfig.coerce(
        observation={"buffer_tokens": False, "max_tokens_per_batch": 150}
    )
    return TurnEnv(
        config=config,
        counter=as_token_counter(None),
        now=lambda: FIXED,
        emit=lambda e: None,
        model_id=lambda role, tokens: None,
    )


def open_handler(spec: dict[str, Any]) -> tuple[Any, ResourceHandler]:
    """The memory (for its store and lock) and a handler whose Observer answers per thread."""
    memory = open_memory(spec)
    model = FunctionChatModel(function=thread_observer_reply, delay=0.01)

    def call(effect: ModelCall) -> Any:
        return model.invoke(list(effect.messages))

    async def acall(effect: ModelCall) -> Any:
        return await model.ainvoke(list(effect.messages))

    handler = ResourceHandler(
        store=memory.store, call_model=call, acall_model=acall, lock=memory._runs.lock
    )
    return memory, handler


def turn(thread: str, i: int) -> list[BaseMessage]:
    return [
        HumanMessage(f"{thread} turn {i}: {TOPICS}", id=f"{thread}-h{i}"),
        AIMessage(f"ok {i}", id=f"{thread}-a{i}"),
    ]


def drive(spec: dict[str, Any]) -> None:
    """Run ``spec["turns"]`` turns on ``spec["thread"]``."""
    memory, handler = open_handler(spec)
    env = resource_env()
    rng = random.Random(spec["thread"])
    window: list[BaseMessage] = []
    thread = spec["thread"]
    try:
        for i in range(spec["turns"]):
            window = window + turn(thread, i)
            run_sync(save_pending_plan(env, RESOURCE, thread, window), handler)
            record = run_sync(
                observe_resource_plan(env, RESOURCE, current=(thread, window)), handler
            )
            observed = set(record["cursors"].get(thread, []))
            window = [m for m in window if m.id not in observed]  # what a front door keeps
            run_sync(save_pending_plan(env, RESOURCE, thread, window), handler)
            time.sleep(rng.random() * 0.01)
    finally:
        memory.close()


def resource_memory(spec: dict[str, Any]) -> Any:
    """A resource-scope memory on ``spec``'s backend, with the per-thread scripted Observer
    (buffering with ``spec["buffer_tokens"]``, when given)."""
    return open_memory(
        spec,
        model=FunctionChatModel(function=thread_observer_reply, delay=0.01),
        scope="resource",
        observation={
            "message_tokens": 120,
            "buffer_tokens": spec.get("buffer_tokens", False),
            "max_tokens_per_batch": 150,
        },
        obscure_thread_ids=False,
    )


def drive_standalone(spec: dict[str, Any]) -> None:
    """Run ``spec["turns"]`` turns on ``spec["thread"]`` through ``add_messages``."""
    memory = resource_memory(spec)
    rng = random.Random(spec["thread"])
    try:
        for i in range(spec["turns"]):
            memory.add_messages(spec["thread"], turn(spec["thread"], i), resource_id=RESOURCE)
            time.sleep(rng.random() * 0.01)
    finally:
        memory.close()


def stored_record(spec: dict[str, Any]) -> ResourceRecord:
    """The resource's record as stored."""
    memory, handler = open_handler(spec)
    try:
        record, _ = run_sync(load_resource_plan(RESOURCE), handler)
        return record
    finally:
        memory.close()
