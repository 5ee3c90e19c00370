"""Recorded model replies and inputs used by the integrity tests.

The loops reproduce what small local models wrote on real runs (the Caroline loop is the one
from a 26k-token two-person conversation observed by a 1.5B model); the polling texts are a
real repetitive conversation and faithful observations of it.
"""

from __future__ import annotations


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


# --- Loops -----------------------------------------------------------------------------------

_CAROLINE_STEPS = [1, 2, 1, 1, 2, 1, 2, 2, 1, 1, 2, 1, 1, 2, 1, 2, 1, 1, 2, 2, 1, 1]
_CAROLINE_TIMES = [14 * 60 + 4]
for _step in _CAROLINE_STEPS * 2:
    _CAROLINE_TIMES.append(_CAROLINE_TIMES[-1] + _step)

CAROLINE_LOOP = "\n".join(
    [
        "Date: May 8, 2023",
        "* 🔴 (13:56) Caroline said she has been painting a lake sunrise for her friend.",
        "* 🟡 (13:58) Melanie said she took her kids to the museum last weekend.",
        "* 🟡 (14:01) Caroline asked Melanie how the pottery class was going.",
        *(
            f"* ✅ ({_clock(t)}) Caroline said she was off to go swimming with the kids."
            for t in _CAROLINE_TIMES[:44]
        ),
    ]
)
"""44 copies of one invented line, the time going up by one or two minutes per line."""

CAROLINE_SOURCE = "\n".join(
    [
        "Date: May 8, 2023",
        "Caroline (13:56): I've been painting a lake sunrise, it's a gift for a friend.",
        "Melanie (13:58): Lovely! We went to the museum last weekend, the kids loved it.",
        "Caroline (14:01): How's the pottery class going?",
        "Melanie (14:03): Great, I made a bowl. Anyway, I'm off to go swimming with the kids!",
        "Caroline (14:04): Have fun, talk soon.",
    ]
)

SHORT_LOOP = "\n".join(
    [
        "<observations>",
        "Date: Nov 2, 2026",
        *(
            f"* 🟡 ({_clock(9 * 60 + 15 + i)}) User is planning a trip to Lisbon in spring."
            for i in range(10)
        ),
        "</observations>",
    ]
)
"""A 1.5B model's loop that stopped at its output cap: ten lines, well under 2,000 chars."""

SHORT_BLOCK_LOOP = "\n".join(
    [
        "Date: Nov 2, 2026",
        *(
            line
            for i in range(9)
            for line in (
                f"* 🔴 ({_clock(10 * 60 + 2 * i)}) User wants a vegetarian dinner recipe.",
                f"* 🟡 ({_clock(10 * 60 + 2 * i + 1)}) Assistant suggested a mushroom risotto.",
            )
        ),
    ]
)
"""A two-line block repeated nine times, times changing on every line."""

NUMBERED_LOOP = "\n".join(f"{i}. User said they like the blue one best." for i in range(1, 13))
"""A numbered list whose only change is the number."""

# --- Polling: a repetitive conversation, and faithful observations of it ----------------------

POLLING_INPUT = "\n".join(
    ["Date: Nov 3, 2026"]
    + [
        line
        for i in range(60)
        for line in (
            f"User ({_clock(10 * 60 + i)}): any news on the deploy?",
            f'Tool Call check_status ({_clock(10 * 60 + i)}): {{"job": "deploy-7731"}}',
            f'Tool Result check_status: {{"status": "pending", "queue_position": {60 - i}}}',
            f"Assistant: Checked the status of deploy-7731: still pending "
            f"(queue position {60 - i}).",
        )
    ]
)
"""60 turns of a user polling a deploy job: the status stays "pending" throughout."""

POLLING_OBSERVED_DETAILED = "\n".join(
    ["Date: Nov 3, 2026"]
    + [
        f"* 🟡 ({_clock(10 * 60 + i)}) Assistant checked deploy-7731 status: pending, "
        f"queue position {60 - i}."
        for i in range(60)
    ]
)
"""A faithful line per poll; each line carries its own queue position."""

POLLING_OBSERVED_TIME_ONLY = "\n".join(
    ["Date: Nov 3, 2026", "* 🔴 (10:00) User is waiting for the deploy-7731 job to finish."]
    + [
        f"* 🟡 ({_clock(10 * 60 + i)}) Assistant checked the deploy status: still pending."
        for i in range(30)
    ]
)
"""A faithful observation of the first 30 polls whose lines differ only by time."""

POLLING_OBSERVED_GROUPED = """\
Date: Nov 3, 2026
* 🔴 (10:00) User is waiting for deploy job deploy-7731 and asked for updates every minute.
* 🟡 (10:00) Assistant polled check_status 60 times between 10:00 and 10:59:
  * -> status pending on every check
  * -> queue position went from 60 down to 1
* 🟡 (10:59) Deploy-7731 is still pending at queue position 1."""
"""The observation the prompt asks for: repeated actions grouped under one line."""

# --- A legitimate short observation ------------------------------------------------------------

GOOD_OBSERVATION = """\
<observations>
Date: Nov 2, 2026
* 🔴 (09:12) User is moving to Porto on Jan 15, 2027 (meaning in about 10 weeks).
* 🔴 (09:13) User's budget for the flat is 1,200 EUR per month.
* 🟡 (09:14) Assistant listed three districts: Bonfim, Cedofeita, Foz.
  * -> User ruled out Foz as too expensive
* ✅ (09:16) Assistant explained the NIF tax number; user will apply on Nov 9, 2026.
</observations>

<current-task>
Primary: help the user shortlist flats in Bonfim and Cedofeita under 1,200 EUR.
</current-task>

<suggested-response>
Ask how many bedrooms the user needs.
</suggested-response>"""
