"""The Reflector: what it is shown, the compression ladder, and how its result is applied.

Everything here is pure. The engine drives a reflection like this::

    ladder = ReflectionLadder(start_level=compression_start_level(model_id),
                              target_tokens=threshold, input_tokens=log_tokens)
    while (level := ladder.next_level()) is not None:
        messages = build_reflector_messages(observations=text, level=level, ...)
        output = parse_observer_output(model.invoke(messages).text)   # the only I/O
        ladder.record(level, output, count_tokens(output.observations))
    best = ladder.result()          # raises ReflectorOutputError when nothing is usable
    record = apply_reflection(record, text=best.text, tokens=best.tokens, ...)

A reflection replaces a *prefix* of the observation groups (all of them for a synchronous
reflection; the oldest slice chosen by :func:`select_reflection_slice` for a buffered one) with
one group of ``kind="reflection"``; groups appended after the slice are kept as they are.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from langchain_om._core.degenerate import is_degenerate
from langchain_om._core.markup import neutralise
from langchain_om._core.observer import ObserverOutput
from langchain_om._core.observer_prompts import (
    ALL_HINTS,
    NO_HINTS,
    HintSwitch,
    InstructionMode,
    observation_guide,
)
from langchain_om._core.receipts import reflection_receipts
from langchain_om._core.retention import RetentionReason, check_reflection
from langchain_om._core.types import ObservationGroup, OMRecord
from langchain_om.errors import ReflectorOutputError

__all__ = [
    "COMPRESSION_GUIDANCE",
    "MAX_ATTEMPTS",
    "MAX_COMPRESSION_LEVEL",
    "REFLECTOR_SYSTEM_PROMPT",
    "BUFFERED_REFLECTION_TARGET_RATIO",
    "AttemptVerdict",
    "LadderFailure",
    "LadderResult",
    "ReflectionAttempt",
    "ReflectionLadder",
    "apply_reflection",
    "buffered_reflection_target",
    "build_reflector_messages",
    "churn_guard_after",
    "compression_start_level",
    "reflector_system_prompt",
    "select_reflection_slice",
    "should_reflect",
]

MAX_COMPRESSION_LEVEL = 4
"""Strongest compression level; retries at the top stay at this level."""

MAX_ATTEMPTS = 4
"""Reflector calls per reflection before the best candidate is taken (or the cycle fails)."""

BUFFERED_REFLECTION_TARGET_RATIO = 0.75
"""A buffered reflection of a slice must come out below this fraction of the slice's tokens."""


def buffered_reflection_target(slice_tokens: int) -> int:
    """Target size of a buffered reflection over a slice of ``slice_tokens`` tokens."""
    return int(slice_tokens * BUFFERED_REFLECTION_TARGET_RATIO)


# --------------------------------------------------------------------------------------------
# Prompts
# --------------------------------------------------------------------------------------------

_REFLECTOR_ROLE = """\
You are the Reflector in an assistant's memory system.

An Observer has been watching a long conversation between a user and an assistant and has \
written down what happened as an observation log: dated lines, one event per line, each marked \
with a priority. The raw conversation has already left the assistant's context. The log is \
all the assistant has left of it, and the log has grown too large.

Your job is to rewrite the whole log as a shorter, consolidated log. The assistant will \
continue the conversation from your version alone: whatever you leave out is forgotten for \
good, and whatever you state must be true to the log. You do not talk to the user and you do \
not answer anything in the log. You only rewrite it.

The log follows the format below, and so must your rewrite."""

_CONSOLIDATION_RULES = """\
## How to consolidate

- Keep the timeline. Every line stays under a `Date:` header, days stay in order, and times \
like "(14:30)" stay on the lines where the time of day matters. Keep resolved dates such as \
"(meaning Nov 20, 2026)" exactly as written: they anchor relative references like "next \
Friday".
- Merge related lines. Several lines about the same topic, task or tool sequence become one \
line (or one line with a few sub-bullets) that states what happened and how it ended.
- Condense older material harder than recent material. The most recent part of the log is \
what the assistant is working on now and keeps the most detail; older days shrink to their \
outcomes, decisions and lasting facts.
- Keep every ✅ completion: what was finished and its result, so the work is not redone.
- Keep every 🔴 fact: who the user is, what they own, like, need, decided or asked to be \
remembered, deadlines, constraints and goals that are still open.
- A user's statement beats a user's question. "User has two cats" is a fact to keep; \
"user asked how to feed cats" is only worth keeping together with its answer.
- Newer information supersedes older. When something changed (a new address, a moved \
deadline, a different library, a changed preference), keep the current value and drop the \
old one, or mention it in a few words ("switched from Flask to FastAPI").
- Keep specifics: names, numbers, amounts, counts, identifiers, file paths, URLs, error \
messages, and the user's own unusual wording. Vague summaries ("discussed some options") are \
useless to the assistant.
- Keep a priority marker on every line. Never invent facts, never add commentary about the \
log, and never add lines that are not supported by it."""

_OUTPUT_INTRO = """\
## Output

Write the consolidated log inside one <observations> block. After it, write where the \
conversation stands at the end of the log:"""

_OUTPUT_LOG = """\
<observations>
Date: Nov 28, 2026
* 🔴 (09:10) ...
* ✅ (11:45) ...
</observations>"""

_OUTPUT_TASK = """\
<current-task>
What the assistant is working on now, and anything it still owes the user.
</current-task>"""

_OUTPUT_RESPONSE = """\
<suggested-response>
What the assistant should say or do next when the conversation continues.
</suggested-response>"""


def _output_format(hints: HintSwitch) -> str:
    if not hints.any:
        return (
            "## Output\n\nWrite the consolidated log inside one <observations> block:\n\n"
            f"{_OUTPUT_LOG}\n\nOutput nothing outside this block."
        )
    parts = [_OUTPUT_INTRO, _OUTPUT_LOG]
    parts += [_OUTPUT_TASK] if hints.current_task else []
    parts += [_OUTPUT_RESPONSE] if hints.suggested_response else []
    return "\n\n".join([*parts, "Output nothing outside these blocks."])


_CONSOLIDATION_HEADING = "## How to consolidate"
_CUSTOM_HEADING = "## Custom Instructions"


def reflector_system_prompt(
    instruction: str | None = None,
    mode: InstructionMode = "append",
    *,
    observer_instruction: str | None = None,
    observer_mode: InstructionMode = "append",
    hints: HintSwitch = ALL_HINTS,
) -> str:
    """The Reflector's system prompt.

    The Reflector is shown the rules for observation lines the Observer follows
    (:func:`~langchain_om._core.observer_prompts.observation_guide` of the Observer's
    ``observer_instruction`` in ``observer_mode``), so that a log written to the application's
    guidance is condensed by it too. ``instruction`` (``reflection.instruction``) is appended
    under a heading, or with ``mode="replace"`` stands in place of the built-in consolidation
    rules (the role and the output format stay). The output format names only the hints that
    ``hints`` turns on. The defaults give :data:`REFLECTOR_SYSTEM_PROMPT`.
    """
    text = (instruction or "").strip()
    guide = observation_guide(observer_instruction, observer_mode).strip()
    rules = (
        f"{_CONSOLIDATION_HEADING}\n\n{text}"
        if text and mode == "replace"
        else _CONSOLIDATION_RULES
    )
    prompt = "\n\n".join([_REFLECTOR_ROLE, guide, rules, _output_format(hints)])
    if text and mode == "append":
        prompt += f"\n\n{_CUSTOM_HEADING}\n\n{text}"
    return prompt


REFLECTOR_SYSTEM_PROMPT = reflector_system_prompt()
"""System prompt of the Reflector (the user's ``reflection.instruction`` is appended to it)."""

COMPRESSION_GUIDANCE: dict[int, str] = {
    0: "",
    1: (
        "Compression level 1 (light): keep about 8/10 of the detail. Remove duplicate and "
        "near-duplicate lines, fold repeated tool steps into a single line with their outcome, "
        "and drop filler. Every user fact, decision and open item stays."
    ),
    2: (
        "Compression level 2 (aggressive): keep about 6/10 of the detail. Merge all lines about "
        "the same topic on the same day into one line. For older days keep outcomes, decisions "
        "and lasting user facts, and drop the intermediate steps that led to them."
    ),
    3: (
        "Compression level 3 (critical): keep about 4/10 of the detail. Earlier attempts came "
        "out too large. Summarise the oldest half of the log heavily: a few lines per day with "
        "outcomes, decisions and durable facts only. Keep the most recent part at moderate "
        "detail, and keep every 🔴 fact and open goal."
    ),
    4: (
        "Compression level 4 (extreme): keep about 2/10 of the detail. The log must shrink "
        "drastically. Collapse every tool-call sequence into its outcome. Write at most 2-3 "
        "lines per day (fold quiet days into the nearest busy one), keeping only 🔴 facts, ✅ "
        "outcomes and what is still open."
    ),
}
"""Per-level instructions added to the Reflector's request (level 0 adds nothing)."""

_GEMINI_FLASH_MARKER = "gemini-2.5-flash"


def compression_start_level(model_id: str | None) -> int:
    """Level of the first Reflector attempt for a model.

    ``gemini-2.5-flash`` tends to under-compress, so it starts one level higher.
    """
    if model_id and _GEMINI_FLASH_MARKER in model_id.lower():
        return 2
    return 1


def build_reflector_messages(
    *,
    observations: str,
    level: int,
    instruction: str | None,
    target_tokens: int,
    skip_continuation_hints: bool = False,
    guidance: str | None = None,
    instruction_mode: InstructionMode = "append",
    observer_instruction: str | None = None,
    observer_mode: InstructionMode = "append",
    hints: HintSwitch = ALL_HINTS,
) -> list[BaseMessage]:
    """The messages of one Reflector call: a system message and ONE human message.

    Args:
        observations: the log to condense, as plain text (groups joined by blank lines, no
            group markup).
        level: compression level (0..MAX_COMPRESSION_LEVEL); out-of-range values are clamped.
        instruction: the user's ``reflection.instruction``, appended to the system prompt.
        target_tokens: the size the result should stay under.
        skip_continuation_hints: ask for the ``<observations>`` block only (buffered
            reflection, whose hints would be stale by the time it is activated).
        guidance: extra guidance for this run (manual ``reflect(guidance=...)``).
        instruction_mode: ``reflection.instruction_mode`` (see :func:`reflector_system_prompt`).
        observer_instruction: ``observation.instruction``, so the Reflector knows the guidance
            the log was written to.
        observer_mode: ``observation.instruction_mode``.
        hints: the continuation hints the system prompt describes and the task asks for
            (``skip_continuation_hints`` asks for none, with the same system prompt, so the
            provider's prompt cache serves buffered and synchronous calls alike).
    """
    system = reflector_system_prompt(
        instruction,
        instruction_mode,
        observer_instruction=observer_instruction,
        observer_mode=observer_mode,
        hints=hints,
    )

    level = _clamp_level(level)
    log = neutralise(observations.strip(), dates=False)
    parts = ["## Observations to Condense", log, "---", "## Your Task"]
    task = (
        "Rewrite the observations above as one consolidated log, following your instructions. "
        f"Keep the result under about {max(target_tokens, 0)} tokens."
    )
    task += _hint_request(NO_HINTS if skip_continuation_hints else hints)
    parts.append(task)
    if COMPRESSION_GUIDANCE[level]:
        parts.append(COMPRESSION_GUIDANCE[level])
    if guidance and guidance.strip():
        parts.extend(["## Specific Guidance", guidance.strip()])
    return [SystemMessage(content=system), HumanMessage(content="\n\n".join(parts))]


def _hint_request(hints: HintSwitch) -> str:
    if not hints.any:
        return " Output only the <observations> block, and nothing else."
    if hints.current_task and hints.suggested_response:
        return " Then write <current-task> and <suggested-response> for the end of the log."
    tag = "<current-task>" if hints.current_task else "<suggested-response>"
    return f" Then write {tag} for the end of the log, and no other section."


def _clamp_level(level: int) -> int:
    return max(0, min(MAX_COMPRESSION_LEVEL, level))


# --------------------------------------------------------------------------------------------
# Compression ladder
# --------------------------------------------------------------------------------------------

AttemptVerdict = Literal["fits", "too_big", "empty", "degenerate", "not_smaller", "unfaithful"]
"""How the ladder judged one attempt. Only ``fits`` and ``too_big`` may replace the log."""


@dataclass(frozen=True)
class ReflectionAttempt:
    """One Reflector call and what the ladder made of it."""

    level: int
    output: ObserverOutput
    tokens: int
    """Tokens of ``output.observations``."""
    verdict: AttemptVerdict
    reason: RetentionReason | None = None
    """Why an attempt was rejected (a retention reason code), ``None`` if usable."""
    retention: float | None = None
    """Share of the log's key facts the attempt kept (``None`` without the log's text)."""

    @property
    def usable(self) -> bool:
        """Whether this attempt may replace the log (smaller, non-empty, faithful, no loop)."""
        return self.verdict in ("fits", "too_big")


@dataclass(frozen=True)
class LadderResult:
    """The candidate a reflection commits."""

    text: str
    """The consolidated observations."""
    tokens: int
    level: int
    """Compression level of the chosen attempt."""
    fits: bool
    """``tokens < target_tokens``; ``False`` when the smallest over-target attempt was kept."""
    output: ObserverOutput
    """The parsed Reflector output (``suggested_response``, extracted values, raw text)."""
    attempts: int
    """How many Reflector calls were made."""
    retention: float | None = None
    """Share of the log's key facts the chosen attempt kept (``None`` without the log)."""

    @property
    def suggested_response(self) -> str | None:
        """The Reflector's suggested response (its current-task is ignored by design)."""
        return self.output.suggested_response


@dataclass(frozen=True)
class LadderFailure:
    """Why no attempt may replace the log (the previous generation stays)."""

    reason: str
    """Reason code of the last rejected attempt: a retention reason (``empty``,
    ``degenerate``, ``not-smaller``, ``too-small``, ``lost-dates``, ``lost-priorities``,
    ``lost-facts``), or ``no-attempts``."""
    reasons: tuple[str, ...]
    """The reason code of every attempt, in order."""
    retention: float | None
    """The best retention figure among the attempts (``None`` when none was measured)."""
    attempts: int
    raw: str
    """The last attempt's raw text."""

    @property
    def message(self) -> str:
        """A one-line explanation (no log text)."""
        listed = ", ".join(self.reasons) or "no attempts"
        return (
            f"the Reflector produced no usable observations ({listed}); "
            "the observation log was left unchanged"
        )


@dataclass
class ReflectionLadder:
    """State machine of one reflection: which level to try next, and which result to keep.

    Levels escalate by one after every failed attempt (too big, empty, degenerate, not
    smaller than the input, or unfaithful) and stay at :data:`MAX_COMPRESSION_LEVEL` once
    there. The ladder stops at the first attempt whose output fits (``tokens <
    target_tokens``) or after ``max_attempts`` calls.

    An attempt may replace the log only when it is non-empty and not a loop. Given
    ``input_text`` (the log being condensed), it must also be smaller than its input and pass
    the retention check (:func:`~langchain_om._core.retention.check_reflection`): a one-line
    reply, a reflection that drops every date or every 🔴 line, or keeps too few of the log's
    facts, is ``unfaithful``. An empty reflection can never replace a non-empty log.
    """

    start_level: int
    target_tokens: int
    input_tokens: int
    max_attempts: int = MAX_ATTEMPTS
    attempts: list[ReflectionAttempt] = field(default_factory=list)
    input_text: str | None = None
    """The log being condensed; enables the retention check."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        self.start_level = _clamp_level(self.start_level)

    @property
    def done(self) -> bool:
        """Whether no further attempt will be made."""
        return self.next_level() is None

    def next_level(self) -> int | None:
        """Level of the next attempt, or ``None`` once an attempt fits or attempts ran out."""
        if any(a.verdict == "fits" for a in self.attempts):
            return None
        if len(self.attempts) >= self.max_attempts:
            return None
        if not self.attempts:
            return self.start_level
        return min(self.attempts[-1].level + 1, MAX_COMPRESSION_LEVEL)

    def record(
        self, level: int, output: ObserverOutput, tokens: int, *, looped: bool = False
    ) -> AttemptVerdict:
        """Judge one Reflector output and remember it.

        Args:
            level: the level the attempt ran at (normally ``next_level()``).
            output: the parsed Reflector output.
            tokens: tokens of ``output.observations``.
            looped: the reply was stopped because it looped (``output`` is what was kept
                before the loop); an unusable kept part is then ``degenerate``, as it is for
                the Observer.

        Raises:
            ValueError: the ladder is already done.
        """
        if self.done:
            raise ValueError("the reflection ladder is done; no further attempt is expected")
        verdict: AttemptVerdict
        reason: RetentionReason | None = None
        retention: float | None = None
        if output.degenerate or is_degenerate(output.observations):
            verdict, reason = "degenerate", "degenerate"
        elif not output.observations.strip():
            verdict, reason = "empty", "empty"
        elif self.input_text is not None and tokens >= self.input_tokens > 0:
            verdict, reason = "not_smaller", "not-smaller"
        else:
            verdict = "fits" if tokens < self.target_tokens else "too_big"
            if self.input_text is not None:
                check = check_reflection(
                    self.input_text,
                    output.observations,
                    input_tokens=self.input_tokens,
                    output_tokens=tokens,
                    target_tokens=self.target_tokens,
                )
                retention = check.retention
                if not check.accepted:
                    verdict, reason = "unfaithful", check.reason
        if looped and verdict not in ("fits", "too_big"):
            verdict, reason = "degenerate", "degenerate"
        self.attempts.append(
            ReflectionAttempt(_clamp_level(level), output, tokens, verdict, reason, retention)
        )
        return verdict

    def failure(self) -> LadderFailure | None:
        """Why no attempt is usable, or ``None`` when :meth:`result` has a candidate."""
        if any(a.usable for a in self.attempts):
            return None
        reasons = tuple(a.reason or a.verdict for a in self.attempts)
        measured = [a.retention for a in self.attempts if a.retention is not None]
        return LadderFailure(
            reason=reasons[-1] if reasons else "no-attempts",
            reasons=reasons,
            retention=max(measured) if measured else None,
            attempts=len(self.attempts),
            raw=self.attempts[-1].output.raw if self.attempts else "",
        )

    def result(self) -> LadderResult:
        """The candidate to commit: the first that fits, else the smallest usable one.

        Ties between equally small candidates go to the earliest (least compressed) one.

        Raises:
            ReflectorOutputError: no attempt produced a usable log; ``raw`` holds the last
                output and ``reason`` the reason code (see :meth:`failure`).
        """
        failed = self.failure()
        if failed is not None:
            raise ReflectorOutputError(
                failed.message, raw=failed.raw, reason=failed.reason, retention=failed.retention
            )
        fitting = [a for a in self.attempts if a.verdict == "fits"]
        if fitting:
            chosen = fitting[0]
        else:
            chosen = min((a for a in self.attempts if a.usable), key=lambda a: a.tokens)
        return LadderResult(
            text=chosen.output.observations.strip(),
            tokens=chosen.tokens,
            level=chosen.level,
            fits=chosen.verdict == "fits",
            output=chosen.output,
            attempts=len(self.attempts),
            retention=chosen.retention,
        )


# --------------------------------------------------------------------------------------------
# Triggers and churn guard
# --------------------------------------------------------------------------------------------


def should_reflect(observation_tokens: int, threshold: int, suppressed_at: int | None) -> bool:
    """Whether a threshold-triggered reflection should run.

    The churn guard: after a reflection failed (or committed a log that is still over the
    threshold) ``suppressed_at`` holds the observation token count at that moment, and
    reflection stays off until the log size changes.
    """
    if observation_tokens < threshold:
        return False
    return suppressed_at != observation_tokens


def churn_guard_after(
    result_tokens: int | None, threshold: int, observation_tokens_now: int
) -> int | None:
    """Value to store as ``reflection_suppressed_at_tokens`` after a threshold reflection.

    Args:
        result_tokens: tokens of the committed reflection, or ``None`` if the reflection
            failed (nothing was committed).
        threshold: the reflection threshold.
        observation_tokens_now: the log size after the cycle (unchanged on failure).

    Returns:
        ``observation_tokens_now`` when the reflection failed or the log is still at or over
        the threshold (so the same log is not reflected again and again), else ``None``
        (guard cleared).
    """
    if result_tokens is None or result_tokens >= threshold:
        return observation_tokens_now
    if observation_tokens_now >= threshold:
        return observation_tokens_now
    return None


# --------------------------------------------------------------------------------------------
# Applying a reflection to the record
# --------------------------------------------------------------------------------------------


def select_reflection_slice(groups: Sequence[ObservationGroup], budget_tokens: int) -> list[str]:
    """Ids of the leading (oldest) groups a buffered reflection should condense.

    Groups are taken oldest first while their cumulative tokens approach ``budget_tokens``;
    the group that crosses the budget is included only if that lands closer to the budget
    than stopping before it. The slice always holds at least one group, and it never holds
    every group when there are two or more: the newest group stays out, so recent detail
    survives the buffered reflection verbatim. A single group is returned whole.
    """
    if not groups:
        return []
    limit = len(groups) - 1 if len(groups) > 1 else 1
    chosen: list[str] = []
    total = 0
    for group in groups[:limit]:
        if chosen and total >= budget_tokens:
            break
        after = total + group["tokens"]
        if chosen and after > budget_tokens and after - budget_tokens > budget_tokens - total:
            break
        chosen.append(group["id"])
        total = after
    return chosen


def apply_reflection(
    record: OMRecord,
    *,
    text: str,
    tokens: int,
    covered_group_ids: Sequence[str],
    now: str,
    new_group_id: str,
    suggested_response: str | None,
) -> OMRecord:
    """A new record in which the covered leading groups are replaced by one reflection group.

    The input record is not modified. The new group (``kind="reflection"``) records as
    ``sources`` the ids of the groups it merged (one level: keeping every ancestor would grow
    the record with the conversation), and its ``range`` spans from the first known range
    start to the last known range end of the covered groups, so the source messages of all
    it condensed stay reachable by recall however many reflections follow.

    Groups after the covered prefix are kept unchanged. ``generation`` goes up by one,
    ``observation_tokens`` is recomputed, ``updated_at`` becomes ``now``, and
    ``hints["suggested_response"]`` is replaced only when ``suggested_response`` is given and
    not blank (the current task is kept). A pending buffered reflection that covers any
    replaced group is dropped (it is either the one being applied or stale).
    Everything else, buffered observation chunks included, is carried over unchanged.

    Raises:
        ValueError: ``covered_group_ids`` is empty or not a prefix of ``record["groups"]``.
    """
    groups = record["groups"]
    covered = list(covered_group_ids)
    if not covered:
        raise ValueError("a reflection must cover at least one observation group")
    if [g["id"] for g in groups[: len(covered)]] != covered:
        raise ValueError(
            "covered_group_ids must be the ids of the leading groups of the record, in order; "
            f"got {covered!r}, log starts with {[g['id'] for g in groups[: len(covered)]]!r}"
        )
    head, tail = groups[: len(covered)], groups[len(covered) :]

    sources = [g["id"] for g in head]
    starts = [g["range"][0] for g in head if g["range"]]
    ends = [g["range"][-1] for g in head if g["range"]]
    reflection: ObservationGroup = {
        "id": new_group_id,
        "kind": "reflection",
        "text": text,
        "tokens": tokens,
        "range": [starts[0], ends[-1]] if starts else None,
        "observed_at": now,
        "sources": sources,
    }
    receipts = reflection_receipts(head)
    if receipts:
        reflection["receipts"] = receipts

    new = copy.deepcopy(record)
    new["groups"] = [reflection, *copy.deepcopy(tail)]
    new["generation"] = record["generation"] + 1
    new["observation_tokens"] = sum(g["tokens"] for g in new["groups"])
    new["updated_at"] = now
    if suggested_response and suggested_response.strip():
        new["hints"]["suggested_response"] = suggested_response.strip()
    pending = new["buffered_reflection"]
    if pending is not None and set(pending["group_ids"]) & set(covered):
        new["buffered_reflection"] = None
    return new
