"""Which sampling keeps a small local model out of loops: recorded batches, asked again.

Takes the Observer calls of a ``langchain-om eval --record-calls`` run (their system prompt and
batch), asks a local OpenAI-compatible server the same prompts again with each sampling
setting, and prints, per setting, how many replies loop (replayed through memory's stream cut
and judge, ``langchain_om.eval.recorded``), the output tokens and the lines memory keeps:

    python -m langchain_om.local --model qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --port 8765 &
    python benchmarks/sampling_probe.py benchmarks/results/eval-local-1.5b/run-6-sessions \\
        --base-url http://127.0.0.1:8765/v1 --calls 4 --out probe.jsonl

Every raw reply is written to ``--out`` (one JSON object a line) for the fixtures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from langchain_om.eval.recorded import MemoryCall, load_calls, replay

SETTINGS: dict[str, dict[str, Any]] = {
    "none": {},
    "frequency_penalty=0.3": {"frequency_penalty": 0.3},
    "frequency_penalty=0.6": {"frequency_penalty": 0.6},
    "frequency_penalty=1.0": {"frequency_penalty": 1.0},
    "presence_penalty=1.0": {"presence_penalty": 1.0},
    "repeat_penalty=1.3": {"extra_body": {"repeat_penalty": 1.3}},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="an eval --out folder, or a memory_calls.jsonl file")
    parser.add_argument("--base-url", default="http://127.0.0.1:8765/v1")
    parser.add_argument("--calls", type=int, default=4, help="first N Observer calls")
    parser.add_argument("--settings", default=",".join(SETTINGS), help="comma-separated names")
    parser.add_argument("--max-tokens", type=int, default=500)
    parser.add_argument("--out", type=Path, help="write every raw reply here (JSONL)")
    args = parser.parse_args(argv)
    path = Path(args.path)
    path = path / "memory_calls.jsonl" if path.is_dir() else path
    calls = [c for c in load_calls(path) if c.role == "observer"][: args.calls]
    llm = ChatOpenAI(model="local", base_url=args.base_url, api_key="none", temperature=0)
    out = args.out.open("a", encoding="utf-8") if args.out else None
    print("| sampling | replies | looped | output tokens | lines kept | seconds |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in args.settings.split(","):
        looped = tokens = kept = 0
        started = time.monotonic()
        for index, call in enumerate(calls):
            prompt = [SystemMessage(call.system), HumanMessage(call.human)]
            reply = llm.invoke(prompt, max_tokens=args.max_tokens, **SETTINGS[name])
            text = str(reply.text)
            got = replay(MemoryCall(call.system, call.human, text, "observer", {}))
            looped += bool(got.cut and got.cut.reason == "loop")
            tokens += (reply.usage_metadata or {}).get("output_tokens", 0)
            kept += len([line for line in got.lines if not line.startswith((" ", "\t"))])
            if out is not None:
                row = {"setting": name, "call": index, "reply": text, "system": call.system}
                out.write(json.dumps({**row, "human": call.human}, ensure_ascii=False) + "\n")
        seconds = time.monotonic() - started
        print(f"| {name} | {len(calls)} | {looped} | {tokens} | {kept} | {seconds:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
