"""The models and the memory a command-line session runs on.

:func:`open_backend` picks the models from the options and the environment: scripted fakes,
an OpenAI-compatible server, the model ``--model`` names, or (with no ``--model``) the
library's rule for a memory that names no model: the first default that can run here, else
the offline extractive Observer (with the bundled local model as ``chat``'s agent).
:func:`open_memory` opens the memory at ``--db`` with the thresholds the options, the database
or the models call for.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_om import local
from langchain_om._cli.console import clip, one_line
from langchain_om._cli.storage import CONNECT_TIMEOUT_S, CLIError, open_db
from langchain_om._engine.default_model import pick_default_model
from langchain_om.engine import ObservationalMemory
from langchain_om.errors import MissingProviderError, ObservationalMemoryError, OMUsageError
from langchain_om.events import OMEvent
from langchain_om.models import RunContext, resolve_model_string
from langchain_om.offline import OBSERVER_LABEL, extractive_observer
from langchain_om.testing import FunctionChatModel, memory_model

SCRIPTED_THRESHOLDS = (400, 600)
"""(message_tokens, observation_tokens) for scripted models: observes and reflects quickly."""
LOCAL_THRESHOLDS = (600, 1500)
"""(message_tokens, observation_tokens) for the local model: prompts fit its context."""
LOCAL_CONTEXT = 8192
EXTRACTIVE_THRESHOLDS = (400, 1200)
"""(message_tokens, observation_tokens) for the offline extractive Observer: a few cycles."""
SWITCH_HINT = (
    "To use an LLM: set GOOGLE_API_KEY (with the [google] extra) or OPENAI_API_KEY, or pass "
    "--model provider/name; --base-url URL uses any OpenAI-compatible server; --scripted uses "
    "instant offline fakes."
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


def _check_base_url(url: str) -> None:
    """Fail fast when no HTTP server answers at ``url`` (a few seconds at most).

    One request to ``{url}/models`` (what OpenAI-compatible servers list their models at): any
    HTTP answer, an error status included, shows a server is there; a refused, reset or
    silent connection does not.

    Raises:
        CLIError: the URL is not http(s)://host[:port]/..., or no HTTP server answers there.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CLIError(
            f"--base-url {url!r} is not an http(s) URL: pass one such as http://127.0.0.1:8080/v1."
        )
    try:
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise CLIError(f"--base-url {url!r} has an invalid port.") from None
    probe = url.rstrip("/") + "/models"
    try:
        with urllib.request.urlopen(probe, timeout=CONNECT_TIMEOUT_S):
            return
    except urllib.error.HTTPError:
        return  # a server answered (it may want a key, or list models elsewhere)
    except (OSError, http.client.HTTPException) as exc:
        reason: object = getattr(exc, "reason", None) or exc
        if isinstance(reason, TimeoutError | socket.timeout):
            text = f"no answer within {CONNECT_TIMEOUT_S} s"
        elif isinstance(reason, OSError) and reason.strerror:
            text = reason.strerror
        else:
            text = one_line(reason) or type(reason).__name__
    raise CLIError(f"Cannot connect to --base-url {url}: {text}. Start the server, or fix the URL.")


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
    """Pick the models from the options and the environment (starts the local model if so).

    With no ``--model``, the models follow the library's rule for a memory that names no model
    (:mod:`langchain_om._engine.default_model`): the first default that can run here, else the
    offline extractive Observer (``chat`` answers with the bundled local model then).
    """
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
        _check_base_url(args.base_url)
        key = os.environ.get("OPENAI_API_KEY") or "none"
        actor = _openai_client(
            model=args.model or "local",
            base_url=args.base_url,
            api_key=key,
            max_tokens=512,
            max_retries=0,  # memory's retry plan is the only retry layer
        )
        memory = chosen or actor
        yield Backend(f"{args.model or 'local'} at {args.base_url}", actor, memory)
        return
    spec = args.model if args.model != "local" else None
    notice = None
    if args.model is None:
        picked = pick_default_model()
        spec, notice = picked.spec, picked.notice
    if spec is not None:
        if args.model is None:
            say(notice or f"No --model given: using {spec}; pass --model to choose another.")
        actor = resolve_model_string(spec)
        yield Backend(spec, actor, chosen or spec)
        return
    if args.model != "local" and getattr(args, "command", "") == "replay":
        observer: Any = chosen or extractive_observer()
        named = args.observer_model not in (None, "extractive")
        label = str(args.observer_model) if named else OBSERVER_LABEL
        say(notice if notice and not named else f"Memory runs on the {label}.")
        say(SWITCH_HINT)
        yield Backend(label, None, observer, EXTRACTIVE_THRESHOLDS, buffering=False)
        return
    if notice is not None:
        say(notice)
    roles = "the agent and memory" if args.model == "local" else "the agent"
    say(
        f"Running the small local model {local.MODEL_FILE} for {roles} "
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


def _saved_thresholds(db: str, *, read_only: bool) -> dict[str, Any]:
    """The thresholds this database was last used with by the command line (``{}``: none)."""
    probe = open_db(db, read_only=read_only, model=_no_model)
    try:
        item = probe.store.get(_SETTINGS_NS, "thresholds")
    finally:
        probe.close()
    return dict(item.value) if item is not None else {}


def open_memory(
    args: argparse.Namespace, backend: Backend | None, on_event: Callable[[OMEvent], None] | None
) -> ObservationalMemory:
    """The memory for this run at ``--db`` (a SQLite file or a PostgreSQL URL).

    Thresholds: the options when given, else those this database was last used with (kept in
    its store), else the models' demo thresholds, else the library defaults. With no backend
    (``inspect``) the database must already hold memory, and no model is ever called.
    """
    read_only = backend is None
    saved = _saved_thresholds(str(args.db), read_only=read_only)
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
    memory = open_db(
        str(args.db),
        read_only=read_only,
        model=backend.memory_model if backend is not None else _no_model,
        on_debug_event=on_event,
        observation=observation,
        reflection=reflection,
    )
    if backend is not None:
        effective = {
            "message_tokens": memory.config.observation.message_tokens,
            "observation_tokens": memory.config.reflection.observation_tokens,
        }
        if effective != saved:
            memory.store.put(_SETTINGS_NS, "thresholds", effective)
    return memory
