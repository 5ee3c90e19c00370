"""The README's main job, run exactly as written, holds the demo's key facts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import ROOT

COMMAND = "replay examples/data/demo.jsonl"
FACTS = {
    "Maya": ("Maya",),
    "Berlin to Lisbon in March": ("Berlin to Lisbon in March",),
    "the 1,400 EUR budget": ("1,400 EUR",),
    "the chosen flat ES-04": ("ES-04 sounds best", "contract for ES-04"),
    "the bad knee": ("bad knee",),
    "the cat Pixel": ("cat Pixel",),
}


def test_readme_states_the_command() -> None:
    assert f".venv/bin/langchain-om {COMMAND}" in (ROOT / "README.md").read_text()


def test_the_main_job_prints_a_memory_with_the_demo_facts(tmp_path: Path) -> None:
    (tmp_path / "examples/data").mkdir(parents=True)
    shutil.copy(ROOT / "examples/data/demo.jsonl", tmp_path / "examples/data/demo.jsonl")
    script = Path(sys.executable).with_name("langchain-om")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "langchain_om.cli"]
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    started = time.monotonic()
    done = subprocess.run(
        [*command, *COMMAND.split()],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "offline extractive Observer (no LLM" in out
    memory = out.split("What memory holds now:", 1)[1]
    held = [name for name, needles in FACTS.items() if any(n in memory for n in needles)]
    assert len(held) >= 4, (held, memory)
    assert "failed" not in out
    assert took < 120
