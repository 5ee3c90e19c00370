"""Where OM keeps things in a LangGraph ``BaseStore``, as operations (data), not calls.

Namespaces (all under ``"langchain_om"``):

* ``("langchain_om", "archive", <thread_id>)`` — observed raw messages, key = zero-padded
  sequence number (``"000000000042"``), so a page of recall is a batch of ``GetOp`` for known
  keys: O(page) on any store, whatever the archive size.
* ``("langchain_om", "threads", <resource_id or "_">)`` — thread registry (title, counts, times).
* ``("langchain_om", "state", <thread_id>)`` key ``"current"`` — record and message window for
  the front doors that have no graph state (standalone engine, chat-history adapter).
* ``("langchain_om", "buffer", <thread_id>)`` — observation chunks computed in the background,
  key = the id of the chunk's first message; persisted before they are announced.
* ``("langchain_om", "reflection", <thread_id>)`` key ``"current"`` — a background reflection.
* ``("langchain_om", "msgindex", <thread_id>)`` — message id → archive sequence number, so a
  recall cursor resolves in one lookup (written with the archive).
* ``("langchain_om", "groups", <thread_id>)`` — the observation groups of a thread whose record
  lives in graph state, key = the group's content key (immutable: a changed group is a new
  key), so a checkpoint names its log by keys and forks never overwrite each other's groups.
* ``("langchain_om", "titles", <thread_id>)`` key ``"pinned"`` — the title the application gave
  the thread (``rename_thread``); it wins over the Observer's until unpinned.
* ``("langchain_om", "search", <resource_id or "_">)`` — documents for the store's vector index
  (archived messages and observation groups), written when ``retrieval.vector`` is on.
* ``("langchain_om", "spend", "thread" | "resource", <id>)`` key ``"ledger"`` — what memory's
  own model calls spent for a thread or a resource over the last day (``spend`` budgets).
* ``("langchain_om", "obsarchive", <thread_id>)`` — archive mode's retired observation groups,
  one entry per archive cycle, key = the entry's archive id (content-derived, so two branches
  never share a key); each entry names the ids of the entries before it on its chain.

Every namespace is built here, and so is every op on the buffer and reflection namespaces; the
plans yield these ops in ``StoreBatch`` effects and the drivers run them with ``store.batch`` /
``store.abatch``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)

from langchain_om._core.branches import ROOT_BRANCH, branch_at, branch_key, fork, segments_of
from langchain_om._core.labels import decode_label, encode_label, legacy_label
from langchain_om._core.receipts import group_spans
from langchain_om._core.record import check_owner, new_id
from langchain_om._core.sanitize import restore_text
from langchain_om._core.types import OM_META_KEY, ObservationGroup, OMRecord
from langchain_om._plans.effects import Plan, StoreBatch

T = TypeVar("T")

ROOT = "langchain_om"
NO_RESOURCE = "_"
SEQ_WIDTH = 12
INDEX_MARKER = "langchain_om:indexed"
"""Key written in a thread's message index once it is indexed from its first message."""
LATEST_KEY = "langchain_om:latest"
"""Key in a thread's message index holding the branch path and count last archived."""
SEARCH_TEXT_CHARS = 2000
"""Text of a message or group that goes into the vector index."""


def thread_label(thread_id: str) -> str:
    """The namespace label of a thread id (reversible; see :mod:`langchain_om._core.labels`)."""
    return encode_label(thread_id)


def resource_label(resource_id: str | None) -> str:
    """The namespace label of a resource id (``"_"`` for no resource)."""
    return encode_label(resource_id) if resource_id else NO_RESOURCE


def archive_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's archived messages."""
    return (ROOT, "archive", thread_label(thread_id))


def threads_ns(resource_id: str | None) -> tuple[str, ...]:
    """Namespace of a resource's thread registry."""
    return (ROOT, "threads", resource_label(resource_id))


def state_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's standalone state (record and window)."""
    return (ROOT, "state", thread_label(thread_id))


def buffer_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's buffered observation chunks (key: first message id)."""
    return (ROOT, "buffer", thread_label(thread_id))


def reflection_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's buffered reflection (key ``"current"``)."""
    return (ROOT, "reflection", thread_label(thread_id))


def groups_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a graph thread's observation groups (key: the group's content key)."""
    return (ROOT, "groups", thread_label(thread_id))


def group_get_ops(thread_id: str, keys: Sequence[str]) -> list[GetOp]:
    """Get ops for the groups stored under ``keys``."""
    ns = groups_ns(thread_id)
    return [GetOp(ns, key) for key in keys]


def group_put_ops(thread_id: str, groups: Mapping[str, ObservationGroup]) -> list[PutOp]:
    """Put ops storing ``groups`` (content key → group), outside any vector index."""
    ns = groups_ns(thread_id)
    return [PutOp(ns, key, {"group": dict(group)}, index=False) for key, group in groups.items()]


def obsarchive_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's archive entries (archive mode's retired groups)."""
    return (ROOT, "obsarchive", thread_label(thread_id))


def obsarchive_put_op(thread_id: str, entry: Mapping[str, Any]) -> PutOp:
    """Put op storing an archive entry under its archive id (outside any vector index)."""
    return PutOp(obsarchive_ns(thread_id), str(entry["archive_id"]), dict(entry), index=False)


def obsarchive_get_ops(thread_id: str, archive_ids: Sequence[str]) -> list[GetOp]:
    """Get ops reading archive entries by id."""
    ns = obsarchive_ns(thread_id)
    return [GetOp(ns, archive_id) for archive_id in archive_ids]


def backoff_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's observation backoff kept across raised turns (key ``"current"``)."""
    return (ROOT, "backoff", thread_label(thread_id))


def backoff_get_op(thread_id: str) -> GetOp:
    """Get op for the observation backoff a raised turn left (``failure_policy="raise"``)."""
    return GetOp(backoff_ns(thread_id), "current")


def backoff_put_op(thread_id: str, state: Mapping[str, Any] | None) -> PutOp:
    """Put op storing (``None``: deleting) a thread's observation backoff."""
    return PutOp(backoff_ns(thread_id), "current", dict(state) if state else None, index=False)


def titles_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's pinned title (key ``"pinned"``)."""
    return (ROOT, "titles", thread_label(thread_id))


def title_pin_get_op(thread_id: str) -> GetOp:
    """Get op for a thread's pinned title."""
    return GetOp(titles_ns(thread_id), "pinned")


def title_pin_put_op(thread_id: str, title: str | None, *, pinned_at: str = "") -> PutOp:
    """Put op pinning ``title`` as the thread's title (``None``: unpinning it)."""
    value = {"title": title, "pinned_at": pinned_at} if title is not None else None
    return PutOp(titles_ns(thread_id), "pinned", value, index=False)


SPEND_KEY = "ledger"


def spend_ns(per: Literal["thread", "resource"], owner: str) -> tuple[str, ...]:
    """Namespace of the spend ledger of a thread or a resource (key ``"ledger"``)."""
    label = thread_label(owner) if per == "thread" else resource_label(owner)
    return (ROOT, "spend", per, label)


def spend_get_op(per: Literal["thread", "resource"], owner: str) -> GetOp:
    """Get op for the spend ledger of a thread or a resource."""
    return GetOp(spend_ns(per, owner), SPEND_KEY)


def spend_put_op(
    per: Literal["thread", "resource"], owner: str, ledger: Mapping[str, Any]
) -> PutOp:
    """Put op storing the spend ledger of a thread or a resource."""
    return PutOp(spend_ns(per, owner), SPEND_KEY, dict(ledger), index=False)


def buffer_backoff_get_op(thread_id: str) -> GetOp:
    """Get op for the backoff a failed background observation (buffering) left."""
    return GetOp(backoff_ns(thread_id), "buffer")


def buffer_backoff_put_op(thread_id: str, state: Mapping[str, Any] | None) -> PutOp:
    """Put op storing (``None``: deleting) a thread's background-observation backoff."""
    return PutOp(backoff_ns(thread_id), "buffer", dict(state) if state else None, index=False)


MAX_CHUNKS = 10_000
"""Most buffered chunks read for a thread."""


def buffered_read_ops(thread_id: str, window_ids: Sequence[str | None]) -> list[Op]:
    """Ops reading a thread's buffered chunks and its buffered reflection, reflection last.

    A chunk is keyed by the id of its first message, and only a chunk starting in the window
    can be part of the window's chain or be recognised as stale, so the chunks are read by
    those known keys (one ``GetOp`` per window message; missing keys read as ``None``) rather
    than by a namespace search, whose cost grows with the number of threads on some stores.
    """
    ns = buffer_ns(thread_id)
    keys = [str(i) for i in dict.fromkeys(window_ids) if i]  # ids are text: no key merges
    ops: list[Op] = [GetOp(ns, key) for key in keys[:MAX_CHUNKS]]
    ops.append(GetOp(reflection_ns(thread_id), "current"))
    return ops


def chunk_put_op(thread_id: str, chunk: dict[str, Any]) -> PutOp:
    """Put op storing a buffered observation chunk (keyed by its first message id)."""
    return PutOp(buffer_ns(thread_id), str(chunk["message_ids"][0]), chunk, index=False)


def chunk_delete_ops(thread_id: str, chunks: Sequence[Mapping[str, Any]]) -> list[PutOp]:
    """Delete ops for buffered chunks (those without message ids were never stored)."""
    return [
        PutOp(buffer_ns(thread_id), str(c["message_ids"][0]), None)
        for c in chunks
        if c.get("message_ids")
    ]


def reflection_put_op(thread_id: str, value: dict[str, Any]) -> PutOp:
    """Put op storing a thread's buffered reflection."""
    return PutOp(reflection_ns(thread_id), "current", value, index=False)


def reflection_delete_op(thread_id: str) -> PutOp:
    """Delete op for a thread's buffered reflection."""
    return PutOp(reflection_ns(thread_id), "current", None)


def seq_key(seq: int) -> str:
    """Archive key of sequence number ``seq`` (zero-padded, so keys sort)."""
    return str(seq).zfill(SEQ_WIDTH)


def dump_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Messages as JSON-native dicts."""
    return [message_to_dict(m) for m in messages]


def load_messages(data: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """Messages from :func:`dump_messages` output."""
    return list(messages_from_dict(list(data)))


def message_text(message: BaseMessage) -> str:
    """Plain text of a message for previews and the search index."""
    parts: list[str] = []
    text = message.text if isinstance(message.text, str) else str(message.text)
    if text:
        parts.append(text)
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            parts.append(f"[tool call {call['name']}] {call.get('args')}")
    return "\n".join(parts)


def part_types(message: BaseMessage) -> list[str]:
    """Kinds of content parts in ``message`` (``text``, ``image``, ``tool_call``, …)."""
    if isinstance(message.content, str):
        kinds = ["text"] if message.content else []
    else:
        kinds = []
        for block in message.content:
            if isinstance(block, str):
                kinds.append("text")
            elif isinstance(block, dict):
                kinds.append(str(block.get("type", "unknown")))
    if isinstance(message, AIMessage) and message.tool_calls:
        kinds.append("tool_call")
    if isinstance(message, ToolMessage):
        kinds.append("tool_result")
    return kinds


def tool_names(message: BaseMessage) -> list[str]:
    """Names of the tools a message calls or answers."""
    if isinstance(message, AIMessage):
        return [c["name"] for c in message.tool_calls]
    if isinstance(message, ToolMessage) and message.name:
        return [message.name]
    return []


def archive_ops(
    messages: Sequence[BaseMessage],
    *,
    thread_id: str,
    resource_id: str | None,
    first_seq: int,
    branch: str = ROOT_BRANCH,
) -> list[PutOp]:
    """Put ops that archive ``messages`` at sequence numbers ``first_seq, first_seq+1, …``.

    The messages go on ``branch`` (see :mod:`langchain_om._core.branches`). An entry holds the
    message (``message_to_dict``) and what is read without loading it (id, role, time, part
    kinds, tool names); its text is in the message only, not stored twice (entries written
    before may still carry a ``text`` copy, which nothing reads).
    """
    ops: list[PutOp] = []
    for offset, message in enumerate(messages):
        seq = first_seq + offset
        meta = message.response_metadata.get(OM_META_KEY)
        ts = meta.get("ts") if isinstance(meta, dict) else None
        value = {
            "seq": seq,
            "branch": branch,
            "id": message.id,
            "thread_id": thread_id,
            "resource_id": resource_id,
            "role": message.type,
            "ts": ts,
            "part_types": part_types(message),
            "tool_names": tool_names(message),
            "message": message_to_dict(message),
        }
        ops.append(PutOp(archive_ns(thread_id), archive_key(seq, branch), value, index=False))
    ops.extend(index_ops(messages, thread_id, first_seq, branch))
    return ops


def archive_key(seq: int, branch: str = ROOT_BRANCH) -> str:
    """Archive key of sequence number ``seq`` on ``branch``."""
    return branch_key(branch, seq_key(seq))


def thread_registry_op(
    record: OMRecord, *, created_at: str | None = None, window_size: int = 0
) -> PutOp:
    """Put op recording the thread in its resource's registry."""
    value = {
        "thread_id": record["thread_id"],
        "resource_id": record["resource_id"],
        "title": record.get("title"),
        "created_at": created_at or record["created_at"],
        "updated_at": record["updated_at"],
        "archived_messages": record["observed_message_count"],
        "window_messages": window_size,
        "generation": record["generation"],
        "branches": [list(s) for s in segments_of(record)],
    }
    return PutOp(threads_ns(record["resource_id"]), record["thread_id"], value, index=False)


def state_get_op(thread_id: str) -> GetOp:
    """Get op for a thread's standalone state."""
    return GetOp(state_ns(thread_id), "current")


def state_put_op(thread_id: str, record: OMRecord, window: Sequence[BaseMessage]) -> PutOp:
    """Put op saving a thread's record and window."""
    value = {"record": dict(record), "window": dump_messages(window)}
    return PutOp(state_ns(thread_id), "current", value, index=False)


def state_delete_op(thread_id: str) -> PutOp:
    """Delete op for a thread's standalone state."""
    return PutOp(state_ns(thread_id), "current", None)


def unpack_state(item: Item | None) -> tuple[dict[str, Any] | None, list[BaseMessage]]:
    """``(record, window)`` from a state item (``(None, [])`` when missing)."""
    if item is None:
        return None, []
    value = item.value
    return stored_ids_restored(value.get("record")), load_messages(value.get("window", []))


def stored_ids_restored(record: Any) -> Any:
    """A stored record with its thread and resource ids as the caller gave them.

    Put values have NUL and lone surrogates replaced by markers on the way into storage
    (PostgreSQL cannot hold them); the ids are restored on the way out so the record names
    the same thread (and archive namespaces) as the call.
    """
    if not isinstance(record, dict):
        return record
    out = record
    for key in ("thread_id", "resource_id"):
        value = record.get(key)
        if isinstance(value, str) and "⟦U+" in value:
            out = out if out is not record else dict(record)
            out[key] = restore_text(value)
    return out


def archived_message(item: Item) -> BaseMessage:
    """The message stored in an archive item."""
    return load_messages([item.value["message"]])[0]


def archive_get_op(thread_id: str, seq: int, branch: str = ROOT_BRANCH) -> GetOp:
    """Get op for the archived message at sequence number ``seq`` on ``branch``."""
    return GetOp(archive_ns(thread_id), archive_key(seq, branch))


FIND_LIMIT = 50
"""Copies of one message id looked at by a scan (one per branch that archived it)."""


def archive_find_op(thread_id: str, message_id: str) -> SearchOp:
    """Search op finding an archived message by id (for threads without a message index)."""
    return SearchOp(archive_ns(thread_id), filter={"id": message_id}, limit=FIND_LIMIT)


def on_path(value: Mapping[str, Any], segments: Sequence[tuple[str, int]]) -> bool:
    """Whether an archive item belongs to the branch path ``segments`` (not another branch)."""
    seq = value.get("seq")
    branch = value.get("branch") or ROOT_BRANCH
    return isinstance(seq, int) and branch_at(segments, seq) == branch


def msgindex_get_ops(
    thread_id: str, message_id: str, segments: Sequence[tuple[str, int]] = ((ROOT_BRANCH, 0),)
) -> list[GetOp]:
    """Get ops for a message's index entry on each branch of ``segments``, then the marker."""
    ns = msgindex_ns(thread_id)
    branches = list(dict.fromkeys(b for b, _ in segments))
    return [GetOp(ns, branch_key(b, message_id)) for b in branches] + [GetOp(ns, INDEX_MARKER)]


def indexed_seq(items: Sequence[Item | None], segments: Sequence[tuple[str, int]]) -> int | None:
    """The sequence number an index lookup gives, when it lies on its branch's part of the path.

    ``items`` are the results of :func:`msgindex_get_ops` without the marker.
    """
    branches = list(dict.fromkeys(b for b, _ in segments))
    for branch, item in zip(branches, items, strict=False):
        seq = item.value.get("seq") if item is not None else None
        if isinstance(seq, int) and branch_at(segments, seq) == branch:
            return seq
    return None


def registry_get_op(resource_id: str | None, thread_id: str) -> GetOp:
    """Get op for a thread's entry in its resource's registry."""
    return GetOp(threads_ns(resource_id), thread_id)


def registry_list_op(resource_id: str | None, limit: int) -> SearchOp:
    """Search op listing a resource's registered threads."""
    return SearchOp(threads_ns(resource_id), limit=limit)


def search_op(
    resource_id: str | None, query: str, *, thread_id: str | None, limit: int, offset: int
) -> SearchOp:
    """Vector search op over a resource's documents (optionally one thread's)."""
    flt: dict[str, Any] = {"resource_id": resource_id}
    if thread_id is not None:
        flt["thread_id"] = thread_id
    return SearchOp(search_ns(resource_id), filter=flt, limit=limit, offset=offset, query=query)


def msgindex_ns(thread_id: str) -> tuple[str, ...]:
    """Namespace of a thread's message-id → sequence-number index."""
    return (ROOT, "msgindex", thread_label(thread_id))


def search_ns(resource_id: str | None) -> tuple[str, ...]:
    """Namespace of a resource's vector-search documents."""
    return (ROOT, "search", resource_label(resource_id))


def index_ops(
    messages: Sequence[BaseMessage],
    thread_id: str,
    first_seq: int,
    branch: str = ROOT_BRANCH,
) -> list[PutOp]:
    """Put ops that let recall find an archived message by id in one lookup.

    Write them in the same batch as :func:`langchain_om._plans.storage.archive_ops` with the same
    ``thread_id`` and ``first_seq``. Messages without an id are skipped. A thread indexed from
    its first archived message gets a marker, so an unknown id is answered without a scan.

    Args:
        messages: the messages being archived, in order.
        thread_id: their thread.
        first_seq: the sequence number of ``messages[0]`` in the archive.
        branch: the archive branch they go on.
    """
    ops = [
        PutOp(
            msgindex_ns(thread_id),
            branch_key(branch, str(m.id)),
            {"seq": first_seq + offset, "branch": branch},
            index=False,
        )
        for offset, m in enumerate(messages)
        if m.id and m.id not in (INDEX_MARKER, LATEST_KEY)
    ]
    if first_seq == 0:
        ops.append(PutOp(msgindex_ns(thread_id), INDEX_MARKER, {"complete": True}, index=False))
    return ops


def search_index_ops(
    *,
    thread_id: str,
    resource_id: str | None,
    messages: Sequence[BaseMessage] = (),
    first_seq: int = 0,
    groups: Sequence[ObservationGroup] = (),
    branch: str = ROOT_BRANCH,
    segments: Sequence[tuple[str, int]] = ((ROOT_BRANCH, 0),),
    generation: int | None = None,
) -> list[PutOp]:
    """Put ops for the vector index: archived messages and observation groups.

    The documents live in ``search_ns(resource_id)`` with their ``text`` field indexed, so a
    store built with ``index={"embed": ..., "dims": ..., "fields": ["text"]}`` embeds them
    (a store without an index keeps them unembedded). Write them when messages are archived
    (same ``first_seq`` as ``archive_ops``) and when observation groups are added.

    Args:
        thread_id: the thread the messages and groups belong to.
        resource_id: its resource (user), or ``None``.
        messages: archived messages, in order (empty ones are skipped).
        first_seq: the archive sequence number of ``messages[0]``.
        groups: new observation groups (observations or reflections).
        branch: the archive branch the messages are on.
        segments: the branch path of the record the groups belong to: a group's document
            names the branch and archive positions it was written from, so a search on
            another branch (a checkpoint fork) never returns it.
        generation: the record's generation after a reflection (its document is found only
            by records at that generation or later).
    """
    ns = search_ns(resource_id)
    ops: list[PutOp] = []
    seen: set[str] = set()
    for offset, message in enumerate(messages):
        text = message_text(message).strip()
        if not text:
            continue
        seq = first_seq + offset
        value = {
            "kind": "message",
            "text": text[:SEARCH_TEXT_CHARS],
            "thread_id": thread_id,
            "resource_id": resource_id,
            "message_id": message.id,
            "seq": seq,
            "branch": branch,
            "role": message.type,
            "ts": _message_ts(message),
        }
        key = f"m:{thread_id}:{archive_key(seq, branch)}"
        ops.append(PutOp(ns, key, value, index=_once(value, seen)))
    for group in groups:
        text = group["text"].strip()
        if not text:
            continue
        doc: dict[str, Any] = {
            "kind": "observation",
            "text": text[:SEARCH_TEXT_CHARS],
            "thread_id": thread_id,
            "resource_id": resource_id,
            "group_id": group["id"],
            "range": list(group["range"]) if group["range"] else None,
            "ts": group["observed_at"],
            **_group_position(group, segments, generation),
        }
        ops.append(PutOp(ns, f"g:{thread_id}:{group['id']}", doc, index=_once(doc, seen)))
    return ops


def _group_position(
    group: ObservationGroup, segments: Sequence[tuple[str, int]], generation: int | None
) -> dict[str, Any]:
    """Where a group's source messages lie: the branch and positions of its receipts."""
    spans = group_spans(group)
    if not spans:
        return {} if generation is None else {"generation": generation}
    lo, hi = spans[0][0], spans[-1][1]
    out: dict[str, Any] = {
        "seq": lo,
        "end_seq": hi,
        "branch": branch_at(segments, hi - 1),
    }
    if generation is not None:
        out["generation"] = generation
    return out


def _once(doc: dict[str, Any], seen: set[str]) -> list[str] | Literal[False]:
    """Index a text once per batch: an identical text is found through its first copy.

    (``InMemoryStore`` also fails a batch that embeds the same text twice.)
    """
    text = str(doc["text"])
    if text in seen:
        return False
    seen.add(text)
    return ["text"]


def _message_ts(message: BaseMessage) -> str | None:
    meta = message.response_metadata.get(OM_META_KEY)
    ts = meta.get("ts") if isinstance(meta, dict) else None
    return str(ts) if ts else None


def observed_ops(
    batch: Sequence[BaseMessage],
    *,
    before: OMRecord,
    after: OMRecord,
    vector: bool,
) -> list[PutOp]:
    """Everything written when ``batch`` is observed, on the branch ``after`` names.

    That is the archive, the message index, the thread registry, the thread's latest branch
    path and, with ``vector``, search documents for the messages and the groups ``after``
    added. Use :func:`observed_plan`, which first moves a forked record to a new branch.
    """
    first_seq = before["observed_message_count"]
    segments = segments_of(after)
    branch = branch_at(segments, first_seq)
    thread_id = before["thread_id"]
    ops = archive_ops(
        batch,
        thread_id=thread_id,
        resource_id=before["resource_id"],
        first_seq=first_seq,
        branch=branch,
    )
    ops.append(thread_registry_op(after))
    latest = {"branches": [list(s) for s in segments], "count": after["observed_message_count"]}
    ops.append(PutOp(msgindex_ns(thread_id), LATEST_KEY, latest, index=False))
    if vector:
        known = {g["id"] for g in before["groups"]}
        ops.extend(
            search_index_ops(
                thread_id=before["thread_id"],
                resource_id=before["resource_id"],
                messages=batch,
                first_seq=first_seq,
                groups=[g for g in after["groups"] if g["id"] not in known],
                branch=branch,
                segments=segments,
            )
        )
    return ops


def observed_plan(
    batch: Sequence[BaseMessage],
    *,
    before: OMRecord,
    after: OMRecord,
    vector: bool,
    extra: Sequence[Op] = (),
) -> Plan[OMRecord]:
    """Write :func:`observed_ops` (and ``extra`` in the same batch); returns ``after``.

    When the archive slots ``batch`` would take already hold other messages, the record is
    a checkpoint fork (or an old checkpoint resumed): ``after`` moves to a new branch at its
    cursor, so no branch overwrites another's messages.
    """
    first_seq = before["observed_message_count"]
    segments = segments_of(before)
    branch = branch_at(segments, first_seq)
    thread_id = before["thread_id"]
    slots = yield StoreBatch(
        [archive_get_op(thread_id, first_seq + k, branch) for k in range(len(batch))]
    )
    taken = any(
        item is not None and (message.id is None or item.value.get("id") != message.id)
        for item, message in zip(slots, batch, strict=True)
    )
    if taken:
        after = dict(after)  # type: ignore[assignment]
        after["branches"] = [list(s) for s in fork(segments, new_id(), first_seq)]
    elif "branches" in before:
        after = dict(after)  # type: ignore[assignment]
        after["branches"] = [list(s) for s in segments]
    yield StoreBatch([*observed_ops(batch, before=before, after=after, vector=vector), *extra])
    return after


def reflected_ops(before: OMRecord, after: OMRecord, *, vector: bool) -> list[PutOp]:
    """Search documents for the reflection group a reflection added (with ``vector``)."""
    if not vector:
        return []
    known = {g["id"] for g in before["groups"]}
    new = [g for g in after["groups"] if g["id"] not in known]
    return search_index_ops(
        thread_id=before["thread_id"],
        resource_id=before["resource_id"],
        groups=new,
        segments=segments_of(after),
        generation=after["generation"],
    )


FORGET_PAGE = 500


def thread_owner_plan(thread_id: str) -> Plan[tuple[bool, str | None]]:
    """``(found, owner)``: whether the store holds the thread, and the resource it belongs to.

    The standalone state's record names the owner; a graph thread (no state) is known by its
    archive, whose items name the resource they were archived for.
    """
    state, first = yield StoreBatch([state_get_op(thread_id), archive_get_op(thread_id, 0)])
    record, _ = unpack_state(state)
    if record is not None:
        return True, record.get("resource_id")
    if first is not None:
        return True, first.value.get("resource_id")
    return False, None


def forget_plan(thread_id: str, resource_id: str | None) -> Plan[None]:
    """A plan deleting everything stored for a thread (archive, indexes, buffers, state).

    ``resource_id`` ``None`` forgets the thread for whoever owns it. Yields ``StoreBatch``
    effects.

    Raises:
        OMUsageError: ``resource_id`` is given and the thread belongs to another resource.
    """
    yield from migrate_legacy_plan(thread_id, resource_id)
    found, owner = yield from thread_owner_plan(thread_id)
    check_owner(owner, thread_id=thread_id, resource_id=resource_id, found=found)
    if resource_id is None:
        resource_id = owner
    for ns in (
        archive_ns(thread_id),
        msgindex_ns(thread_id),
        buffer_ns(thread_id),
        reflection_ns(thread_id),
        backoff_ns(thread_id),
        groups_ns(thread_id),
        obsarchive_ns(thread_id),
    ):
        while True:
            (items,) = yield StoreBatch([SearchOp(ns, limit=FORGET_PAGE)])
            if not items:
                break
            yield StoreBatch([PutOp(ns, item.key, None) for item in items])
    search = search_ns(resource_id)
    while True:
        (items,) = yield StoreBatch(
            [SearchOp(search, filter={"thread_id": thread_id}, limit=FORGET_PAGE)]
        )
        if not items:
            break
        yield StoreBatch([PutOp(search, item.key, None) for item in items])
    pending = [pending_delete_op(resource_id, thread_id)] if resource_id else []
    yield StoreBatch(
        [
            state_delete_op(thread_id),
            PutOp(threads_ns(resource_id), thread_id, None),
            title_pin_put_op(thread_id, None),
            PutOp(spend_ns("thread", thread_id), SPEND_KEY, None),
            *pending,
        ]
    )


READ_PAGE = 1000
"""Items read per batch when a read pages through a namespace."""


def archived_messages_plan(
    thread_id: str, record: Mapping[str, Any] | None = None
) -> Plan[list[BaseMessage]]:
    """A plan reading the archived messages of a thread's branch, oldest first.

    The branch is ``record``'s (a graph state's ``om_record``); without one, the standalone
    record's, else the branch the thread archived last.
    """
    yield from migrate_legacy_plan(thread_id, None)
    if record is None:
        state, latest = yield StoreBatch(
            [state_get_op(thread_id), GetOp(msgindex_ns(thread_id), LATEST_KEY)]
        )
        record, _ = unpack_state(state)
        if record is None and latest is not None:
            record = {
                "branches": latest.value.get("branches"),
                "observed_message_count": latest.value.get("count"),
            }
    count = record.get("observed_message_count") if record is not None else None
    if not isinstance(count, int):  # archived before counts were kept: the root branch
        items: list[Item] = []
        while True:
            (page,) = yield StoreBatch(
                [SearchOp(archive_ns(thread_id), limit=READ_PAGE, offset=len(items))]
            )
            items.extend(page)
            if len(page) < READ_PAGE:
                break
        roots = [i for i in items if (i.value.get("branch") or ROOT_BRANCH) == ROOT_BRANCH]
        return [archived_message(item) for item in sorted(roots, key=lambda i: i.key)]
    segments = segments_of(record)
    out: list[BaseMessage] = []
    for start in range(0, count, READ_PAGE):
        seqs = range(start, min(start + READ_PAGE, count))
        found = yield StoreBatch(
            [archive_get_op(thread_id, q, branch_at(segments, q)) for q in seqs]
        )
        out.extend(archived_message(item) for item in found if item is not None)
    return out


def thread_ids_plan() -> Plan[list[str]]:
    """A plan listing the threads that have standalone state, sorted."""
    prefix = MatchCondition(match_type="prefix", path=(ROOT, "state"))
    found: list[tuple[str, ...]] = []
    while True:
        (page,) = yield StoreBatch(
            [ListNamespacesOp(match_conditions=(prefix,), limit=READ_PAGE, offset=len(found))]
        )
        found.extend(page)
        if len(page) < READ_PAGE:
            break
    labels = sorted({ns[2] for ns in found if len(ns) > 2})
    # Some stores keep a namespace after its last item is deleted: check the state is there.
    if not labels:
        return []
    states = yield StoreBatch([GetOp((ROOT, "state", label), "current") for label in labels])
    threads: list[str] = []
    for label, item in zip(labels, states, strict=True):
        if item is None:
            continue
        record, _ = unpack_state(item)
        thread = decode_label(label)
        if thread is None and record is not None:  # the digest label of a very long id
            thread = str(record.get("thread_id"))
        if thread is not None:
            threads.append(thread)
    return sorted(set(threads))


def _move_plan(
    old: tuple[str, ...], new: tuple[str, ...], flt: dict[str, Any] | None
) -> Plan[None]:
    """Move a namespace's items (those matching ``flt``) to another namespace.

    Search documents are indexed again (``index=None``: the store's configured fields).
    """
    index: Literal[False] | None = None if new[1] == "search" else False
    while old != new:
        (items,) = yield StoreBatch([SearchOp(old, filter=flt, limit=READ_PAGE)])
        if not items:
            return
        ops: list[Op] = [PutOp(new, i.key, i.value, index=index) for i in items]
        ops.extend(PutOp(old, i.key, None) for i in items)
        yield StoreBatch(ops)


def after_migration(thread_id: str, resource_id: str | None, plan: Plan[T]) -> Plan[T]:
    """``plan``, run after :func:`migrate_legacy_plan` for its thread."""
    yield from migrate_legacy_plan(thread_id, resource_id)
    return (yield from plan)


def migrate_legacy_plan(thread_id: str, resource_id: str | None) -> Plan[None]:
    """Move a thread's data stored under its id before ids were encoded into labels.

    Only ids starting with ``~`` (or longer than a label may be) changed label; for every other
    id this yields nothing. Run it before reading or writing such a thread.
    """
    old_thread = legacy_label(thread_id)
    old_resource = legacy_label(resource_id) if resource_id else None
    if old_thread is not None:
        for kind in ("archive", "msgindex", "buffer", "reflection", "state"):
            yield from _move_plan(
                (ROOT, kind, old_thread), (ROOT, kind, thread_label(thread_id)), None
            )
    if old_resource is not None:
        flt = {"thread_id": thread_id}
        for kind in ("threads", "search"):
            yield from _move_plan(
                (ROOT, kind, old_resource), (ROOT, kind, resource_label(resource_id)), flt
            )


# -- resource scope: the shared record and each thread's unobserved messages ----------------
#
# ``("langchain_om", "resource", <resource_id>)``: key ``"record"`` holds the resource's shared
# observation log, per-thread cursors and compare-and-set version; key ``"pending:<thread>"``
# holds a thread's unobserved messages, so a step of another thread (in another process) can
# observe them and show them to its agent; key ``"backoff:buffer"`` the backoff of a failed
# background observation of the resource. Its buffered chunks live in the record.

RESOURCE_RECORD_KEY = "record"
PENDING_PREFIX = "pending:"
RESOURCE_BUFFER_BACKOFF_KEY = "backoff:buffer"
MAX_PENDING_THREADS = 1_000
"""Most threads of one resource whose unobserved messages are read."""


def resource_ns(resource_id: str) -> tuple[str, ...]:
    """Namespace of a resource's shared record and its threads' unobserved messages."""
    return (ROOT, "resource", resource_label(resource_id))


def resource_record_get_op(resource_id: str) -> GetOp:
    """Get op reading a resource's shared record."""
    return GetOp(resource_ns(resource_id), RESOURCE_RECORD_KEY)


def resource_record_put_op(resource_id: str, value: Mapping[str, Any]) -> PutOp:
    """Put op writing a resource's shared record (the caller holds the resource lock)."""
    return PutOp(resource_ns(resource_id), RESOURCE_RECORD_KEY, dict(value), index=False)


def resource_backoff_get_op(resource_id: str) -> GetOp:
    """Get op for the backoff a failed background observation of a resource left."""
    return GetOp(resource_ns(resource_id), RESOURCE_BUFFER_BACKOFF_KEY)


def resource_backoff_put_op(resource_id: str, state: Mapping[str, Any] | None) -> PutOp:
    """Put op storing (``None``: deleting) a resource's background-observation backoff."""
    value = dict(state) if state else None
    return PutOp(resource_ns(resource_id), RESOURCE_BUFFER_BACKOFF_KEY, value, index=False)


def pending_put_op(
    resource_id: str, thread_id: str, messages: Sequence[BaseMessage], tokens: int
) -> PutOp:
    """Put op storing a thread's unobserved messages (and their token count)."""
    value = {"thread_id": thread_id, "messages": dump_messages(messages), "tokens": tokens}
    return PutOp(
        resource_ns(resource_id), PENDING_PREFIX + thread_label(thread_id), value, index=False
    )


def pending_delete_op(resource_id: str, thread_id: str) -> PutOp:
    """Delete op for a thread's stored unobserved messages (resource scope)."""
    return PutOp(resource_ns(resource_id), PENDING_PREFIX + thread_label(thread_id), None)


def pending_list_op(resource_id: str) -> SearchOp:
    """Search op listing the unobserved messages of every thread of a resource."""
    return SearchOp(resource_ns(resource_id), limit=MAX_PENDING_THREADS)


def unpack_pending(items: Sequence[Item]) -> dict[str, list[BaseMessage]]:
    """Per thread id, its stored unobserved messages (from :func:`pending_list_op`'s items)."""
    out: dict[str, list[BaseMessage]] = {}
    for item in items:
        if item.key.startswith(PENDING_PREFIX) and isinstance(item.value, Mapping):
            out[str(item.value["thread_id"])] = load_messages(item.value.get("messages") or [])
    return out
