"""The OM engine: :class:`ObservationalMemory`.

One object holds the validated options, the models, the token counter and the storage
(a LangGraph ``BaseStore`` for the archive and a checkpointer for graph state). Every front
door drives the same turn plan through it; the standalone methods (``observe``, ``reflect``,
``status``, ``get_context`` and their ``a*`` twins) keep a thread's record and message window in
the store so the engine works with no graph at all (they live in
:mod:`langchain_om._engine.standalone`, which the class inherits).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Unpack

from langchain_core.messages import BaseMessage, MessageLikeRepresentation
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore

from langchain_om._config.shortcuts import BufferTokens, Threshold, fold_shortcuts
from langchain_om._config.spec_check import check_engine_args
from langchain_om._core.callable_tokens import MessageCounter, as_token_counter
from langchain_om._core.dates import iso
from langchain_om._core.observer_prompts import HintSwitch
from langchain_om._core.recall import recall_instructions
from langchain_om._core.record import check_owner, coerce_record, new_record
from langchain_om._core.redact import redacted_logger
from langchain_om._core.render import MemoryContext, render_memory
from langchain_om._core.tokens import TokenCounter
from langchain_om._core.types import OMRecord
from langchain_om._engine.actor import ActorEnvs
from langchain_om._engine.default_model import with_default_model
from langchain_om._engine.io import (
    EndTurnOptions,
    Runs,
    StepOptions,
    ThreadSnapshot,
    as_messages,
)
from langchain_om._engine.logs import log_event
from langchain_om._engine.role_models import RoleModels
from langchain_om._engine.standalone import StandaloneCalls
from langchain_om._plans.background import Background
from langchain_om._plans.graph_state import (
    OM_STATE_KEY,
    UNREAD,
    cached_state_record,
    groups_to_store,
    state_record_plan,
)
from langchain_om._plans.resource import ResourceHandler
from langchain_om._plans.resource_turn import OTHERS_TOKENS_KEY
from langchain_om._plans.storage import (
    after_migration,
)
from langchain_om._plans.turn import idle_plan, turn_plan
from langchain_om._plans.turn_rules import sync_observation_due, sync_reflection_due
from langchain_om._plans.types import TurnEnv, TurnInput, TurnOutcome, require_thread_id
from langchain_om._plans.working_memory import (
    working_memory_text,
)
from langchain_om._storage.backends import OpenedStorage, OpensStorage
from langchain_om._storage.run_store import load_tokenizer
from langchain_om._storage.store_index import EmbeddingsSpec, check_vector_store, default_store
from langchain_om.config import ObservationalMemoryConfig, RetrievalConfig
from langchain_om.errors import OMConfigError, OMUsageError
from langchain_om.events import OMEvent
from langchain_om.extractors import (
    check_extractors,
    observation_extractors,
    with_archive_summary,
)
from langchain_om.locks import LocalThreadLock, ThreadLock
from langchain_om.models import ModelSpec
from langchain_om.retry import RetryPolicy
from langchain_om.tools import create_memory_tool, create_recall_code_tool, create_recall_tool

logger = redacted_logger("langchain_om")

__all__ = ["EndTurnOptions", "ObservationalMemory", "StepOptions", "ThreadSnapshot"]


@dataclass(frozen=True)
class _ShownOptions:
    """What rendering the memory context reads of a config (the config it was read from)."""

    config: ObservationalMemoryConfig
    retrieval: bool
    instructions: str | None
    hints: HintSwitch
    cap: int | None
    """:func:`_observation_cap` of ``config``; ``None`` with fractional thresholds."""


def _observation_cap(config: ObservationalMemoryConfig) -> int:
    """The most observation tokens the memory context shows: the reflection's block_after.

    In archive mode (no reflection), ``after_tokens`` plus one observation's worth: the most a
    live log holds before its oldest groups retire.
    """
    archive = config.observation.archive
    if archive is not None:
        return archive.after_tokens + config.observation.block_after_tokens
    return config.reflection.block_after_tokens


class ObservationalMemory(OpensStorage, StandaloneCalls):
    """Observational Memory: an Observer and a Reflector that keep a conversation small.

    The options set most often are keyword arguments of their own (``model``,
    ``message_tokens``, ``observation_tokens``, ``buffer_tokens``, ``scope``, ``retrieval``);
    every other option is a keyword argument of the config (``observation={...}``,
    ``read_only=True``, ``hooks=...``).

    Args:
        options: a config object, a dict (snake_case or Mastra camelCase keys), ``True`` or
            ``False``; keyword arguments override it (``model=``, ``observation=``,
            ``reflection=``, ``scope=``, ``retrieval=``, ``hooks=``, …, see
            :class:`~langchain_om.config.ObservationalMemoryConfig`).
        model: the Observer's and Reflector's model: ``"provider/model"``, a chat model, a
            callable, ``ModelByInputTokens`` or a list of ``ModelWithRetries`` (default: the
            first default that can run here).
        message_tokens: unobserved-message tokens that trigger observation
            (``observation.message_tokens``, 30 000), or ``("fraction", 0.4)`` of the agent
            model's context window.
        observation_tokens: observation tokens that trigger reflection
            (``reflection.observation_tokens``, 40 000), or a fraction as above.
        buffer_tokens: observe ahead in the background every this share of the threshold
            (``observation.buffer_tokens``, 0.2) or these tokens; ``False`` turns buffering off.
        scope: ``"thread"`` (one log per conversation, the default) or ``"resource"`` (one
            log shared by a user's threads).
        retrieval: ``True`` or ``{"vector": True, ...}`` keeps source ranges and gives the
            agent the ``recall`` tool (off in thread scope, on in resource scope).
        store: the ``BaseStore`` for the archive and standalone state (in-memory when omitted).
        checkpointer: the checkpointer for graphs built with this memory (in-memory when
            omitted).
        token_counter: a :class:`TokenCounter` (the process-wide tiktoken counter by default),
            ``"approximate"`` (LangChain's ``count_tokens_approximately``) or any
            ``Callable[[list[BaseMessage]], int]`` such as ``model.get_num_tokens_from_messages``.
            A ``TokenCounter`` without an explicit ``provider`` follows the agent's model.
        actor_model: the agent's chat model (or ``"provider/model"``) when no front door passes
            it (standalone methods); needed there for fractional thresholds.
        on_debug_event: called with every OM event.
        clock: returns "now" (timezone-aware); injectable for tests.
        timezone: IANA zone used to render dates for the Observer in new records.
        retry_policy: backoff for transient model errors.
        sleep: the blocking sleep used between retries (tests pass a no-op).
        background: ``"auto"`` runs background buffering on worker threads (sync callers) or
            as tasks (async callers); ``"manual"`` queues it for deterministic tests, to be run
            with ``memory.run_background()``.
        thread_lock: the per-thread lock standalone calls run under (see
            :mod:`langchain_om.locks`): ``PostgresThreadLock(url)`` for several processes on
            PostgreSQL; :meth:`from_sqlite` uses ``SqliteThreadLock``; default: this process.
        embeddings: with no ``store``, index the in-memory store for semantic recall (an
            ``Embeddings`` object or ``"provider:model"``).

    Example:
        >>> from langchain_om import ObservationalMemory
        >>> from langchain_om.testing import ScriptedChatModel
        >>> memory = ObservationalMemory(model=ScriptedChatModel(script=["* 🔴 (09:00) hi"]))
        >>> memory.config.observation.message_tokens
        30000
        >>> small = ObservationalMemory(model=memory.config.model, message_tokens=20_000)
        >>> small.config.observation.message_tokens
        20000
    """

    def __init__(
        self,
        options: ObservationalMemoryConfig | dict[str, Any] | bool | None = None,
        /,
        *,
        model: ModelSpec = None,
        message_tokens: Threshold | None = None,
        observation_tokens: Threshold | None = None,
        buffer_tokens: BufferTokens | None = None,
        scope: Literal["thread", "resource"] | None = None,
        retrieval: bool | RetrievalConfig | dict[str, Any] | None = None,
        store: BaseStore | None = None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        token_counter: TokenCounter | MessageCounter | Literal["approximate"] | None = None,
        actor_model: Any = None,
        on_debug_event: Callable[[OMEvent], None] | None = None,
        clock: Callable[[], datetime] | None = None,
        timezone: str = "UTC",
        retry_policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] | None = None,
        background: Literal["auto", "manual"] = "auto",
        thread_lock: ThreadLock | None = None,
        embeddings: EmbeddingsSpec | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs = fold_shortcuts(
            kwargs,
            model=model,
            message_tokens=message_tokens,
            observation_tokens=observation_tokens,
            buffer_tokens=buffer_tokens,
            scope=scope,
            retrieval=retrieval,
        )
        self.config = with_default_model(ObservationalMemoryConfig.coerce(options, **kwargs))
        check_engine_args(self.config, timezone=timezone, clock=clock, background=background)
        self.store: BaseStore = default_store(store, embeddings)
        check_vector_store(self.config, self.store)
        self.checkpointer: BaseCheckpointSaver[Any] = (
            checkpointer if checkpointer is not None else InMemorySaver()
        )
        self.counter = as_token_counter(token_counter)
        load_tokenizer(self.counter)
        self.on_debug_event = on_debug_event
        self.timezone = timezone
        self.retry_policy = retry_policy or RetryPolicy()
        self._clock = clock or (lambda: datetime.now(UTC))
        self._models = RoleModels(self.config, self.retry_policy, sleep)
        self._opened: list[OpenedStorage] = []
        self._shown: _ShownOptions | None = None
        self._background = Background(manual=background == "manual")
        self._extractors = observation_extractors(
            self.config.observation.extract,
            manage_working_memory=self.config.observation.manage_working_memory,
        )
        base_env = TurnEnv(
            config=self.config,
            counter=self.counter,
            now=self._clock,
            emit=self._emit,
            model_id=self._models.model_id,
            running=self._background.running,
            hears_events=lambda: self.on_debug_event is not None,
            vector=bool(self.config.retrieval and self.config.retrieval.vector),
            extractors=with_archive_summary(
                self._extractors, self.config.observation.archive is not None
            ),
            timezone=timezone,
            structured=self._models.structured,
            astructured=self._models.astructured,
            memory=self,
            observer_part_tokens=self._models.part_tokens,
            observer_hides_previous=self._models.hides_previous,
            observer_attachments=self._models.attachments,
        )
        check_extractors(self.config.reflection.extract, option="reflection.extract")
        self._actors = ActorEnvs(base_env, actor_model)
        lock = thread_lock or LocalThreadLock()
        executor = ResourceHandler(  # also runs resource scope's gathers and compare-and-sets
            store=self.store,
            call_model=self._models.call,
            acall_model=self._models.acall,
            background=self._background,
            lock=lock,
        )
        self._runs = Runs(
            executor=executor,
            background=self._background,
            lock=lock,
            env=lambda: self._env,
            render=self.render,
            sync_wait=self.retry_policy.max_sync_wait,
        )
        self._tools: list[BaseTool] | None = None

    # -- construction helpers -------------------------------------------------------------

    def close(self) -> None:
        """Finish background work and close the storage memory opened.

        That is storage from :meth:`from_sqlite` or :meth:`from_postgres` (a pool you passed
        stays open). Safe to call twice. Storage from :meth:`afrom_postgres` needs
        :meth:`aclose`.
        """
        if any(s.is_async for s in self._opened):
            raise OMUsageError(
                "This memory holds async storage (afrom_postgres): close it with "
                "`await memory.aclose()` or `async with memory:`."
            )
        self.wait_for_background()
        self._background.shutdown()
        while self._opened:
            self._opened.pop().close_all()

    async def aclose(self) -> None:
        """Async twin of :meth:`close` (also closes storage from :meth:`afrom_postgres`)."""
        await self.await_for_background()
        for storage in [s for s in self._opened if s.is_async]:
            self._opened.remove(storage)
            await storage.aclose()
            storage.close_all()  # the thread lock it opened
        self.close()

    def __enter__(self) -> ObservationalMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> ObservationalMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the agent's model ----------------------------------------------------------------

    @property
    def needs_actor_model(self) -> bool:
        """Whether steps need the agent's model to resolve fractional thresholds."""
        return self._actors.needs_actor_model

    # -- events ---------------------------------------------------------------------------

    def _emit(self, event: OMEvent) -> None:
        log_event(event)
        if self.on_debug_event is None:
            return
        try:
            self.on_debug_event(event)
        except Exception:
            logger.exception("on_debug_event raised; ignored")

    # -- the turn step (used by every front door) ------------------------------------------

    def _turn_input(
        self,
        *,
        thread_id: str | None,
        resource_id: str | None,
        record: Any,
        window: Sequence[MessageLikeRepresentation],
        **kwargs: Any,
    ) -> TurnInput:
        thread = require_thread_id(thread_id)
        rec = coerce_record(record)
        if rec is not None:
            check_owner(rec["resource_id"], thread_id=thread, resource_id=resource_id)
        return TurnInput(
            thread_id=thread,
            resource_id=resource_id,
            record=rec,
            window=as_messages(window),
            **kwargs,
        )

    def _step_input(
        self,
        thread_id: str | None,
        window: Sequence[MessageLikeRepresentation],
        options: StepOptions,
    ) -> tuple[TurnInput, TurnEnv]:
        opts: dict[str, Any] = dict(options)
        opts["actor_model"], env = self._actor_env(opts.get("actor_model"), opts.get("record"))
        renames = {"observe": "allow_observe", "reflect": "allow_reflect"}
        fields: dict[str, Any] = {
            renames.get(k, k): v
            for k, v in opts.items()
            if k not in ("record", "resource_id", "store")
        }
        inp = self._turn_input(
            thread_id=thread_id,
            resource_id=opts.get("resource_id"),
            record=opts.get("record"),
            window=window,
            **fields,
        )
        return inp, env

    def step(
        self,
        *,
        thread_id: str | None,
        window: Sequence[MessageLikeRepresentation],
        **options: Unpack[StepOptions],
    ) -> TurnOutcome:
        """Run one step on ``window`` (the unobserved messages) and ``record``.

        This is what the graph nodes, the middleware and the history adapter call before a
        model call. It activates buffered observations, observes when the window is over the
        threshold, reflects when the log is, and starts background buffering; it returns the
        new record, the new window and the messages that left it (already archived).

        Args:
            thread_id: the conversation.
            window: its unobserved messages, oldest first. A message without an id is
                given one (on a copy in ``outcome.window``): pass the outcome's window to the
                next step, so the work buffered over it is found again.
            **options: see :class:`StepOptions` (``record``, ``resource_id``, ``emit``,
                ``actor_model``, ...).
        """
        inp, env = self._step_input(thread_id, window, options)
        plan = after_migration(inp.thread_id, inp.resource_id, turn_plan(env, inp))
        runs = self._runs.on_store(options.get("store"))
        return runs.start_threads(runs.run(plan))

    async def astep(
        self,
        *,
        thread_id: str | None,
        window: Sequence[MessageLikeRepresentation],
        **options: Unpack[StepOptions],
    ) -> TurnOutcome:
        """Async twin of :meth:`step`."""
        inp, env = self._step_input(thread_id, window, options)
        plan = after_migration(inp.thread_id, inp.resource_id, turn_plan(env, inp))
        runs = self._runs.on_store(options.get("store"))
        return runs.start_tasks(await runs.arun(plan))

    def _idle_input(self, turn: EndTurnOptions) -> TurnInput | None:
        if not self.config.observation.buffer_on_idle:
            return None
        return self._turn_input(
            thread_id=turn["thread_id"],
            resource_id=turn.get("resource_id"),
            record=turn.get("record"),
            window=turn["window"],
            idle=True,
            configurable=turn.get("configurable"),
        )

    def end_turn(self, **turn: Unpack[EndTurnOptions]) -> None:
        """The agent's turn ended: with ``observation.buffer_on_idle``, buffer the rest now."""
        if (inp := self._idle_input(turn)) is not None:
            env = self._actors.record_env(inp.record)
            runs = self._runs.on_store(turn.get("store"))
            runs.start_threads(runs.run(idle_plan(env, inp)))

    async def aend_turn(self, **turn: Unpack[EndTurnOptions]) -> None:
        """Async twin of :meth:`end_turn`."""
        if (inp := self._idle_input(turn)) is not None:
            env = self._actors.record_env(inp.record)
            runs = self._runs.on_store(turn.get("store"))
            runs.start_tasks(await runs.arun(idle_plan(env, inp)))

    # -- background work ------------------------------------------------------------------

    def run_background(self) -> None:
        """Manual background mode: run the queued background jobs now, on this thread."""
        self._background.run_pending()

    def background_running(self, thread_id: str | None = None) -> bool:
        """True while background buffering or reflection is in flight (for ``thread_id``)."""
        keys = self._background.keys()
        return any(k.endswith(f":{thread_id}") for k in keys) if thread_id else bool(keys)

    def wait_for_background(self, timeout: float | None = None) -> None:
        """Block until in-flight background work started from sync code has finished.

        For tests, scripts, notebooks and shutdown. Work started from async code runs on its
        event loop: use :meth:`await_for_background` there.
        """
        for key in self._background.keys():
            self._background.wait(key, timeout)

    async def await_for_background(self, timeout: float | None = None) -> None:
        """Async twin of :meth:`wait_for_background`: wait for all in-flight background work.

        Waits for work started from sync code (worker threads) and from async code (tasks).
        """
        for key in self._background.keys():
            await self._background.await_key(key, timeout)

    async def await_background(self, timeout: float | None = None) -> None:
        """Deprecated name of :meth:`await_for_background` (emits ``DeprecationWarning``)."""
        warnings.warn(
            "ObservationalMemory.await_background() is deprecated: use "
            "await_for_background(), the async twin of wait_for_background().",
            DeprecationWarning,
            stacklevel=2,
        )
        await self.await_for_background(timeout)

    @property
    def tools(self) -> list[BaseTool]:
        """Tools the agent gets: ``recall`` (or ``execute_memory_recall``), ``memory``.

        ``recall`` comes with retrieval, ``execute_memory_recall`` in its place with
        ``retrieval.code_mode``, and ``memory`` with ``memory_tool``.
        """
        if self._tools is None:
            retrieval = self.config.retrieval if self.config.retrieval_enabled else None
            if retrieval is None:
                self._tools = []
            elif retrieval.code_mode is not None:  # one program in place of many calls
                self._tools = [create_recall_code_tool(self)]
            else:
                self._tools = [create_recall_tool(self)]
            if self.config.memory_tool:
                self._tools.append(create_memory_tool(self))
        return list(self._tools)

    def new_record(self, *, thread_id: str, resource_id: str | None = None) -> OMRecord:
        """A fresh, empty record for a thread."""
        return new_record(
            thread_id=thread_id,
            resource_id=resource_id,
            scope=self.config.scope,
            timezone=self.timezone,
            now=iso(self._clock()),
        )

    def should_observe(
        self,
        record: OMRecord | dict[str, Any] | None,
        window: Sequence[BaseMessage],
        *,
        actor_model: Any = None,
        reported_tokens: int = 0,
    ) -> bool:
        """True when a step would observe ``window`` synchronously now.

        Args:
            record: the thread's OM record (``None``: nothing is due).
            window: its unobserved messages.
            actor_model: the agent's chat model or ``provider/model`` (as for :meth:`step`).
            reported_tokens: the window's provider-reported size
                (:attr:`TurnOutcome.reported_tokens` of the step just run): it counts when
                larger than the estimate.
        """
        rec = coerce_record(record)
        if rec is None:
            return False
        _, env = self._actor_env(actor_model, rec)
        others = int(rec.get(OTHERS_TOKENS_KEY) or 0)  # type: ignore[call-overload]
        tokens = env.counter.count_messages(window) + others  # resource scope: all threads count
        return sync_observation_due(env, rec, max(tokens, reported_tokens), rec["thread_id"])

    def should_reflect(
        self, record: OMRecord | dict[str, Any] | None, *, actor_model: Any = None
    ) -> bool:
        """True when a step would reflect synchronously now (``actor_model`` as for ``step``)."""
        rec = coerce_record(record)
        return rec is not None and sync_reflection_due(self._actor_env(actor_model, rec)[1], rec)

    # -- graph state ------------------------------------------------------------------------

    def read_state(self, state: Mapping[str, Any], *, store: BaseStore | None = None) -> Any:
        """The OM record of a graph state (``None`` without one).

        Graph state names the observation groups by key; they are read from ``store`` (the
        graph run's store; default memory's own) unless this process has them cached.

        Raises:
            StorageError: the store lacks a group the state names.
        """
        record = cached_state_record(state)
        if record is not UNREAD:
            return record
        return self._runs.on_store(store).run(state_record_plan(state))

    async def aread_state(self, state: Mapping[str, Any], *, store: BaseStore | None = None) -> Any:
        """Async twin of :meth:`read_state`."""
        record = cached_state_record(state)
        if record is not UNREAD:
            return record
        return await self._runs.on_store(store).arun(state_record_plan(state))

    def keep_state(
        self,
        update: Mapping[str, Any],
        state: Mapping[str, Any] | None,
        *,
        store: BaseStore | None = None,
    ) -> None:
        """Store the observation groups ``update`` names that ``state`` did not.

        Call it before handing ``update`` to LangGraph, so no checkpoint names a group the
        store lacks.
        """
        if OM_STATE_KEY in update:  # the record is rewritten: it may name new groups
            self._runs.on_store(store).run(groups_to_store(update, state))

    async def akeep_state(
        self,
        update: Mapping[str, Any],
        state: Mapping[str, Any] | None,
        *,
        store: BaseStore | None = None,
    ) -> None:
        """Async twin of :meth:`keep_state`."""
        if OM_STATE_KEY in update:
            await self._runs.on_store(store).arun(groups_to_store(update, state))

    def render(self, record: OMRecord | dict[str, Any] | None) -> MemoryContext:
        """The memory context (preamble, observation log, hints) for ``record``."""
        if not self.config.enabled:
            return MemoryContext(blocks=[])
        shown = self._shown_options()
        rec = coerce_record(record, copy=False)
        context = (
            render_memory(
                rec,
                now=self._clock(),
                retrieval=shown.retrieval,
                recall_instructions=shown.instructions,
                max_observation_tokens=self._shown_cap(rec, shown),
                count=self.counter.count_text,
                preamble=self.config.preamble,
                working_memory=working_memory_text(self._extractors, rec),
                hints=shown.hints,
                # resource scope's view of the shared log has no source ranges to show
                show_ranges=False if self.config.scope == "resource" else None,
            )
            if rec is not None
            else MemoryContext(blocks=[])
        )
        if not context.blocks and shown.instructions and self._recall_scope() == "resource":
            # Resource-scope recall is useful from the first message: other threads exist.
            return MemoryContext(blocks=[shown.instructions])
        return context

    def _shown_options(self) -> _ShownOptions:
        """What every render reads of the config, worked out once per config object."""
        config = self.config
        if self._shown is None or self._shown.config is not config:
            retrieval = config.retrieval_enabled
            self._shown = _ShownOptions(
                config=config,
                retrieval=retrieval,
                instructions=recall_instructions(config.retrieval) if retrieval else None,
                hints=config.shown_hints,
                cap=None if config.uses_fractions else _observation_cap(config),
            )
        return self._shown

    def _shown_cap(self, record: OMRecord, shown: _ShownOptions | None = None) -> int | None:
        """The most observation tokens the memory context shows (see :func:`_observation_cap`).

        With absolute thresholds every agent model's config is the engine's; with fractional
        ones the record's agent model decides, and the cap is ``None`` while no agent model is
        known.
        """
        cap = (shown or self._shown_options()).cap
        if cap is not None:
            return cap
        try:
            return _observation_cap(self._actor_env(None, record)[1].config)
        except OMConfigError:
            return None

    def _recall_scope(self) -> str:
        retrieval = self.config.retrieval
        return retrieval.scope if retrieval is not None else "thread"

    def threshold(self, record: OMRecord | dict[str, Any] | None) -> int:
        """Unobserved-message tokens at which ``record``'s thread is observed."""
        rec = coerce_record(record) or new_record(thread_id="_", resource_id=None, now="")
        return self._env.message_threshold(rec)
