"""Only real observations are accepted: a table of recorded Observer replies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from langchain_om._core.acceptance import (
    OVERSIZE_FLOOR_TOKENS,
    ObservationVerdict,
    format_reminder,
    instruction_text,
    judge_observation,
    observation_limit,
    with_format_reminder,
)
from langchain_om._core.observer import build_observer_messages, parse_observer_output
from langchain_om._core.observer_input import FormattedHistory
from tests import integrity_examples as ex


def count(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


_PROMPT = build_observer_messages(
    history=FormattedHistory(
        text="Date: Nov 2, 2026\nUser (09:12): I'm moving to Porto on Jan 15.",
        attachments=[],
        message_ids=["m1"],
    ),
    previous=None,
    prior_hints={},
    instruction=None,
    thread_title=True,
)
INSTRUCTIONS = instruction_text(_PROMPT)


def judged(reply: str) -> ObservationVerdict:
    """The verdict on ``reply`` for a 900-token batch under the default prompt's instructions."""
    return judge_observation(
        parse_observer_output(reply),
        input_tokens=900,
        observation_tokens=3_000,
        count=count,
        instructions=INSTRUCTIONS,
    )


HTML_502 = """\
<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx/1.25.3</center>
</body>
</html>"""

JSON_REPLY = json.dumps(
    {
        "observations": [
            {"priority": "high", "time": "09:12", "text": "User is moving to Porto"},
            {"priority": "medium", "time": "09:14", "text": "Assistant listed districts"},
        ],
        "current_task": "Help the user find a flat",
    },
    indent=2,
)

REFUSAL = (
    "I'm sorry, but I can't help with that. As an AI language model I don't have access to "
    "the conversation you're referring to."
)

HEADING_ECHO = """\
<observations>
Date: Nov 2, 2026
- "## Your Task": what to write this time.
- "## Your Task": what to write this time.
- "## New Messages to Observe": the conversation to observe, in time order.
- "## Your Task": what to write this time.
</observations>"""

TEMPLATE_ECHO = """\
<observations>
Date: Nov 30, 2026
* 🔴 (14:30) User said …
  * -> …
* 🟡 (14:31) Assistant searched … and found …
* ✅ (14:35) …
</observations>

<current-task>
Primary: what the assistant is working on now, or what the user is waiting for.
</current-task>"""

INSTRUCTION_ECHO = """\
## Your Task

Record what is new in the messages above; do not repeat previous observations. Answer with \
these sections, in this order, and nothing else:
- <observations>: new observations for the messages under "New Messages to Observe", under \
`Date:` headers."""

PROSE_BLOCK = """\
<observations>
The user and the assistant talked about moving to Porto and the assistant was helpful.
</observations>"""

ONE_ECHO_AMONG_GOOD = ex.GOOD_OBSERVATION.replace(
    "* ✅ (09:16)", '* 🟡 (09:15) "## Your Task": what to write this time.\n* ✅ (09:16)'
)


def _oversized() -> str:
    lines = [
        f"* 🟡 (10:{i % 60:02d}) Assistant noted detail number {i} of the plan." for i in range(600)
    ]
    return "<observations>\nDate: Nov 2, 2026\n" + "\n".join(lines) + "\n</observations>"


CASES = [
    ("blank", "", "empty"),
    ("whitespace", " \n\t\n", "empty"),
    ("empty block", "<observations>\n</observations>", "empty"),
    (
        "empty block and hints",
        "<observations></observations>\n<current-task>x</current-task>",
        "empty",
    ),
    (
        "dates only, tagged",
        "<observations>\n" + "Date: Nov 2, 2026\n" * 3 + "</observations>",
        "empty",
    ),
    ("dates only, bare", "Date: Nov 2, 2026\n" * 3, "empty"),
    ("refusal", REFUSAL, "unparseable"),
    ("html 502", HTML_502, "unparseable"),
    ("json", JSON_REPLY, "unparseable"),
    ("prose in block", PROSE_BLOCK, "unparseable"),
    ("heading echo", HEADING_ECHO, "echo"),
    ("template echo", TEMPLATE_ECHO, "echo"),
    ("instruction echo, no tags", INSTRUCTION_ECHO, "echo"),
    ("caroline loop", "<observations>\n" + ex.CAROLINE_LOOP + "\n</observations>", "degenerate"),
    ("short loop", ex.SHORT_LOOP, "degenerate"),
    ("oversized", _oversized(), "oversized"),
    ("good", ex.GOOD_OBSERVATION, None),
    ("good with one echo line", ONE_ECHO_AMONG_GOOD, None),
    ("bare list lines", "* 🔴 (09:12) User is moving to Porto on Jan 15, 2027.", None),
]


@pytest.mark.parametrize(("name", "reply", "reason"), CASES, ids=[c[0] for c in CASES])
def test_recorded_replies(name: str, reply: str, reason: str | None) -> None:
    verdict = judged(reply)
    assert verdict.reason == reason, verdict.detail
    assert verdict.accepted is (reason is None)
    if verdict.accepted:
        assert verdict.lines >= 1 and verdict.observations.strip()
        assert "Your Task" not in verdict.observations
        assert verdict.tokens == count(verdict.observations)
    else:
        assert verdict.observations == "" and verdict.lines == 0
    for line in reply.splitlines():  # the detail never carries the reply's text
        if len(line) > 12:
            assert line not in verdict.detail


def test_an_echo_line_is_dropped_from_accepted_observations() -> None:
    verdict = judged(ONE_ECHO_AMONG_GOOD)
    assert verdict.accepted and verdict.lines == 4
    assert verdict.observations == parse_observer_output(ex.GOOD_OBSERVATION).observations


def test_a_fact_worded_like_a_prompt_example_is_not_an_echo() -> None:
    verdict = judge_observation(
        parse_observer_output("<observations>\n* 🔴 (10:00) User has two cats.\n</observations>"),
        input_tokens=50,
        observation_tokens=3_000,
        count=count,
        instructions=INSTRUCTIONS,
    )
    assert verdict.accepted


def test_faithful_polling_is_accepted_when_the_source_is_given() -> None:
    reply = "<observations>\n" + ex.POLLING_OBSERVED_TIME_ONLY + "\n</observations>"
    kwargs: dict[str, Any] = {"input_tokens": 3_600, "observation_tokens": 3_000, "count": count}
    assert judge_observation(parse_observer_output(reply), **kwargs).reason == "degenerate"
    verdict = judge_observation(
        parse_observer_output(reply, source=ex.POLLING_INPUT), source=ex.POLLING_INPUT, **kwargs
    )
    assert verdict.accepted and verdict.lines == 31


@pytest.mark.parametrize(
    ("input_tokens", "observation_tokens", "limit"),
    [
        (10, 3_000, OVERSIZE_FLOOR_TOKENS),
        (900, 3_000, 1_350),
        (26_000, 3_000, 6_000),
        (26_000, 40_000, 39_000),
        (0, 0, OVERSIZE_FLOOR_TOKENS),
    ],
)
def test_observation_limit(input_tokens: int, observation_tokens: int, limit: int) -> None:
    assert observation_limit(input_tokens, observation_tokens) == limit


def test_more_than_the_input_is_oversized_but_a_tiny_batch_gets_the_floor() -> None:
    reply = ex.GOOD_OBSERVATION
    tokens = count(parse_observer_output(reply).observations)
    args: dict[str, Any] = {
        "observation_tokens": 3_000,
        "count": count,
        "instructions": INSTRUCTIONS,
    }
    parsed = parse_observer_output(reply)
    assert judge_observation(parsed, input_tokens=tokens, **args).accepted
    assert tokens < OVERSIZE_FLOOR_TOKENS
    assert judge_observation(parsed, input_tokens=5, **args).accepted
    assert not judge_observation(parsed, input_tokens=tokens * 3, **args).reason
    big = parse_observer_output(_oversized())
    verdict = judge_observation(big, input_tokens=count(big.observations) - 1 + 10**6, **args)
    assert verdict.reason == "oversized"  # capped by observation_tokens, not just the input
    assert verdict.limit == 6_000


def test_instruction_text_leaves_out_the_messages() -> None:
    assert "moving to Porto" not in INSTRUCTIONS
    assert "## Your Task" in INSTRUCTIONS and "## New Messages to Observe" in INSTRUCTIONS


@pytest.mark.parametrize("reason", ["empty", "unparseable", "echo", "oversized", "degenerate"])
def test_format_reminder(reason: str) -> None:
    note = format_reminder(reason)  # type: ignore[arg-type]
    assert "<observations>" in note and len(note) < 600
    retried = with_format_reminder(_PROMPT, reason)  # type: ignore[arg-type]
    assert len(retried) == len(_PROMPT) and retried[0] is _PROMPT[0]
    assert isinstance(retried[-1], HumanMessage) and isinstance(retried[-1].content, str)
    assert retried[-1].content.endswith(note)
    assert _PROMPT[-1].content != retried[-1].content  # the original prompt is not modified


def test_format_reminder_on_multimodal_and_system_only_prompts() -> None:
    parts: list[str | dict[Any, Any]] = [
        {"type": "text", "text": "x"},
        {"type": "image", "url": "https://a/b.png"},
    ]
    retried = with_format_reminder([SystemMessage("s"), HumanMessage(content=parts)], "empty")
    assert retried[-1].content[-1] == {"type": "text", "text": format_reminder("empty")}
    assert len(retried[-1].content) == 3
    only_system = with_format_reminder([SystemMessage("s")], "echo")
    assert isinstance(only_system[-1], HumanMessage)


COMPACT_TEMPLATE_ECHO = """\
<observations>
Date: Nov 2, 2026
* 🔴 (09:12) <who> <did or said what, with names, numbers and dates>
* 🟡 (09:12) One fact per line; a message with three facts gives three lines.
* 🟡 (09:13) Copy names, places, numbers and dates exactly as written.
</observations>"""

SCHEMA_ECHO = """\
<observations>
Date: Nov 2, 2026
* 🔴 (09:12) What happened, in one line.
* 🟡 (09:12) Optional details of this observation, one per item.
</observations>"""


@pytest.mark.parametrize(
    ("reply", "sent"),
    [
        (COMPACT_TEMPLATE_ECHO, "the compact prompt"),
        (SCHEMA_ECHO, "the structured schema"),
    ],
)
def test_echo_of_the_prompt_a_call_sent_in_place_is_caught(reply: str, sent: str) -> None:
    # The cycles build the default prompt; the compact prompt and the schema are sent in its
    # place per attempt. The reply is compared against those too.
    verdict = judged(reply)
    assert verdict.reason == "echo", sent
    only_default = judge_observation(
        parse_observer_output(reply),
        input_tokens=900,
        observation_tokens=3_000,
        count=count,
        instructions="\n".join(m.text for m in _PROMPT if isinstance(m, SystemMessage)),
    )
    assert only_default.accepted  # what the check saw before: the default system text only


def test_a_real_observation_is_not_an_echo_of_the_compact_prompt() -> None:
    reply = "<observations>\nDate: Nov 2, 2026\n* 🔴 (09:12) User is moving to Porto on Jan 15.\n"
    reply += "* 🟡 (09:13) User asked for the names of three districts.\n</observations>"
    verdict = judged(reply)
    assert verdict.accepted and verdict.lines == 2
