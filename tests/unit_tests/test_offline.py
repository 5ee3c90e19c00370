"""The offline extractive Observer: it copies key user sentences and never invents."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage

from langchain_om import ObservationalMemory
from langchain_om._core.acceptance import judge_observation
from langchain_om._core.observer import parse_observer_output
from langchain_om._core.retention import check_reflection
from langchain_om._core.tokens import get_default_counter
from langchain_om.offline import (
    OBSERVER_LABEL,
    answer,
    condense_text,
    extractive_observer,
    key_sentences,
    observe_text,
)
from tests.helpers import FIXED, ROOT


def count(text: str) -> int:
    return get_default_counter().count_text(text)


def test_key_sentences_keep_facts_and_drop_small_talk() -> None:
    text = "Hi! I'm Maya. The weather is nice. My budget is 1,400 EUR."
    kept = [s for s, _ in key_sentences(text)]
    assert kept == ["I'm Maya.", "My budget is 1,400 EUR."]
    assert key_sentences("Thanks, talk soon!") == []


def test_a_leading_no_that_carries_meaning_is_kept() -> None:
    kept = [s for s, _ in key_sentences("No lift on a 3rd floor is a no-go, I have a bad knee.")]
    assert kept == ["No lift on a 3rd floor is a no-go, I have a bad knee."]


def test_observations_are_copied_from_user_messages_only() -> None:
    history = (
        "Date: Nov 2, 2026\n"
        "User (09:00): I'm moving from Berlin to Lisbon in March.\n"
        "Assistant (09:01): Lisbon in March sounds lovely, I will book 3 flats for you.\n"
    )
    lines, task = observe_text(history)
    assert lines.splitlines() == [
        "Date: Nov 2, 2026",
        "* 🔴 (09:00) User: I'm moving from Berlin to Lisbon in March.",
    ]
    assert task == "I'm moving from Berlin to Lisbon in March."


def test_every_line_of_the_demo_memory_is_a_sentence_of_the_conversation() -> None:
    text = (ROOT / "examples/data/demo.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    user_text = " ".join(" ".join(r["content"].split()) for r in rows if r["role"] == "user")
    memory = ObservationalMemory(
        model=extractive_observer(),
        observation={"message_tokens": 300, "buffer_tokens": False},
        clock=lambda: FIXED,
    )
    messages = [
        HumanMessage(r["content"]) if r["role"] == "user" else AIMessage(r["content"])
        for r in rows
        if r["role"] in ("user", "assistant")
    ]
    snap = memory.observe(thread_id="demo", messages=messages)
    bullets = [line for line in snap.observations.splitlines() if line.startswith("* ")]
    assert len(bullets) >= 10
    for line in bullets:
        sentence = line.split(" User: ", 1)[1]
        assert sentence in user_text, line
    for fact in ("Maya", "Lisbon", "1,400 EUR", "ES-04", "bad knee", "Pixel"):
        assert fact in snap.observations


def test_answers_pass_the_observation_acceptance_check() -> None:
    prompt = (
        "## New Messages to Observe\n\nDate: Nov 2, 2026\n"
        "User (09:00): My cat Pixel has her rabies shot on January 10.\n"
    )
    output = parse_observer_output(answer(prompt))
    verdict = judge_observation(output, input_tokens=40, observation_tokens=1_000, count=count)
    assert verdict.accepted, verdict.reason
    assert output.current_task is not None and "Pixel" in output.current_task


def test_condensing_drops_repeats_and_low_lines_but_keeps_every_high_line() -> None:
    high = [f"* 🔴 (09:{i:02d}) User: Flat ES-{i:02d} costs {1000 + i} EUR." for i in range(12)]
    medium = [f"* 🟡 (10:{i:02d}) User: Maybe look at area {i} later." for i in range(12)]
    low = ["* 🟢 (11:00) User: The weather is fine today."]
    log = "\n".join(["Date: Nov 2, 2026", *high, *medium, *low, *high[:3]])
    condensed = condense_text(log)
    lines = condensed.splitlines()
    assert all(line in lines for line in high)
    assert sum("🟡" in line for line in lines) == 6 and "🟢" not in condensed
    verdict = check_reflection(
        log, condensed, input_tokens=count(log), output_tokens=count(condensed), target_tokens=400
    )
    assert verdict.accepted, verdict.reason


def test_the_label_says_what_it_means_for_quality() -> None:
    assert "no LLM" in OBSERVER_LABEL and "real model" in OBSERVER_LABEL
