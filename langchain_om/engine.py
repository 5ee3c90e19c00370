"""The OM engine: :class:`ObservationalMemory`.

One object holds the validated options, the models, the token counter and the storage
(a LangGraph ``BaseStore`` for the archive and a checkpointer for graph state). Every front
door drives the same turn plan through it; the standalone methods (``observe``, ``reflect``,
``status``, ``get_context`` and their ``a*`` twins) keep a thread's record and message window in
the store so the engine works with no graph at all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Literal, Unpack, cast

from langchain_core.messages import BaseMessage, MessageLikeRepresentation
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore

from langchain_om._actor import ActorEnvs
from langchain_om._backends import OpenedStorage, OpensStorage
from langchain_om._checkpoint_view import (
    aread_graph_thread,
    athread_ids,
    read_graph_thread,
    thread_ids,
)
from langchain_om._control import refuse_in_read_only
from langchain_om._core.callable_tokens import MessageCounter, as_token_counter
from langchain_om._core.dates import iso
from langchain_om._core.recall import recall_instructions
from langchain_om._core.record import check_owner, coerce_record, new_record
from langchain_om._core.render import MemoryContext, render_memory
from langchain_om._core.tokens import TokenCounter
from langchain_om._core.types import OMRecord
from langchain_om._engine_io import (
    EndTurnOptions,
    Runs,
    StepOptions,
    ThreadSnapshot,
    as_messages,
    context_messages,
)
from langchain_om._logging import log_event
from langchain_om._plans.background import Background
from langchain_om._plans.effects import Plan
from langchain_om._plans.resource import ResourceHandler
from langchain_om._plans.resource_turn import OTHERS_TOKENS_KEY, shared_view_plan
from langchain_om._plans.standalone import StandaloneRequest, ThreadState, load_plan, step_plan
from langchain_om._plans.storage import (
    after_migration,
    archived_messages_plan,
    forget_plan,
    thread_ids_plan,
)
from langchain_om._plans.turn import idle_plan, sync_observation_due, sync_reflection_due, turn_plan
from langchain_om._plans.types import TurnEnv, TurnInput, TurnOutcome, require_thread_id
from langchain_om._plans.working_memory import (
    require_working_memory,
    update_working_memory_plan,
    with_working_memory,
    working_memory_text,
    working_memory_value,
)
from langchain_om._role_models import RoleModels
from langchain_om._run_store import load_tokenizer
from langchain_om._spec_check import check_engine_args
from langchain_om._store_index import EmbeddingsSpec, check_vector_store, default_store
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import OMConfigError, OMUsageError
from langchain_om.events import OMEvent
from langchain_om.extractors import check_extractors, observation_extractors
from langchain_om.locks import LocalThreadLock, ThreadLock, hold_async
from langchain_om.retry import RetryPolicy
from langchain_om.tools import create_memory_tool, create_recall_tool

logger = logging.getLogger("langchain_om")

__all__ = ["EndTurnOptions", "ObservationalMemory", "StepOptions", "ThreadSnapshot"]


class ObservationalMemory(OpensStorage):
    """Observational Memory: an Observer and a Reflector that keep a conversation small.

    Args:
        options: a config object, a dict (snake_case or Mastra camelCase keys), ``True`` or
            ``False``; keyword arguments override it (``model=``, ``observation=``,
            ``reflection=``, ``scope=``, ``retrieval=``, ``hooks=``, …, see
            :class:`~langchain_om.config.ObservationalMemoryConfig`).
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
    """

    def __init__(
        self,
        options: ObservationalMemoryConfig | dict[str, Any] | bool | None = None,
        /,
        *,
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
        self.config = ObservationalMemoryConfig.coerce(options, **kwargs)
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
            vector=bool(self.config.retrieval and self.config.retrieval.vector),
            extractors=self._extractors,
            timezone=timezone,
            structured=self._models.structured,
            astructured=self._models.astructured,
            memory=self,
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
        await self.await_background()
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

    @property
    def _env(self) -> TurnEnv:
        return self._actors.env_for(self._actors.default)

    def _actor_env(self, model: object, record: Any = None) -> tuple[str | None, TurnEnv]:
        """The agent model's id (``model``, the default, or ``record``'s last) and its env."""
        actor = self._actors.resolve(model, record)
        return (actor.model_id if actor else None), self._actors.env_for(actor)

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
            window: its unobserved messages, oldest first.
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
        event loop: use :meth:`await_background` there.
        """
        for key in self._background.keys():
            self._background.wait(key, timeout)

    async def await_background(self, timeout: float | None = None) -> None:
        """Wait for all in-flight background work (sync- or async-started)."""
        for key in self._background.keys():
            await self._background.await_key(key, timeout)

    @property
    def tools(self) -> list[BaseTool]:
        """Tools the agent gets: ``recall`` with retrieval, ``memory`` with ``memory_tool``."""
        if self._tools is None:
            self._tools = [create_recall_tool(self)] if self.config.retrieval_enabled else []
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
    ) -> bool:
        """True when a step would observe ``window`` synchronously now.

        ``actor_model`` is the agent's chat model or ``provider/model`` (as for :meth:`step`).
        """
        rec = coerce_record(record)
        if rec is None:
            return False
        _, env = self._actor_env(actor_model, rec)
        others = int(rec.get(OTHERS_TOKENS_KEY) or 0)  # type: ignore[call-overload]
        tokens = env.counter.count_messages(window) + others  # resource scope: all threads count
        return sync_observation_due(env, rec, tokens, rec["thread_id"])

    def should_reflect(
        self, record: OMRecord | dict[str, Any] | None, *, actor_model: Any = None
    ) -> bool:
        """True when a step would reflect synchronously now (``actor_model`` as for ``step``)."""
        rec = coerce_record(record)
        return rec is not None and sync_reflection_due(self._actor_env(actor_model, rec)[1], rec)

    def render(self, record: OMRecord | dict[str, Any] | None) -> MemoryContext:
        """The memory context (preamble, observation log, hints) for ``record``."""
        if not self.config.enabled:
            return MemoryContext(blocks=[])
        retrieval = self.config.retrieval_enabled
        instructions = recall_instructions(self.config.retrieval) if retrieval else None
        rec = coerce_record(record)
        context = (
            render_memory(
                rec,
                now=self._clock(),
                retrieval=retrieval,
                recall_instructions=instructions,
                max_observation_tokens=self._shown_cap(rec),
                count=self.counter.count_text,
                preamble=self.config.preamble,
                working_memory=working_memory_text(self._extractors, rec),
                # resource scope's view of the shared log has no source ranges to show
                show_ranges=False if self.config.scope == "resource" else None,
            )
            if rec is not None
            else MemoryContext(blocks=[])
        )
        if not context.blocks and instructions and self._recall_scope() == "resource":
            # Resource-scope recall is useful from the first message: other threads exist.
            return MemoryContext(blocks=[instructions])
        return context

    def _shown_cap(self, record: OMRecord) -> int | None:
        """The most observation tokens the memory context shows: the reflection's block_after.

        ``None`` when fractional thresholds cannot be resolved (no agent model known yet).
        """
        try:
            return self._actor_env(None, record)[1].config.reflection.block_after_tokens
        except OMConfigError:
            return None

    def _recall_scope(self) -> str:
        retrieval = self.config.retrieval
        return retrieval.scope if retrieval is not None else "thread"

    def threshold(self, record: OMRecord | dict[str, Any] | None) -> int:
        """Unobserved-message tokens at which ``record``'s thread is observed."""
        rec = coerce_record(record) or new_record(thread_id="_", resource_id=None, now="")
        return self._env.message_threshold(rec)

    # -- standalone API (state kept in the store) -----------------------------------------

    def thread_lock(self, thread_id: str) -> AbstractContextManager[None]:
        """Hold ``thread_id``'s lock: across processes with a backend lock (``thread_lock=``).

        The standalone calls (``add_messages``, ``observe``, ``reflect``, ``forget`` and the
        history adapter) take it themselves. LangGraph does not serialise runs of a thread:
        with several workers, wrap each agent or graph run in it
        (``with memory.thread_lock(tid): agent.invoke(inputs, config)``), and after a crash
        resume the thread with ``agent.invoke(None, config)`` first.
        """
        return self._runs.lock.hold(thread_id)

    def athread_lock(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """Async twin of :meth:`thread_lock` (``async with``; not nested on one thread id)."""
        return hold_async(self._runs.lock, thread_id)

    def _step_plan(
        self,
        thread_id: str,
        resource_id: str | None,
        messages: Sequence[MessageLikeRepresentation] | None,
        actor_model: Any = None,
        **force: Any,
    ) -> Plan[ThreadState]:
        actor, env = self._actor_env(actor_model)
        given = as_messages(messages) if messages is not None else None
        request = StandaloneRequest(thread_id, resource_id, given, actor_model=actor, **force)
        return step_plan(env, request)

    def add_messages(
        self,
        thread_id: str,
        messages: Sequence[MessageLikeRepresentation],
        *,
        resource_id: str | None = None,
        actor_model: Any = None,
    ) -> ThreadSnapshot:
        """Append ``messages`` to the thread and run a threshold-driven step (like an agent).

        ``messages`` may be anything ``convert_to_messages`` accepts: message objects,
        ``("user", "hi")`` tuples, ``{"role": ..., "content": ...}`` dicts or strings.
        ``actor_model`` is the agent's chat model or ``provider/model``, when not the engine's.
        """
        plan = self._step_plan(thread_id, resource_id, messages, actor_model, trigger="turn-sync")
        return self._runs.standalone(thread_id, plan)

    async def aadd_messages(
        self,
        thread_id: str,
        messages: Sequence[MessageLikeRepresentation],
        *,
        resource_id: str | None = None,
        actor_model: Any = None,
    ) -> ThreadSnapshot:
        """Async twin of :meth:`add_messages`."""
        plan = self._step_plan(thread_id, resource_id, messages, actor_model, trigger="turn-sync")
        return await self._runs.astandalone(thread_id, plan)

    def observe(
        self,
        *,
        thread_id: str,
        messages: Sequence[MessageLikeRepresentation] | None = None,
        resource_id: str | None = None,
    ) -> ThreadSnapshot:
        """Observe now: add ``messages`` (if any) and observe the thread's window.

        ``messages`` may be anything ``convert_to_messages`` accepts (message objects,
        ``("user", "hi")`` tuples, role/content dicts, strings).

        The current turn is observed too (the safe cut nearest the end: a tool call is never
        separated from its results). Raises :class:`~langchain_om.errors.CycleFailedError` when
        the Observer fails; nothing is removed then.
        """
        plan = self._step_plan(thread_id, resource_id, messages, force_observe=True)
        return self._runs.standalone(thread_id, plan)

    async def aobserve(
        self,
        *,
        thread_id: str,
        messages: Sequence[MessageLikeRepresentation] | None = None,
        resource_id: str | None = None,
    ) -> ThreadSnapshot:
        """Async twin of :meth:`observe`."""
        plan = self._step_plan(thread_id, resource_id, messages, force_observe=True)
        return await self._runs.astandalone(thread_id, plan)

    def reflect(self, *, thread_id: str, resource_id: str | None = None) -> ThreadSnapshot:
        """Reflect now: condense the thread's observation log into a new generation."""
        plan = self._step_plan(thread_id, resource_id, None, force_reflect=True)
        return self._runs.standalone(thread_id, plan)

    async def areflect(self, *, thread_id: str, resource_id: str | None = None) -> ThreadSnapshot:
        """Async twin of :meth:`reflect`."""
        plan = self._step_plan(thread_id, resource_id, None, force_reflect=True)
        return await self._runs.astandalone(thread_id, plan)

    def status(
        self, *, thread_id: str, resource_id: str | None = None, checkpoint_id: str | None = None
    ) -> ThreadSnapshot:
        """Windows, thresholds, generation and buffered state of a thread (no model call).

        Agent and graph threads are read from their latest checkpoint through
        ``memory.checkpointer`` (``checkpoint_id``: an older one); standalone and history
        threads from the store (``snapshot.source`` says which). With ``resource_id``, raises
        ``OMUsageError`` when the thread belongs to another resource.
        """
        found = read_graph_thread(self.checkpointer, thread_id, checkpoint_id)
        given = self._runs.checkpoint_state(thread_id, resource_id, checkpoint_id, found)
        plan = self._status_plan(thread_id, resource_id, given)
        return self._runs.from_checkpoint(self._runs.standalone(thread_id, plan), found)

    async def astatus(
        self, *, thread_id: str, resource_id: str | None = None, checkpoint_id: str | None = None
    ) -> ThreadSnapshot:
        """Async twin of :meth:`status`."""
        found = await aread_graph_thread(self.checkpointer, thread_id, checkpoint_id)
        given = self._runs.checkpoint_state(thread_id, resource_id, checkpoint_id, found)
        plan = self._status_plan(thread_id, resource_id, given)
        return self._runs.from_checkpoint(await self._runs.astandalone(thread_id, plan), found)

    def _status_plan(
        self, thread_id: str, resource_id: str | None, given: ThreadState | None = None
    ) -> Plan[ThreadState]:
        """The stored state (or ``given``, a checkpoint's), with resource scope's shared log."""
        if given is None:
            given = yield from load_plan(self._env, thread_id, resource_id)
        state = given
        view = yield from cast("Plan[OMRecord]", shared_view_plan(self._env, state.record))
        return ThreadState(view, state.window, state.status, state.jobs)

    def forget(self, *, thread_id: str, resource_id: str | None = None) -> None:
        """Delete everything memory stored for a thread (not the graph's checkpoints).

        Raises:
            OMUsageError: the memory is ``read_only``.
        """
        refuse_in_read_only(self.config, "forget")
        self._runs.locked(thread_id, forget_plan(thread_id, resource_id))

    async def aforget(self, *, thread_id: str, resource_id: str | None = None) -> None:
        """Async twin of :meth:`forget`."""
        refuse_in_read_only(self.config, "aforget")
        await self._runs.alocked(thread_id, forget_plan(thread_id, resource_id))

    def get_working_memory(
        self,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
        record: OMRecord | dict[str, Any] | None = None,
    ) -> Any:
        """The working memory: the document (``str``) or typed value (``dict``), or ``None``.

        Read from ``record`` when given (a graph's or agent's state, ``state["om_record"]``),
        else from the stored thread ``thread_id``.

        Raises:
            OMUsageError: no working memory is configured.
        """
        require_working_memory(self._extractors)
        rec = coerce_record(record)
        if rec is None:
            rec = self.status(
                thread_id=require_thread_id(thread_id), resource_id=resource_id
            ).record
        return working_memory_value(self._extractors, rec)

    def update_working_memory(
        self,
        value: Any,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
        record: OMRecord | dict[str, Any] | None = None,
    ) -> OMRecord:
        """Replace the working memory; the agent sees it on its next model call.

        With ``record`` (a graph's or agent's state) the updated record is returned for you
        to write back (``agent.update_state(config, {"om_record": new})``); without it, the
        stored thread ``thread_id`` is updated and its record returned.

        Raises:
            OMUsageError: no working memory is configured, ``value`` does not fit its schema
                (or is not a ``str`` for a text one), or the memory is ``read_only``.
        """
        update = self._working_memory_update(value, thread_id, resource_id, record)
        if isinstance(update, dict):
            return update
        return self._runs.locked(*update).record

    async def aupdate_working_memory(
        self,
        value: Any,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
        record: OMRecord | dict[str, Any] | None = None,
    ) -> OMRecord:
        """Async twin of :meth:`update_working_memory`."""
        update = self._working_memory_update(value, thread_id, resource_id, record)
        if isinstance(update, dict):
            return update
        return (await self._runs.alocked(*update)).record

    def _working_memory_update(
        self,
        value: Any,
        thread_id: str | None,
        resource_id: str | None,
        record: OMRecord | dict[str, Any] | None,
    ) -> OMRecord | tuple[str, Plan[ThreadState]]:
        """The updated ``record``, or the thread and plan that update the stored one."""
        refuse_in_read_only(self.config, "update_working_memory")
        rec = coerce_record(record)
        if rec is not None:
            return with_working_memory(self._extractors, rec, value)
        thread = require_thread_id(thread_id)
        return thread, update_working_memory_plan(self._env, thread, resource_id, value)

    def get_context(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        merge_system_message: bool = False,
    ) -> list[BaseMessage]:
        """What the agent's model would see: the memory system message, then the window.

        Args:
            thread_id: the conversation.
            resource_id: when given, raises ``OMUsageError`` if the thread belongs to another
                resource.
            merge_system_message: when the window starts with a system message, append memory
                to it instead of putting a second system message in front (for providers
                that take one system instruction only).
        """
        snap = self.status(thread_id=thread_id, resource_id=resource_id)
        return context_messages(snap, merge=merge_system_message)

    async def aget_context(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        merge_system_message: bool = False,
    ) -> list[BaseMessage]:
        """Async twin of :meth:`get_context`."""
        snap = await self.astatus(thread_id=thread_id, resource_id=resource_id)
        return context_messages(snap, merge=merge_system_message)

    # -- reads ------------------------------------------------------------------------------

    def archived_messages(
        self, thread_id: str, *, record: OMRecord | dict[str, Any] | None = None
    ) -> list[BaseMessage]:
        """The messages of a thread that left its window, oldest first (the recall archive).

        Args:
            thread_id: the thread.
            record: read this record's branch (a graph checkpoint's ``om_record``: forks and
                time travel keep their own archives); default: the standalone record, else
                the branch the thread archived last.
        """
        return self._runs.run(archived_messages_plan(thread_id, record))

    async def aarchived_messages(
        self, thread_id: str, *, record: OMRecord | dict[str, Any] | None = None
    ) -> list[BaseMessage]:
        """Async twin of :meth:`archived_messages`."""
        return await self._runs.arun(archived_messages_plan(thread_id, record))

    def list_threads(self) -> list[str]:
        """Ids of every thread, sorted.

        Those the store keeps (standalone and history) and those ``memory.checkpointer`` holds
        checkpoints for (agents and graphs).
        """
        return sorted(set(self._runs.run(thread_ids_plan())) | thread_ids(self.checkpointer))

    async def alist_threads(self) -> list[str]:
        """Async twin of :meth:`list_threads`."""
        stored = await self._runs.arun(thread_ids_plan())
        return sorted(set(stored) | await athread_ids(self.checkpointer))
