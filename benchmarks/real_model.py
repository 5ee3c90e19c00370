"""What memory made of a real model's replies: cycles, grounding, and the cost of a loop.

Reads the ``memory_calls.jsonl`` of a ``langchain-om eval --record-calls`` run (or a folder of
recorded raw replies) and replays every Observer reply through the stream cut, the parser and
the judge (``langchain_om.eval.recorded``), then checks every line memory would commit against
its batch with an independent rule (whole words; names and numbers must occur):

    python benchmarks/real_model.py benchmarks/results/eval-local-1.5b [--sample 12]

It prints a table of the replies (accepted, salvaged, rejected, tokens generated before memory
stopped each), the share of committed lines the independent check finds grounded, the tokens a
rejected reply costs beyond the text it kept, and a sample of committed lines beside the
message that supports them, for reading by eye. ``--out FILE`` also writes it as Markdown.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

from langchain_om._core.tokens import TokenCounter
from langchain_om.eval.recorded import check_lines, load_calls, replay


def _n(rows: list[tuple[object, ...]], outcome: str) -> int:
    return sum(1 for row in rows if row[0] == outcome)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="an eval --out folder, or a memory_calls.jsonl file")
    parser.add_argument("--sample", type=int, default=12, help="committed lines to show")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the report to this Markdown file")
    args = parser.parse_args(argv)
    path = Path(args.path)
    file = path / "memory_calls.jsonl" if path.is_dir() else path
    counter = TokenCounter()
    calls = [c for c in load_calls(file) if c.role == "observer"]
    replays = [replay(c, counter=counter) for c in calls]
    rows = []
    checks = []
    spent_rejected: list[int] = []
    for r in replays:
        outcome = (
            "rejected"
            if not r.verdict.accepted
            else ("salvaged" if r.verdict.salvaged else "accepted")
        )
        kept_tokens = counter.count_text(r.verdict.observations) if r.verdict.accepted else 0
        if outcome == "rejected":
            spent_rejected.append(r.generated_tokens)
        found = check_lines(r.lines, r.evidence)
        checks.extend(found)
        rows.append(
            (
                outcome,
                r.cut.reason if r.cut else "-",
                r.generated_tokens,
                kept_tokens,
                len(r.lines),
                sum(c.grounded for c in found),
                r.verdict.reason or "",
            )
        )
    out = [
        "# Observer replies replayed",
        "",
        f"File: `{file.name}` · {len(calls)} Observer calls",
        "",
    ]
    out += [
        "| # | outcome | stopped by | tokens generated | tokens kept | lines | grounded | reason |",
        "|---:|---|---|---:|---:|---:|---:|---|",
    ]
    out += [f"| {i} | " + " | ".join(str(x) for x in row) + " |" for i, row in enumerate(rows)]
    taken = [row for row in rows if row[0] != "rejected"]
    grounded = sum(c.grounded for c in checks)
    out += [
        "",
        f"- replies accepted {_n(rows, 'accepted')}, salvaged {_n(rows, 'salvaged')}, "
        f"rejected {_n(rows, 'rejected')} ({len(taken) / len(rows):.0%} taken)"
        if rows
        else "- no Observer call",
        f"- committed lines grounded (independent check): {grounded} of {len(checks)}",
        "- tokens a rejected reply generated before memory stopped it: "
        + (
            f"median {statistics.median(spent_rejected):.0f}, max {max(spent_rejected)}"
            if spent_rejected
            else "none rejected"
        ),
    ]
    sample = random.Random(args.seed).sample(checks, min(args.sample, len(checks)))
    if sample:
        out += ["", "Sample of committed lines and the message that supports them:", ""]
        for check in sample:
            mark = "ok" if check.grounded else f"NOT GROUNDED (missing {', '.join(check.missing)})"
            out += [f'- `{check.line.strip()[:160]}` ← "{check.best.strip()[:160]}" ({mark})']
    ungrounded = [c for c in checks if not c.grounded]
    if ungrounded:
        out += ["", "Lines the independent check does not find grounded:", ""]
        out += [
            f"- `{c.line.strip()[:160]}` (share {c.share:.2f}, missing {c.missing})"
            for c in ungrounded
        ]
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
