"""Write the README's result tables from the committed files in ``benchmarks/results/``.

Each table sits in ``README.md`` between two markers::

    <!-- readme-table: NAME (written by benchmarks/readme_tables.py from benchmarks/results) -->
    ...
    <!-- /readme-table: NAME -->

and is rebuilt from result files only, so the README never says what the files do not:

* ``performance``: the targets of ``compare.py`` (``compare.md``, ``compare.json``),
  ``turns.py`` (``turns.json``), ``tokens.py`` (``tokens.md``) and ``threads.py``
  (``threads.json``);
* ``workers``: ``workers.md``'s table;
* ``eval-scripted``: the offline eval of the README (``eval-scripted/report.json``);
* ``eval-local`` and ``eval-local-judged``: the runs with the bundled local model
  (``eval-local/*/report.json``).

Usage::

    python benchmarks/readme_tables.py                # rewrite the tables in README.md
    python benchmarks/readme_tables.py --check        # exit 1 if README.md differs
    python benchmarks/readme_tables.py --rerun-eval   # re-run the offline eval, then rewrite

The test suite runs the check, so a result file changed without the README fails it.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
README = ROOT / "README.md"

EVAL_DATA = "examples/data/eval/locomo_synthetic.json"
EVAL_COMMAND = ["eval", "--format", "locomo", "--data", EVAL_DATA, "--scripted"]
"""The offline eval the README shows (``langchain-om eval ...``), written to ``eval-scripted``."""

TURN_TARGET = 1.1
WHOLE_TARGET = 1.0
BACKGROUND_TARGET_MS = 0.5
FIRST_TURN_SLACK_S = 0.1
IMPORT_TARGET = 1.2
CACHE_TARGET = 20.0
BOOKKEEPING_TARGET_MS = 5.0
THREADS_TARGET = 1.2

_MARKER = re.compile(
    r"(<!-- readme-table: (?P<name>[\w-]+) [^>]*-->\n)(?P<body>.*?)"
    r"(<!-- /readme-table: (?P=name) -->)",
    re.DOTALL,
)


class ResultsError(Exception):
    """A result file is missing or does not hold what a table needs."""


# --- reading result files ---------------------------------------------------------------------


def _read(results: Path, name: str) -> str:
    path = results / name
    if not path.is_file():
        raise ResultsError(f"{path} is missing: run the benchmark that writes it")
    return path.read_text(encoding="utf-8")


def _json(results: Path, name: str) -> Any:
    return json.loads(_read(results, name))


def markdown_tables(text: str) -> list[list[dict[str, str]]]:
    """Every markdown table in ``text``, as rows keyed by the header cells."""
    tables: list[list[dict[str, str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines) - 1:
        head, rule = lines[i].strip(), lines[i + 1].strip()
        if head.startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", rule):
            headers = [c.strip() for c in head.strip("|").split("|")]
            rows: list[dict[str, str]] = []
            i += 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                rows.append(dict(zip(headers, cells, strict=True)))
                i += 1
            tables.append(rows)
        else:
            i += 1
    return tables


def _table_with(text: str, column: str, source: str) -> list[dict[str, str]]:
    for rows in markdown_tables(text):
        if rows and column in rows[0]:
            return rows
    raise ResultsError(f"{source} has no table with a {column!r} column")


def _number(cell: str) -> float:
    found = re.search(r"-?[\d,]*\.?\d+", cell)
    if found is None:
        raise ResultsError(f"no number in table cell {cell!r}")
    return float(found.group(0).replace(",", ""))


def _bracketed(cell: str) -> float:
    found = re.search(r"\(([\d.,]+)\)", cell)
    if found is None:
        raise ResultsError(f"no bracketed number in table cell {cell!r}")
    return float(found.group(1).replace(",", ""))


def _points(cells: Sequence[str]) -> str:
    return " / ".join(f"{int(_number(c)):,}".replace(",", " ") for c in cells)


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def render(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int]) -> str:
    """A compact markdown table (columns in ``right`` right-aligned)."""
    rule = "|" + "|".join("---:" if i in right else "---" for i in range(len(headers))) + "|"
    body = ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(["| " + " | ".join(headers) + " |", rule, *body])


# --- the tables -------------------------------------------------------------------------------


def _compare_rows(results: Path) -> dict[tuple[str, str], list[dict[str, str]]]:
    """``compare.md``'s per-turn rows by (store, setup), in the order of its turn points."""
    rows = _table_with(_read(results, "compare.md"), "vs summarizer", "compare.md")
    out: dict[tuple[str, str], list[dict[str, str]]] = {}
    for row in rows:
        out.setdefault((row["store"], row["setup"]), []).append(row)
    return out


def performance(results: Path) -> str:
    """The performance targets, from compare/turns/tokens/threads results."""
    rows = _compare_rows(results)
    om_mem, sum_mem = (
        rows[("InMemorySaver", "langchain-om")],
        rows[("InMemorySaver", "SummarizationMiddleware")],
    )
    om_sql, sum_sql = (
        rows[("SqliteSaver", "langchain-om")],
        rows[("SqliteSaver", "SummarizationMiddleware")],
    )
    turns = [r["turns"] for r in om_mem]
    points = _points(turns)
    mid = len(turns) // 2
    out: list[list[str]] = []
    for label, om, summ in (
        (
            "whole turn ≤ 1.1× `SummarizationMiddleware` (median CPU ms), InMemorySaver",
            om_mem,
            sum_mem,
        ),
        ("… SqliteSaver", om_sql, sum_sql),
    ):
        ratios = [_number(r["vs summarizer"]) for r in om]
        text = " / ".join(f"{x:.2f}×" for x in ratios)
        if label.startswith("whole"):
            text += f" at {points} turns"
        text += (
            f" ({_number(om[mid]['CPU ms (wall)']):.2f} vs "
            f"{_number(summ[mid]['CPU ms (wall)']):.2f} ms at {_points([turns[mid]])})"
        )
        out.append([label, text, _met(all(x <= TURN_TARGET for x in ratios))])
    for label, om in (
        (
            "whole cost ≤ 1.0× `SummarizationMiddleware` (memory's background work inside, CPU "
            "of all threads), InMemorySaver",
            om_mem,
        ),
        ("… SqliteSaver", om_sql),
    ):
        ratios = [_number(r["whole vs summarizer"]) for r in om]
        means = [_number(r["whole mean ms (vs summarizer)"].split("(")[1]) for r in om]
        text = " / ".join(f"{x:.2f}×" for x in ratios)
        if label.startswith("whole"):
            text += f" at {points} turns"
        text += " (median turn); " + " / ".join(f"{x:.2f}×" for x in means)
        text += " (mean over every turn since the previous point)"
        ok = all(x <= WHOLE_TARGET for x in [*ratios, *means])
        out.append([label, text, _met(ok)])

    def spread(values: list[float]) -> str:
        low, high = min(values), max(values)
        return f"{low:.2f} ms" if low == high else f"{low:.2f}–{high:.2f} ms"

    medians = {
        "InMemorySaver": [_number(r["background ms"]) for r in om_mem],
        "SQLite": [_number(r["background ms"]) for r in om_sql],
    }
    means = {
        "InMemorySaver": [_bracketed(r["background ms"]) for r in om_mem],
        "SQLite": [_bracketed(r["background ms"]) for r in om_sql],
    }
    spans = ", ".join(
        f"{_points([a])}–{_points([b])}" for a, b in zip(["0", *turns[:-1]], turns, strict=True)
    )
    out.append(
        [
            f"background CPU per turn ≤ {BACKGROUND_TARGET_MS} ms median (default buffering)",
            f"{spread(medians['InMemorySaver'])} (InMemorySaver), {spread(medians['SQLite'])} "
            "(SQLite); the mean over every turn (Observer and Reflector cycles of the in-process "
            "scripted model included) is "
            + " / ".join(f"{x:.1f}" for x in means["InMemorySaver"])
            + " ms (InMemorySaver) and "
            + " / ".join(f"{x:.1f}" for x in means["SQLite"])
            + f" ms (SQLite) over {spans} turns",
            _met(all(x <= BACKGROUND_TARGET_MS for v in medians.values() for x in v)),
        ]
    )
    start = _json(results, "compare.json")
    om_first, sum_first = start["first turn om"], start["first turn summarization"]
    out.append(
        [
            f"first turn ≤ the summarizer's first turn + {FIRST_TURN_SLACK_S} s",
            f"+{om_first:.3f} s vs +{sum_first:.3f} s (wall seconds over a later turn, median of "
            "fresh processes)",
            _met(om_first <= sum_first + FIRST_TURN_SLACK_S),
        ]
    )
    imp = start["import langchain_om"] / start["import langchain.agents"]
    out.append(
        [
            f"`import langchain_om` ≤ {IMPORT_TARGET}× `import langchain.agents`",
            f"{imp:.2f}× ({start['import langchain_om']:.2f} vs "
            f"{start['import langchain.agents']:.2f} s CPU)",
            _met(imp <= IMPORT_TARGET),
        ]
    )

    def kb(setup_rows: list[dict[str, str]], column: str) -> list[float]:
        return [_number(r[column]) for r in setup_rows]

    written = {
        name: (kb(om, "written/turn"), kb(summ, "written/turn"))
        for name, om, summ in (("InMemorySaver", om_mem, sum_mem), ("SQLite", om_sql, sum_sql))
    }
    out.append(
        [
            "checkpoint bytes written per turn ≤ the summarizer's",
            "; ".join(
                f"{name} {' / '.join(f'{x:.1f}' for x in om)} vs "
                f"{' / '.join(f'{x:.1f}' for x in summ)} KB"
                for name, (om, summ) in written.items()
            ),
            _met(
                all(o <= s for om, summ in written.values() for o, s in zip(om, summ, strict=True))
            ),
        ]
    )
    grown_om, grown_sum = kb(om_sql, "SQLite growth/turn"), kb(sum_sql, "SQLite growth/turn")
    arrows = ", ".join(
        f"{_points([a])}→{_points([b])}" for a, b in zip(["0", *turns[:-1]], turns, strict=True)
    )
    out.append(
        [
            "SQLite file growth per turn (default durability) ≤ the summarizer's",
            f"{' / '.join(f'{x:.1f}' for x in grown_om)} vs "
            f"{' / '.join(f'{x:.1f}' for x in grown_sum)} KB, each over the whole span since the "
            f"previous point ({arrows} turns, WAL included); the file also holds the archive and "
            "the log's groups, which the summarizer does not keep",
            _met(all(o <= s for o, s in zip(grown_om, grown_sum, strict=True))),
        ]
    )
    out += _token_rows(_read(results, "tokens.md"))
    out.append(_bookkeeping_row(_json(results, "turns.json")))
    out.append(_threads_row(_json(results, "threads.json")))
    return render(["target", "result", "met?"], out, right=())


def _token_rows(tokens_md: str) -> list[list[str]]:
    line = next((ln for ln in tokens_md.splitlines() if "cached vs cold" in ln), "")
    same, reloaded = (float(x) for x in re.findall(r"\*\*([\d.]+)×\*\*", line)[:2])
    fresh_line = next((ln for ln in tokens_md.splitlines() if "no process memo" in ln), "")
    fresh = float(re.findall(r"\*\*([\d.]+)×\*\*", fresh_line)[0])
    lowest = re.search(r"over (\d+) interleaved rounds.*?the lowest round: ([\d.]+)×", tokens_md)
    if not line or not fresh_line or lowest is None:
        raise ResultsError("tokens.md lacks its cached-vs-cold summary lines")
    rounds, low = lowest.group(1), float(lowest.group(2))
    return [
        [
            f"cached token counting ≥ {CACHE_TARGET:g}× cold, on copies reloaded from a checkpoint",
            f"{reloaded:.1f}× ({same:.1f}× same objects; lowest of {rounds} rounds {low:.1f}×), "
            "`tokens.py`",
            _met(reloaded >= CACHE_TARGET),
        ],
        [
            "… in a process that has not counted them yet",
            f"{fresh:.1f}×: plain text messages carry no cache entry (it would be copied into "
            "every checkpoint of the window); messages with tool calls, media or several parts do",
            "yes" if fresh >= CACHE_TARGET else "no (by choice)",
        ],
    ]


def _bookkeeping_row(turns: dict[str, Any]) -> list[str]:
    points = turns["points"]
    last = str(points[-1])
    book, growth = turns["targets"]["bookkeeping_ms"], turns["targets"]["bookkeeping_growth"]
    summ = turns["series"]["summarization"]["at"][last]["hooks_ms"]
    return [
        f"memory bookkeeping ≤ {BOOKKEEPING_TARGET_MS:g} ms median per turn at "
        f"{_points([last])} turns (`turns.py`)",
        f"{book:.2f} ms ({growth:.2f}× from {_points([str(points[-2])])} to {_points([last])} "
        f"turns; the summarizer's {summ:.2f} ms)",
        _met(book <= BOOKKEEPING_TARGET_MS),
    ]


def _threads_row(rows: list[dict[str, Any]]) -> list[str]:
    stores = list(dict.fromkeys(r["store"] for r in rows))
    by_store = {
        s: sorted((r for r in rows if r["store"] == s), key=lambda r: r["threads"]) for s in stores
    }
    sizes = _points([str(r["threads"]) for r in by_store[stores[0]]])
    cpu = ", ".join(
        f"{store} " + " / ".join(f"{r['turn_ms']:.2f}" for r in mine)
        for store, mine in by_store.items()
    )
    text = f"CPU ms at {sizes} threads: {cpu}"
    if "PostgreSQL" in by_store:
        wall = " / ".join(f"{r['wall_ms']:.2f}" for r in by_store["PostgreSQL"])
        text += f" (PostgreSQL wall, with the server's work: {wall}; a temporary schema per size)"
    memory = by_store.get("InMemoryStore")
    if memory:
        search = " / ".join(f"{r['search_ms']:.2f}" for r in memory)
        text += (
            f"; chunks read by key, while the namespace search turns used before costs {search} "
            "ms on InMemoryStore"
        )
    worst = max(r["ratio"] for r in rows)
    met = worst <= THREADS_TARGET
    label = ", ".join({"InMemoryStore": "in-memory"}.get(s, s) for s in stores)
    return [
        f"per-turn cost flat from {sizes.split(' / ')[0]} to {sizes.split(' / ')[-1]} threads "
        "(`threads.py`: step + background, one store per size, interleaved)",
        text,
        f"yes ({label})" if met else "**no**",
    ]


def workers(results: Path) -> str:
    """``workers.md``'s table, as ``workers.py`` wrote it."""
    text = _read(results, "workers.md")
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    if len(lines) < 3:
        raise ResultsError("workers.md holds no table")
    return "\n".join(lines)


def _eval_cells(system: dict[str, Any]) -> list[str]:
    overall, memory = system["overall"], system["memory"]
    return [
        f"{overall['score']:.3f}",
        f"{overall['context_tokens']:,}",
        f"{overall['compression']:.1f}×",
        f"{memory['calls']:,}",
        f"{memory['tokens']:,}",
    ]


def eval_scripted(results: Path) -> str:
    """The offline eval (``eval-scripted/report.json``): one row per system."""
    report = _json(results, "eval-scripted/report.json")
    rows = [[name, *_eval_cells(system)] for name, system in report["systems"].items()]
    headers = ["System", "Score (F1)", "Context tok", "Compression", "Memory calls", "Memory tok"]
    return render(headers, rows, right=range(1, 6))


LOCAL_RUNS = ("text-default", "text-compact", "structured-default", "structured-compact")
"""The local-model runs of the README's table, in its order (``eval-local/<run>``)."""


def _local_rows(results: Path, run: str, mode_note: str = "") -> list[list[str]]:
    report = _json(results, f"eval-local/{run}/report.json")
    identity = report["identity"]
    mode = f"{identity['om_output']}, {identity['om_prompt']}{mode_note}"
    rows: list[list[str]] = []
    for name, system in report["systems"].items():
        label, shown_mode = name, mode
        if name == "window":
            label = "window (OM's budget)"
        elif name == "summarization":
            label, shown_mode = f"summarization (summary ≤ {identity['summary_tokens']} tok)", "–"
        elif name == "full":
            shown_mode = "–"
        seconds = f"{system['memory']['seconds']:.0f}"
        rows.append([shown_mode, label, *_eval_cells(system), seconds])
    return rows


_LOCAL_HEADERS = [
    "OM output, prompt",
    "System",
    "F1",
    "Context tok",
    "Compression",
    "Memory calls",
    "Memory tok",
    "Memory s",
]


def eval_local(results: Path) -> str:
    """The bundled local model's runs: the baselines first, then each OM setting's rows."""
    rows = [row for run in LOCAL_RUNS for row in _local_rows(results, run)]
    baselines = [r for r in rows if r[0] == "–"]
    return render(_LOCAL_HEADERS, baselines + [r for r in rows if r[0] != "–"], right=range(2, 8))


def eval_local_judged(results: Path) -> str:
    """The re-run of the first local setting with judged Observer replies."""
    rows = _local_rows(results, "text-default-judged", " (judged)")
    return render(_LOCAL_HEADERS, rows, right=range(2, 8))


def bookkeeping(results: Path) -> str:
    """Memory's own work per turn, piece by piece, at the last point of ``bookkeeping.py``."""
    data = _json(results, "bookkeeping.json")
    last = str(data["points"][-1])
    om, floor = data["series"]["om"][last], data["series"]["floor"][last]
    rows = []
    for piece in (*data["pieces"], "total", "whole turn"):
        name = f"**{piece}**" if piece == "total" else piece
        a, b = om[piece], floor[piece]
        ratio = f"{a['median_ms'] / b['median_ms']:.1f}×" if b["median_ms"] > 0 else "—"
        rows.append(
            [
                name,
                f"{a['median_ms']:.3f} ({a['mean_ms']:.3f})",
                f"{b['median_ms']:.3f} ({b['mean_ms']:.3f})",
                ratio,
            ]
        )
    total = om["total"]["median_ms"]
    target = float(data["target_ms"])
    table_text = render(
        [f"piece (ms per turn at {int(last):,} turns)", "langchain-om", "floor", "ratio"],
        rows,
        right=(1, 2, 3),
    )
    verdict = "met" if total <= target else "**not met**"
    return (
        f"{table_text}\n\nMedian (mean in brackets) over the last {min(int(last) // 2, 200)} "
        f"turns; target: memory's own work ≤ {target:g} ms per turn: {total:.3f} ms, {verdict}."
    )


TABLES: dict[str, Callable[[Path], str]] = {
    "performance": performance,
    "bookkeeping": bookkeeping,
    "workers": workers,
    "eval-scripted": eval_scripted,
    "eval-local": eval_local,
    "eval-local-judged": eval_local_judged,
}


# --- the README -------------------------------------------------------------------------------


def rewrite(readme: str, results: Path = RESULTS) -> str:
    """``readme`` with every marked table rebuilt from ``results``.

    Raises:
        ResultsError: a marker names no known table, a table's marker is missing, or a
            result file lacks what a table needs.
    """
    seen: set[str] = set()

    def fill(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in TABLES:
            raise ResultsError(f"README.md marks an unknown table {name!r}")
        seen.add(name)
        return f"{match.group(1)}{TABLES[name](results)}\n{match.group(4)}"

    text = _MARKER.sub(fill, readme)
    missing = set(TABLES) - seen
    if missing:
        raise ResultsError(f"README.md has no markers for {', '.join(sorted(missing))}")
    return text


def rerun_eval(results: Path = RESULTS) -> None:
    """Re-run the README's offline eval into ``results/eval-scripted`` (deterministic)."""
    out = results / "eval-scripted"
    for name in ("records.jsonl", "report.json", "report.md", "report.png"):
        (out / name).unlink(missing_ok=True)  # a fresh run, not a resumed one
    command = [sys.executable, "-m", "langchain_om.cli", *EVAL_COMMAND, "--out", str(out)]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True)
    (out / "report.png").unlink(missing_ok=True)  # the README shows the table, not the plot
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    for system in report["systems"].values():
        system["memory"]["seconds"] = 0.0  # machine time: not a result of the scripted run
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md is stale")
    parser.add_argument("--rerun-eval", action="store_true", help="re-run the offline eval first")
    args = parser.parse_args(argv)
    if args.rerun_eval:
        rerun_eval()
    current = README.read_text(encoding="utf-8")
    try:
        fresh = rewrite(current)
    except ResultsError as exc:
        print(f"readme_tables: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if fresh != current:
            print(
                "README.md's tables differ from benchmarks/results: run "
                "python benchmarks/readme_tables.py",
                file=sys.stderr,
            )
            return 1
        return 0
    README.write_text(fresh, encoding="utf-8")
    print(f"wrote the tables of {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
