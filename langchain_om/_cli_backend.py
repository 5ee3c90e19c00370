"""The models and the memory a command-line session runs on.

:func:`open_backend` picks the models from the options and the environment: scripted fakes,
an OpenAI-compatible server, a provider whose API key is set, or the bundled local model with
the offline extractive Observer. :func:`open_memory` opens the SQLite memory with the
thresholds the options, the database or the models call for.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_om import local
from langchain_om._cli_console import clip
from langchain_om.engine import ObservationalMemory
from langchain_om.errors import MissingProviderError, ObservationalMemoryError, OMUsageError
from langchain_om.events import OMEvent
from langchain_om.models import RunContext, resolve_model_string
from langchain_om.offline import OBSERVER_LABEL, extractive_observer
from langchain_om.testing import FunctionChatModel, memory_model

PROVIDER_KEYS = {"OPENAI_API_KEY": "openai/gpt-5-mini", "GOOGLE_API_KEY": "google/gemini-2.5-flash"}
SCRIPTED_THRESHOLDS = (400, 600)
"""(message_tokens, observation_tokens) for scripted models: observes and reflects quickly."""
LOCAL_THRESHOLDS = (600, 1500)
"""(message_tokens, observation_tokens) for the local model: prompts fit its context."""
LOCAL_CONTEXT = 8192
EXTRACTIVE_THRESHOLDS = (400, 1200)
"""(message_tokens, observation_tokens) for the offline extractive Observer: a few cycles."""
SWITCH_HINT = (
    "To use a provider instead: set OPENAI_API_KEY (or GOOGLE_API_KEY) and pass "
    "--model openai/gpt-5-mini (or --model google/gemini-2.5-flash); --base-url URL uses any "
    "OpenAI-compatible server; --scripted uses instant offline fakes."
)


@dataclass
class Backend:
    """The models a session runs on."""

    label: str
    actor: BaseChatModel | None
    """The agent's model (``None`` where no reply is needed: replay with the offline Observer)."""
    memory_model: Any
    """Observer/Reflector model: a model object or a provider string."""
    thresholds: tuple[int, int] | None = None
    """Default (message_tokens, observation_tokens) for these models; None: the library's."""
    buffering: bool = True
    """Observe ahead in the background (off for the slow local model: one call at a time)."""

    def agent(self) -> BaseChatModel:
        """The agent's model (chat needs one; replay with the offline Observer has none)."""
        if self.actor is None:
            raise ObservationalMemoryError(f"{self.label} has no agent model to reply with")
        return self.actor


SCRIPTED_DELAY_ENV = "LANGCHAIN_OM_SCRIPTED_DELAY"
"""Seconds the scripted actor takes per reply (unset: instant); lets tests interrupt a reply."""


def _scripted_actor_reply(messages: list[BaseMessage], info: Any) -> str:
    delay = float(os.environ.get(SCRIPTED_DELAY_ENV) or 0)
    if delay > 0:
        time.sleep(delay)
    memory = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    notes = [line.strip()[2:] for line in memory.splitlines() if line.lstrip().startswith("* ")]
    asked = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
    reply = f"(scripted) You said: {clip(asked, 60)}"
    if notes:
        reply += f" | memory holds {len(notes)} observations, latest: {clip(notes[-1], 70)}"
    return reply


def _openai_client(**kwargs: Any) -> BaseChatModel:
    try:
        from langchain_openai import ChatOpenAI  # noqa: PLC0415 - optional extra "openai"
    except ImportError as exc:
        raise MissingProviderError(
            '--base-url needs langchain-openai: pip install "langchain-om[openai]"'
        ) from exc
    return ChatOpenAI(**kwargs)


@contextlib.contextmanager
def open_backend(args: argparse.Namespace, say: Callable[[str], None]) -> Iterator[Backend]:
    """Pick the models from the options and the environment (starts the local model if so)."""
    if args.scripted:
        actor: BaseChatModel = FunctionChatModel(
            function=_scripted_actor_reply, model_name="scripted-actor"
        )
        yield Backend(
            "scripted offline models (no LLM)", actor, memory_model(), SCRIPTED_THRESHOLDS
        )
        return
    chosen: Any = args.observer_model
    if chosen == "extractive":
        chosen = extractive_observer()
    if args.base_url:
        key = os.environ.get("OPENAI_API_KEY") or "none"
        actor = _openai_client(
            model=args.model or "local", base_url=args.base_url, api_key=key, max_tokens=512
        )
        memory = chosen or actor
        yield Backend(f"{args.model or 'local'} at {args.base_url}", actor, memory)
        return
    spec = None if args.model == "local" else args.model
    spec = spec or next((m for k, m in PROVIDER_KEYS.items() if os.environ.get(k)), None)
    if spec is not None:
        if not args.model:
            say(f"Using {spec} (its API key is set); pass --model to choose another model.")
        actor = resolve_model_string(spec)
        yield Backend(spec, actor, chosen or spec)
        return
    if args.model != "local" and getattr(args, "command", "") == "replay":
        observer: Any = chosen or extractive_observer()
        named = args.observer_model not in (None, "extractive")
        label = str(args.observer_model) if named else OBSERVER_LABEL
        say(f"No provider API key is set: memory runs on the {label}.")
        say(SWITCH_HINT)
        yield Backend(label, None, observer, EXTRACTIVE_THRESHOLDS, buffering=False)
        return
    say(
        f"No provider API key is set: running the small local model {local.MODEL_FILE} "
        "(offline, weak: a demo of the mechanics, not of quality)."
    )
    say(SWITCH_HINT)
    with local.start_local_server(n_ctx=LOCAL_CONTEXT) as server:
        actor = server.chat_model(max_tokens=160, temperature=0.3)
        if args.model == "local":
            observer = chosen or server.chat_model(max_tokens=300, temperature=0.3)
            label, thresholds = f"local {local.MODEL_FILE}", LOCAL_THRESHOLDS
        else:
            observer = chosen or extractive_observer()
            label = f"local {local.MODEL_FILE} (agent) + {OBSERVER_LABEL}"
            thresholds = EXTRACTIVE_THRESHOLDS
        yield Backend(label, actor, observer, thresholds, buffering=False)


_SETTINGS_NS = ("langchain_om", "cli")


def _no_model(ctx: RunContext) -> Any:
    """Model spec of a read-only memory (``inspect``): it never observes, so it never calls."""
    raise OMUsageError(f"this command reads memory only; it does not run the {ctx.role}")


def open_memory(
    args: argparse.Namespace, backend: Backend | None, on_event: Callable[[OMEvent], None] | None
) -> ObservationalMemory:
    """The memory for this run: one SQLite file, thresholds from the options.

    Thresholds: the options when given, else those this database was last used with (kept in
    its store), else the models' demo thresholds, else the library defaults.
    """
    probe = ObservationalMemory.from_sqlite(str(args.db), model=_no_model)
    try:
        item = probe.store.get(_SETTINGS_NS, "thresholds")
    finally:
        probe.close()
    saved: dict[str, Any] = dict(item.value) if item is not None else {}
    defaults = (backend.thresholds if backend else None) or (None, None)
    message_tokens = (
        getattr(args, "message_tokens", None) or saved.get("message_tokens") or defaults[0]
    )
    observation_tokens = (
        getattr(args, "observation_tokens", None) or saved.get("observation_tokens") or defaults[1]
    )
    observation: dict[str, Any] = {"failure_policy": "continue"}
    if backend is not None and not backend.buffering:
        observation["buffer_tokens"] = False
    reflection: dict[str, Any] = {}
    if message_tokens:
        observation["message_tokens"] = message_tokens
    if observation_tokens:
        reflection["observation_tokens"] = observation_tokens
    options: dict[str, Any] = {"observation": observation, "reflection": reflection}
    options["model"] = backend.memory_model if backend is not None else _no_model
    memory = ObservationalMemory.from_sqlite(str(args.db), on_debug_event=on_event, **options)
    if backend is not None:
        effective = {
            "message_tokens": memory.config.observation.message_tokens,
            "observation_tokens": memory.config.reflection.observation_tokens,
        }
        if effective != saved:
            memory.store.put(_SETTINGS_NS, "thresholds", effective)
    return memory
