"""Memory's own foreground work per turn, piece by piece, beside a floor middleware.

Two ``create_agent`` agents hold the same synthetic conversation (``_common.user_text``),
every model answering instantly, their turns interleaved in one process (machine noise hits
them alike), each on an in-memory checkpointer that keeps the latest checkpoint
(``durability="exit"``):

* ``om``: ``ObservationalMemoryMiddleware`` (message_tokens 3 000, observation_tokens 4 000,
  default buffering, ``memory_model(even=True, stream_by="reply")`` Observer/Reflector
  answering in one piece as the floor's model does, ``background="manual"``:
  ``memory.run_background()`` runs after each turn, outside the timed region, so the
  background buffering and reflection a worker thread would do still happen, in order);
* ``floor``: :class:`FloorMiddleware`, the least a memory middleware can do in the same
  pieces: it counts only the messages it has not counted, keeps one small state key, puts a
  fixed memory text into the prompt and, past 3 000 tokens, drops all but the last 20
  messages.

Only the middleware's hooks are timed (CPU time; ``--wall`` for wall-clock), the model call
they wrap excluded; the time is split into pieces, each timed exclusive of the pieces it
calls (so the pieces add up to the total):

* *count*: token counting (``TokenCounter.count_messages`` / ``message_counts`` /
  ``count_message`` / ``count_text``; the floor's ``count_tokens_approximately`` of new messages);
* *gate*: the turn plan (``ObservationalMemory.step``: stamping, the decisions whether an
  activation, observation, reflection or buffer is due, the status; also the rare foreground
  cycle such as an activation), minus the counting and store calls it makes;
* *render*: the memory context put into the prompt (``render`` and the system message);
* *record read*: the OM record from graph state (``read_state``), minus its store reads;
* *record write*: the state update of the record and messages (``_done`` and
  ``keep_state``), minus its store writes;
* *store reads* / *store writes*: the store batches the step sends (sanitising included);
* *glue*: the rest of the hooks (run config, window split, request override, reply).

Each cell is the median over the last min(N/2, 200) turns before the point (the mean in
brackets: it includes the turns that activate or swap in a reflection); the total is the
median of the per-turn totals, not the sum of the medians. The ratio column is om over the
floor. ``--before FILE`` takes the numbers of an earlier run of this script (the JSON it
writes) and shows them beside this run's.

Usage::

    python benchmarks/bookkeeping.py            # 1 000 and 10 000 turns (a few minutes)
    python benchmarks/bookkeeping.py --quick    # 100 and 1 000 turns
    python benchmarks/bookkeeping.py --smoke    # 20 and 40 turns (seconds; for the tests)
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired

import _common
from _common import (
    RESULTS,
    InstantChatModel,
    LatestCheckpointSaver,
    machine,
    table,
    user_text,
)
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.store.base import GetOp, ListNamespacesOp, SearchOp
from langgraph.types import Command

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om._core.tokens import TokenCounter
from langchain_om._plans.effects import Executor, StoreBatch
from langchain_om.testing import memory_model

SETUPS = ("om", "floor")
LABELS = {"om": "langchain-om middleware", "floor": "floor middleware"}
PIECES = (
    "count",
    "gate",
    "render",
    "record read",
    "record write",
    "store reads",
    "store writes",
    "glue",
)
OM_OPTIONS: dict[str, Any] = {
    "observation": {"message_tokens": 3_000},
    "reflection": {"observation_tokens": 4_000},
}
TARGET_MS = 0.3
"""Most memory's own foreground work may cost per turn (median total at each point)."""
FLOOR_TRIGGER, FLOOR_KEEP = 3_000, 20
FLOOR_MEMORY = (
    "<observations>\nDate: Jan 1, 2026\n* The user talked about many everyday topics.\n"
    "</observations>"
)


# -- the pieces' timer -----------------------------------------------------------------------


class Pieces:
    """Exclusive time per piece: a timed call's time less the timed calls it makes.

    The calls form a stack; a call's own time goes to its piece and its whole time is taken
    off its caller's. A piece of ``None`` (the model call a hook wraps) is taken off its
    caller and counted nowhere.
    """

    def __init__(self) -> None:
        self.stack: list[list[float]] = []
        self.turn: dict[str, float] = {}
        self.active = False
        """Whether a turn is being timed (the background work between turns is not)."""

    def take(self) -> dict[str, float]:
        """This turn's seconds per piece (and reset)."""
        out, self.turn = self.turn, {}
        return out

    def add(self, piece: str | None, seconds: float) -> None:
        if piece is not None:
            self.turn[piece] = self.turn.get(piece, 0.0) + seconds

    def timed(self, fn: Callable[..., Any], piece: str | None | Callable[..., str | None]) -> Any:
        """``fn`` timed into ``piece`` (a callable: the piece named from the call's args)."""

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            if not self.active:
                return fn(*args, **kwargs)
            clock = _common.CLOCK
            frame = [0.0]
            self.stack.append(frame)
            started = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = clock() - started
                self.stack.pop()
                name = piece(*args, **kwargs) if callable(piece) else piece
                self.add(name, elapsed - frame[0])
                if self.stack:
                    self.stack[-1][0] += elapsed

        return run

    def hooks(self, middleware: Any, piece: str) -> None:
        """Time ``middleware``'s hooks into ``piece`` (the model call they wrap excluded)."""
        cls = type(middleware)
        for name in ("before_agent", "before_model", "after_model", "after_agent"):
            if getattr(cls, name) is not getattr(AgentMiddleware, name):
                setattr(middleware, name, self.timed(getattr(middleware, name), piece))
        if cls.wrap_model_call is not AgentMiddleware.wrap_model_call:
            wrap = self.timed(middleware.wrap_model_call, piece)

            def timed_wrap(request: Any, handler: Callable[[Any], Any]) -> Any:
                return wrap(request, self.timed(handler, None))

            middleware.wrap_model_call = timed_wrap


_READ_OPS = (GetOp, SearchOp, ListNamespacesOp)


def _store_piece(executor: Any, effect: Any) -> str | None:
    if not isinstance(effect, StoreBatch):
        return "gate"  # a foreground cycle's model call, a wait, a hook: the turn plan's work
    reads = all(isinstance(op, _READ_OPS) for op in effect.ops)
    return "store reads" if reads else "store writes"


_INSTRUMENTED: list[Pieces] = []


def instrument_engine(pieces: Pieces) -> None:
    """Time the engine's counters and store batches (class-wide, once per process)."""
    if _INSTRUMENTED:
        return
    _INSTRUMENTED.append(pieces)
    for name in ("count_messages", "message_counts", "count_message", "count_text"):
        if hasattr(TokenCounter, name):  # message_counts: not in every version measured
            setattr(TokenCounter, name, pieces.timed(getattr(TokenCounter, name), "count"))
    Executor.execute = pieces.timed(Executor.execute, _store_piece)  # type: ignore[method-assign]


# -- the floor -------------------------------------------------------------------------------


class FloorState(AgentState[Any]):
    floor: NotRequired[dict[str, int]]


class FloorMiddleware(AgentMiddleware[FloorState, Any]):
    """The least a memory middleware does per model call, in OM's pieces.

    It reads one small state key (messages counted, their tokens), counts only the messages
    it has not counted (``count_tokens_approximately``), decides whether the window is over
    3 000 tokens, writes the key back only when it changed (dropping all but the last 20
    messages past the trigger) and puts a fixed memory text into the system message.
    """

    state_schema = FloorState

    def __init__(self) -> None:
        super().__init__()
        self._memory = SystemMessage(content=[{"type": "text", "text": FLOOR_MEMORY}])

    def read(self, state: Any) -> dict[str, int]:
        return state.get("floor") or {"seen": 0, "tokens": 0}

    def count(self, messages: Sequence[AnyMessage], seen: dict[str, int]) -> int:
        start = min(seen["seen"], len(messages))
        return seen["tokens"] + count_tokens_approximately(messages[start:])

    def gate(self, tokens: int, messages: Sequence[AnyMessage]) -> bool:
        return tokens > FLOOR_TRIGGER and len(messages) > FLOOR_KEEP

    def write(
        self, seen: dict[str, int], messages: Sequence[AnyMessage], tokens: int, due: bool
    ) -> dict[str, Any]:
        if due:
            kept = messages[-FLOOR_KEEP:]
            return {
                "messages": [RemoveMessage(id=m.id) for m in messages[:-FLOOR_KEEP] if m.id],
                "floor": {"seen": len(kept), "tokens": count_tokens_approximately(kept)},
            }
        new = {"seen": len(messages), "tokens": tokens}
        return {} if new == seen else {"floor": new}

    def render(self, request: ModelRequest) -> ModelRequest:
        if request.system_message is None:
            return request.override(system_message=self._memory)
        content = request.system_message.content
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        return request.override(
            system_message=SystemMessage(content=[*blocks, *self._memory.content])
        )

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        messages = request.state["messages"]
        seen = self.read(request.state)
        tokens = self.count(messages, seen)
        update = self.write(seen, messages, tokens, self.gate(tokens, messages))
        response = handler(self.render(request))
        if not update:
            return response
        return ExtendedModelResponse(model_response=response, command=Command(update=update))


# -- the agents ------------------------------------------------------------------------------


@dataclass
class Setup:
    name: str
    agent: Any
    pieces: Pieces
    after_turn: Callable[[], None] = lambda: None
    close: Callable[[], None] = lambda: None
    samples: dict[int, dict[str, float]] = field(default_factory=dict)
    turn_time: dict[int, float] = field(default_factory=dict)

    def turn(self, turn: int) -> None:
        self.pieces.take()
        clock = _common.CLOCK
        self.pieces.active = True
        started = clock()
        try:
            self.agent.invoke(
                {"messages": [HumanMessage(user_text(turn))]},
                {"configurable": {"thread_id": self.name}},
                durability="exit",
            )
        finally:
            self.turn_time[turn] = clock() - started
            self.pieces.active = False
        self.samples[turn] = self.pieces.take()
        self.after_turn()


def build(name: str, pieces: Pieces) -> Setup:
    """The agent of setup ``name``, its hooks and pieces timed into ``pieces``."""
    if name == "floor":
        floor = FloorMiddleware()
        pieces.hooks(floor, "glue")
        for method, piece in (
            ("read", "record read"),
            ("count", "count"),
            ("gate", "gate"),
            ("write", "record write"),
            ("render", "render"),
        ):
            setattr(floor, method, pieces.timed(getattr(floor, method), piece))
        agent = create_agent(
            InstantChatModel(), [], middleware=[floor], checkpointer=LatestCheckpointSaver()
        )
        return Setup(name, agent, pieces)
    if name != "om":
        raise ValueError(f"unknown setup {name!r}")
    # even: reflections of long one-day logs pass retention; stream_by="reply": the reply
    # arrives in one piece, as an instant model's answer does
    observer = memory_model(even=True, stream_by="reply")
    memory = ObservationalMemory(
        checkpointer=LatestCheckpointSaver(), model=observer, background="manual", **OM_OPTIONS
    )
    middleware = ObservationalMemoryMiddleware(memory)
    instrument_engine(pieces)
    pieces.hooks(middleware, "glue")
    for obj, method, piece in (
        (memory, "read_state", "record read"),
        (memory, "step", "gate"),
        (memory, "keep_state", "record write"),
        (middleware, "_done", "record write"),
        (middleware, "_with_memory", "render"),
    ):
        setattr(obj, method, pieces.timed(getattr(obj, method), piece))
    agent = create_agent(
        InstantChatModel(),
        [],
        middleware=[middleware],
        checkpointer=memory.checkpointer,
        store=memory.store,
    )

    def after_turn() -> None:
        memory.run_background()
        observer.reset()  # the testing model records its calls; keep RAM flat

    return Setup(name, agent, pieces, after_turn, memory.close)


# -- the run ---------------------------------------------------------------------------------


def window(point: int) -> int:
    """Turns whose median is "the per-turn time at ``point`` turns": the last min(N/2, 200)."""
    return max(1, min(point // 2, 200))


def run(points: list[int], progress: bool) -> dict[str, Setup]:
    pieces = Pieces()  # one stack: the agents run one after the other on this thread
    setups = [build(name, pieces) for name in SETUPS]
    started = time.perf_counter()
    for turn in range(1, points[-1] + 1):
        shift = turn % len(setups)
        for setup in setups[shift:] + setups[:shift]:
            setup.turn(turn)
        if progress and (turn in points or turn % 1000 == 0):
            print(f"  turn {turn:,} ({time.perf_counter() - started:.0f}s)", flush=True)
    for setup in setups:
        setup.close()
    return {s.name: s for s in setups}


def summary(setup: Setup, point: int) -> dict[str, dict[str, float]]:
    """Per piece and total: median and mean ms over the window before ``point``."""
    turns = range(point - window(point) + 1, point + 1)
    rows = [setup.samples[t] for t in turns]
    out: dict[str, dict[str, float]] = {}
    for piece in (*PIECES, "total"):
        values = [sum(r.values()) if piece == "total" else r.get(piece, 0.0) for r in rows]
        out[piece] = {
            "median_ms": statistics.median(values) * 1000,
            "mean_ms": statistics.fmean(values) * 1000,
        }
    turn = [setup.turn_time[t] for t in turns]
    out["whole turn"] = {
        "median_ms": statistics.median(turn) * 1000,
        "mean_ms": statistics.fmean(turn) * 1000,
    }
    return out


# -- the report ------------------------------------------------------------------------------


def _cell(stats: dict[str, float] | None) -> str:
    if stats is None:
        return "—"
    return f"{stats['median_ms']:.3f} ({stats['mean_ms']:.3f})"


def _ratio(a: dict[str, float] | None, b: dict[str, float] | None) -> str:
    if a is None or b is None or b["median_ms"] <= 0:
        return "—"
    return f"{a['median_ms'] / b['median_ms']:.2f}×"


def report(data: dict[str, Any], before: dict[str, Any] | None) -> list[str]:
    lines: list[str] = []
    for point in data["points"]:
        key = str(point)
        om, floor = data["series"]["om"][key], data["series"]["floor"][key]
        old = (before or {}).get("series", {}).get("om", {}).get(key)
        headers = ["piece"]
        if old is not None:
            headers.append("om before")
        headers += ["om", "floor", "om / floor"]
        rows = []
        for piece in (*PIECES, "total", "whole turn"):
            row = [f"**{piece}**" if piece == "total" else piece]
            if old is not None:
                row.append(_cell(old.get(piece)))
            row += [_cell(om[piece]), _cell(floor[piece]), _ratio(om[piece], floor[piece])]
            rows.append(row)
        lines += [f"### At {point:,} turns (median ms per turn, mean in brackets)", ""]
        lines += table(headers, rows)
        lines.append("")
    last = str(data["points"][-1])
    total = data["series"]["om"][last]["total"]["median_ms"]
    met = "met" if total <= TARGET_MS else "**not met**"
    lines.append(
        f"Target: memory's own work ≤ {TARGET_MS} ms per turn (median) at "
        f"{int(last):,} turns: {total:.3f} ms, {met}."
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="100 and 1 000 turns")
    mode.add_argument("--smoke", action="store_true", help="20 and 40 turns (tests)")
    parser.add_argument("--turns", help="comma-separated measurement points, e.g. 1000,10000")
    parser.add_argument("--wall", action="store_true", help="time wall-clock, not CPU time")
    parser.add_argument("--before", type=Path, help="an earlier run's JSON, shown beside")
    parser.add_argument("--label", default="", help="what the run measured (e.g. a commit)")
    parser.add_argument("--out", type=Path, default=RESULTS / "bookkeeping.md")
    args = parser.parse_args()
    if args.wall:
        _common.CLOCK = time.perf_counter
    if args.turns:
        points = sorted(int(p) for p in args.turns.split(","))
    else:
        points = [20, 40] if args.smoke else [100, 1_000] if args.quick else [1_000, 10_000]
    mode_name = "smoke" if args.smoke else "quick" if args.quick else "full"
    print(f"memory's own work per turn at {', '.join(f'{p:,}' for p in points)} turns")
    print(machine())
    started = time.perf_counter()
    setups = run(points, progress=not args.smoke)
    data: dict[str, Any] = {
        "points": points,
        "pieces": list(PIECES),
        "labels": LABELS,
        "target_ms": TARGET_MS,
        "meta": {
            "mode": mode_name,
            "clock": "wall" if args.wall else "cpu",
            "machine": machine(),
            "label": args.label,
            "seconds": round(time.perf_counter() - started, 1),
        },
        "series": {name: {str(p): summary(s, p) for p in points} for name, s in setups.items()},
    }
    before = json.loads(args.before.read_text(encoding="utf-8")) if args.before else None
    if before is not None:
        data["before"] = {"meta": before["meta"], "series": {"om": before["series"]["om"]}}
    lines = report(data, before)
    print("\n".join(lines))
    flag = "" if mode_name == "full" else f" --{mode_name}"
    header = [
        "# Memory's own work per turn, piece by piece",
        "",
        f"`python benchmarks/bookkeeping.py{flag}`: {machine()}; "
        f"{'wall-clock' if args.wall else 'CPU'} time of the middleware's hooks (the model "
        f"call excluded), split into pieces; ran in {data['meta']['seconds']:.0f}s"
        + (f"; {args.label}" if args.label else "")
        + ".",
        "",
        "Setups: langchain-om `ObservationalMemoryMiddleware` (message_tokens 3 000, "
        "observation_tokens 4 000, default buffering, background work run after each turn "
        "outside the timing) and a floor middleware doing the least a memory middleware can in "
        "the same pieces (count new messages, gate, fixed memory text, one small state key); "
        "instant models, turns interleaved, in-memory checkpointers.",
        "",
    ]
    if before is not None:
        header += [
            f"*om before*: {before['meta'].get('label') or 'an earlier run'} "
            f"({before['meta']['machine']}).",
            "",
        ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
