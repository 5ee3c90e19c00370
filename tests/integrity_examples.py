# ruff: noqa: E501  (recorded texts keep their real line lengths)
"""Recorded model replies and inputs used by the integrity tests.

The loops reproduce what small local models wrote on real runs (the Caroline loop is the one
from a 26k-token two-person conversation observed by a 1.5B model); the polling texts are a
real repetitive conversation and faithful observations of it.
"""

from __future__ import annotations

import re

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage


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


# --- Observation logs and their reflections ----------------------------------------------------

LOG_MOVE = """\
Date: Nov 2, 2026
* 🔴 (09:12) User is moving from Lyon to Porto on Jan 15, 2027 for a job at Farfetch.
* 🔴 (09:13) User's budget for a flat is 1,200 EUR per month, two bedrooms.
* 🟡 (09:14) Assistant listed districts: Bonfim, Cedofeita, Foz, Boavista.
* 🔴 (09:15) User ruled out Foz as too expensive and wants to be near a metro station.
* 🟡 (09:17) Assistant explained the NIF tax number is needed before signing a lease.
* 🔴 (09:18) User will apply for the NIF on Nov 9, 2026 at the Lyon consulate.
* 🟡 (09:20) Assistant suggested idealista.pt and imovirtual.com for listings.
* 🟢 (09:21) User prefers listings with photos of the kitchen.
* 🟡 (09:25) Assistant searched idealista.pt: 14 flats in Bonfim under 1,200 EUR.
* 🟡 (09:26) Assistant searched idealista.pt: 9 flats in Cedofeita under 1,200 EUR.
* 🟢 (09:27) Assistant noted that listings in Bonfim rent fast.
* ✅ (09:30) Assistant sent the user a shortlist of 5 flats (3 in Bonfim, 2 in Cedofeita).

Date: Nov 4, 2026
* 🔴 (18:02) User's partner Inês will join in March 2027 and works from home.
* 🔴 (18:03) User now needs a third room as an office, budget raised to 1,450 EUR.
* 🟡 (18:05) Assistant re-ran the search: 6 three-bedroom flats in Bonfim under 1,450 EUR.
* 🟡 (18:06) Assistant re-ran the search: 4 three-bedroom flats in Cedofeita under 1,450 EUR.
* 🟢 (18:08) User liked a flat on Rua do Heroísmo with a balcony.
* 🟡 (18:10) Assistant found the Rua do Heroísmo flat is 1,390 EUR, 92 m², near Heroísmo metro.
* 🔴 (18:12) User asked to book a video viewing of the Rua do Heroísmo flat.
* 🟡 (18:15) Assistant drafted an email to the agency Casa Invicta asking for a viewing.
* ✅ (18:16) User approved the email; assistant sent it to Casa Invicta.
* 🟢 (18:20) User mentioned they like the tram line 22.

Date: Nov 6, 2026
* 🟡 (10:01) Casa Invicta replied: video viewing on Nov 10, 2026 at 17:00 Lisbon time.
* 🔴 (10:03) User accepted the viewing on Nov 10, 2026 at 17:00.
* 🟡 (10:05) Assistant explained Portuguese leases usually ask for 2 months deposit plus 1 month rent.
* 🔴 (10:07) User can pay at most 3,000 EUR upfront.
* 🟡 (10:08) Assistant computed the upfront cost for Rua do Heroísmo: 4,170 EUR (3 × 1,390).
* 🔴 (10:10) User wants the assistant to negotiate the deposit down to 1 month.
* 🟡 (10:12) Assistant drafted a message to Casa Invicta proposing 1 month deposit.
* 🟢 (10:14) User asked what "fiador" means; assistant explained it is a guarantor.
* 🔴 (10:15) User has no Portuguese guarantor and will offer 6 months rent upfront only if required.
* ✅ (10:20) Assistant sent the deposit proposal to Casa Invicta."""

LOG_MOVE_REFLECTED = """\
Date: Nov 2, 2026
* 🔴 (09:12) User moves from Lyon to Porto on Jan 15, 2027 (job at Farfetch); wants a flat near a metro, not Foz.
* 🔴 (09:18) User applies for the NIF on Nov 9, 2026 at the Lyon consulate.
* ✅ (09:30) Sent a shortlist of 5 flats (Bonfim, Cedofeita) at 1,200 EUR.

Date: Nov 4, 2026
* 🔴 (18:03) Partner Inês joins in March 2027, works from home: 3 rooms, budget 1,450 EUR.
* ✅ (18:16) Favourite: Rua do Heroísmo, 1,390 EUR, 92 m²; viewing requested from Casa Invicta.

Date: Nov 6, 2026
* 🔴 (10:03) Video viewing on Nov 10, 2026 at 17:00.
* 🔴 (10:07) User can pay at most 3,000 EUR upfront (needs 4,170 EUR); no guarantor.
* ✅ (10:20) Proposed 1 month deposit to Casa Invicta; awaiting reply."""

LOG_MIGRATION = """\
Date: Nov 12, 2026
* 🔴 (14:00) User is migrating the billing service from PostgreSQL 12 to PostgreSQL 16 before Dec 1, 2026.
* 🔴 (14:01) User's repo is acme/billing; the migration must have under 5 minutes of downtime.
* 🟡 (14:03) Assistant read db/schema.sql: 41 tables, 3 use the deprecated abstime type.
* 🟡 (14:05) Assistant ran pg_upgrade --check: failed on abstime columns in invoices, refunds, audit_log.
* 🟡 (14:08) Assistant proposed converting abstime columns to timestamptz in migration 0087.
* 🔴 (14:09) User approved migration 0087 but wants it reversible.
* 🟡 (14:12) Assistant wrote migrations/0087_abstime_to_timestamptz.py with up and down steps.
* 🟡 (14:15) Assistant ran pytest tests/migrations: 2 failed (test_refund_dates, test_audit_order).
  * -> both failures: timezone offset lost on rows before 2019
* 🟡 (14:22) Assistant fixed 0087 to cast with AT TIME ZONE 'UTC'.
* 🟡 (14:24) Assistant ran pytest tests/migrations: all 58 passed.
* ✅ (14:25) Migration 0087 is done and reversible.
* 🟢 (14:27) User mentioned the staging database is called billing-stg-2.
* 🟡 (14:30) Assistant ran pg_upgrade --check on billing-stg-2: passed.
* 🔴 (14:33) User wants logical replication instead of pg_upgrade in production to meet the downtime limit.
* 🟡 (14:36) Assistant listed steps: create publication, create subscription, wait for sync, switch DNS.
* 🟢 (14:38) User asked whether sequences replicate; assistant said no, they must be copied at cutover.

Date: Nov 13, 2026
* 🟡 (09:05) Assistant wrote scripts/replicate.sh creating publication billing_pub on PG12.
* 🟡 (09:10) Assistant ran replicate.sh on staging: subscription billing_sub created, initial sync took 38 minutes.
* 🔴 (09:12) User said the production database is 4x staging, so expect about 2.5 hours of sync.
* 🟡 (09:20) Assistant wrote scripts/copy_sequences.sql to copy 41 sequences at cutover.
* 🟡 (09:25) Assistant rehearsed the cutover on staging: 3 minutes 10 seconds of downtime.
* ✅ (09:26) Staging cutover rehearsal passed within the 5-minute limit.
* 🔴 (09:30) User scheduled the production cutover for Nov 28, 2026 at 02:00 UTC.
* 🟡 (09:32) Assistant drafted the runbook in docs/runbooks/pg16-cutover.md.
* 🟢 (09:35) User asked to add a rollback section; assistant added one (switch DNS back to PG12).
* 🔴 (09:40) User wants Slack alerts in #billing-ops during the cutover.
* 🟡 (09:45) Assistant added a notify step calling the #billing-ops webhook to the runbook.
* ✅ (09:50) Runbook docs/runbooks/pg16-cutover.md is complete and reviewed by the user."""

LOG_MIGRATION_REFLECTED = """\
Date: Nov 12, 2026
* 🔴 (14:00) User migrates acme/billing from PostgreSQL 12 to 16 before Dec 1, 2026, under 5 minutes downtime.
* ✅ (14:25) Migration 0087 (abstime to timestamptz) done, reversible; 58 tests pass.
* 🔴 (14:33) Production uses logical replication, not pg_upgrade; staging is billing-stg-2.

Date: Nov 13, 2026
* ✅ (09:26) replicate.sh and copy_sequences.sql (41 sequences) work; staging sync 38 minutes, cutover 3 minutes 10 seconds.
* 🔴 (09:30) Production cutover on Nov 28, 2026 at 02:00 UTC (about 2.5 hours sync), alerts in #billing-ops.
* ✅ (09:50) Runbook docs/runbooks/pg16-cutover.md complete with rollback."""

LOG_FAMILY = """\
Date: Oct 20, 2026
* 🔴 (20:01) User's daughter Maya turns 7 on Nov 14, 2026.
* 🔴 (20:02) User wants to plan a party for 12 kids on Saturday Nov 15, 2026.
* 🟡 (20:04) Assistant suggested three themes: dinosaurs, space, art studio.
* 🔴 (20:05) User picked the dinosaurs theme because Maya loves the T-rex.
* 🟡 (20:07) Assistant suggested venues: Parc de la Tête d'Or, Le Petit Musée, home.
* 🔴 (20:09) User wants the party at home; the flat has a 40 m² living room.
* 🟢 (20:10) User mentioned their son Léo is 4 and will help with decorations.
* 🟡 (20:12) Assistant drafted a shopping list: balloons, dinosaur plates, cake, 12 goody bags.
* 🔴 (20:14) User said two kids, Sami and Lou, have nut allergies.
* 🟡 (20:15) Assistant suggested a nut-free bakery, Boulangerie Pozzoli.
* ✅ (20:18) User ordered a nut-free dinosaur cake from Boulangerie Pozzoli for 65 EUR.

Date: Oct 27, 2026
* 🟡 (19:30) Assistant drafted an invitation text for the parents' WhatsApp group.
* 🔴 (19:32) User changed the party time to 14:00-17:00 (was 15:00-18:00).
* ✅ (19:35) User sent the invitations to 12 families.
* 🟡 (19:40) Assistant suggested games: dinosaur egg hunt, fossil dig in sand, pin the tail on the T-rex.
* 🟢 (19:42) User liked the fossil dig and will buy 5 kg of play sand.
* 🟡 (19:45) Assistant estimated the total budget at 210 EUR.
* 🔴 (19:47) User's budget cap for the party is 250 EUR.

Date: Nov 10, 2026
* 🟡 (08:15) 9 families confirmed, 2 declined, 1 has not answered (the Nguyen family).
* 🔴 (08:17) User asked to be reminded to call the Nguyen family on Nov 12, 2026.
* 🟡 (08:20) Assistant updated the goody bags to 10.
* 🟢 (08:22) User said Grandma Odile will bring a homemade lemonade.
* ✅ (08:25) Assistant finalised the shopping list: 182 EUR in total, within the 250 EUR cap.
* 🔴 (08:30) User still needs to pick up the cake on Nov 15, 2026 at 11:00."""

LOG_FAMILY_REFLECTED = """\
Date: Oct 20, 2026
* 🔴 (20:01) Maya turns 7 Nov 14, 2026; dinosaur party at home, 12 kids, Nov 15, 2026; Sami and Lou have nut allergies.
* ✅ (20:18) Nut-free cake from Boulangerie Pozzoli, 65 EUR.

Date: Oct 27, 2026
* 🔴 (19:32) Party 14:00-17:00 (was 15:00-18:00); invitations sent; budget cap 250 EUR.

Date: Nov 10, 2026
* 🔴 (08:17) Call the Nguyen family Nov 12, 2026; shopping done (182 EUR); cake pickup Nov 15, 2026 at 11:00."""


LOG_MOVE_EXTREME = """\
Date: Nov 2, 2026
* 🔴 (09:12) User moves Lyon → Porto Jan 15, 2027 (Farfetch); NIF on Nov 9, 2026.

Date: Nov 6, 2026
* 🔴 (10:03) Rua do Heroísmo flat (1,390 EUR, 3 rooms for partner Inês): viewing Nov 10, 2026 at 17:00.
* 🔴 (10:07) Upfront max 3,000 EUR; 1 month deposit proposed to Casa Invicta."""
"""A level-4 compression: two busy days, quiet Nov 4 folded into Nov 6."""


VAGUE_MOVE = """\
Date: Nov 2, 2026
* 🔴 (09:12) User is relocating to a new city for work and has been looking at flats with the assistant in several areas, with a monthly budget in mind.
* 🟡 (09:30) Assistant searched the usual listing sites and shared a number of options that seemed to fit what the user wanted.

Date: Nov 4, 2026
* 🔴 (18:03) The user's household situation changed, so the requirements for the flat changed as well and the search was repeated.
* ✅ (18:16) A flat the user liked was found and the assistant contacted the agency about it.

Date: Nov 6, 2026
* 🔴 (10:03) A viewing was arranged and the user discussed the upfront costs and the deposit with the assistant, who sent a proposal."""
"""A reflection of LOG_MOVE that keeps the days and marks but none of the specifics."""


def oversized_reply() -> str:
    """A well-formed Observer reply far larger than any input it could be about (600 lines)."""
    words = "apple birch cedar dune ember fjord grove heron iris jade kelp lotus maple".split()
    lines = [
        f"* 🟡 (09:{i % 60:02d}) User named {words[i % 13]} {words[i // 13 % 13]} {words[i // 169]}"
        for i in range(600)
    ]
    return "<observations>\nDate: Nov 30, 2026\n" + "\n".join(lines) + "\n</observations>"


def messages_saying(log: str) -> list[BaseMessage]:
    """A conversation that says every fact of ``log``: one message per observation line (the
    user's lines as user messages, the rest as the assistant's), so an Observer reply of
    ``log`` is grounded in it. Ids are ``m0``, ``m1``, ... in order."""
    out: list[BaseMessage] = []
    for line in log.splitlines():
        if not line.startswith("* "):
            continue
        text = re.sub(r"^\*\s*\S+\s*\(\d{1,2}:\d{2}\)\s*", "", line)
        kind = HumanMessage if text.startswith("User") else AIMessage
        out.append(kind(text, id=f"m{len(out)}"))
    return out
