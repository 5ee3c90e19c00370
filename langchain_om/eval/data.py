"""Evaluation data: conversations with dated turns and the questions asked about them.

Three file formats load into one shape (:class:`Dataset` of :class:`Conversation`):

- ``locomo``: LoCoMo's JSON list of samples (speaker names, ``session_N`` turn lists with a
  ``session_N_date_time``, ``qa`` items with a numeric ``category``);
- ``longmemeval``: LongMemEval's JSON list of questions, each with its own haystack of dated
  sessions (every question is a conversation of its own);
- ``jsonl``: this package's format for application transcripts with questions, described in
  :mod:`langchain_om.eval`.

Every turn gets a timezone-aware timestamp: its own (``jsonl``) or its session's date plus one
second per turn (the benchmark files date sessions, not turns), so turns keep their order and
their session's minute.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from langchain_om._storage.jsonl import json_objects
from langchain_om.errors import ObservationalMemoryError

__all__ = [
    "Conversation",
    "Dataset",
    "EvalDataError",
    "FORMATS",
    "LOCOMO_CATEGORIES",
    "Question",
    "Session",
    "Turn",
    "load_dataset",
    "load_jsonl",
    "load_locomo",
    "load_longmemeval",
]

FORMATS = ("locomo", "longmemeval", "jsonl")

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo's numeric question categories and their names (the scoring rule follows them)."""

_RULE_BY_NAME = {name: number for number, name in LOCOMO_CATEGORIES.items()}


class EvalDataError(ObservationalMemoryError, ValueError):
    """An evaluation file is not in the format it was loaded as (the message says where)."""


@dataclass(frozen=True)
class Turn:
    """One message of a conversation."""

    id: str
    role: Literal["user", "assistant"]
    text: str
    timestamp: datetime
    speaker: str | None = None
    """The speaker's name when the format has named speakers (LoCoMo), else ``None``."""

    @property
    def label(self) -> str:
        """Who speaks: the name, else ``User``/``Assistant``."""
        return self.speaker or self.role.capitalize()

    @property
    def content(self) -> str:
        """The message content memory and the agents see (named speakers prefix their name)."""
        return f"{self.speaker}: {self.text}" if self.speaker else self.text


@dataclass(frozen=True)
class Session:
    """Turns that belong together (one chat session), oldest first."""

    id: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    """A question about one conversation, with its reference answer."""

    id: str
    conversation_id: str
    question: str
    answer: str
    category: str
    """Reported category (LoCoMo's name, LongMemEval's ``question_type``, or the file's)."""
    asked_at: datetime
    abstention: bool = False
    """The conversation does not hold the answer: the right reply says so."""
    rule: int = 4
    """LoCoMo scoring rule: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial."""


@dataclass(frozen=True)
class Conversation:
    """A conversation and the questions asked about it."""

    id: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    @property
    def turns(self) -> list[Turn]:
        """Every turn, oldest first."""
        return [t for s in self.sessions for t in s.turns]


@dataclass(frozen=True)
class Dataset:
    """Conversations loaded from one file."""

    format: str
    conversations: tuple[Conversation, ...]

    @property
    def questions(self) -> list[Question]:
        """Every question, in file order."""
        return [q for c in self.conversations for q in c.questions]


# --- helpers ---------------------------------------------------------------------------------


def _read_json(path: str | Path) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as exc:
        raise EvalDataError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


def _json_list(path: str | Path, shape: str) -> Iterator[tuple[int, str, Any]]:
    """The items of a JSON-list file with their index and where they stand (``path[3]``).

    Raises:
        EvalDataError: the file is not a JSON list (``shape`` says what it should be).
    """
    data = _read_json(path)
    if not isinstance(data, list):
        raise EvalDataError(f"{path}: {shape}")
    for number, item in enumerate(data):
        yield number, f"{path}[{number}]", item


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _spread(start: datetime, count: int) -> list[datetime]:
    return [start + timedelta(seconds=i) for i in range(count)]


# --- LoCoMo ----------------------------------------------------------------------------------

_LOCOMO_DATE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        zip(
            "jan feb mar apr may jun jul aug sep oct nov dec".split(),
            (
                "january february march april may june july august september october "
                "november december"
            ).split(),
            strict=True,
        )
    )
    for name in names
}


def parse_locomo_date(value: str, where: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime."""
    match = _LOCOMO_DATE.match(value)
    month = _MONTHS.get(match.group(5).lower()) if match else None
    if match is None or month is None:
        raise EvalDataError(
            f"{where}: expected a date like '1:56 pm on 8 May, 2023', got {value!r}"
        )
    hour, minute = int(match.group(1)) % 12, int(match.group(2))
    if match.group(3).lower().startswith("p"):
        hour += 12
    day, year = int(match.group(4)), int(match.group(6))
    try:
        return datetime(year, month, day, hour, minute, tzinfo=UTC)
    except ValueError as exc:
        raise EvalDataError(f"{where}: bad date {value!r} ({exc})") from None


def _locomo_text(turn: Mapping[str, Any]) -> str:
    text = _text(turn.get("text")).strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shares a photo: {caption}]".strip()
    return text


def _locomo_sessions(sample_id: str, conv: Mapping[str, Any], where: str) -> list[Session]:
    speaker_a = conv.get("speaker_a")
    if not isinstance(speaker_a, str):
        raise EvalDataError(f"{where}: conversation.speaker_a is missing")
    numbers = sorted(
        int(m.group(1))
        for key in conv
        if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(conv[key], list)
    )
    sessions: list[Session] = []
    for number in numbers:
        key = f"session_{number}"
        date_key = f"{key}_date_time"
        if date_key not in conv:
            raise EvalDataError(f"{where}: {key} has no {date_key}")
        start = parse_locomo_date(_text(conv[date_key]), f"{where}.{date_key}")
        rows = [r for r in conv[key] if isinstance(r, Mapping)]
        turns = []
        for index, (row, moment) in enumerate(zip(rows, _spread(start, len(rows)), strict=True)):
            speaker = _text(row.get("speaker")) or None
            if speaker is None:
                raise EvalDataError(f"{where}.{key}[{index}]: the turn has no speaker")
            role: Literal["user", "assistant"] = "user" if speaker == speaker_a else "assistant"
            ident = _text(row.get("dia_id")) or f"{key}:{index}"
            turns.append(
                Turn(
                    id=f"{sample_id}:{ident}",
                    role=role,
                    text=_locomo_text(row),
                    timestamp=moment,
                    speaker=speaker,
                )
            )
        sessions.append(Session(id=key, turns=tuple(turns)))
    if not sessions:
        raise EvalDataError(f"{where}: the conversation has no session_N turn lists")
    return sessions


def load_locomo(path: str | Path) -> Dataset:
    """Load a LoCoMo file: a JSON list of ``{sample_id, conversation, qa}`` samples.

    Category 5 (adversarial) questions have no ``answer`` (the conversation does not hold
    it): they become abstention questions.

    Raises:
        EvalDataError: the file is not in LoCoMo's shape (the message says where).
    """
    conversations: list[Conversation] = []
    for number, where, sample in _json_list(path, "a LoCoMo file is a JSON list of samples"):
        if not isinstance(sample, Mapping) or not isinstance(sample.get("conversation"), Mapping):
            raise EvalDataError(f"{where}: expected {{sample_id, conversation, qa}}")
        sample_id = _text(sample.get("sample_id")) or f"sample-{number}"
        sessions = _locomo_sessions(sample_id, sample["conversation"], f"{where}.conversation")
        asked_at = sessions[-1].turns[-1].timestamp if sessions[-1].turns else datetime.now(UTC)
        questions: list[Question] = []
        for index, qa in enumerate(sample.get("qa") or []):
            qwhere = f"{where}.qa[{index}]"
            try:
                rule = int(qa["category"])
            except (KeyError, TypeError, ValueError):
                raise EvalDataError(f"{qwhere}: category must be a number 1-5") from None
            if rule not in LOCOMO_CATEGORIES:
                raise EvalDataError(f"{qwhere}: category must be 1-5, not {rule}")
            if rule != 5 and "answer" not in qa:
                raise EvalDataError(f"{qwhere}: only category 5 questions may lack an answer")
            questions.append(
                Question(
                    id=f"{sample_id}:q{index}",
                    conversation_id=sample_id,
                    question=_text(qa.get("question")),
                    answer=_text(qa.get("answer")),
                    category=LOCOMO_CATEGORIES[rule],
                    asked_at=asked_at + timedelta(minutes=1),
                    abstention=rule == 5,
                    rule=rule,
                )
            )
        conversations.append(Conversation(sample_id, tuple(sessions), tuple(questions)))
    return Dataset("locomo", tuple(conversations))


# --- LongMemEval -----------------------------------------------------------------------------

_LME_DATE = re.compile(
    r"^\s*(\d{4})[/-](\d{1,2})[/-](\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(?:(\d{1,2}):(\d{2}))?\s*$"
)


def parse_longmemeval_date(value: str, where: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` as an aware UTC datetime."""
    match = _LME_DATE.match(value)
    if match is None:
        raise EvalDataError(
            f"{where}: expected a date like '2023/05/20 (Sat) 02:21', got {value!r}"
        )
    year, month, day = (int(match.group(i)) for i in (1, 2, 3))
    hour, minute = int(match.group(4) or 0), int(match.group(5) or 0)
    try:
        return datetime(year, month, day, hour, minute, tzinfo=UTC)
    except ValueError as exc:
        raise EvalDataError(f"{where}: bad date {value!r} ({exc})") from None


def _lme_sessions(item: Mapping[str, Any], qid: str, where: str) -> list[Session]:
    sessions_raw = item.get("haystack_sessions")
    dates = item.get("haystack_dates")
    if not isinstance(sessions_raw, list) or not isinstance(dates, list):
        raise EvalDataError(f"{where}: haystack_sessions and haystack_dates must be lists")
    if len(sessions_raw) != len(dates):
        raise EvalDataError(
            f"{where}: {len(sessions_raw)} haystack_sessions but {len(dates)} haystack_dates"
        )
    ids = item.get("haystack_session_ids") or [f"s{i}" for i in range(len(sessions_raw))]
    dated: list[tuple[datetime, int, Session]] = []
    for index, (raw, date) in enumerate(zip(sessions_raw, dates, strict=True)):
        swhere = f"{where}.haystack_sessions[{index}]"
        start = parse_longmemeval_date(_text(date), f"{where}.haystack_dates[{index}]")
        if not isinstance(raw, list):
            raise EvalDataError(f"{swhere}: a session is a list of {{role, content}} turns")
        turns = []
        for t, (row, moment) in enumerate(zip(raw, _spread(start, len(raw)), strict=True)):
            role = _text(row.get("role") if isinstance(row, Mapping) else None)
            if role not in ("user", "assistant"):
                raise EvalDataError(f"{swhere}[{t}]: role must be user or assistant")
            turns.append(
                Turn(
                    id=f"{qid}:{ids[index]}:{t}",
                    role=role,  # type: ignore[arg-type]
                    text=_text(row.get("content")),
                    timestamp=moment,
                )
            )
        dated.append((start, index, Session(id=str(ids[index]), turns=tuple(turns))))
    dated.sort(key=lambda x: (x[0], x[1]))
    return [s for _, _, s in dated]


def load_longmemeval(path: str | Path) -> Dataset:
    """Load a LongMemEval file: a JSON list of questions, each with its haystack sessions.

    Each question becomes a conversation of its own (its haystack, sessions in date order).
    Question ids ending in ``_abs`` are abstention questions.

    Raises:
        EvalDataError: the file is not in LongMemEval's shape (the message says where).
    """
    conversations: list[Conversation] = []
    for _, where, item in _json_list(path, "a LongMemEval file is a JSON list of questions"):
        if not isinstance(item, Mapping) or "question_id" not in item:
            raise EvalDataError(f"{where}: expected {{question_id, question, haystack_sessions}}")
        qid = _text(item["question_id"])
        sessions = _lme_sessions(item, qid, where)
        abstention = qid.endswith("_abs")
        question = Question(
            id=qid,
            conversation_id=qid,
            question=_text(item.get("question")),
            answer=_text(item.get("answer")),
            category=_text(item.get("question_type")) or "unknown",
            asked_at=parse_longmemeval_date(
                _text(item.get("question_date")), f"{where}.question_date"
            ),
            abstention=abstention,
            rule=5 if abstention else 4,
        )
        conversations.append(Conversation(qid, tuple(sessions), (question,)))
    return Dataset("longmemeval", tuple(conversations))


# --- the package's JSONL format --------------------------------------------------------------


def _jsonl_time(value: Any, where: str) -> datetime:
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value, UTC)
        return _aware(datetime.fromisoformat(str(value)))
    except (ValueError, OverflowError, OSError) as exc:
        raise EvalDataError(f"{where}: bad timestamp {value!r} ({exc})") from None


def _jsonl_rows(path: str | Path) -> Iterable[tuple[str, dict[str, Any]]]:
    return json_objects(path, EvalDataError)


def load_jsonl(path: str | Path) -> Dataset:
    """Load this package's JSONL format (see :mod:`langchain_om.eval`).

    Raises:
        EvalDataError: a line is not a message or a question (the message says where).
    """
    turns: dict[str, list[tuple[str, Turn]]] = {}
    raw_questions: list[tuple[str, dict[str, Any]]] = []
    for where, row in _jsonl_rows(path):
        conv = _text(row.get("conversation")) or "default"
        if "question" in row:
            raw_questions.append((where, row))
            continue
        role = _text(row.get("role")).lower()
        role = {"human": "user", "ai": "assistant"}.get(role, role)
        if role not in ("user", "assistant"):
            raise EvalDataError(f"{where}: role must be user or assistant (or add 'question')")
        if "timestamp" not in row:
            raise EvalDataError(f"{where}: every message needs a timestamp (ISO-8601 or epoch)")
        moment = _jsonl_time(row["timestamp"], where)
        session = _text(row.get("session")) or moment.date().isoformat()
        index = len(turns.get(conv, []))
        turn = Turn(
            id=_text(row.get("id")) or f"{conv}:{index}",
            role=role,  # type: ignore[arg-type]
            text=_text(row.get("content")),
            timestamp=moment,
            speaker=_text(row.get("speaker")) or None,
        )
        turns.setdefault(conv, []).append((session, turn))
    questions: dict[str, list[Question]] = {}
    for where, row in raw_questions:
        conv = _text(row.get("conversation")) or "default"
        if conv not in turns:
            raise EvalDataError(f"{where}: conversation {conv!r} has no messages")
        abstention = bool(row.get("abstention")) or row.get("answer") is None
        category = _text(row.get("category")) or ("adversarial" if abstention else "single-hop")
        rule = 5 if abstention else _RULE_BY_NAME.get(category, 4)
        asked = row.get("timestamp")
        last = turns[conv][-1][1].timestamp
        index = len(questions.get(conv, []))
        questions.setdefault(conv, []).append(
            Question(
                id=_text(row.get("id")) or f"{conv}:q{index}",
                conversation_id=conv,
                question=_text(row["question"]),
                answer=_text(row.get("answer")),
                category=category,
                asked_at=_jsonl_time(asked, where) if asked is not None else last,
                abstention=abstention,
                rule=rule,
            )
        )
    conversations = []
    for conv, rows in turns.items():
        sessions: list[Session] = []
        for session_id, turn in rows:
            if sessions and sessions[-1].id == session_id:
                sessions[-1] = Session(session_id, (*sessions[-1].turns, turn))
            else:
                sessions.append(Session(session_id, (turn,)))
        conversations.append(Conversation(conv, tuple(sessions), tuple(questions.get(conv, []))))
    return Dataset("jsonl", tuple(conversations))


def load_dataset(format: str, path: str | Path) -> Dataset:
    """Load ``path`` as ``format`` (``locomo``, ``longmemeval`` or ``jsonl``).

    Raises:
        EvalDataError: unknown format, or the file is not in it.
    """
    loaders = {"locomo": load_locomo, "longmemeval": load_longmemeval, "jsonl": load_jsonl}
    if format not in loaders:
        raise EvalDataError(f"unknown format {format!r}: use one of {', '.join(FORMATS)}")
    return loaders[format](path)
