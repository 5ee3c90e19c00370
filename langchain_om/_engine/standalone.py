"""The engine's calls that keep a thread in the store: :class:`StandaloneCalls`.

:class:`~langchain_om.ObservationalMemory` inherits them: the thread lock, ``add_messages``,
``observe``, ``reflect``, ``status``, ``forget``, the working memory, ``get_context`` and the
archive reads, each with its ``a*`` twin. Each builds a plan (a thread's record and message
window are kept in the store, so no graph is needed) and runs it through the engine's
:class:`~langchain_om._engine.io.Runs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, cast

from langchain_core.messages import BaseMessage, MessageLikeRepresentation
from langgraph.checkpoint.base import BaseCheckpointSaver

from langchain_om._core.dates import iso
from langchain_om._core.record import coerce_record
from langchain_om._core.tokens import TokenCounter
from langchain_om._core.types import OMRecord
from langchain_om._engine.actor import ActorEnvs
from langchain_om._engine.control import refuse_in_read_only
from langchain_om._engine.io import Runs, ThreadSnapshot, as_messages, context_messages
from langchain_om._plans.effects import Plan
from langchain_om._plans.recall import Caller, RecallInput, recall_plan
from langchain_om._plans.resource_turn import shared_view_plan
from langchain_om._plans.spend import spend_status_plan
from langchain_om._plans.standalone import StandaloneRequest, ThreadState, load_plan, step_plan
from langchain_om._plans.storage import archived_messages_plan, forget_plan, thread_ids_plan
from langchain_om._plans.titles import clean_title, pin_plan, titled_plan, unpin_plan
from langchain_om._plans.types import TurnEnv, require_thread_id
from langchain_om._plans.working_memory import (
    require_working_memory,
    resource_working_memory_plan,
    update_working_memory_plan,
    with_working_memory,
    working_memory_value,
)
from langchain_om._storage.checkpoint_view import (
    aread_graph_thread,
    athread_ids,
    read_graph_thread,
    thread_ids,
)
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import OMUsageError
from langchain_om.extractors import Extractor
from langchain_om.locks import hold_async
from langchain_om.tools import RecallMemory, recall_settings

__all__ = ["StandaloneCalls"]


class StandaloneCalls:
    """The standalone API of :class:`~langchain_om.ObservationalMemory` (set up by its init)."""

    config: ObservationalMemoryConfig
    checkpointer: BaseCheckpointSaver[Any]
    _actors: ActorEnvs
    _runs: Runs
    _extractors: list[Extractor]
    counter: TokenCounter

    # -- the agent's model ----------------------------------------------------------------

    @property
    def _env(self) -> TurnEnv:
        return self._actors.env_for(self._actors.default)

    def _actor_env(self, model: object, record: Any = None) -> tuple[str | None, TurnEnv]:
        """The agent model's id (``model``, the default, or ``record``'s last) and its env."""
        actor = self._actors.resolve(model, record)
        return (actor.model_id if actor else None), self._actors.env_for(actor)

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
        ``("user", "hi")`` tuples, ``{"role": ..., "content": ...}`` dicts or strings. A message
        without an id is stored as a copy with a fresh one (``str(uuid4())``, as LangGraph's
        reducer gives), which every later read shows; a message with a known id replaces it.
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
        force: bool = True,
        over_budget: bool = False,
    ) -> ThreadSnapshot:
        """Observe now: add ``messages`` (if any) and observe the thread's window.

        ``messages`` may be anything ``convert_to_messages`` accepts (message objects,
        ``("user", "hi")`` tuples, role/content dicts, strings); id-less ones are given ids as
        :meth:`add_messages` gives them.

        With ``force=True`` (the default) the window is observed below the threshold too,
        current turn included (the safe cut nearest the end: a tool call is never separated
        from its results); nothing about the thresholds changes for later calls. With
        ``force=False`` it is observed only when the thresholds ask for it, as a turn would.
        Raises :class:`~langchain_om.errors.CycleFailedError` when the Observer fails; nothing
        is removed then. While a ``spend`` limit is used up it raises
        :class:`~langchain_om.errors.SpendLimitError` (naming the limit and when it has room
        again) without calling the Observer; ``over_budget=True`` observes anyway, and the
        calls still count.
        """
        plan = self._step_plan(
            thread_id, resource_id, messages, force_observe=force, over_budget=over_budget
        )
        return self._runs.standalone(thread_id, plan)

    async def aobserve(
        self,
        *,
        thread_id: str,
        messages: Sequence[MessageLikeRepresentation] | None = None,
        resource_id: str | None = None,
        force: bool = True,
        over_budget: bool = False,
    ) -> ThreadSnapshot:
        """Async twin of :meth:`observe`."""
        plan = self._step_plan(
            thread_id, resource_id, messages, force_observe=force, over_budget=over_budget
        )
        return await self._runs.astandalone(thread_id, plan)

    def reflect(
        self, *, thread_id: str, resource_id: str | None = None, over_budget: bool = False
    ) -> ThreadSnapshot:
        """Reflect now: condense the thread's observation log into a new generation.

        While a ``spend`` limit is used up it raises
        :class:`~langchain_om.errors.SpendLimitError` without calling the Reflector;
        ``over_budget=True`` reflects anyway (the calls still count).
        """
        plan = self._step_plan(
            thread_id, resource_id, None, force_reflect=True, over_budget=over_budget
        )
        return self._runs.standalone(thread_id, plan)

    async def areflect(
        self, *, thread_id: str, resource_id: str | None = None, over_budget: bool = False
    ) -> ThreadSnapshot:
        """Async twin of :meth:`reflect`."""
        plan = self._step_plan(
            thread_id, resource_id, None, force_reflect=True, over_budget=over_budget
        )
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
        found = read_graph_thread(
            self.checkpointer, thread_id, checkpoint_id, store=self._runs.executor
        )
        given = self._runs.checkpoint_state(thread_id, resource_id, checkpoint_id, found)
        plan = self._status_plan(thread_id, resource_id, given)
        return self._runs.from_checkpoint(self._runs.standalone(thread_id, plan), found)

    async def astatus(
        self, *, thread_id: str, resource_id: str | None = None, checkpoint_id: str | None = None
    ) -> ThreadSnapshot:
        """Async twin of :meth:`status`."""
        found = await aread_graph_thread(
            self.checkpointer, thread_id, checkpoint_id, store=self._runs.executor
        )
        given = self._runs.checkpoint_state(thread_id, resource_id, checkpoint_id, found)
        plan = self._status_plan(thread_id, resource_id, given)
        return self._runs.from_checkpoint(await self._runs.astandalone(thread_id, plan), found)

    def _status_plan(
        self, thread_id: str, resource_id: str | None, given: ThreadState | None = None
    ) -> Plan[ThreadState]:
        """The stored state (or ``given``, a checkpoint's), with resource scope's shared log."""
        if given is None:
            given = yield from load_plan(self._env, thread_id, resource_id)  # reads the pin
        else:  # a checkpoint's record: its thread's pin applies all the same
            record, pinned = yield from titled_plan(given.record)
            given = ThreadState(record, given.window, given.status, title_pinned=pinned)
        state = given
        view = yield from cast("Plan[OMRecord]", shared_view_plan(self._env, state.record))
        spend = yield from spend_status_plan(self._env, state.record)
        return ThreadState(
            view,
            state.window,
            state.status,
            state.jobs,
            title_pinned=state.title_pinned,
            spend=spend,
        )

    def rename_thread(self, thread_id: str, title: str) -> None:
        """Give a thread a title that wins over the Observer's until it is unpinned.

        Works for every front door (the title is kept in the store, beside the thread):
        ``status`` and ``inspect`` show it at once, and each observation writes it into the
        thread's record while the Observer's proposals (``observation.thread_title``) are kept
        aside; no ``data-om-thread-update`` is sent for the thread while it is pinned.

        Raises:
            OMUsageError: ``title`` is not a string, is blank or is longer than 200
                characters, or the memory is ``read_only``.
        """
        refuse_in_read_only(self.config, "rename_thread")
        plan = pin_plan(thread_id, clean_title(title), now=iso(self._env.now()))
        self._runs.locked(require_thread_id(thread_id), plan)

    async def arename_thread(self, thread_id: str, title: str) -> None:
        """Async twin of :meth:`rename_thread`."""
        refuse_in_read_only(self.config, "arename_thread")
        plan = pin_plan(thread_id, clean_title(title), now=iso(self._env.now()))
        await self._runs.alocked(require_thread_id(thread_id), plan)

    def unpin_thread_title(self, thread_id: str) -> bool:
        """Let the Observer title the thread again; whether it had a pinned title.

        The title stays as it is until the next observation with ``observation.thread_title``
        on replaces it with the Observer's.

        Raises:
            OMUsageError: the memory is ``read_only``.
        """
        refuse_in_read_only(self.config, "unpin_thread_title")
        return self._runs.locked(require_thread_id(thread_id), unpin_plan(thread_id))

    async def aunpin_thread_title(self, thread_id: str) -> bool:
        """Async twin of :meth:`unpin_thread_title`."""
        refuse_in_read_only(self.config, "aunpin_thread_title")
        return await self._runs.alocked(require_thread_id(thread_id), unpin_plan(thread_id))

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
        In resource scope the working memory is the resource's, shared by all its threads:
        it is written to the resource's shared record (with ``record`` too), and the record
        returned shows it.

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
        if self.config.scope == "resource":  # one working memory per resource, in the store
            thread = require_thread_id(rec["thread_id"] if rec is not None else thread_id)
            plan = resource_working_memory_plan(self._env, thread, resource_id, value, rec)
            return thread, cast("Plan[ThreadState]", plan)
        if rec is not None:
            return with_working_memory(self._extractors, rec, value, self.counter.count_text)
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

    def receipt(
        self,
        thread_id: str,
        line: str,
        *,
        resource_id: str | None = None,
        record: OMRecord | dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The receipt of one observation line: the archived messages it was written from.

        Args:
            thread_id: the thread.
            line: the line's id (``L`` + 6 hex, as the memory tool shows it) or its text (or a
                part of it); a line of the live log, else of archive mode's retired groups.
            resource_id: with it, raises ``OMUsageError`` when the thread is another's.
            record: read this record (a graph checkpoint's ``om_record``: forks keep their own
                receipts); default: the thread's latest, as :meth:`status` reads it.

        Returns:
            ``{"line_id", "text", "group_id", "kind", "observed_at", "message_count",
            "message_ids", "messages", ...}``, the messages rendered as recall shows them (the
            first page; ``message_ids`` lists them all, up to 1000).

        Raises:
            OMUsageError: no line matches, or the thread belongs to another resource.
        """
        rec = record if record is not None else self.status(thread_id=thread_id).record
        return self._runs.run(self._receipt_plan(thread_id, line, resource_id, rec))

    async def areceipt(
        self,
        thread_id: str,
        line: str,
        *,
        resource_id: str | None = None,
        record: OMRecord | dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Async twin of :meth:`receipt`."""
        rec = record if record is not None else (await self.astatus(thread_id=thread_id)).record
        return await self._runs.arun(self._receipt_plan(thread_id, line, resource_id, rec))

    def _receipt_plan(
        self, thread_id: str, line: str, resource_id: str | None, record: Any
    ) -> Plan[dict[str, Any]]:
        settings = recall_settings(cast("RecallMemory", self))
        caller = Caller(thread_id, resource_id, self.config.scope, None, coerce_record(record))
        args = RecallInput(mode="source", line=line, limit=100)
        result = yield from recall_plan(settings, caller, args)
        if "error" in result:
            raise OMUsageError(str(result["error"]))
        return {k: v for k, v in result.items() if k != "mode"}

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
