"""Every script in examples/ runs offline (scripted models) and shows memory at work."""

from __future__ import annotations

import re
import runpy
import warnings

import pytest

from tests.helpers import ROOT, require_postgres

EXAMPLES = ROOT / "examples"
POSTGRES_SCRIPTS = {"postgres_memory.py"}
"""Examples that need PostgreSQL (run by their own ``postgres``-marked test)."""
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if p.name not in POSTGRES_SCRIPTS)


def run_example(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``examples/name`` and return what it printed.

    Any ``DeprecationWarning`` it causes fails the test (LangChain's own included, which the
    test configuration otherwise ignores): the examples show the current way to do things.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out


def number(pattern: str, text: str) -> int:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in output:\n{text}"
    return int(found.group(1))


def test_the_front_door_examples_are_there() -> None:
    assert {"agent.py", "custom_graph.py", "chat_history.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_runs(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example(name, capsys)
    assert out.strip(), f"{name} printed nothing"


def test_agent_example_observes_tool_turns(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("agent.py", capsys)
    in_context = number(r"(\d+) messages in context", out)
    observed = number(r"(\d+) observed", out)
    assert observed > 0
    assert in_context + observed == 5 * 2 + 5 * 4  # every message is observed or in context
    assert "User said: On " in out and "I'm working from the café." in out
    assert "Tool Call said:" in out or "Tool Result said:" in out


def test_custom_graph_example_observes_and_reflects(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("custom_graph.py", capsys)
    assert number(r"(\d+) observed", out) > 0
    assert number(r"generation (\d+)", out) >= 1
    assert number(r"Got it \((\d+) things remembered\)", out.split("last answer:")[1]) > 0
    assert "User said: Note 1: buy item number 7 today." in out


def test_graph_options_example_recovers_observes_and_buffers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_example("graph_options.py", capsys)
    assert "overflows recovered: 1" in out
    assert number(r"messages freed: (\d+)", out) > 0
    assert number(r"observed on reported usage: (\d+) messages", out) > 0
    assert "om_idle in the graph: True" in out and "idle buffers written: True" in out


def test_chat_history_example_keeps_history_small(capsys: pytest.CaptureFixture[str]) -> None:
    source = (EXAMPLES / "chat_history.py").read_text(encoding="utf-8")
    assert "import RunnableWithMessageHistory" not in source  # deprecated by LangChain
    out = run_example("chat_history.py", capsys)
    assert number(r"seeing (\d+) messages", out.split("last answer:")[1]) < 2 * 12
    assert "Thread 'maya' · generation" in out
    assert "User said: Remember item 1: the code for box" in out


def test_recall_chain_example_pages_back(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("recall_chain.py", capsys)
    assert "recall" in out.lower() and "Lisbon" in out


def test_bad_observer_replies_example_archives_nothing_until_a_real_reply(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_example("bad_observer_replies.py", capsys)
    assert "turn 0: 2 messages in the window, 0 archived" in out
    assert "turn 1: 4 messages in the window, 0 archived" in out
    assert "failed cycles and their reasons: ['empty', 'echo']" in out
    assert number(r"turn 7: \d+ messages in the window, (\d+) archived", out) > 0


def test_spend_cap_example_stops_calls_and_resumes(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("spend_cap.py", capsys)
    assert "memory calls in 10 turns: 3" in out
    assert "turns that skipped a cycle: 6 budget: cycles_per_hour" in out
    assert "3 / 3 cycles this hour · used up" in out
    assert "observe() refused: spend.cycles_per_hour" in out
    assert "an hour later, memory calls: 4" in out
    assert "with every_n_turns=3, observed on turns: [3, 6, 9]" in out


@pytest.mark.postgres
def test_postgres_example_archives_in_postgres(capsys: pytest.CaptureFixture[str]) -> None:
    require_postgres()  # the example reads LANGCHAIN_OM_POSTGRES_URL, as the tests do
    out = run_example("postgres_memory.py", capsys)
    observed = number(r"(\d+) observed", out)
    assert observed > 0 and number(r"(\d+) archived in PostgreSQL", out) == observed


def test_redact_pii_example_keeps_personal_data_out(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("redact_pii.py", capsys)
    assert "observer prompt holds the email: False" in out
    assert "maya.lopez@example.com" not in out and "4111 1111" not in out
    assert "[email]" in out and "[phone]" in out and "[card]" in out


def test_read_only_example_reads_and_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("read_only.py", capsys)
    assert "User said: I moved to Lisbon in March." in out
    assert "reviewer model calls: 0" in out and "stored log unchanged: True" in out


def test_keep_last_messages_example_keeps_four(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("keep_last_messages.py", capsys)
    assert number(r"(\d+) observed", out) == 16
    assert "4 kept verbatim" in out and "human: Step 9 of the plan" in out


def test_custom_preamble_example_renders_and_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("custom_preamble.py", capsys)
    assert out.startswith("You are Maya's travel assistant. Today is ")
    assert "User said: I prefer aisle seats" in out
    assert "refused: preamble" in out and "{observation}" in out


def test_profile_extractor_example_keeps_a_typed_profile(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_example("profile_extractor.py", capsys)
    last = out.strip().splitlines()[-1]
    assert last.endswith("{'name': 'Maya', 'city': 'Porto', 'allergies': ['peanuts']}")


def test_working_memory_example_keeps_and_updates(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("working_memory.py", capsys)
    assert "kept by the Observer: '# About the user\\n- Location: Lisbon'" in out
    assert "<working-memory>\n# About the user\n- Location: Porto\n</working-memory>" in out


def test_cross_thread_example_shows_both_ways(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("cross_thread.py", capsys)
    assert "resource scope, new thread sees Oslo: True" in out
    assert "thread scope + recall, tools offered: ['recall']" in out


def test_per_tenant_schema_example_picks_the_schema_from_the_run_config(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_example("per_tenant_schema.py", capsys)
    assert "travel (ana): {'destination': 'Kyoto'}" in out
    assert "todo (ben): {'tasks': ['call']}" in out


def test_custom_guidance_example_replaces_the_guidance_and_drops_the_hints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_example("custom_guidance.py", capsys)
    assert "Observer follows the application's guidance: True" in out
    assert "built-in guidance left out: True" in out
    assert number(r"Reflector calls: (\d+)", out) >= 1
    assert "Reflector knows the Observer's guidance: True" in out
    assert "context shows observations: True" in out and "context shows hints: False" in out


def test_context_overflow_example_recovers_and_goes_on(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("context_overflow.py", capsys)
    assert number(r"overflows recovered: (\d+)", out) == 1
    assert number(r"messages freed: (\d+)", out) == number(r"observed: (\d+)", out) > 0
    assert "forced observation: True" in out
    assert "turn answered: Noted. · failure reasons: ['tier-exceeded']" in out


def test_memory_off_example_calls_and_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("memory_off.py", capsys)
    assert "memory calls in the request: 0" in out
    assert "store writes in the request: 0" in out
    assert "memory context shown: False" in out and "memory context shown again: True" in out


def test_pinned_title_example_keeps_the_users_title(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("pinned_title.py", capsys)
    first = number(r"Observer's title: Topic number (\d+)", out)
    assert "after more observations: Allotment plans · pinned: True" in out
    assert number(r"the Observer proposed: Topic number (\d+)", out) > first
    assert number(r"unpinned: Topic number (\d+) · pinned: False", out) > first


def test_archive_mode_example_reads_a_retired_group_back(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_example("archive_mode.py", capsys)
    assert number(r"(\d+) archive entries", out) >= 2
    shown = number(r"catalog shown to the agent \((\d+) tokens\)", out)
    assert 0 < shown <= 300
    assert "<archived-observation archive-id=" in out
    assert "User said: Day 0: today I sorted out the kitchen" in out  # word for word
    assert "cursor 'day-0'" in out


def test_receipts_example_names_the_source_messages(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("receipts.py", capsys)
    assert re.search(r"line L[0-9a-f]{6}: .*sister's wedding is on June 14", out)
    count = number(r"written from (\d+) messages", out)
    assert count > 0 and out.count("user-") + out.count("reply-") >= count
    assert "first source message: My sister's wedding is on June 14" in out
    assert number(r"tokens saved: (\d+)", out) > 0


def test_branch_recall_example_keeps_each_branch_apart(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("branch_recall.py", capsys)
    original, fork = out.splitlines()[:2]
    assert "'lis'" in original and "'por'" not in original and "lis-5-reply" in original
    assert "'por'" in fork and "'lis'" not in fork and "por-5-reply" in fork
    assert "'plan'" in original and "'plan'" in fork  # the shared past, before the fork


def test_recall_code_mode_example_computes_in_one_call(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("recall_code_mode.py", capsys)
    assert "tools the agent had: ['execute_memory_recall']" in out
    assert "{'totals': {'lunch': 21, 'books': 65}" in out and "(1 recall call)" in out


def test_forget_a_line_example_keeps_the_line_deleted(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_example("forget_a_line.py", capsys)
    assert "before: the log holds the code: True" in out
    assert "a reflection holding it is buffered: True" in out
    assert "after the delete, the log holds it: False" in out
    assert number(r"(\d+) reflection\(s\) later, the log holds it: False", out) >= 1


def test_resource_buffering_example_shares_one_users_memory(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = run_example("resource_buffering.py", capsys)
    assert number(r"buffers stored: (\d+)", out) >= 2
    assert number(r"chunks activated: (\d+)", out) >= 1
    assert "jo's other thread sees the ferry: True" in out
    assert "the Observer never read the card: True" in out
    assert "kim's memory holds nothing of jo: True" in out
