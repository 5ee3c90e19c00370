"""How OM lives in graph state: the record key, the window split and the state update.

Shared by the graph nodes and the ``create_agent`` middleware.

The record in state names its observation groups by content key (``group_keys``); the groups
themselves are in the store (``("langchain_om", "groups", <thread>)``), written once each.
A checkpoint thus holds a few hundred bytes of record however long the log, which matters
where every checkpoint is a full copy of the state (``SqliteSaver``), and forks stay right:
a key names one content forever, so each checkpoint still finds the log it saw. Groups read
or written are kept in a bounded in-process cache, so a step reads the store only for groups
this process has not seen (a restart, another worker).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import CodeType
from typing import Any

from langchain_core.messages import BaseMessage, RemoveMessage, SystemMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langchain_om._core.group_keys import GROUP_KEYS, cached, remember, resolved, stored_record
from langchain_om._core.render import text_parts
from langchain_om._core.types import OM_META_KEY
from langchain_om._plans.effects import Plan, StoreBatch
from langchain_om._plans.storage import group_get_ops, group_put_ops
from langchain_om._plans.types import TurnOutcome
from langchain_om.errors import OMUsageError, StorageError
from langchain_om.events import OMEvent

OM_STATE_KEY = "om_record"
"""Graph-state key holding the JSON-native OM record."""

OM_ACTIVITY_KEY = "om_activity"
"""Graph-state key holding the record's per-step stamps (small; written when they change)."""

ACTIVITY_FIELDS = ("last_activity_at",)
"""Record fields that change at nearly every step: kept under ``OM_ACTIVITY_KEY`` too, so a
step that changes nothing else does not rewrite the whole record into the checkpoint."""


def _body(state: Mapping[str, Any]) -> Any:
    record = state.get(OM_STATE_KEY)
    activity = state.get(OM_ACTIVITY_KEY)
    if isinstance(record, dict) and isinstance(activity, dict) and activity:
        return {**record, **activity}
    return record


UNREAD: Any = object()
"""What :func:`cached_state_record` returns when the store must be read."""


def cached_state_record(state: Mapping[str, Any]) -> Any:
    """The OM record of a graph state when this process has its groups, else :data:`UNREAD`.

    A step of a thread this process has run reads no store: the groups its record names
    are cached (see :func:`state_record_plan` for the rest).
    """
    body = _body(state)
    if not isinstance(body, dict) or not isinstance(body.get(GROUP_KEYS), list):
        return body
    keys: list[str] = body[GROUP_KEYS]
    found = cached(keys)
    if len(found) < len(set(keys)):
        return UNREAD
    return resolved(body, found)


def state_record_plan(state: Mapping[str, Any]) -> Plan[Any]:
    """The OM record of a graph state, its groups read from the store when not cached.

    ``om_record`` holds the record as of the last step that changed more than the stamps
    (its stamps may be older), with the newer stamps in ``om_activity``. States written
    before the groups moved to the store hold them inline and read as they are.

    Raises:
        StorageError: a group the state names is not in the store (the graph runs with
            another store than the one that wrote the thread).
    """
    body = _body(state)
    if not isinstance(body, dict) or not isinstance(body.get(GROUP_KEYS), list):
        return body
    keys: list[str] = body[GROUP_KEYS]
    found = cached(keys)
    missing = [k for k in dict.fromkeys(keys) if k not in found]
    if missing:
        thread = str(body.get("thread_id"))
        items = yield StoreBatch(group_get_ops(thread, missing))
        for key, item in zip(missing, items, strict=True):
            group = item.value.get("group") if item is not None else None
            if not isinstance(group, dict):
                raise StorageError(
                    f"The observation log of thread {thread!r} names group {key!r}, which is "
                    "not in the store: run the graph with the store that wrote this thread "
                    "(the checkpointer and the store must be kept together)."
                )
            found[key] = group  # type: ignore[assignment]
            remember(key, group)  # type: ignore[arg-type]
    return resolved(body, found)


def state_record(state: Mapping[str, Any]) -> Any:
    """The OM record of a graph state whose groups are at hand (cached).

    For the code paths that run right after a step read or wrote the state; everything else
    reads with :func:`state_record_plan`.

    Raises:
        StorageError: a group is not cached (read the state with the plan first).
    """
    body = _body(state)
    if not isinstance(body, dict) or not isinstance(body.get(GROUP_KEYS), list):
        return body
    return resolved(body)


def state_fields(state: Mapping[str, Any]) -> Any:
    """The record's fields other than its log (``groups`` empty when not cached).

    Enough for the routers (thresholds read the stored token counts, not the groups).
    """
    body = _body(state)
    if not isinstance(body, dict) or not isinstance(body.get(GROUP_KEYS), list):
        return body
    if len(cached(body[GROUP_KEYS])) == len(set(body[GROUP_KEYS])):
        return resolved(body)
    return {**{k: v for k, v in body.items() if k != GROUP_KEYS}, "groups": []}


def groups_to_store(update: Mapping[str, Any], state: Mapping[str, Any] | None) -> Plan[None]:
    """Store the groups ``update``'s record names that ``state``'s record did not.

    Run it before the update is returned to LangGraph, so no checkpoint names a group the
    store lacks. A state whose record holds its groups inline (or none) stores them all.
    """
    new = update.get(OM_STATE_KEY)
    if not isinstance(new, dict) or not new.get(GROUP_KEYS):
        return
    current = state.get(OM_STATE_KEY) if state is not None else None
    known = set(current.get(GROUP_KEYS) or []) if isinstance(current, dict) else set()
    fresh = cached(k for k in new[GROUP_KEYS] if k not in known)
    if len(fresh) < len(set(new[GROUP_KEYS]) - known):
        raise StorageError("observation groups to store left the cache before they were stored")
    if fresh:
        yield StoreBatch(group_put_ops(str(new.get("thread_id")), fresh))


def record_update(
    record: Mapping[str, Any],
    state: Mapping[str, Any] | None,
    *,
    inline: bool = False,
    stamps_only: bool = False,
) -> dict[str, Any]:
    """The state keys to write for ``record``: only those whose content changed.

    The record is written as :func:`stored_record` (groups by key; store them with
    :func:`groups_to_store`), or with ``inline`` whole (a ``read_only`` memory writes nothing
    to the store, so its state must hold its log); a ``read_only`` step that leaves a
    writer's record (groups by key) unchanged writes nothing, so a reader never rewrites the
    writer's record format. With ``state`` unknown (``None``) both keys are written.
    ``stamps_only`` says ``record`` is the record read from ``state`` with new stamps
    (:attr:`TurnOutcome.stamps_only`): a record kept by key is then known to be unchanged
    without comparing it.
    """
    activity = {k: record[k] for k in ACTIVITY_FIELDS if k in record}
    current = state.get(OM_STATE_KEY) if state is not None else None
    update: dict[str, Any] = {}
    if stamps_only and not inline and isinstance(current, dict) and GROUP_KEYS in current:
        if state is None or state.get(OM_ACTIVITY_KEY) != activity:
            update[OM_ACTIVITY_KEY] = activity
        return update
    stored = dict(record) if inline else stored_record(record)
    if inline and isinstance(current, dict) and GROUP_KEYS in current:
        # A reader on a writer's thread: the writer's record (its log by key) stays as it is.
        keyed = stored_record(record)
        if _same_body(current, keyed):
            stored = keyed
    if not isinstance(current, dict) or not _same_body(current, stored):
        update[OM_STATE_KEY] = stored
    if state is None or state.get(OM_ACTIVITY_KEY) != activity:
        update[OM_ACTIVITY_KEY] = activity
    return update


def _same_body(current: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
    """``current`` and ``record`` agree on every field but the stamps."""
    keys = (current.keys() | record.keys()) - set(ACTIVITY_FIELDS)
    return all(current.get(k, _MISSING) == record.get(k, _MISSING) for k in keys)


_MISSING = object()

MEMORY_MESSAGE_ID = "langchain_om:memory"
"""Id of the memory system message kept at the front of ``messages`` by the graph nodes."""


def is_memory_message(message: BaseMessage) -> bool:
    """True for OM's own memory system message (never observed, never counted).

    Only a system message can be it: a user's message that happens to carry the memory's id
    stays an ordinary message of the window.
    """
    if not isinstance(message, SystemMessage):
        return False
    if message.id == MEMORY_MESSAGE_ID:
        return True
    meta = message.response_metadata.get(OM_META_KEY)
    return isinstance(meta, dict) and meta.get("kind") == "memory"


def memory_message_id(split: WindowSplit) -> str:
    """The id to give the memory system message kept in state.

    The current memory message keeps its id; a new one takes :data:`MEMORY_MESSAGE_ID`, or,
    when a message of the thread already uses that id (LangGraph's reducer would replace one
    with the other), the first free ``langchain_om:memory~N``.
    """
    current = split.memory
    if current is not None and current.id and _merged_base(current) is None:
        return current.id
    taken = {m.id for m in (*split.head, *split.window) if m.id}
    candidate, n = MEMORY_MESSAGE_ID, 1
    while candidate in taken:
        n += 1
        candidate = f"{MEMORY_MESSAGE_ID}~{n}"
    return candidate


@dataclass(frozen=True)
class WindowSplit:
    """``messages`` split into leading system prompts, OM's memory message and the window."""

    head: list[BaseMessage]
    memory: BaseMessage | None
    window: list[BaseMessage]


MERGED_KIND = "memory-merged"
"""``response_metadata["langchain_om"]["kind"]`` of a user system message with memory merged in."""


def merge_memory(system: BaseMessage, blocks: Sequence[str]) -> SystemMessage:
    """``system`` (the user's system message) with the memory blocks appended, same id.

    The original content is kept in the message's metadata so the split can restore it and the
    next merge starts from it, not from the previous memory.
    """
    base = system.content
    parts: list[str | dict[str, Any]] = (
        [{"type": "text", "text": base}] if isinstance(base, str) else list(base)
    )
    parts.extend(text_parts(blocks, first=not parts))
    meta = {**system.response_metadata, OM_META_KEY: {"kind": MERGED_KIND, "base": base}}
    return SystemMessage(content=parts, id=system.id, response_metadata=meta)


def _merged_base(message: BaseMessage) -> BaseMessage | None:
    """The user's own system message inside a merged one (else ``None``)."""
    meta = message.response_metadata.get(OM_META_KEY)
    if not (isinstance(meta, dict) and meta.get("kind") == MERGED_KIND):
        return None
    rest = {k: v for k, v in message.response_metadata.items() if k != OM_META_KEY}
    return SystemMessage(content=meta.get("base", ""), id=message.id, response_metadata=rest)


def split_messages(messages: Sequence[BaseMessage]) -> WindowSplit:
    """Leading non-memory system messages stay put; the memory message is set aside.

    A user system message with memory merged into it counts as both: its original content is
    in ``head`` and the merged message is ``memory``.
    """
    head: list[BaseMessage] = []
    memory: BaseMessage | None = None
    window: list[BaseMessage] = []
    in_head = True
    for m in messages:
        if not in_head and not isinstance(m, SystemMessage):
            window.append(m)  # most messages: only a system message can be memory's
            continue
        if in_head and (base := _merged_base(m)) is not None:
            head.append(base)
            memory = m
            continue
        if is_memory_message(m):
            memory = m
            continue
        if in_head and isinstance(m, SystemMessage):
            head.append(m)
            continue
        in_head = False
        window.append(m)
    return WindowSplit(head=head, memory=memory, window=window)


def memory_removed(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """The update that takes memory's message out of ``messages`` (``{}`` without one).

    A user system message memory was merged into gets its own content back (same id); OM's
    own memory message is removed. The next step with memory puts it back.
    """
    memory = split_messages(messages).memory
    if memory is None or not memory.id:
        return {}
    base = _merged_base(memory)
    return {"messages": [base if base is not None else RemoveMessage(id=memory.id)]}


def state_update(
    outcome: TurnOutcome,
    messages: Sequence[BaseMessage],
    *,
    memory: BaseMessage | None = None,
    current_memory: BaseMessage | None = None,
    state: Mapping[str, Any] | None = None,
    restamps: bool = True,
    inline: bool = False,
) -> dict[str, Any]:
    """The state update for a turn: removals, restamped messages, the memory message, the record.

    Only ids still present in ``messages`` are removed (the reducer raises on unknown ids), and
    a removed message is never also re-added. ``memory`` is the memory system message to keep
    in state (the graph nodes keep one; ``current_memory`` is the one there now); it is added
    or replaced when its content changed. When OM inserted messages (a time-gap reminder) or
    the first memory message arrives, ``messages`` is rewritten in order: the leading system
    messages, the memory message, the window. With the current ``state``, the record keys are
    written only when they changed (see :func:`record_update`, also for ``inline``).

    With ``restamps=False`` messages that only gained their OM timestamp are not re-added:
    the stamp is already on the message objects in state, and a front door whose next node
    always writes ``messages`` (the ``create_agent`` model node appends its reply) lets that
    write persist it, instead of a third copy of the window in the checkpoint every turn.
    """
    update = record_update(outcome.record, state, inline=inline, stamps_only=outcome.stamps_only)
    if outcome.inserted or (memory is not None and current_memory is None):
        split = split_messages(messages)
        keep = [memory] if memory is not None else [m for m in (split.memory,) if m is not None]
        merged = {m.id for m in keep if _merged_base(m) is not None}
        update["messages"] = [
            RemoveMessage(id=REMOVE_ALL_MESSAGES),
            *[m for m in split.head if m.id not in merged],  # a merged one comes back below
            *keep,
            *outcome.window,
        ]
        return update
    changes: list[BaseMessage] = []
    if outcome.removed or (restamps and outcome.stamped):
        present = {m.id for m in messages if m.id}
        removed = [mid for mid in outcome.removed_ids if mid in present]
        gone = set(removed)
        changes.extend(RemoveMessage(id=mid) for mid in removed)
        if restamps:
            changes.extend(
                m for m in outcome.stamped if m.id and m.id not in gone and m.id in present
            )
    if memory is not None and (current_memory is None or current_memory.content != memory.content):
        changes.append(memory)
    if changes:
        update["messages"] = changes
    return update


def run_ids(config: Any, runtime: Any = None) -> tuple[str | None, str | None]:
    """``(thread_id, resource_id)`` of the current run (runtime first, then the config)."""
    thread_id: str | None = None
    info = getattr(runtime, "execution_info", None)
    if info is not None:
        thread_id = getattr(info, "thread_id", None)
    configurable: dict[str, Any] = {}
    if isinstance(config, dict):
        configurable = config.get("configurable") or {}
    thread_id = thread_id or configurable.get("thread_id")
    resource_id = configurable.get("resource_id") or configurable.get("user_id")
    context = getattr(runtime, "context", None)
    if resource_id is None and context is not None:
        resource_id = getattr(context, "resource_id", None) or (
            context.get("resource_id") if isinstance(context, dict) else None
        )
    return (str(thread_id) if thread_id is not None else None), (
        str(resource_id) if resource_id is not None else None
    )


def run_configurable(config: Any) -> dict[str, Any]:
    """The run config's ``configurable`` as extractors and hooks see it.

    A copy without LangGraph's internal keys (those starting with ``__``); empty without a
    run config.
    """
    configurable = config.get("configurable") if isinstance(config, dict) else None
    if not isinstance(configurable, dict):
        return {}
    return {k: v for k, v in configurable.items() if not str(k).startswith("__")}


REQUEST_KEY = "langchain_om"
"""``configurable`` key of the per-request options (``{"enabled": False}``: no memory)."""

_REQUEST_OPTIONS = ("enabled",)


def memory_enabled(config: Any) -> bool:
    """Whether memory runs for this request.

    Not when the run config says ``configurable={"langchain_om": {"enabled": False}}`` (see
    :data:`REQUEST_KEY`).

    Raises:
        OMUsageError: the per-request options are not a dict of known options, or
            ``enabled`` is not a bool (a typo must not run a turn with memory silently on).
    """
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    if not isinstance(configurable, Mapping) or REQUEST_KEY not in configurable:
        return True
    options = configurable[REQUEST_KEY]
    where = f"configurable[{REQUEST_KEY!r}]"
    if not isinstance(options, Mapping):
        raise OMUsageError(
            f"The per-request memory options {where} must be a dict, got "
            f"{type(options).__name__}: pass e.g. {{{REQUEST_KEY!r}: {{'enabled': False}}}}.",
        )
    unknown = sorted(str(k) for k in options if k not in _REQUEST_OPTIONS)
    if unknown:
        raise OMUsageError(
            f"Unknown per-request memory option(s) {', '.join(map(repr, unknown))} in {where}; "
            f"the only one is 'enabled' (e.g. {{'enabled': False}} runs the turn without memory).",
        )
    enabled = options.get("enabled", True)
    if not isinstance(enabled, bool):
        raise OMUsageError(
            f"{where}['enabled'] must be True or False, got {enabled!r}.",
        )
    return enabled


def step_number(window: Sequence[BaseMessage]) -> int:
    """Model calls already made in the current turn (AI messages after the last human one)."""
    count = 0
    for m in reversed(window):
        if m.type == "human":
            break
        if m.type == "ai":
            count += 1
    return count


def _no_op(_: Any) -> None:
    pass


def stream_emitter(writer: Any) -> Callable[[OMEvent], None] | None:
    """A step's ``emit``: events written to a LangGraph stream ``writer`` as custom parts.

    ``None`` when nothing would hear them: no writer, or one that does nothing (LangGraph's
    writer in a run that does not stream ``"custom"``: a function whose code is that of
    ``pass``), so a step builds no status event for it.
    """
    if writer is None or _does_nothing(writer):
        return None

    def emit(event: OMEvent) -> None:
        writer(event.to_part())

    return emit


def _does_nothing(fn: Any) -> bool:
    code = getattr(fn, "__code__", None)
    ref = _no_op.__code__
    return (
        isinstance(code, CodeType)
        and code.co_code == ref.co_code
        and code.co_consts == ref.co_consts
        and not code.co_names
        and not code.co_freevars
    )
