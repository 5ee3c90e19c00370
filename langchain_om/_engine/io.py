"""What the engine takes and returns, and how its plans run.

:class:`StepOptions` and :class:`EndTurnOptions` are the keyword arguments of
``ObservationalMemory.step`` and ``end_turn``; :class:`ThreadSnapshot` is what memory holds for
one thread (the standalone calls return it). :class:`Runs` runs the engine's
plans through the two drivers (a standalone call under the thread's lock), starts the
background jobs a plan asked for (worker threads from sync code, tasks from async code), and
shapes a thread's state into a snapshot. ``ObservationalMemory`` holds one and delegates to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NotRequired, Required, TypedDict, TypeVar, cast

from langchain_core.messages import (
    BaseMessage,
    MessageLikeRepresentation,
    SystemMessage,
    convert_to_messages,
)
from langgraph.store.base import BaseStore

from langchain_om._core.record import check_owner, new_record
from langchain_om._core.render import MemoryContext
from langchain_om._core.types import OMRecord
from langchain_om._plans.background import Background
from langchain_om._plans.cycles import status_event
from langchain_om._plans.effects import Executor, Plan, run_async, run_sync, waiting_at_most
from langchain_om._plans.graph_state import merge_memory
from langchain_om._plans.standalone import ThreadState
from langchain_om._plans.types import TurnEnv, TurnOutcome
from langchain_om._storage.checkpoint_view import GraphThread
from langchain_om.display import render_html
from langchain_om.errors import OMUsageError
from langchain_om.events import OMEvent, StatusEvent, WindowUsage
from langchain_om.locks import ThreadLock, hold_async

_T = TypeVar("_T")
_WithJobs = TypeVar("_WithJobs", TurnOutcome, ThreadState)


class StepOptions(TypedDict, total=False):
    """Optional arguments of :meth:`ObservationalMemory.step`."""

    record: OMRecord | dict[str, Any] | None
    """The thread's OM record (``None`` starts a new one)."""
    resource_id: str | None
    step_number: int
    """Model calls already made in this turn (for ``data-om-status``)."""
    emit: Callable[[OMEvent], None] | None
    """Also send this step's events here (e.g. LangGraph's stream writer)."""
    observe: bool
    """Allow activation, synchronous observation and buffering (default ``True``)."""
    reflect: bool
    """Allow reflection (default ``True``)."""
    actor_model: Any
    """The agent's chat model, or its ``provider/model`` id: image and file estimates, the
    ``"auto"`` idle TTL, provider change, and fractional thresholds (from the model's profile)."""
    sync_cycles: bool
    """Allow synchronous Observer/Reflector calls (the graph gate leaves them to nodes)."""
    emit_status: bool
    """Emit ``data-om-status`` (default ``True``)."""
    context_overflow: bool
    """The agent's model call overflowed its context window: observe now whatever the
    thresholds (buffered observations first, the current turn kept) and emit
    ``data-om-context-overflow``."""
    configurable: Mapping[str, Any] | None
    """The run config's ``configurable`` (the agent and graph front doors pass it): dynamic
    extractor instructions and schemas and the transform hooks see it as
    ``ctx["configurable"]``."""
    store: BaseStore | None
    """The store of the graph run this step belongs to (``runtime.store``): the archive,
    buffered chunks and search documents go there. ``None``: ``memory.store``."""


class EndTurnOptions(TypedDict):
    """Arguments of :meth:`ObservationalMemory.end_turn`."""

    thread_id: Required[str | None]
    """The conversation."""
    window: Required[Sequence[MessageLikeRepresentation]]
    """Its unobserved messages, oldest first."""
    record: NotRequired[OMRecord | dict[str, Any] | None]
    """The thread's OM record (``None`` starts a new one)."""
    resource_id: NotRequired[str | None]
    configurable: NotRequired[Mapping[str, Any] | None]
    """The run config's ``configurable``, as for :meth:`ObservationalMemory.step`."""
    store: NotRequired[BaseStore | None]
    """The graph run's store (``runtime.store``); ``None``: ``memory.store``."""


@dataclass(frozen=True)
class ThreadSnapshot:
    """What memory holds for one thread: the record, the window and the rendered context."""

    thread_id: str
    record: OMRecord
    window: list[BaseMessage]
    status: StatusEvent
    context: MemoryContext
    source: Literal["store", "checkpoint"] = field(default="store", repr=False)
    """Where the thread's memory lives: the store (standalone and history threads) or a
    graph checkpoint (agent and graph threads)."""
    checkpoint_id: str | None = field(default=None, repr=False)
    """The checkpoint read, for agent and graph threads."""
    title_pinned: bool = field(default=False, repr=False)
    """The title was given by the application (``rename_thread``) and wins over the
    Observer's until ``unpin_thread_title``."""

    @property
    def title(self) -> str | None:
        """The thread's title: the pinned one, else the Observer's (``None`` without one)."""
        title = self.record.get("title")
        return title if isinstance(title, str) and title else None

    @property
    def observations(self) -> str:
        """The observation log as text."""
        return "\n\n".join(g["text"] for g in self.record["groups"])

    @property
    def extracted(self) -> dict[str, Any]:
        """The extractors' values (schema extractors' as validated JSON), by key path."""
        return dict(self.record["extracted"])

    def __repr__(self) -> str:
        """One short line: ids, counts and tokens, never the thread's text.

        The messages, the log and the context are one attribute away (``window``,
        ``observations``, ``context.text``); ``print(snapshot)`` and a REPL show this line.
        """
        status = self.status
        groups = self.record["groups"]
        lines = sum(
            1
            for group in groups
            for line in group["text"].splitlines()
            if line.strip() and not line.lstrip().startswith("Date:")
        )
        checkpoint = f", checkpoint_id={self.checkpoint_id!r}" if self.checkpoint_id else ""
        return (
            f"ThreadSnapshot(thread_id={self.thread_id!r}, source={self.source!r}{checkpoint}, "
            f"messages={len(self.window)} ({_tokens(status.messages)}), "
            f"observations={lines} lines in {len(groups)} groups "
            f"({_tokens(status.observations)}), generation={status.generation_count})"
        )

    def _repr_html_(self) -> str:
        return render_html(self)


def _tokens(usage: WindowUsage) -> str:
    """``"1200/30000 tokens"``: a window's tokens against its threshold."""
    return f"{usage.tokens}/{usage.threshold} tokens"


@dataclass(frozen=True)
class Runs:
    """Runs the engine's plans: the drivers, the thread lock and the background jobs."""

    executor: Executor
    background: Background
    lock: ThreadLock
    env: Callable[[], TurnEnv]
    """The engine's default environment (for the status of a state that carries none)."""
    render: Callable[[OMRecord], MemoryContext]
    sync_wait: float | None = None
    """Most seconds a plan run for a waiting caller spends between model-call retries."""

    def on_store(self, store: BaseStore | None) -> Runs:
        """These runs on the graph run's ``store`` (``None`` or memory's own store: these)."""
        if store is None or store is self.executor.store:
            return self
        return replace(self, executor=self.executor.with_store(store))

    def run(self, plan: Plan[_T]) -> _T:
        """Run ``plan`` with the sync driver (its retries wait at most ``sync_wait``)."""
        with waiting_at_most(self.sync_wait):
            return run_sync(plan, self.executor)

    async def arun(self, plan: Plan[_T]) -> _T:
        """Run ``plan`` with the async driver (its retries wait at most ``sync_wait``)."""
        with waiting_at_most(self.sync_wait):
            return await run_async(plan, self.executor)

    def start_threads(self, done: _WithJobs) -> _WithJobs:
        """Start the background jobs a sync step asked for, on worker threads."""
        for job in done.jobs:
            self.background.start_thread(job.key, job.plan, self.executor)
        done.jobs = []
        return done

    def start_tasks(self, done: _WithJobs) -> _WithJobs:
        """Start the background jobs an async step asked for, as tasks on the running loop."""
        for job in done.jobs:
            self.background.start_task(job.key, job.plan, self.executor)
        done.jobs = []
        return done

    def locked(self, thread_id: str, plan: Plan[_T]) -> _T:
        """Run ``plan`` under ``thread_id``'s lock."""
        with self.lock.hold(thread_id):
            return self.run(plan)

    async def alocked(self, thread_id: str, plan: Plan[_T]) -> _T:
        """Async twin of :meth:`locked`."""
        async with hold_async(self.lock, thread_id):
            return await self.arun(plan)

    def standalone(self, thread_id: str, plan: Plan[ThreadState]) -> ThreadSnapshot:
        """A standalone call: ``plan`` under the lock, its jobs on threads, the snapshot."""
        return self.snapshot(thread_id, self.start_threads(self.locked(thread_id, plan)))

    async def astandalone(self, thread_id: str, plan: Plan[ThreadState]) -> ThreadSnapshot:
        """Async twin of :meth:`standalone` (its jobs as tasks)."""
        state = await self.alocked(thread_id, plan)
        return self.snapshot(thread_id, self.start_tasks(state))

    def checkpoint_state(
        self,
        thread_id: str,
        resource_id: str | None,
        checkpoint_id: str | None,
        found: GraphThread | None,
    ) -> ThreadState | None:
        """An agent or graph thread's state from the checkpoint ``found`` (``None``: none)."""
        if found is None:
            if checkpoint_id is None:
                return None  # a standalone or history thread: the store has it
            raise OMUsageError(
                f"No checkpoint {checkpoint_id!r} for thread {thread_id!r} in this checkpointer; "
                "list them with graph.get_state_history(config)."
            )
        record = found.record
        if record is None:
            record = new_record(thread_id=thread_id, resource_id=resource_id, now="")
        check_owner(record["resource_id"], thread_id=thread_id, resource_id=resource_id)
        return ThreadState(record, found.window)

    @staticmethod
    def from_checkpoint(snap: ThreadSnapshot, found: GraphThread | None) -> ThreadSnapshot:
        """``snap`` marked as read from the checkpoint ``found`` (when there was one)."""
        if found is None:
            return snap
        return replace(snap, source="checkpoint", checkpoint_id=found.checkpoint_id)

    def snapshot(self, thread_id: str, state: ThreadState) -> ThreadSnapshot:
        """``state`` as a snapshot, with its status (computed when the plan left none)."""
        status = state.status
        if status is None:
            env = self.env()
            tokens = env.counter.count_messages(state.window)
            status = status_event(env, state.record, tokens, 0, spend=state.spend)
        return ThreadSnapshot(
            thread_id=thread_id,
            record=state.record,
            window=state.window,
            status=status,
            context=self.render(state.record),
            title_pinned=state.title_pinned,
        )


def as_messages(messages: Sequence[MessageLikeRepresentation]) -> list[BaseMessage]:
    """Messages in any form LangChain accepts: messages, ``("user", "hi")``, dicts, strings."""
    if isinstance(messages, str | BaseMessage | dict | tuple):
        raise OMUsageError(
            f"messages must be a list of messages, got one {type(messages).__name__}; "
            'wrap it in a list, e.g. messages=[("user", "hello")].'
        )
    for m in messages:
        if not isinstance(m, BaseMessage):
            return convert_to_messages(messages)
    return cast("list[BaseMessage]", list(messages))  # as convert_to_messages, cheaper


def context_messages(snap: ThreadSnapshot, *, merge: bool = False) -> list[BaseMessage]:
    """What the agent's model would see: the memory system message, then the window."""
    window = list(snap.window)
    if merge and snap.context.blocks and window and isinstance(window[0], SystemMessage):
        return [merge_memory(window[0], snap.context.blocks), *window[1:]]
    head = [snap.context.to_system_message()] if snap.context.blocks else []
    return head + window
