"""Run an evaluation: ingest each conversation into each system, answer, score, record.

Results go to ``records.jsonl`` in the output folder, one JSON object a line, appended as
they are made: a ``run`` line (the settings), an ``ingest`` line per conversation and system
(memory's calls, tokens, seconds), an ``answer`` line per question and system (prediction,
scores, context tokens). A run started again with the same settings and folder skips every
answer already recorded, so an interrupted run resumes where it stopped (conversations with
answers left are read again; their ``ingest`` line is kept from the first time).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_om.errors import ObservationalMemoryError
from langchain_om.eval.data import Dataset, Question
from langchain_om.eval.scoring import (
    contains,
    exact_match,
    judge_messages,
    locomo_score,
    parse_verdict,
)
from langchain_om.eval.systems import SYSTEMS, Ingested, SystemSettings, ingest, transcript

__all__ = [
    "ANSWER_PROMPT",
    "EvalRunError",
    "RunSettings",
    "answer_messages",
    "read_records",
    "run_eval",
    "sample_questions",
]

RECORDS_FILE = "records.jsonl"

ANSWER_PROMPT = """\
You answer questions about a past conversation, using only the context below: notes about the \
conversation and/or its messages, with their dates.

Answer with a short phrase of a few words, not a sentence, with no explanation. When the \
question asks when, give the date as the context states it. If the context does not hold \
the answer, reply exactly: No information available.

<context>
{context}
</context>"""
"""The one answer prompt every system is asked with (its context differs, nothing else)."""


class EvalRunError(ObservationalMemoryError, ValueError):
    """An evaluation cannot run as asked (the message says what to change)."""


@dataclass(frozen=True)
class RunSettings:
    """One evaluation run."""

    systems: tuple[str, ...]
    answer_model: BaseChatModel
    systems_settings: SystemSettings
    out: Path
    judge_model: BaseChatModel | None = None
    limit: int | None = None
    seed: int = 0
    identity: dict[str, Any] = field(default_factory=dict)
    """What names this run (format, data, models, options): a resumed run must match it."""


def answer_messages(context: str, question: Question) -> list[BaseMessage]:
    """The answer model's prompt: the fixed system prompt with the context, then the question."""
    asked = question.asked_at.astimezone(UTC).strftime("%d %b %Y")
    return [
        SystemMessage(ANSWER_PROMPT.format(context=context or "(empty)")),
        HumanMessage(f"Today is {asked}.\nQuestion: {question.question}"),
    ]


def sample_questions(dataset: Dataset, limit: int | None, seed: int) -> list[Question]:
    """``limit`` questions drawn with ``seed`` (all when ``None``), in file order."""
    questions = dataset.questions
    if limit is None or limit >= len(questions):
        return questions
    chosen = set(random.Random(seed).sample(range(len(questions)), limit))
    return [q for i, q in enumerate(questions) if i in chosen]


# --- records ---------------------------------------------------------------------------------


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of ``path``; a torn last line (the run was killed mid-write) is cut off."""
    if not path.exists():
        return []
    data = path.read_bytes()
    records: list[dict[str, Any]] = []
    good = 0
    for raw in data.splitlines(keepends=True):
        try:
            row = json.loads(raw)
        except json.JSONDecodeError:
            break
        if not raw.endswith(b"\n") or not isinstance(row, dict):
            break
        records.append(row)
        good += len(raw)
    if good != len(data):
        with open(path, "r+b") as handle:
            handle.truncate(good)
    return records


class _Writer:
    def __init__(self, path: Path) -> None:
        self._handle = open(path, "a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()


# --- progress --------------------------------------------------------------------------------


class Progress:
    """A progress line on stderr: answers done, the current step, elapsed time."""

    def __init__(self, total: int, out: TextIO | None = None) -> None:
        self.total = total
        self.done = 0
        self.out = out or sys.stderr
        self.start = time.monotonic()
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self._last_line = -1
        self._printed = self.start

    def show(self, note: str) -> None:
        """Redraw (terminal), or print every 10% of answers and every 30 s (log file)."""
        elapsed = int(time.monotonic() - self.start)
        width = 24
        filled = width * self.done // max(self.total, 1)
        line = (
            f"[{'#' * filled}{'-' * (width - filled)}] {self.done}/{self.total} answers · "
            f"{elapsed // 60}:{elapsed % 60:02d} elapsed · {note}"
        )
        if self.tty:
            self.out.write("\r" + line[:118].ljust(118))
            self.out.flush()
            return
        step = max(1, self.total // 10)
        bucket = self.done // step
        now = time.monotonic()
        if bucket != self._last_line or self.done == self.total or now - self._printed >= 30:
            self._last_line = bucket
            self._printed = now
            print(line, file=self.out, flush=True)

    def finish(self) -> None:
        """End the progress line."""
        if self.tty:
            self.out.write("\n")
            self.out.flush()


# --- the run -----------------------------------------------------------------------------------


def _score(
    question: Question, prediction: str, judge: BaseChatModel | None
) -> dict[str, float | None]:
    scores: dict[str, float | None] = {
        "f1": locomo_score(prediction, question.answer, question.rule),
        "em": exact_match(prediction, question.answer) if not question.abstention else None,
        "contains": contains(prediction, question.answer) if not question.abstention else None,
        "judge": None,
    }
    if judge is not None:
        prompt = judge_messages(
            question.question,
            question.answer,
            prediction,
            question_type=question.category,
            abstention=question.abstention,
        )
        for _ in range(2):  # one retry when the reply is not a verdict
            verdict = parse_verdict(judge.invoke(prompt).text)
            if verdict is not None:
                scores["judge"] = float(verdict)
                break
        else:
            scores["judge_invalid"] = 1.0
    return scores


def _order(systems: Sequence[str]) -> list[str]:
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown or not systems:
        raise EvalRunError(
            f"unknown system(s) {', '.join(unknown) or '(none given)'}: "
            f"choose from {', '.join(SYSTEMS)}"
        )
    return [s for s in SYSTEMS if s in systems]  # om first: window takes its budget


def _check_identity(records: list[dict[str, Any]], identity: dict[str, Any], path: Path) -> bool:
    runs = [r for r in records if r.get("kind") == "run"]
    if not runs:
        return False
    if runs[0].get("identity") != identity:
        raise EvalRunError(
            f"{path} holds a run with other settings; pass a new --out folder (or delete "
            "that one) to start a different run"
        )
    return True


def run_eval(
    dataset: Dataset, settings: RunSettings, *, progress: Progress | None = None
) -> list[dict[str, Any]]:
    """Run (or resume) the evaluation; returns every record of the run.

    Raises:
        EvalRunError: unknown systems, or ``out`` holds a run with other settings.
    """
    systems = _order(settings.systems)
    settings.out.mkdir(parents=True, exist_ok=True)
    path = settings.out / RECORDS_FILE
    records = read_records(path)
    writer = _Writer(path)
    try:
        if not _check_identity(records, settings.identity, path):
            run = {"kind": "run", "identity": settings.identity, "started": _now()}
            writer.write(run)
            records.append(run)
        questions = sample_questions(dataset, settings.limit, settings.seed)
        done = {(r["system"], r["question_id"]) for r in records if r.get("kind") == "answer"}
        ingested = {
            (r["system"], r["conversation"]): r for r in records if r.get("kind") == "ingest"
        }
        show = progress or Progress(len(questions) * len(systems))
        show.done = len(done & {(s, q.id) for s in systems for q in questions})
        by_conv: dict[str, list[Question]] = {}
        for q in questions:
            by_conv.setdefault(q.conversation_id, []).append(q)
        counter = settings.systems_settings.counter
        for conv in dataset.conversations:
            asked = by_conv.get(conv.id, [])
            full_tokens = counter.count_text(_full_text(conv))
            for system in systems:
                todo = [q for q in asked if (system, q.id) not in done]
                if not todo:
                    continue
                show.show(f"{system} reads {conv.id}")
                budget = _budget(system, conv.id, ingested, settings.systems_settings)
                start = time.perf_counter()
                held = ingest(
                    system,
                    conv,
                    settings.systems_settings,
                    budget=budget,
                    progress=_reading(show, system, conv.id),
                )
                seconds = time.perf_counter() - start
                try:
                    key = (system, conv.id)
                    if key not in ingested:
                        rec = _ingest_record(
                            system, conv.id, held, seconds, full_tokens, counter, todo[0]
                        )
                        writer.write(rec)
                        records.append(rec)
                        ingested[key] = rec
                    for q in todo:
                        show.show(f"{system} answers {q.id}")
                        rec = _answer(q, system, held, settings, full_tokens)
                        writer.write(rec)
                        records.append(rec)
                        show.done += 1
                finally:
                    held.close()
        show.show("done")
        show.finish()
    finally:
        writer.close()
    return records


def _reading(show: Progress, system: str, conv_id: str) -> Callable[[int, int], None]:
    def note(done: int, total: int) -> None:
        show.show(f"{system} reads {conv_id} ({done}/{total} turns)")

    return note


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _full_text(conv: Any) -> str:
    return transcript(conv.turns)


def _budget(
    system: str, conv_id: str, ingested: dict[tuple[str, str], Any], shared: SystemSettings
) -> int | None:
    if system != "window":
        return None
    om = ingested.get(("om", conv_id))
    if om is not None:
        return int(om["context_tokens"])
    return shared.message_tokens + shared.observation_tokens


def _ingest_record(
    system: str,
    conv_id: str,
    held: Ingested,
    seconds: float,
    full_tokens: int,
    counter: Any,
    first: Question,
) -> dict[str, Any]:
    probe = held.render(first.asked_at)
    return {
        "kind": "ingest",
        "system": system,
        "conversation": conv_id,
        "memory_calls": held.meter.calls,
        "memory_input_tokens": held.meter.input_tokens,
        "memory_output_tokens": held.meter.output_tokens,
        "memory_seconds": round(held.meter.seconds, 3),
        "seconds": round(seconds, 3),
        "context_tokens": counter.count_text(probe),
        "full_tokens": full_tokens,
        **held.details,
    }


def _answer(
    q: Question, system: str, held: Ingested, settings: RunSettings, full_tokens: int
) -> dict[str, Any]:
    context = held.render(q.asked_at)
    start = time.perf_counter()
    reply = settings.answer_model.invoke(answer_messages(context, q))
    seconds = time.perf_counter() - start
    prediction = reply.text.strip()
    return {
        "kind": "answer",
        "system": system,
        "conversation": q.conversation_id,
        "question_id": q.id,
        "category": q.category,
        "rule": q.rule,
        "abstention": q.abstention,
        "question": q.question,
        "answer": q.answer,
        "prediction": prediction,
        "scores": _score(q, prediction, settings.judge_model),
        "context_tokens": settings.systems_settings.counter.count_text(context),
        "full_tokens": full_tokens,
        "answer_seconds": round(seconds, 3),
    }
