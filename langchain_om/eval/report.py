"""Reports of an evaluation run: per system, per category and overall; JSON, Markdown, PNG.

The figures come from the run's records only (:func:`summarize`), so a resumed run reports
exactly what an uninterrupted one would (apart from the seconds it measured).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["summarize", "to_markdown", "write_plot", "write_reports"]

_METRICS = ("f1", "em", "contains", "judge")


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _block(answers: Sequence[dict[str, Any]], primary: str) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(answers)}
    for metric in _METRICS:
        vals = [a["scores"][metric] for a in answers if a["scores"].get(metric) is not None]
        out[metric] = _mean(vals)
    out["score"] = out[primary]
    context = [a["context_tokens"] for a in answers]
    full = [a["full_tokens"] for a in answers]
    out["context_tokens"] = round(sum(context) / len(context)) if context else 0
    out["full_tokens"] = round(sum(full) / len(full)) if full else 0
    out["compression"] = (
        round(sum(full) / sum(context), 2) if context and sum(context) > 0 else None
    )
    invalid = sum(1 for a in answers if a["scores"].get("judge_invalid"))
    if invalid:
        out["judge_invalid"] = invalid
    return out


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The report: for each system its overall and per-category figures and memory costs."""
    runs = [r for r in records if r.get("kind") == "run"]
    identity = runs[0]["identity"] if runs else {}
    answers = [r for r in records if r.get("kind") == "answer"]
    judged = any(a["scores"].get("judge") is not None for a in answers)
    primary = "judge" if judged and identity.get("format") == "longmemeval" else "f1"
    systems: dict[str, Any] = {}
    order = [s for s in identity.get("systems", [])]
    order += sorted({a["system"] for a in answers} - set(order))
    for system in order:
        mine = [a for a in answers if a["system"] == system]
        if not mine:
            continue
        categories = sorted({a["category"] for a in mine})
        ingests = [r for r in records if r.get("kind") == "ingest" and r["system"] == system]
        tokens = sum(r["memory_input_tokens"] + r["memory_output_tokens"] for r in ingests)
        systems[system] = {
            "overall": _block(mine, primary),
            "categories": {
                c: _block([a for a in mine if a["category"] == c], primary) for c in categories
            },
            "memory": {
                "calls": sum(r["memory_calls"] for r in ingests),
                "tokens": tokens,
                "seconds": round(sum(r["memory_seconds"] for r in ingests), 2),
                "conversations": len(ingests),
                **_cycles(ingests, tokens),
            },
        }
    return {"identity": identity, "primary_metric": primary, "systems": systems}


_OUTCOMES = ("accepted", "salvaged", "rejected")


def _cycles(ingests: Sequence[dict[str, Any]], tokens: int) -> dict[str, Any]:
    """Memory's cycles by operation and outcome, their output tokens, and tokens per line."""
    tallies = [r["cycles"] for r in ingests if isinstance(r.get("cycles"), dict)]
    if not tallies:
        return {}
    out: dict[str, Any] = {}
    for key in ("counts", "output_tokens"):
        merged: dict[str, dict[str, int]] = {}
        for tally in tallies:
            for operation, row in tally.get(key, {}).items():
                into = merged.setdefault(operation, dict.fromkeys(_OUTCOMES, 0))
                for outcome, value in row.items():
                    into[outcome] = into.get(outcome, 0) + int(value)
        out["cycle_" + key] = merged
    lines = sum(int(t.get("lines", {}).get("observation", 0)) for t in tallies)
    out["observation_lines"] = lines
    out["tokens_per_line"] = round(tokens / lines, 1) if lines else None
    return out


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def to_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: one overall table, one per-category table."""
    ident = report["identity"]
    primary = report["primary_metric"]
    lines = [
        "# langchain-om eval",
        "",
        f"Format `{ident.get('format')}` · data `{ident.get('data')}` · answer model "
        f"`{ident.get('model')}` · memory model `{ident.get('memory_model')}` · score = "
        f"{primary}",
        "",
        "| System | Questions | Score | F1 | EM | Contains | Judge | Context tok | "
        "Compression | Memory calls | Memory tok | Memory s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, data in report["systems"].items():
        o, m = data["overall"], data["memory"]
        comp = f"{o['compression']:.1f}×" if o["compression"] is not None else "–"
        lines.append(
            f"| {name} | {o['questions']} | {_fmt(o['score'])} | {_fmt(o['f1'])} | "
            f"{_fmt(o['em'])} | {_fmt(o['contains'])} | {_fmt(o['judge'])} | "
            f"{_fmt(o['context_tokens'])} | {comp} | {_fmt(m['calls'])} | "
            f"{_fmt(m['tokens'])} | {_fmt(m['seconds'], 1)} |"
        )
    lines += _cycle_table(report)
    names = list(report["systems"])
    categories = sorted({c for d in report["systems"].values() for c in d["categories"]})
    if names and categories:
        lines += ["", f"Score ({primary}) per category:", ""]
        lines.append("| Category | " + " | ".join(names) + " |")
        lines.append("|---|" + "---:|" * len(names))
        for cat in categories:
            cells = []
            for name in names:
                block = report["systems"][name]["categories"].get(cat)
                cells.append(f"{_fmt(block['score'])} (n={block['questions']})" if block else "–")
            lines.append(f"| {cat} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cycle_table(report: dict[str, Any]) -> list[str]:
    """Memory's cycles per outcome (count and output tokens), and tokens per observation line."""
    rows: list[str] = []
    for name, data in report["systems"].items():
        memory = data["memory"]
        counts, spent = memory.get("cycle_counts"), memory.get("cycle_output_tokens")
        if not counts:
            continue
        for operation, row in counts.items():
            cells = [
                f"{row.get(o, 0)} ({spent.get(operation, {}).get(o, 0):,} tok)" for o in _OUTCOMES
            ]
            total = sum(row.get(o, 0) for o in _OUTCOMES)
            share = (row.get("accepted", 0) + row.get("salvaged", 0)) / total if total else 0.0
            per_line = memory.get("tokens_per_line") if operation == "observation" else None
            rows.append(
                f"| {name} | {operation} | " + " | ".join(cells) + f" | {share:.0%} | "
                f"{_fmt(memory.get('observation_lines')) if operation == 'observation' else '–'}"
                f" | {_fmt(per_line, 1)} |"
            )
    if not rows:
        return []
    return [
        "",
        "Memory's cycles (count, output tokens) and memory tokens spent per accepted "
        "observation line:",
        "",
        "| System | Cycle | Accepted | Salvaged | Rejected | Accepted share | Lines | "
        "Memory tok / line |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        *rows,
    ]


def write_plot(report: dict[str, Any], path: Path) -> Path | None:
    """A PNG of score per category and system, and context tokens per system.

    Returns ``None`` (and writes nothing) when matplotlib is not installed.
    """
    try:
        import matplotlib  # noqa: PLC0415 - optional extra "eval"

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415 - optional extra "eval"
    except ImportError:
        return None
    systems = report["systems"]
    names = list(systems)
    categories = sorted({c for d in systems.values() for c in d["categories"]}) + ["overall"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 1]})
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        blocks = [systems[name]["categories"].get(c) for c in categories[:-1]]
        blocks.append(systems[name]["overall"])
        scores = [(b["score"] or 0.0) if b else 0.0 for b in blocks]
        left.bar([x + i * width for x in range(len(categories))], scores, width, label=name)
    left.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(categories))])
    left.set_xticklabels(categories, rotation=20, ha="right")
    left.set_ylabel(report["primary_metric"])
    left.set_ylim(0, 1)
    left.legend()
    left.set_title("Score per category")
    right.bar(names, [systems[n]["overall"]["context_tokens"] for n in names])
    right.set_title("Context tokens")
    right.tick_params(axis="x", rotation=20)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_reports(records: Sequence[dict[str, Any]], out: Path) -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and ``report.png`` to ``out``; return the report."""
    report = summarize(records)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "report.md").write_text(to_markdown(report), encoding="utf-8")
    write_plot(report, out / "report.png")
    return report
