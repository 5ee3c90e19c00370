"""Measure what memory remembers: ``langchain_om.eval`` and ``langchain-om eval``.

A run feeds each conversation of a data file through every system it compares, asks the
file's questions with ONE answer prompt (:data:`ANSWER_PROMPT`) and one answer model, scores
the answers and writes ``records.jsonl`` (resumable), ``report.json``, ``report.md`` and
``report.png`` to the output folder. The systems (:mod:`langchain_om.eval.systems`):

- ``om``: observational memory through a real front door (the ``create_agent`` middleware by
  default; ``graph`` or ``standalone`` selectable), messages with their own timestamps;
- ``full``: the whole history, cut to the answer model's context window;
- ``window``: the most recent messages at the same token budget as OM's context;
- ``summarization``: LangChain's ``SummarizationMiddleware``, triggered at OM's
  ``message_tokens``.

Scores (:mod:`langchain_om.eval.scoring`): LoCoMo's token F1 with its category rules, exact
match, contains, and an LLM judge with a fixed prompt per LongMemEval question type.

Data formats: ``locomo`` and ``longmemeval`` (the benchmarks' own JSON files, which the user
supplies), and ``jsonl``, this package's format for application transcripts with questions.
One JSON object a line; a line with a ``question`` key is a question, any other line a message:

.. code-block:: text

    {"conversation": "c1", "role": "user", "content": "I moved to Porto.",
     "timestamp": "2026-03-02T09:00:00Z", "speaker": "Maya", "session": "s1", "id": "m1"}
    {"conversation": "c1", "role": "assistant", "content": "Congratulations!",
     "timestamp": "2026-03-02T09:00:30Z"}
    {"conversation": "c1", "question": "Where does Maya live?", "answer": "Porto",
     "category": "single-hop", "timestamp": "2026-03-09T10:00:00Z", "id": "q1"}
    {"conversation": "c1", "question": "What is Maya's dog called?", "answer": null}

- messages: ``role`` (``user`` or ``assistant``), ``content`` and ``timestamp`` (ISO-8601,
  naive = UTC, or epoch seconds) are required; ``conversation`` (default ``"default"``),
  ``speaker`` (a name, shown as ``Name: text``), ``session`` (default: the message's date)
  and ``id`` are optional. Messages of a conversation are in time order.
- questions: ``question`` is required; ``answer`` is the reference (``null`` or
  ``"abstention": true`` marks a question the conversation cannot answer: the right reply
  says so); ``category`` names the report row and, when it is one of LoCoMo's names
  (``multi-hop``, ``temporal``, ``open-domain``, ``single-hop``, ``adversarial``), the
  scoring rule; ``timestamp`` is when it is asked (default: the last message's time).

Example:
    >>> from langchain_om.eval import locomo_score
    >>> round(locomo_score("Lisbon, Portugal", "Lisbon", 4), 2)
    0.67
    >>> locomo_score("Porto", "Porto, Lisbon", 1)  # multi-hop: one of two parts
    0.5
"""

from __future__ import annotations

from langchain_om.eval.data import (
    FORMATS,
    LOCOMO_CATEGORIES,
    Conversation,
    Dataset,
    EvalDataError,
    Question,
    Session,
    Turn,
    load_dataset,
    load_jsonl,
    load_locomo,
    load_longmemeval,
)
from langchain_om.eval.models import (
    MeteredChatModel,
    ReplayModel,
    scripted_answerer,
    scripted_judge,
    scripted_summarizer,
)
from langchain_om.eval.report import summarize, to_markdown, write_plot, write_reports
from langchain_om.eval.runner import (
    ANSWER_PROMPT,
    EvalRunError,
    RunSettings,
    answer_messages,
    read_records,
    run_eval,
    sample_questions,
)
from langchain_om.eval.scoring import (
    contains,
    exact_match,
    judge_messages,
    locomo_score,
    multi_answer_f1,
    normalize_answer,
    parse_verdict,
    token_f1,
)
from langchain_om.eval.systems import FRONT_DOORS, SYSTEMS, Ingested, SystemSettings, ingest

__all__ = [
    "ANSWER_PROMPT",
    "Conversation",
    "Dataset",
    "EvalDataError",
    "EvalRunError",
    "FORMATS",
    "FRONT_DOORS",
    "Ingested",
    "LOCOMO_CATEGORIES",
    "MeteredChatModel",
    "Question",
    "ReplayModel",
    "RunSettings",
    "SYSTEMS",
    "Session",
    "SystemSettings",
    "Turn",
    "answer_messages",
    "contains",
    "exact_match",
    "ingest",
    "judge_messages",
    "load_dataset",
    "load_jsonl",
    "load_locomo",
    "load_longmemeval",
    "locomo_score",
    "multi_answer_f1",
    "normalize_answer",
    "parse_verdict",
    "read_records",
    "run_eval",
    "sample_questions",
    "scripted_answerer",
    "scripted_judge",
    "scripted_summarizer",
    "summarize",
    "to_markdown",
    "token_f1",
    "write_plot",
    "write_reports",
]
