"""What memory costs per turn, in checkpoints, on disk and in RAM, beside the alternatives.

Four ``create_agent`` agents hold the same synthetic conversation (user turns of 20-60 words,
answers of 40-100 words; every model answers instantly, so model latency is excluded):

* ``plain``: no memory; the whole history stays in state.
* ``om``: ``ObservationalMemoryMiddleware`` (message_tokens 3 000, observation_tokens 4 000,
  default buffering); the Observer and Reflector are
  ``langchain_om.testing.memory_model(even=True)``.
* ``summarization``: LangChain's ``SummarizationMiddleware`` (trigger 3 000 tokens, keep 20
  messages) with an instant scripted summarizer.
* ``langmem``: LangMem's ``SummarizationNode`` (max_tokens_before_summary 3 000, max_tokens
  4 000, ``output_messages_key="messages"`` so the summary replaces the history as the others
  do) called from a ``before_model`` middleware; skipped when ``langmem`` is not installed.

**Per-turn time** (one process, turns interleaved round-robin across the setups so that machine
noise hits them alike; CPU time of the process, ``--wall`` for wall-clock):

* *bookkeeping*: the time spent in the memory middleware's own hooks each turn
  (``before_model``, ``wrap_model_call`` minus the model call it wraps, ``after_agent``);
  0 for the plain agent;
* *turn*: the whole ``agent.invoke`` of a turn (graph, checkpoint load and save, model call).

Background work is not turn time: OM runs with ``background="manual"`` and
``memory.run_background()`` is called after every turn, outside the timed region, so the
Observer/Reflector buffering a real agent does on a worker thread still happens, in order, and
is reported on its own. Checkpointers are in memory and keep only the latest checkpoint
(``durability="exit"``: one checkpoint per turn); the plain agent's state at turn N is exactly
the N-turn history, so it is fast-forwarded to each measurement window in one untimed call
instead of replaying thousands of ever slower turns.

**Storage** (one subprocess per setup, so each has its own peak RSS): the same conversation on
SQLite (``ObservationalMemory.from_sqlite`` for OM, ``SqliteSaver`` for the others, WAL
checkpointed before measuring), file size at each point, and the process's peak RSS. The
serialized checkpoint size (latest checkpoint's channel values, ``serde.dumps_typed``) comes
from the timing run.

Usage::

    python benchmarks/turns.py            # 100, 1 000 and 10 000 turns (several minutes)
    python benchmarks/turns.py --quick    # 100 and 1 000 turns (under a minute)
    python benchmarks/turns.py --smoke    # 20 and 40 turns (seconds; for the tests)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired

import _common
from _common import (
    RESULTS,
    HookTimer,
    InstantChatModel,
    LatestCheckpointSaver,
    history,
    machine,
    peak_rss_mb,
    size,
    table,
    time_middleware,
    user_text,
)
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState, SummarizationMiddleware
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langchain_om import ObservationalMemory, ObservationalMemoryMiddleware
from langchain_om.testing import memory_model

SETUPS = ("plain", "om", "summarization", "langmem")
LABELS = {
    "plain": "create_agent, no memory",
    "om": "langchain-om middleware",
    "summarization": "SummarizationMiddleware",
    "langmem": "LangMem SummarizationNode",
}
OM_OPTIONS: dict[str, Any] = {
    "observation": {"message_tokens": 3_000},
    "reflection": {"observation_tokens": 4_000},
}
SUMMARY_TEXT = (
    "## SESSION INTENT\nThe user is chatting about many everyday topics.\n\n## SUMMARY\n"
    + "The user mentioned projects, meetings, travel, the garden and the weather; "
    "the assistant answered each message. " * 6
)
PLAIN_SQLITE_CAP = 1_000
"""The plain agent's SQLite file holds a full copy of the history per checkpoint (N² bytes):
beyond this many turns its size is extrapolated, not measured."""
LANGMEM_SUMMARY = ("langmem.short_term.summarization", "RunningSummary")
RSS_TAIL = 20
"""Turns run after fast-forwarding the plain agent for its peak-RSS figure."""

BOOKKEEPING_TARGET_MS = 5.0
GROWTH_TARGET = 1.5


def langmem_status() -> str | None:
    """``None`` when LangMem imports, else why it is not available."""
    try:
        from langmem.short_term import SummarizationNode  # noqa: F401
    except Exception as exc:  # ImportError or a broken install
        return f"{type(exc).__name__}: {exc}".splitlines()[0][:120]
    return None


def langmem_middleware() -> AgentMiddleware[Any, Any]:
    """LangMem's ``SummarizationNode`` as a ``before_model`` hook of ``create_agent``."""
    from langmem.short_term import SummarizationNode

    node = SummarizationNode(
        model=InstantChatModel(reply=SUMMARY_TEXT),
        max_tokens=4_000,
        max_tokens_before_summary=3_000,
        max_summary_tokens=512,
        output_messages_key="messages",
    )

    class LangMemState(AgentState[Any]):
        context: NotRequired[dict[str, Any]]

    class LangMemSummarization(AgentMiddleware[LangMemState, Any]):
        state_schema = LangMemState

        def before_model(self, state: LangMemState, runtime: Any) -> dict[str, Any] | None:
            update: dict[str, Any] = node.invoke(
                {"messages": state["messages"], "context": state.get("context", {})}
            )
            return update

    return LangMemSummarization()


@dataclass
class Setup:
    """One agent under test and what to do around its turns."""

    name: str
    agent: Any
    saver: BaseCheckpointSaver[Any]
    timer: HookTimer
    after_turn: Callable[[], None] = lambda: None
    close: Callable[[], None] = lambda: None
    thread: str = "t"
    grows: bool = False
    """Its state holds the whole history (fast-forwarded between measurement windows)."""
    sqlite: sqlite3.Connection | None = None

    @property
    def config(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.thread}}

    def turn(self, turn: int) -> None:
        self.agent.invoke(
            {"messages": [HumanMessage(user_text(turn))]}, self.config, durability="exit"
        )

    def fast_forward(self, turns: int) -> None:
        """Start a new thread whose state is the ``turns``-turn history (plain agent only)."""
        old, self.thread = self.thread, f"t{turns}"
        self.saver.delete_thread(old)
        if turns:
            seed = history(turns - 1) + [HumanMessage(user_text(turns))]
            self.agent.invoke({"messages": seed}, self.config, durability="exit")

    def checkpoint(self) -> tuple[int, int]:
        """(serialized bytes of the latest checkpoint's channel values, messages in state)."""
        saved = self.saver.get_tuple(self.config)
        if saved is None:
            return 0, 0
        values = saved.checkpoint["channel_values"]
        _, blob = self.saver.serde.dumps_typed(values)
        return len(blob), len(values.get("messages", []))

    def file_bytes(self) -> int:
        """Size of the SQLite file after checkpointing its WAL into it."""
        assert self.sqlite is not None
        self.sqlite.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return os.path.getsize(self.sqlite.execute("PRAGMA database_list").fetchone()[2])


def build(name: str, sqlite_path: str | None = None) -> Setup:
    """Build setup ``name`` on in-memory storage, or on the SQLite file ``sqlite_path``."""
    timer = HookTimer()
    actor = InstantChatModel()
    conn: sqlite3.Connection | None = None
    if name == "om":
        options: dict[str, Any] = {
            "model": memory_model(even=True),  # reflections of long one-day logs pass retention
            "background": "manual",
            **OM_OPTIONS,
        }
        observer = options["model"]
        if sqlite_path:
            memory = ObservationalMemory.from_sqlite(sqlite_path, **options)
            conn = memory.checkpointer.conn  # type: ignore[attr-defined]
        else:
            memory = ObservationalMemory(checkpointer=LatestCheckpointSaver(), **options)
        middleware = time_middleware(ObservationalMemoryMiddleware(memory), timer)
        agent = create_agent(
            actor,
            [],
            middleware=[middleware],
            checkpointer=memory.checkpointer,
            store=memory.store,
        )

        def after_turn() -> None:
            memory.run_background()
            observer.reset()  # the testing model records its calls; keep RAM flat

        return Setup(name, agent, memory.checkpointer, timer, after_turn, memory.close, sqlite=conn)
    saver: BaseCheckpointSaver[Any]
    serde = None
    if name == "langmem":  # its running summary is a dataclass: allow it by name
        serde = JsonPlusSerializer(allowed_msgpack_modules=[LANGMEM_SUMMARY])
    if sqlite_path:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(sqlite_path, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        saver = SqliteSaver(conn, serde=serde)
        saver.setup()
    else:
        saver = LatestCheckpointSaver(serde=serde)
    middleware_list: list[Any] = []
    if name == "summarization":
        summarizer = InstantChatModel(reply=SUMMARY_TEXT)
        middleware_list = [
            time_middleware(
                SummarizationMiddleware(
                    model=summarizer, trigger=("tokens", 3_000), keep=("messages", 20)
                ),
                timer,
            )
        ]
    elif name == "langmem":
        middleware_list = [time_middleware(langmem_middleware(), timer)]
    elif name != "plain":
        raise ValueError(f"unknown setup {name!r}")
    agent = create_agent(actor, [], middleware=middleware_list, checkpointer=saver)
    close = conn.close if conn is not None else (lambda: None)
    return Setup(name, agent, saver, timer, close=close, grows=name == "plain", sqlite=conn)


# -- the timing run --------------------------------------------------------------------------


def window(point: int) -> int:
    """Turns whose median is "the per-turn time at ``point`` turns": the last min(N/2, 100)."""
    return max(1, min(point // 2, 100))


@dataclass
class Series:
    """Per-turn samples of one setup (turn number -> seconds)."""

    turn: dict[int, float] = field(default_factory=dict)
    hooks: dict[int, float] = field(default_factory=dict)
    background: dict[int, float] = field(default_factory=dict)
    checkpoint: dict[int, tuple[int, int]] = field(default_factory=dict)


def active(setup: Setup, turn: int, points: list[int]) -> bool:
    if not setup.grows:
        return True
    return turn <= points[0] or any(p - window(p) < turn <= p for p in points)


def sampled(turn: int, points: list[int]) -> bool:
    """Whether to measure the checkpoint after ``turn``: about 20 times per window, and at N."""
    return any(
        p - window(p) < turn <= p and (p - turn) % max(1, window(p) // 20) == 0 for p in points
    )


def checkpoint_at(samples: dict[int, tuple[int, int]], point: int) -> tuple[int, int, int]:
    """(median bytes, max bytes) over the window's samples, and messages in state at ``point``."""
    sizes = [samples[t][0] for t in range(point - window(point) + 1, point + 1) if t in samples]
    return int(statistics.median(sizes)), max(sizes), samples[point][1]


def run_timing(setups: list[Setup], points: list[int], progress: bool) -> dict[str, Series]:
    series = {s.name: Series() for s in setups}
    clock = _common.CLOCK
    started = time.perf_counter()
    last_window = points[-1] - window(points[-1]) + 1
    for turn in range(1, points[-1] + 1):
        if turn == last_window:  # the hook split covers the last window only
            for setup in setups:
                setup.timer.by_hook.clear()
        shift = turn % len(setups)
        for setup in setups[shift:] + setups[:shift]:
            if not active(setup, turn, points):
                continue
            if setup.grows and turn > 1 and not active(setup, turn - 1, points):
                setup.fast_forward(turn - 1)
            setup.timer.take()
            t0 = clock()
            setup.turn(turn)
            elapsed = clock() - t0
            data = series[setup.name]
            data.turn[turn] = elapsed
            data.hooks[turn] = setup.timer.take()
            t0 = clock()
            setup.after_turn()
            data.background[turn] = clock() - t0
        if sampled(turn, points):
            for setup in setups:
                if active(setup, turn, points):
                    series[setup.name].checkpoint[turn] = setup.checkpoint()
        if progress and (turn in points or turn % 1000 == 0):
            print(f"  turn {turn:,} ({time.perf_counter() - started:.0f}s)", flush=True)
    return series


def at(samples: dict[int, float], point: int, how: str = "median") -> float | None:
    values = [samples[t] for t in range(point - window(point) + 1, point + 1) if t in samples]
    if not values:
        return None
    if how == "median":
        return statistics.median(values)
    if how == "p95":
        return sorted(values)[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return max(values) if how == "max" else statistics.fmean(values)


def bins(samples: dict[int, float], last: int, count: int = 48) -> list[tuple[float, float]]:
    """Median ms per log-spaced bin of turns, for the plot: [(turn, ms), ...].

    Turn 1 is left out: it loads the tokenizer and the graph's code paths.
    """
    edges = sorted({round(math.exp(math.log(last) * i / count)) for i in range(count + 1)})
    out = []
    for low, high in zip([0, *edges], edges, strict=False):
        values = [samples[t] for t in range(max(low + 1, 2), high + 1) if t in samples]
        if values:
            out.append((math.sqrt(max(low, 1) * high), statistics.median(values) * 1000))
    return out


# -- storage and RSS, one subprocess per setup -----------------------------------------------


def child(name: str, points: list[int], out: Path) -> None:
    """Run ``name`` on SQLite, record file sizes at ``points`` and the peak RSS."""
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.db"
        setup = build(name, str(db))
        rss_start = peak_rss_mb()
        started = time.perf_counter()
        sizes: dict[int, int] = {}
        last = min(points[-1], PLAIN_SQLITE_CAP) if setup.grows else points[-1]
        for turn in range(1, last + 1):
            setup.turn(turn)
            setup.after_turn()
            if turn in points:
                sizes[turn] = setup.file_bytes()
        ran = last
        if setup.grows and points[-1] > last:  # fast-forward for the RSS of a long run
            setup.fast_forward(points[-1] - RSS_TAIL)
            for turn in range(points[-1] - RSS_TAIL + 1, points[-1] + 1):
                setup.turn(turn)
            ran = points[-1]
        seconds = time.perf_counter() - started
        setup.close()
    result = {
        "name": name,
        "sizes": sizes,
        "turns": ran,
        "fast_forwarded": ran != last,
        "rss_start_mb": rss_start,
        "rss_peak_mb": peak_rss_mb(),
        "seconds": seconds,
    }
    out.write_text(json.dumps(result), encoding="utf-8")


def run_children(names: list[str], points: list[int], wall: bool) -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory() as folder:

        def one(name: str) -> dict[str, Any]:
            out = Path(folder) / f"{name}.json"
            cmd = [sys.executable, __file__, "--child", name, "--points"]
            cmd += [",".join(map(str, points)), "--child-out", str(out)]
            subprocess.run(cmd, check=True)
            data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
            data["sizes"] = {int(k): v for k, v in data["sizes"].items()}
            return data

        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(zip(names, pool.map(one, names), strict=True))


# -- report ----------------------------------------------------------------------------------


def ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:.2f}"


def ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None or a <= 0 else f"{b / a:.2f}×"


def report(
    series: dict[str, Series],
    children: dict[str, dict[str, Any]],
    points: list[int],
    names: list[str],
    missing: dict[str, str],
    meta: dict[str, Any],
    splits: dict[str, dict[str, float]],
) -> tuple[list[str], dict[str, Any]]:
    lo, hi = (points[-2], points[-1]) if len(points) > 1 else (points[0], points[0])
    heads = [f"{p:,}" for p in points]
    lines: list[str] = []

    def rows_for(kind: str) -> list[list[str]]:
        rows = []
        for name in names:
            if name in missing:
                rows.append([LABELS[name]] + ["n/a"] * (len(points) + 3))
                continue
            samples = getattr(series[name], kind)
            values = [at(samples, p) for p in points]
            if kind == "hooks" and name == "plain":
                rows.append([LABELS[name]] + ["0"] * len(points) + ["—"] * 3)
                continue
            rows.append(
                [LABELS[name]]
                + [ms(v) for v in values]
                + [ratio(at(samples, lo), at(samples, hi))]
                + [ms(at(samples, hi, "p95")), ms(at(samples, hi, "max"))]
            )
        return rows

    growth = f"growth {lo:,}→{hi:,}"
    spread = [f"p95 at {hi:,}", f"max at {hi:,}"]
    lines += ["### Memory bookkeeping per turn (median ms in the middleware's hooks)", ""]
    lines += table(["setup", *heads, growth, *spread], rows_for("hooks"))
    split_lines = []
    for name in names:
        total = sum(splits.get(name, {}).values())
        if total > 0:
            parts = sorted(splits[name].items(), key=lambda kv: -kv[1])
            shares = ", ".join(f"`{hook}` {100 * sec / total:.0f}%" for hook, sec in parts)
            split_lines.append(f"- {LABELS[name]}: {shares}")
    if split_lines:
        lines += [
            "",
            f"Where the bookkeeping goes (share of hook time, last {window(hi)} turns):",
            "",
        ]
        lines += split_lines
    lines += ["", "### Whole turn (median ms per `agent.invoke`, model answers instantly)", ""]
    lines += table(["setup", *heads, growth, *spread], rows_for("turn"))
    if "om" in series:
        om = series["om"]
        lines += [
            "",
            f"OM's first turn: {ms(om.hooks[1])} ms of bookkeeping (it loads the tokenizer); "
            "not in any median.",
        ]
        bg = [at(om.background, p, "mean") for p in points]
        lines += [
            "",
            "OM background work (Observer/Reflector buffering and activation prep, run after "
            "each turn outside the timed region), mean ms per turn: "
            + ", ".join(f"{ms(v)} at {p:,}" for v, p in zip(bg, points, strict=True))
            + ".",
        ]
    delta_rows = []
    for name in names:
        if name in missing or name == "plain" or "plain" not in series:
            continue
        row = [LABELS[name]]
        for p in points:
            a, b = at(series[name].turn, p), at(series["plain"].turn, p)
            row.append("—" if a is None or b is None else f"{(a - b) * 1000:+.2f}")
        delta_rows.append(row)
    if delta_rows:
        lines += ["", "### Turn time minus the plain agent's (median ms, same turns)", ""]
        lines += table(["setup", *heads], delta_rows)

    lines += [
        "",
        "### Checkpoint: serialized size of the latest checkpoint, median / max over the window",
        "",
    ]
    rows, counts = [], []
    for name in names:
        if name in missing:
            rows.append([LABELS[name]] + ["n/a"] * (len(points) + 1))
            counts.append([LABELS[name]] + ["n/a"] * len(points))
            continue
        cps = [checkpoint_at(series[name].checkpoint, p) for p in points]
        cells = [f"{size(med)} / {size(top)}" for med, top, _ in cps]
        rows.append([LABELS[name], *cells, ratio(cps[-2 if len(cps) > 1 else 0][0], cps[-1][0])])
        counts.append([LABELS[name], *(f"{n:,}" for _, _, n in cps)])
    lines += table(["setup", *heads, f"growth {lo:,}→{hi:,} (median)"], rows)
    lines += ["", "Messages in state after N turns:", ""]
    lines += table(["setup", *heads], counts)

    rows = []
    for name in names if children else []:
        if name in missing:
            rows.append([LABELS[name]] + ["n/a"] * (len(points) + 2))
            continue
        c = children[name]
        cells = []
        for p in points:
            if p in c["sizes"]:
                cells.append(size(c["sizes"][p]))
            elif not c["sizes"]:
                cells.append("—")
            else:  # plain agent beyond the cap: quadratic extrapolation
                base = max(c["sizes"])
                cells.append(f"≈{size(c['sizes'][base] * (p / base) ** 2)} (est.)")
        note = " (fast-forwarded)" if c["fast_forwarded"] else ""
        rows.append(
            [
                LABELS[name],
                *cells,
                f"{c['rss_peak_mb']:,.0f} MB{note}",
                f"+{c['rss_peak_mb'] - c['rss_start_mb']:,.0f} MB",
            ]
        )
    if rows:
        lines += ["", "### SQLite file after N turns, and peak RSS of the run", ""]
        lines += table(["setup", *heads, f"peak RSS, {hi:,} turns", "over start"], rows)

    # targets
    targets: dict[str, Any] = {}
    out_lines = ["", "### Targets", ""]
    if "om" in series:
        book = at(series["om"].hooks, hi)
        book_lo = at(series["om"].hooks, lo)
        grow = None if not book or not book_lo else book / book_lo
        met = book is not None and book * 1000 <= BOOKKEEPING_TARGET_MS
        targets["bookkeeping_ms"] = None if book is None else book * 1000
        targets["bookkeeping_growth"] = grow
        out_lines.append(
            f"- Memory bookkeeping ≤ {BOOKKEEPING_TARGET_MS:g} ms median per turn at {hi:,} "
            f"turns: **{'met' if met else 'not met'}** ({ms(book)} ms)"
        )
        grow_met = grow is not None and grow <= GROWTH_TARGET
        out_lines.append(
            f"- Bookkeeping growth ≤ {GROWTH_TARGET}× from {lo:,} to {hi:,} turns: "
            f"**{'met' if grow_met else 'not met'}** ({ratio(book_lo, book)})"
        )
        om_lo = checkpoint_at(series["om"].checkpoint, lo)[0]
        om_hi = checkpoint_at(series["om"].checkpoint, hi)[0]
        flat = om_hi <= 1.5 * om_lo
        plain_note = ""
        if "plain" in series:
            p_lo = checkpoint_at(series["plain"].checkpoint, lo)[0]
            p_hi = checkpoint_at(series["plain"].checkpoint, hi)[0]
            plain_note = f"; plain agent {ratio(p_lo, p_hi)} for {hi / lo:g}× the turns"
            flat = flat and p_hi / p_lo >= 0.8 * hi / lo
        out_lines.append(
            f"- Checkpoint size flat in turns while the plain agent's grows linearly: "
            f"**{'met' if flat else 'not met'}** (OM median {ratio(om_lo, om_hi)} from "
            f"{lo:,} to {hi:,} turns{plain_note})"
        )
        targets["checkpoint_flat"] = flat
    out_lines.append(
        "- Cached counting ≥ 20× faster than cold: see `benchmarks/tokens.py` (tokens.md)."
    )
    lines += out_lines
    if missing:
        lines += ["", *(f"- {LABELS[n]}: not available ({why})" for n, why in missing.items())]

    data = {
        "meta": meta,
        "points": points,
        "labels": {n: LABELS[n] for n in names},
        "missing": missing,
        "targets": targets,
        "series": {
            name: {
                "turn_ms": bins(series[name].turn, points[-1]),
                "hooks_ms": bins(series[name].hooks, points[-1]),
                "at": {
                    str(p): {
                        "turn_ms": None if (v := at(series[name].turn, p)) is None else v * 1000,
                        "hooks_ms": None if (h := at(series[name].hooks, p)) is None else h * 1000,
                        "checkpoint_bytes": checkpoint_at(series[name].checkpoint, p)[0],
                        "checkpoint_max_bytes": checkpoint_at(series[name].checkpoint, p)[1],
                        "messages": series[name].checkpoint[p][1],
                        "sqlite_bytes": children.get(name, {}).get("sizes", {}).get(p),
                    }
                    for p in points
                },
                "rss_peak_mb": children.get(name, {}).get("rss_peak_mb"),
            }
            for name in series
        },
    }
    return lines, data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="100 and 1 000 turns")
    mode.add_argument("--smoke", action="store_true", help="20 and 40 turns (tests)")
    parser.add_argument("--turns", help="comma-separated measurement points, e.g. 100,1000")
    parser.add_argument("--setups", default=",".join(SETUPS), help="comma-separated setups")
    parser.add_argument("--wall", action="store_true", help="time wall-clock, not CPU time")
    parser.add_argument("--no-storage", action="store_true", help="skip the SQLite/RSS runs")
    parser.add_argument("--out", type=Path, default=RESULTS / "turns.md")
    parser.add_argument("--json", type=Path, default=None, help="also write the data here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--points", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, [int(p) for p in args.points.split(",")], args.child_out)
        return
    if args.wall:
        _common.CLOCK = time.perf_counter
    if args.turns:
        points = sorted(int(p) for p in args.turns.split(","))
    else:
        points = [20, 40] if args.smoke else [100, 1_000] if args.quick else [100, 1_000, 10_000]
    mode_name = "smoke" if args.smoke else "quick" if args.quick else "full"
    names = [n for n in args.setups.split(",") if n]
    missing: dict[str, str] = {}
    if "langmem" in names and (why := langmem_status()):
        missing["langmem"] = why
    run_names = [n for n in names if n not in missing]

    print(f"per-turn overhead at {', '.join(f'{p:,}' for p in points)} turns ({mode_name}); ")
    print(machine())
    started = time.perf_counter()
    setups = [build(n) for n in run_names]
    series = run_timing(setups, points, progress=not args.smoke)
    splits = {s.name: dict(s.timer.by_hook) for s in setups}
    for setup in setups:
        setup.close()
    timing_s = time.perf_counter() - started
    children: dict[str, dict[str, Any]] = {}
    if not args.no_storage:
        print("storage and peak RSS (one subprocess per setup, SQLite)", flush=True)
        children = run_children(run_names, points, args.wall)
    meta = {
        "mode": mode_name,
        "clock": "wall" if args.wall else "cpu",
        "machine": machine(),
        "timing_seconds": round(timing_s, 1),
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    lines, data = report(series, children, points, names, missing, meta, splits)
    print("\n".join(lines))
    header = [
        "# Per-turn overhead, checkpoint and storage growth, peak RSS",
        "",
        f"`python benchmarks/turns.py{'' if mode_name == 'full' else ' --' + mode_name}` "
        f"({mode_name}): {machine()}; {'wall-clock' if args.wall else 'CPU'} time; medians "
        "over the last min(N/2, 100) turns before each point; ran in "
        f"{meta['total_seconds']:.0f}s.",
        "",
        "Setups: plain `create_agent` (no memory); langchain-om `ObservationalMemoryMiddleware` "
        "(message_tokens 3 000, observation_tokens 4 000, `memory_model(even=True)` "
        "Observer/Reflector, "
        "background work run after each turn outside the timing); `SummarizationMiddleware` "
        "(trigger 3 000 tokens, keep 20 messages); LangMem `SummarizationNode` "
        '(3 000 tokens before summary, max 4 000, `output_messages_key="messages"`) in a '
        "`before_model` middleware. Every model answers instantly. In-memory checkpointers "
        'keep the latest checkpoint, `durability="exit"`. The plain agent is fast-forwarded '
        "to each window (its state is exactly the N-turn history).",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
