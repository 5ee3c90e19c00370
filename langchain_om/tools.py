"""The ``recall`` tool: page back to the raw messages behind the observations.

:func:`create_recall_tool` builds a LangChain ``StructuredTool`` that an agent (or any chain)
calls to read archived messages, list the user's threads, or search them by meaning. Reads are
O(page): the archive keys are contiguous sequence numbers per thread, so a page is one
``store.batch`` of ``GetOp`` for a known key range, whatever the archive size.

The thread and resource (user) the tool works for come from the run config
(``configurable.thread_id``, ``configurable.resource_id`` or ``user_id``), the graph run's
context (``resource_id``) or, for a thread the store already holds, the resource that owns it;
never from the tool's arguments, so a ``state`` or id the model writes into a call is ignored
for identity. Whatever arguments the model passes, the tool never returns anything of another
resource.

The modes themselves (``messages``, ``threads``, ``search``) are plans of store batches in
:mod:`langchain_om._plans.recall`; this module builds the tool that drives them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NamedTuple, Protocol

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.prebuilt import InjectedState
from langgraph.runtime import get_runtime
from langgraph.store.base import BaseStore
from langgraph.types import Command
from pydantic import BaseModel, Field, ValidationError

from langchain_om._config.parts import CodeModeConfig
from langchain_om._core.group_keys import GROUP_KEYS
from langchain_om._core.line_edits import EDIT_TAGS, edit_line, find_lines
from langchain_om._core.recall import json_text
from langchain_om._core.recall_code import Limits
from langchain_om._core.record import coerce_record
from langchain_om._core.sanitize import sanitize_text
from langchain_om._core.tokens import TokenCounter
from langchain_om._plans.effects import Executor, ModelCall, Plan, run_async, run_sync
from langchain_om._plans.graph_state import (
    OM_STATE_KEY,
    memory_enabled,
    record_update,
    run_ids,
    split_messages,
    state_fields,
)
from langchain_om._plans.recall import (
    Caller,
    RecallInput,
    RecallSettings,
    nonempty_str,
    recall_plan,
)
from langchain_om._plans.recall_code import code_plan, recall_signature
from langchain_om._storage.run_store import run_store
from langchain_om.config import ObservationalMemoryConfig
from langchain_om.errors import ObservationalMemoryError, OMUsageError


class RecallMemory(Protocol):
    """What the recall tool reads from the engine (an ``ObservationalMemory``)."""

    @property
    def config(self) -> ObservationalMemoryConfig: ...

    @property
    def store(self) -> BaseStore: ...

    @property
    def counter(self) -> TokenCounter: ...


__all__ = ["create_memory_tool", "create_recall_code_tool", "create_recall_tool"]

TOOL_DESCRIPTION = """\
Read the original messages behind your memory (your observations only summarise them).
- mode="messages" (default): a page of one thread. Pass `cursor` = one message id (e.g. from an \
observation group's `_range: start:end`); page 1 starts there, page -1 is just before it. \
Without a cursor, `anchor` "start" or "end" reads from the beginning or the end.
- mode="threads": list conversations (optionally `before` / `after` ISO dates).
- mode="search": find messages by meaning with `query` (only when semantic search is on).
- mode="observations": archived observation groups (archive mode): with `archive_id` and \
`group_id` from the <archived-observations> catalog, one group word for word; without them, \
the archive newest first (`cursor` = an archive id to continue after; `text`, `before` / \
`after` filter; `query` searches by meaning).
- mode="source": the messages one observation `line` was written from (its id or its text).
`detail` "low" gives previews, "high" full text; `part_index` reads one part in full; \
`part_type` / `tool_name` show only matching parts. Results are JSON; when `truncated` is true, \
continue from `next_cursor`."""


def _caller(
    *,
    scope: Literal["thread", "resource"],
    bound_thread: str | None,
    bound_resource: str | None,
    config: RunnableConfig | None,
    state: Mapping[str, Any] | None,
) -> Caller:
    """Who is calling: ids from the tool's binding, the run config or the run's context.

    Identity never comes from the tool's arguments: ``state`` may be written by the model
    (``tool.invoke(args)``), so it only supplies the current thread's window and record, and
    only when its record names the same thread; recall checks that record's resource against
    the caller before using it.
    """
    run_thread, run_resource = run_ids(dict(config or {}), _runtime())
    thread_id = bound_thread or nonempty_str(run_thread)
    resource_id = bound_resource or nonempty_str(run_resource)
    record = state_fields(state) if isinstance(state, Mapping) else None  # ids and counts
    record = record if isinstance(record, Mapping) else None
    window: list[BaseMessage] | None = None
    if isinstance(state, Mapping) and isinstance(state.get("messages"), list):
        same_thread = record is None or record.get("thread_id") in (None, thread_id)
        if thread_id is not None and same_thread:
            msgs = [m for m in state["messages"] if isinstance(m, BaseMessage)]
            window = split_messages(msgs).window
    own_record = record if record is not None and record.get("thread_id") == thread_id else None
    return Caller(thread_id, resource_id, scope, window, own_record, _group_keys(state, own_record))


def _group_keys(
    state: Mapping[str, Any] | None, record: Mapping[str, Any] | None
) -> tuple[str, ...]:
    """The content keys naming ``record``'s groups in graph state (when it holds none)."""
    if record is None or record.get("groups") or not isinstance(state, Mapping):
        return ()
    body = state.get(OM_STATE_KEY)
    keys = body.get(GROUP_KEYS) if isinstance(body, Mapping) else None
    return tuple(str(k) for k in keys) if isinstance(keys, list) else ()


def _runtime() -> Any:
    """The graph run's runtime (its ``context`` may name the resource), outside a run ``None``."""
    try:
        return get_runtime()
    except (RuntimeError, KeyError):
        return None


def _no_model(effect: ModelCall) -> Any:
    raise OMUsageError("the recall tool does not call models")


async def _ano_model(effect: ModelCall) -> Any:
    raise OMUsageError("the recall tool does not call models")


def create_recall_tool(
    memory: RecallMemory,
    *,
    scope: Literal["thread", "resource"] | None = None,
    token_budget: int = 8000,
    name: str = "recall",
    vector: bool | None = None,
    thread_id: str | None = None,
    resource_id: str | None = None,
) -> StructuredTool:
    """Build the ``recall`` tool for ``memory``.

    The tool reads the graph run's store (``runtime.store``; ``memory.store`` outside a run
    or when the graph has none): archived messages page by page, the resource's thread
    list, and (with ``vector``) semantic search. Its result is a JSON string for the model; the
    same data is the ``ToolMessage.artifact`` (a dict) when it runs as a tool call.

    Args:
        memory: the engine whose store holds the archive.
        scope: ``"resource"`` reads every thread of the caller's resource, ``"thread"`` only
            the current one (default: ``retrieval.scope``, else ``"resource"``).
        token_budget: most tokens of one result (counted with ``memory.counter``).
        name: the tool name.
        vector: enable ``mode="search"`` (default: ``retrieval.vector``). The store needs a
            vector index (``InMemoryStore(index={...})`` or an indexed ``SqliteStore``).
        thread_id: bind the tool to this thread instead of the run config's.
        resource_id: bind the tool to this resource instead of the run config's.

    Returns:
        A ``StructuredTool`` with sync and async paths over one implementation.

    Example:
        >>> from langchain_om import ObservationalMemory
        >>> from langchain_om.tools import create_recall_tool
        >>> from langchain_om.testing import memory_model
        >>> memory = ObservationalMemory(model=memory_model(), retrieval=True)
        >>> create_recall_tool(memory).name
        'recall'
    """
    parts = _ToolParts(memory, scope, token_budget, vector, thread_id, resource_id)

    def plan_for(config: RunnableConfig, kwargs: dict[str, Any]) -> Plan[dict[str, Any]]:
        args = RecallInput.model_validate(kwargs)
        return recall_plan(parts.settings, parts.caller(config, args.state), args)

    return parts.tool(plan_for, name=name, description=TOOL_DESCRIPTION, schema=RecallInput)


def recall_settings(
    memory: RecallMemory, *, token_budget: int = 8000, vector: bool | None = None
) -> RecallSettings:
    """How recall reads ``memory`` (search on or off, budget, token counting, archive mode)."""
    retrieval = memory.config.retrieval
    return RecallSettings(
        vector=vector if vector is not None else bool(retrieval and retrieval.vector),
        token_budget=token_budget,
        count=memory.counter.count_text,
        min_score=retrieval.min_score if retrieval is not None else RecallSettings.min_score,
        archive_mode=memory.config.observation.archive is not None,
    )


class _ToolParts:
    """What a recall tool is made of: settings, the store it reads, the caller of a run."""

    def __init__(
        self,
        memory: RecallMemory,
        scope: Literal["thread", "resource"] | None,
        token_budget: int,
        vector: bool | None,
        thread_id: str | None,
        resource_id: str | None,
    ) -> None:
        retrieval = memory.config.retrieval
        chosen: Literal["thread", "resource"] = scope or (
            retrieval.scope if retrieval is not None else "resource"
        )
        if chosen not in ("thread", "resource"):
            raise OMUsageError(f"scope must be 'thread' or 'resource', got {chosen!r}")
        if token_budget < 100:
            raise OMUsageError(f"token_budget must be at least 100, got {token_budget}")
        self.scope, self.thread_id, self.resource_id = chosen, thread_id, resource_id
        self.memory = memory
        self.settings = recall_settings(memory, token_budget=token_budget, vector=vector)
        self.default = Executor(store=memory.store, call_model=_no_model, acall_model=_ano_model)

    def executor(self) -> Executor:
        """On the graph run's store when the tool runs inside one, else on ``memory.store``."""
        store = run_store(_runtime())
        if store is None or store is self.memory.store:
            return self.default
        return Executor(store=store, call_model=_no_model, acall_model=_ano_model)

    def caller(self, config: RunnableConfig, state: Mapping[str, Any] | None) -> Caller:
        return _caller(
            scope=self.scope,
            bound_thread=self.thread_id,
            bound_resource=self.resource_id,
            config=config,
            state=state,
        )

    def tool(
        self,
        plan_for: Any,
        *,
        name: str,
        description: str,
        schema: type[BaseModel],
    ) -> StructuredTool:
        """A tool running ``plan_for(config, kwargs)`` sync or async; it never raises.

        A request with memory off (``configurable={"langchain_om": {"enabled": False}}``)
        gets the memory-off answer and reads nothing.
        """

        def run(config: RunnableConfig, **kwargs: Any) -> tuple[str, dict[str, Any]]:
            if not memory_enabled(config):
                return json_text(MEMORY_OFF), MEMORY_OFF
            try:
                result = run_sync(plan_for(config, kwargs), self.executor())
            except Exception as exc:  # the tool answers; it never raises into the agent
                result = _error_result(exc)
            return json_text(result), result

        async def arun(config: RunnableConfig, **kwargs: Any) -> tuple[str, dict[str, Any]]:
            if not memory_enabled(config):
                return json_text(MEMORY_OFF), MEMORY_OFF
            try:
                result = await run_async(plan_for(config, kwargs), self.executor())
            except Exception as exc:  # the tool answers; it never raises into the agent
                result = _error_result(exc)
            return json_text(result), result

        return StructuredTool.from_function(
            func=run,
            coroutine=arun,
            name=name,
            description=description,
            args_schema=schema,
            response_format="content_and_artifact",
            handle_validation_error=_validation_message,
        )


CODE_TOOL_NAME = "execute_memory_recall"

CODE_TOOL_DESCRIPTION = (
    "Read your memory by running one short program instead of many recall calls. Write "
    "plain Python statements that call `recall(...)` (keyword arguments as the recall tool "
    "takes them; each call returns its JSON result as a dict), shape the results in code "
    "(filter, count, join) and end with `return <value>`. Only `recall`, `print` and basic "
    "builtins (len, sorted, min, max, sum, range, enumerate, zip, str, int, list, dict, set, "
    "…) and plain str/list/dict methods exist: no imports, no attributes, no files or "
    "network.\n"
    'Example: r = recall(mode="search", query="flight booking")\n'
    'return [x["preview"] for x in r["results"][:3]]'
)


class RecallCodeInput(BaseModel):
    """Arguments of the ``execute_memory_recall`` tool."""

    code: str = Field(description="The program: Python statements ending with `return <value>`.")
    state: Annotated[dict[str, Any] | None, InjectedState] = None


def create_recall_code_tool(
    memory: RecallMemory,
    *,
    scope: Literal["thread", "resource"] | None = None,
    token_budget: int = 8000,
    name: str = CODE_TOOL_NAME,
    vector: bool | None = None,
    thread_id: str | None = None,
    resource_id: str | None = None,
) -> StructuredTool:
    """Build recall code mode's tool (``execute_memory_recall``) for ``memory``.

    The agent passes one program; it runs in memory's own interpreter (a small subset of
    Python with no imports, attributes, files, network or clock) and every ``recall(...)`` it
    calls is the ``recall`` tool's call for the same caller, with the same scope and identity
    rules. The answer is ``{"success": true, "result": …, "calls": n}`` or ``{"success":
    false, "error": {"message", "line"}}``. ``retrieval.code_mode`` sets the program's
    limits (``timeout`` seconds, ``max_calls``, ``max_steps``; defaults without it).

    Args:
        memory: the engine whose store holds the archive.
        scope: as :func:`create_recall_tool`.
        token_budget: most tokens of one recall result, and of the program's answer.
        name: the tool name.
        vector: as :func:`create_recall_tool`.
        thread_id: bind the tool to this thread instead of the run config's.
        resource_id: bind the tool to this resource instead of the run config's.

    Example:
        >>> from langchain_om import ObservationalMemory
        >>> from langchain_om.tools import create_recall_code_tool
        >>> from langchain_om.testing import memory_model
        >>> memory = ObservationalMemory(model=memory_model(), retrieval={"code_mode": True})
        >>> create_recall_code_tool(memory).name
        'execute_memory_recall'
    """
    parts = _ToolParts(memory, scope, token_budget, vector, thread_id, resource_id)
    retrieval = memory.config.retrieval
    mode = retrieval.code_mode if retrieval is not None else None
    options = mode if mode is not None else CodeModeConfig()

    def plan_for(config: RunnableConfig, kwargs: dict[str, Any]) -> Plan[dict[str, Any]]:
        args = RecallCodeInput.model_validate(kwargs)
        deadline = time.monotonic() + options.timeout
        limits = Limits(
            max_steps=options.max_steps,
            max_calls=options.max_calls,
            expired=lambda: time.monotonic() > deadline,
        )
        return code_plan(parts.settings, parts.caller(config, args.state), args.code, limits)

    description = CODE_TOOL_DESCRIPTION + "\n\n" + recall_signature()
    return parts.tool(plan_for, name=name, description=description, schema=RecallCodeInput)


MEMORY_OFF = {
    "error": "Memory is off for this request, so there is nothing to recall. Answer from the "
    "conversation as it is."
}
"""The recall tool's answer when the run config turns memory off for the request."""
MEMORY_OFF_EDIT = "Memory is off for this request; nothing was read or changed."
"""The memory tool's answer when the run config turns memory off for the request."""


def _error_result(exc: Exception) -> dict[str, Any]:
    """The answer of a recall that failed: what went wrong and what to try instead."""
    if isinstance(exc, ValidationError):
        return {"error": _validation_message(exc)}
    detail = exc.message if isinstance(exc, ObservationalMemoryError) else str(exc)
    return {
        "error": (
            f"recall could not read the memory ({type(exc).__name__}: {detail[:300]}). "
            'Try other arguments, e.g. mode="messages" with anchor="end", or mode="threads".'
        )
    }


def _validation_message(exc: ValidationError | Exception) -> str:
    """A clear error string for arguments the tool cannot take."""
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
            for e in exc.errors()[:5]
        )
    else:
        problems = str(exc)[:300]
    return (
        f"Invalid recall arguments ({problems}). Pass mode='messages' (with cursor or anchor "
        "'start'/'end'), mode='threads' or mode='search' with a query."
    )


class WorkingMemoryOwner(Protocol):
    """What the memory tool needs from the engine (an ``ObservationalMemory``)."""

    @property
    def config(self) -> ObservationalMemoryConfig: ...

    @property
    def counter(self) -> TokenCounter: ...

    def update_working_memory(
        self,
        value: Any,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
        record: Any = None,
    ) -> Any: ...

    def get_working_memory(
        self, *, thread_id: str | None = None, resource_id: str | None = None, record: Any = None
    ) -> Any: ...

    def read_state(self, state: Mapping[str, Any], *, store: BaseStore | None = None) -> Any: ...

    def keep_state(
        self,
        update: Mapping[str, Any],
        state: Mapping[str, Any] | None,
        *,
        store: BaseStore | None = None,
    ) -> None: ...


MEMORY_TOOL_NAME = "memory"

MEMORY_TOOL_DESCRIPTION = """\
Look at and fix your own memory of this user.
- action="find": observation lines holding every word of `query`, with their `id`s.
- action="correct": replace the line `line_id` with `text` (keep its priority mark and time).
- action="delete": remove the line `line_id` (it was wrong or must be forgotten).
- action="update_working_memory": replace the working-memory document with `text`, or (for a \
typed one) change the `fields` given.
Use it when the user corrects something you remember, or asks you to forget it."""


class _Edit(NamedTuple):
    """The memory tool's answer, the new record (``None``: unchanged) and whether it failed."""

    answer: str
    record: Any = None
    error: bool = False


def _memory_edit(
    memory: WorkingMemoryOwner,
    record: Any,
    *,
    action: str,
    query: str | None,
    line_id: str | None,
    text: str | None,
    fields: dict[str, Any] | None,
) -> _Edit:
    """What the tool answers, and the edited record."""
    coerced = coerce_record(record)
    if coerced is None:
        return _Edit(
            "There is no memory of this conversation yet (in a custom graph, give the tool "
            "node a state with the om_record key: ObservationalMemoryGraphState)."
        )
    if memory.config.read_only and action != "find":
        return _Edit("This memory is read-only; nothing was changed.", error=True)
    if action == "find":
        return _Edit(json_text({"lines": find_lines(coerced, query or "")}))
    if action in ("correct", "delete"):
        if not line_id or (action == "correct" and not (text or "").strip()):
            needs = " and text" if action == "correct" else ""
            return _Edit(f"action={action!r} needs line_id{needs}", error=True)
        slugs = [e.slug for e in memory.config.observation.extract]
        try:
            new = edit_line(
                coerced,
                line_id,
                text if action == "correct" else None,
                memory.counter.count_text,
                tags=(*EDIT_TAGS, *slugs),
            )
        except KeyError:
            return _Edit(
                f"No observation line has the id {line_id!r}; use action='find' first.",
                error=True,
            )
        except OMUsageError as exc:
            return _Edit(exc.message, error=True)
        done = "corrected" if action == "correct" else "deleted"
        return _Edit(f"Line {line_id} {done}.", new)
    if action == "update_working_memory":
        value: Any = text
        if fields is not None:
            current = memory.get_working_memory(record=coerced)
            value = {**(current if isinstance(current, dict) else {}), **fields}
        try:
            new = memory.update_working_memory(value, record=coerced)
        except OMUsageError as exc:
            return _Edit(f"Not updated: {exc.message}", error=True)
        return _Edit("Working memory updated.", new)
    return _Edit(
        f"Unknown action {action!r}; use find, correct, delete or update_working_memory.",
        error=True,
    )


def _forms(value: str) -> tuple[str, str]:
    """An id as given and as stored (NUL and lone surrogates replaced by markers)."""
    return value, sanitize_text(value)


def _run_record(
    memory: WorkingMemoryOwner,
    state: Mapping[str, Any],
    config: RunnableConfig | None,
    store: BaseStore | None,
) -> tuple[Any, str | None]:
    """The record of the run's own thread, or ``(None, why not)``.

    Identity comes from the run (``configurable.thread_id``, the graph's execution info,
    ``resource_id``/``user_id``), never from ``state``: outside a ``ToolNode`` the state is
    an argument anyone may write. Its record is used only when it is the run's thread's (and
    the run's resource's, when the run names one).
    """
    thread_id, resource_id = run_ids(dict(config or {}), _runtime())
    if not thread_id:
        return None, (
            "The memory tool works on the current conversation only: run it in a graph or "
            "agent with config={'configurable': {'thread_id': ...}}."
        )
    body = state.get(OM_STATE_KEY) if isinstance(state, Mapping) else None
    if not isinstance(body, Mapping) or body.get("thread_id") not in _forms(thread_id):
        return None, None
    owner = body.get("resource_id")
    if resource_id is not None and owner is not None and owner not in _forms(resource_id):
        return None, None
    return memory.read_state(state, store=store), None


def create_memory_tool(memory: WorkingMemoryOwner) -> BaseTool:
    """The ``memory`` tool: the agent fixes its own thread's memory.

    It finds, corrects and deletes observation lines and updates the working memory of the
    record in its graph state. The edits go into the agent's state (a ``Command`` updating
    ``om_record``), so they need the ``create_agent`` middleware or
    :func:`~langchain_om.graph.add_observational_memory`. The tool's calls and results are
    never observed.

    Args:
        memory: the :class:`~langchain_om.engine.ObservationalMemory` whose record it edits.
    """

    def memory_tool(
        action: Literal["find", "correct", "delete", "update_working_memory"],
        state: Annotated[dict[str, Any], InjectedState],
        tool_call_id: Annotated[str, InjectedToolCallId],
        config: RunnableConfig,
        query: str | None = None,
        line_id: str | None = None,
        text: str | None = None,
        fields: dict[str, Any] | None = None,
    ) -> Any:
        if not memory_enabled(config):
            reply = ToolMessage(MEMORY_OFF_EDIT, tool_call_id=tool_call_id, name=MEMORY_TOOL_NAME)
            return Command(update={"messages": [reply]})
        store = run_store()
        record, refused = _run_record(memory, state, config, store)
        edit = (
            _Edit(refused, error=True)
            if refused is not None
            else _memory_edit(
                memory,
                record,
                action=action,
                query=query,
                line_id=line_id,
                text=text,
                fields=fields,
            )
        )
        reply = ToolMessage(
            edit.answer,
            tool_call_id=tool_call_id,
            name=MEMORY_TOOL_NAME,
            status="error" if edit.error else "success",
        )
        new = edit.record
        if new is None:
            return Command(update={"messages": [reply]})
        update = record_update(new, state)
        memory.keep_state(update, state, store=store)
        return Command(update={**update, "messages": [reply]})

    return StructuredTool.from_function(
        memory_tool, name=MEMORY_TOOL_NAME, description=MEMORY_TOOL_DESCRIPTION
    )
