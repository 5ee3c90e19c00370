"""The systems an evaluation compares, and how each one reads a conversation.

Every system turns one :class:`~langchain_om.eval.data.Conversation` into the text the answer
model is shown (:class:`Ingested`):

- ``om``: observational memory, fed through a front door: the ``create_agent`` middleware
  (``agent``, the default), a LangGraph ``StateGraph`` with ``add_observational_memory``
  (``graph``), or the standalone engine, each session handed to ``memory.observe`` when it
  ends (``standalone``). The context is the rendered memory plus the messages not yet observed;
  through the agent and the graph, memory first takes the step the next model call (the
  question's turn) would take.
- ``full``: the whole history, cut from the front to the model's context window.
- ``window``: the most recent messages that fit the same token budget as OM's context (when
  ``om`` is not in the run: ``message_tokens + observation_tokens``, OM's ceiling).
- ``summarization``: LangChain's ``SummarizationMiddleware`` in a ``create_agent`` agent,
  triggered at OM's ``message_tokens`` and keeping a fifth of that (as OM keeps about a fifth
  of its threshold unobserved after an activation); the context is the agent's messages when
  the question arrives. Each summary is cut to ``summary_tokens`` (a quarter of the trigger
  by default), so summary plus kept messages stay well under the trigger and the middleware
  summarises again only when new messages fill the gap. Uncapped, a model that writes long
  summaries (the local model writes up to its output limit) produces a summary that is by
  itself over the trigger, and the middleware then summarises on every turn.

Through the agent front doors the conversation is replayed turn by turn: each run of user
messages is one agent invocation and :class:`~langchain_om.eval.models.ReplayModel` answers
with the recorded reply. Messages carry their own timestamps and memory's clock follows the
conversation, so memory dates things as they happened.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_om._core.tokens import TokenCounter
from langchain_om._core.types import OM_META_KEY
from langchain_om._plans.graph_state import state_record
from langchain_om.engine import ObservationalMemory
from langchain_om.eval.data import Conversation, Turn
from langchain_om.eval.models import Meter, MeteredChatModel, ReplayModel
from langchain_om.graph import add_observational_memory
from langchain_om.middleware import ObservationalMemoryMiddleware

__all__ = [
    "Clock",
    "FRONT_DOORS",
    "Ingested",
    "SYSTEMS",
    "SystemSettings",
    "ingest",
    "summary_budget",
    "transcript",
    "transcript_line",
]

SYSTEMS = ("om", "full", "window", "summarization")
_Progress = Callable[[int, int], None]
FRONT_DOORS = ("agent", "graph", "standalone")


class Clock:
    """Memory's clock during an evaluation: it shows the conversation's time."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        """The current conversation time."""
        return self.now


@dataclass(frozen=True)
class SystemSettings:
    """What the systems share in one run."""

    memory_model: BaseChatModel
    """Observer/Reflector model (and the summariser of ``summarization``)."""
    counter: TokenCounter
    message_tokens: int
    observation_tokens: int
    context_window: int = 128_000
    """The answer model's window: ``full`` is cut to it (minus the prompt's own reserve)."""
    reserve_tokens: int = 1_000
    """Tokens kept free in the window for the prompt and the answer."""
    front_door: Literal["agent", "graph", "standalone"] = "agent"
    summarizer: BaseChatModel | None = None
    """Summary model for ``summarization`` (default: ``memory_model``)."""
    summary_tokens: int | None = None
    """Longest summary of ``summarization`` (default: a quarter of ``message_tokens``)."""
    om_options: dict[str, Any] = field(default_factory=dict)
    """Extra :class:`~langchain_om.ObservationalMemory` options."""
    recorder: Callable[[dict[str, Any]], None] | None = None
    """Told every call of the memory model (prompt and raw reply, see ``--record-calls``)."""


_LINE = re.compile(r"^\s*[-*+•]\s")


@dataclass
class CycleTally:
    """How memory's cycles ended and what they cost, by operation and outcome.

    ``outcome`` is ``accepted`` (a whole reply), ``salvaged`` (the grounded lines before a
    cut) or ``rejected``; ``lines`` counts the observation lines an accepted cycle wrote.
    """

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    output_tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)

    def add(self, operation: str, ctx: Mapping[str, Any]) -> None:
        """Count the cycle an end hook reports."""
        outcome = (
            "rejected" if ctx.get("error") is not None else str(ctx.get("outcome") or "accepted")
        )
        spent = int(ctx.get("output_tokens") or 0)
        for table, value in ((self.counts, 1), (self.output_tokens, spent)):
            row = table.setdefault(operation, {})
            row[outcome] = row.get(outcome, 0) + value
        if outcome != "rejected":
            text = str(ctx.get("observations") or "")
            written = sum(1 for line in text.splitlines() if _LINE.match(line))
            self.lines[operation] = self.lines.get(operation, 0) + written

    def as_dict(self) -> dict[str, Any]:
        """JSON-native figures for the run's records."""
        return {"counts": self.counts, "output_tokens": self.output_tokens, "lines": self.lines}


@dataclass
class Ingested:
    """A conversation as one system holds it, ready to answer questions from."""

    render: Callable[[datetime], str]
    """The context text for a question asked at the given time."""
    meter: Meter = field(default_factory=Meter)
    """What the system's own model spent reading the conversation."""
    details: dict[str, Any] = field(default_factory=dict)
    """System-specific figures (observation log tokens, generation, ...)."""
    close: Callable[[], None] = lambda: None


# --- text of messages --------------------------------------------------------------------------


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%d %b %Y %H:%M")


def transcript_line(turn: Turn) -> str:
    """``[08 May 2023 13:56] Caroline: text``."""
    return f"[{_stamp(turn.timestamp)}] {turn.label}: {turn.text}"


def transcript(turns: Sequence[Turn]) -> str:
    """Turns as dated lines, oldest first."""
    return "\n".join(transcript_line(t) for t in turns)


def _tail_fitting(turns: Sequence[Turn], budget: int, counter: TokenCounter) -> list[Turn]:
    """The most recent turns whose transcript lines fit ``budget`` tokens."""
    kept: list[Turn] = []
    used = 0
    for turn in reversed(turns):
        cost = counter.count_text(transcript_line(turn)) + 1
        if used + cost > budget:
            break
        kept.append(turn)
        used += cost
    return kept[::-1]


def _message(turn: Turn) -> BaseMessage:
    meta = {OM_META_KEY: {"ts": turn.timestamp.astimezone(UTC).isoformat()}}
    if turn.role == "user":
        return HumanMessage(turn.content, id=turn.id, response_metadata=meta)
    return AIMessage(turn.content, id=turn.id, response_metadata=meta)


@dataclass(frozen=True)
class _Step:
    inputs: list[Turn]
    reply: Turn


def _agent_steps(turns: Sequence[Turn]) -> tuple[list[_Step], list[Turn]]:
    """Agent invocations: the turns up to each run of user messages, and the reply after it.

    Assistant turns after the first reply of a run open the next invocation's input. The
    turns after the last reply (no reply follows them) are returned as the tail.
    """
    steps: list[_Step] = []
    pending: list[Turn] = []
    for turn in turns:
        if turn.role == "assistant" and any(t.role == "user" for t in pending):
            steps.append(_Step(pending, turn))
            pending = []
        else:
            pending.append(turn)
    return steps, pending


def _window_text(messages: Sequence[BaseMessage], by_id: dict[str, Turn], tail: list[Turn]) -> str:
    lines: list[str] = []
    for message in messages:
        turn = by_id.get(message.id or "")
        if turn is not None:
            lines.append(transcript_line(turn))
        elif message.text.strip():  # e.g. a summary the middleware wrote
            lines.append(message.text.strip())
    lines.extend(transcript_line(t) for t in tail)
    return "\n".join(lines)


# --- the systems ----------------------------------------------------------------------------------


def _full(conv: Conversation, settings: SystemSettings) -> Ingested:
    budget = settings.context_window - settings.reserve_tokens
    text = transcript(_tail_fitting(conv.turns, budget, settings.counter))
    return Ingested(render=lambda when: text)


def _window(conv: Conversation, settings: SystemSettings, budget: int) -> Ingested:
    text = transcript(_tail_fitting(conv.turns, budget, settings.counter))
    return Ingested(render=lambda when: text, details={"budget_tokens": budget})


def _memory(
    settings: SystemSettings, clock: Clock, failures: list[str], cycles: CycleTally
) -> tuple[Any, MeteredChatModel]:
    """The memory under test, counting its failed observation cycles into ``failures``.

    Every cycle's outcome and output tokens are added to ``cycles``. A rejected Observer reply
    must not end the run: by default it ``continue``s (the messages stay in the window).
    """
    metered = MeteredChatModel.wrap(settings.memory_model, settings.counter)
    metered.recorder = settings.recorder
    om: dict[str, Any] = dict(settings.om_options)  # the run's thresholds unless it sets its own
    om["observation"] = {
        "message_tokens": settings.message_tokens,
        "failure_policy": "continue",
        **om.get("observation", {}),
    }
    om["reflection"] = {
        "observation_tokens": settings.observation_tokens,
        **om.get("reflection", {}),
    }
    hooks: dict[str, Any] = dict(om.get("hooks", {}))
    user_end = hooks.get("on_observation_end")

    user_reflection_end = hooks.get("on_reflection_end")

    def on_observation_end(ctx: Any) -> Any:
        if ctx.get("error") is not None:
            failures.append(type(ctx["error"]).__name__)
        cycles.add("observation", ctx)
        return user_end(ctx) if user_end is not None else None

    def on_reflection_end(ctx: Any) -> Any:
        cycles.add("reflection", ctx)
        return user_reflection_end(ctx) if user_reflection_end is not None else None

    om["hooks"] = {
        **hooks,
        "on_observation_end": on_observation_end,
        "on_reflection_end": on_reflection_end,
    }
    memory = ObservationalMemory(model=metered, clock=clock, token_counter=settings.counter, **om)
    return memory, metered


def _om(conv: Conversation, settings: SystemSettings, progress: _Progress) -> Ingested:
    clock = Clock(conv.turns[0].timestamp if conv.turns else datetime.now(UTC))
    failures: list[str] = []
    cycles = CycleTally()
    memory, metered = _memory(settings, clock, failures, cycles)
    by_id = {t.id: t for t in conv.turns}
    thread = {"configurable": {"thread_id": conv.id}}
    tail: list[Turn] = []
    if settings.front_door == "standalone":
        for session in conv.sessions:
            if session.turns:
                clock.now = session.turns[-1].timestamp
                memory.observe(thread_id=conv.id, messages=[_message(t) for t in session.turns])
                progress(conv.turns.index(session.turns[-1]) + 1, len(conv.turns))
        memory.wait_for_background()
        snap = memory.status(thread_id=conv.id)
        record, window = snap.record, list(snap.window)
    else:
        replay = ReplayModel()
        runnable = _om_runnable(settings.front_door, memory, replay)
        steps, tail = _agent_steps(conv.turns)
        for step in steps:
            clock.now = step.reply.timestamp
            replay.push(_message(step.reply))  # type: ignore[arg-type]
            runnable.invoke({"messages": [_message(t) for t in step.inputs]}, thread)
            memory.wait_for_background()
            replay.check_done()
            progress(conv.turns.index(step.reply) + 1, len(conv.turns))
        state = runnable.get_state(thread).values
        window = [m for m in state.get("messages", []) if m.type != "system"]
        record = state_record(state)
        if conv.turns:
            # The question arrives: memory takes the step the agent's next model call would.
            clock.now = conv.turns[-1].timestamp
            outcome = memory.step(
                thread_id=conv.id, window=window + [_message(t) for t in tail], record=record
            )
            memory.wait_for_background()
            record, window, tail = outcome.record, list(outcome.window), []

    def render(when: datetime) -> str:
        clock.now = when
        context = memory.render(record)
        recent = _window_text(window, by_id, tail)
        return "\n\n".join(part for part in (context.text, recent) if part.strip())

    details: dict[str, Any] = {"front_door": settings.front_door}
    if isinstance(record, dict):
        details.update(
            observation_tokens=record.get("observation_tokens", 0),
            generation=record.get("generation", 0),
            observed_messages=record.get("observed_message_count", 0),
        )
    details["window_messages"] = len(window) + len(tail)
    details["failed_observations"] = len(failures)
    details["cycles"] = cycles.as_dict()
    return Ingested(render=render, meter=metered.meter, details=details, close=memory.close)


def _om_runnable(front_door: str, memory: Any, replay: ReplayModel) -> Any:
    if front_door == "agent":
        return create_agent(
            replay.model,
            [],
            middleware=[ObservationalMemoryMiddleware(memory)],
            checkpointer=memory.checkpointer,
            store=memory.store,
        )
    model = replay.model
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    add_observational_memory(builder, memory, before="model")
    return builder.compile(checkpointer=memory.checkpointer, store=memory.store)


def summary_budget(settings: SystemSettings) -> int:
    """The longest summary ``summarization`` keeps (tokens).

    ``summary_tokens`` when set, else a quarter of the trigger (``message_tokens``).
    """
    if settings.summary_tokens is not None:
        return settings.summary_tokens
    return max(1, settings.message_tokens // 4)


def _summarization(conv: Conversation, settings: SystemSettings, progress: _Progress) -> Ingested:
    metered = MeteredChatModel.wrap(
        settings.summarizer or settings.memory_model,
        settings.counter,
        output_cap=summary_budget(settings),
    )
    middleware = SummarizationMiddleware(
        model=metered,
        trigger=("tokens", settings.message_tokens),
        keep=("tokens", max(1, settings.message_tokens // 5)),
        token_counter=settings.counter.count_messages,  # type: ignore[arg-type]
    )
    replay = ReplayModel()
    agent: Any = create_agent(
        replay.model, [], middleware=[middleware], checkpointer=InMemorySaver()
    )
    thread = {"configurable": {"thread_id": conv.id}}
    steps, tail = _agent_steps(conv.turns)
    for step in steps:
        replay.push(_message(step.reply))  # type: ignore[arg-type]
        agent.invoke({"messages": [_message(t) for t in step.inputs]}, thread)
        replay.check_done()
        progress(conv.turns.index(step.reply) + 1, len(conv.turns))
    messages = list(agent.get_state(thread).values.get("messages", [])) if steps else []
    messages += [_message(t) for t in tail]
    # The question arrives: the middleware's hook runs as before the next model call.
    update = middleware.before_model({"messages": messages}, None)  # type: ignore[arg-type]
    if update is not None:
        messages = [m for m in update["messages"] if m.type != "remove"]
    text = _window_text(messages, {t.id: t for t in conv.turns}, [])
    summaries = sum(1 for m in messages if m.id not in {t.id for t in conv.turns})
    return Ingested(
        render=lambda when: text,
        meter=metered.meter,
        details={"messages_kept": len(messages) - summaries, "summaries": summaries},
    )


def ingest(
    system: str,
    conv: Conversation,
    settings: SystemSettings,
    *,
    budget: int | None = None,
    progress: _Progress | None = None,
) -> Ingested:
    """Read ``conv`` into ``system``.

    Args:
        system: one of :data:`SYSTEMS`.
        conv: the conversation.
        settings: what the systems share.
        budget: the token budget of ``window`` (OM's context size for this conversation).
        progress: called with (turns read, turns) as the conversation is read.

    Raises:
        ValueError: an unknown system, or ``window`` without a budget.
    """
    report = progress or (lambda done, total: None)
    if system == "om":
        return _om(conv, settings, report)
    if system == "full":
        return _full(conv, settings)
    if system == "window":
        if budget is None:
            raise ValueError("the window system needs a token budget")
        return _window(conv, settings, budget)
    if system == "summarization":
        return _summarization(conv, settings, report)
    raise ValueError(f"unknown system {system!r}: use {', '.join(SYSTEMS)}")
