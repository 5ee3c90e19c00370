"""Run every benchmark and write ``benchmarks/results/README.md`` and ``turns.png``.

Runs, one after the other, each in its own process:

* ``turns.py``: per-turn overhead, checkpoint size, SQLite size and peak RSS of four setups;
* ``tokens.py``: token counting throughput (cold, cached, approximate, raw tiktoken);
* ``recall.py``: recall page reads at two archive sizes;
* ``compare.py``: a whole turn beside the summarizer, a plain agent and a floor middleware on
  InMemorySaver and SqliteSaver (CPU/wall, the whole cost with memory's background work,
  bytes written per turn, startup);
* ``bookkeeping.py``: memory's own work per turn, piece by piece, beside a floor middleware;
* ``threads.py`` (full and quick runs; the tests run its smoke mode on their own): the
  per-turn cost on a store holding 100, 1 000 and 5 000 other threads;

then writes a short markdown report (the targets first, then each script's tables) and a PNG
plot of per-turn time against turns.

Usage::

    python benchmarks/report.py            # full runs (several minutes)
    python benchmarks/report.py --quick    # quick runs (a couple of minutes)
    python benchmarks/report.py --smoke    # smallest runs, for the tests
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from _common import RESULTS, machine, table

HERE = Path(__file__).parent
TARGET_MS = 5.0
TARGET_GROWTH = 1.5
TARGET_CACHE = 20.0
TARGET_THREADS = 1.2
"""Most a turn may cost at the most threads, as a multiple of its cost at the fewest."""


def run(script: str, *args: str, capture: bool = False) -> str:
    """Run ``benchmarks/<script>`` with this interpreter; return its stdout if captured."""
    cmd = [sys.executable, str(HERE / script), *args]
    print(f"$ {' '.join([Path(cmd[0]).name, *cmd[1:]])}", flush=True)
    done = subprocess.run(cmd, check=True, text=True, capture_output=capture)
    if capture:
        print(done.stdout, end="", flush=True)
        return done.stdout
    return ""


def run_all(mode: str, out: Path) -> str:
    """Run the scripts in ``mode`` (full, quick or smoke); return recall.py's output."""
    turns_args = [] if mode == "full" else [f"--{mode}"]
    run("turns.py", *turns_args, "--out", str(out / "turns.md"), "--json", str(out / "turns.json"))
    tokens_args = [] if mode == "full" else ["--quick"]
    if mode == "smoke":
        tokens_args += ["--runs", "1"]
    run("tokens.py", *tokens_args, "--out", str(out / "tokens.md"))
    recall_args = [] if mode == "full" else ["--quick"]
    if mode == "smoke":
        recall_args += ["--no-sqlite", "--reads", "20"]
    recall = run("recall.py", *recall_args, capture=True)
    compare_args = {"full": ["--full"], "quick": [], "smoke": ["--smoke"]}[mode]
    run("compare.py", *compare_args, "--out", str(out / "compare.md"))
    book_args = {"full": [], "quick": ["--quick"], "smoke": ["--smoke"]}[mode]
    run("bookkeeping.py", *book_args, "--out", str(out / "bookkeeping.md"))
    if mode != "smoke":
        run("threads.py", "--out", str(out / "threads.md"))
    return recall


def plot(data: dict[str, Any], path: Path) -> None:
    """Per-turn time against turns: memory bookkeeping (left), whole turn (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    styles = {"plain": "k--", "om": "C0-", "summarization": "C1-", "langmem": "C2-"}
    for name, series in data["series"].items():
        label = data["labels"][name]
        style = styles.get(name, "-")
        marker = "o" if name == "plain" else None
        for axis, key in ((left, "hooks_ms"), (right, "turn_ms")):
            points = series[key]
            if not points or (key == "hooks_ms" and name == "plain"):
                continue
            xs, ys = zip(*points, strict=True)
            axis.plot(xs, ys, style, label=label, marker=marker, markersize=3, linewidth=1.4)
    left.axhline(TARGET_MS, color="red", linewidth=0.8, linestyle=":", label="target (5 ms)")
    left.set_title("Memory bookkeeping per turn (hooks only)")
    right.set_title("Whole turn (agent.invoke, instant model)")
    for axis in (left, right):
        axis.set_xscale("log")
        axis.set_xlabel("turn")
        axis.set_ylabel("median ms per turn")
        axis.grid(True, which="both", alpha=0.3)
    right.set_yscale("log")
    left.set_ylim(bottom=0)
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    fig.suptitle(f"langchain-om benchmarks ({data['meta']['mode']}): {data['meta']['machine']}")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _body(markdown: str) -> str:
    """A script's markdown without its title, headings demoted one level."""
    lines = markdown.strip().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join("#" + line if line.startswith("#") else line for line in lines).strip()


def cache_speedups(tokens_md: str) -> list[float]:
    """The cached-vs-cold speedups tokens.py reports (same objects, reloaded copies)."""
    line = next((ln for ln in tokens_md.splitlines() if "cached vs cold" in ln), "")
    return [float(x) for x in re.findall(r"\*\*([\d.]+)×\*\*", line)]


def targets(
    data: dict[str, Any], tokens_md: str, extra: list[list[str]] | None = None
) -> list[str]:
    points = data["points"]
    lo, hi = (points[-2], points[-1]) if len(points) > 1 else (points[0], points[0])
    rows: list[list[str]] = []
    om = data["series"].get("om")
    if om is not None:
        book_hi = om["at"][str(hi)]["hooks_ms"]
        book_lo = om["at"][str(lo)]["hooks_ms"]
        rows.append(
            [
                f"memory bookkeeping ≤ {TARGET_MS:g} ms median per turn at {hi:,} turns",
                f"{book_hi:.2f} ms",
                "met" if book_hi <= TARGET_MS else "**not met**",
            ]
        )
        growth = book_hi / book_lo
        rows.append(
            [
                f"bookkeeping growth ≤ {TARGET_GROWTH}× from {lo:,} to {hi:,} turns",
                f"{growth:.2f}×",
                "met" if growth <= TARGET_GROWTH else "**not met**",
            ]
        )
        om_growth = om["at"][str(hi)]["checkpoint_bytes"] / om["at"][str(lo)]["checkpoint_bytes"]
        text = f"OM {om_growth:.2f}×"
        flat = om_growth <= 1.5
        plain = data["series"].get("plain")
        if plain is not None:
            pg = plain["at"][str(hi)]["checkpoint_bytes"] / plain["at"][str(lo)]["checkpoint_bytes"]
            text += f", plain agent {pg:.2f}× (for {hi / lo:g}× the turns)"
            flat = flat and pg >= 0.8 * hi / lo
        rows.append(
            [
                "checkpoint size flat in turns while the plain agent's grows linearly",
                text,
                "met" if flat else "**not met**",
            ]
        )
    speedups = cache_speedups(tokens_md)
    for label, value in zip(
        ["same message objects (recount within a run)", "reloaded copies (next run)"],
        speedups,
        strict=False,
    ):
        rows.append(
            [
                f"cached counting ≥ {TARGET_CACHE:g}× faster than cold: {label}",
                f"{value:.1f}×",
                "met" if value >= TARGET_CACHE else "**not met**",
            ]
        )
    rows += extra or []
    return table(["target", "result", "status"], rows, left=1)


def thread_targets(path: Path) -> list[list[str]]:
    """One target row per store of ``threads.py``'s JSON: the turn at most threads vs fewest."""
    if not path.exists():
        return []
    rows: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    out: list[list[str]] = []
    for store in dict.fromkeys(r["store"] for r in rows):
        mine = sorted((r for r in rows if r["store"] == store), key=lambda r: r["threads"])
        worst = max(r["ratio"] for r in mine)
        out.append(
            [
                f"per-turn cost flat from {mine[0]['threads']:,} to {mine[-1]['threads']:,} "
                f"threads ({store}, ≤ {TARGET_THREADS}× at fewest)",
                f"{worst:.2f}× at most",
                "met" if worst <= TARGET_THREADS else "**not met**",
            ]
        )
    return out


def write_report(out: Path, mode: str, recall_output: str) -> Path:
    """Write ``README.md`` and ``turns.png`` in ``out`` from the scripts' outputs there."""
    data = json.loads((out / "turns.json").read_text(encoding="utf-8"))
    turns_md = (out / "turns.md").read_text(encoding="utf-8")
    tokens_path = out / "tokens.md"
    tokens_md = tokens_path.read_text(encoding="utf-8") if tokens_path.exists() else ""
    plot(data, out / "turns.png")
    command = "python benchmarks/report.py" + ("" if mode == "full" else f" --{mode}")
    parts = [
        "# Benchmarks",
        "",
        f"Written by `{command}` (`make bench`) on {machine()}. Each script compares its "
        "setups in one run on one machine; these machines are noisy, so read the medians and "
        "the ratios rather than the absolute milliseconds.",
        "",
        "## Targets",
        "",
        *targets(data, tokens_md, [] if mode == "smoke" else thread_targets(out / "threads.json")),
        "",
        "![Per-turn time against turns](turns.png)",
        "",
        "## Per-turn overhead, checkpoints, storage and RSS (`benchmarks/turns.py`)",
        "",
        _body(turns_md),
    ]
    sections = [
        ("compare.md", "Beside the alternatives (`benchmarks/compare.py`)"),
        ("bookkeeping.md", "Memory's own work, piece by piece (`benchmarks/bookkeeping.py`)"),
    ]
    if mode != "smoke":
        sections.append(("threads.md", "Threads in the store (`benchmarks/threads.py`)"))
    for name, title in sections:
        path = out / name
        if path.exists():
            parts += ["", f"## {title}", "", _body(path.read_text(encoding="utf-8"))]
    if tokens_md:
        parts += ["", "## Token counting (`benchmarks/tokens.py`)", "", _body(tokens_md)]
    if recall_output.strip():
        parts += [
            "",
            "## Recall page reads (`benchmarks/recall.py`)",
            "",
            "```text",
            recall_output.strip(),
            "```",
        ]
    readme = out / "README.md"
    readme.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return readme


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="quick runs")
    mode.add_argument("--smoke", action="store_true", help="smallest runs (tests)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    name = "smoke" if args.smoke else "quick" if args.quick else "full"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    recall_output = run_all(name, args.out_dir)
    (args.out_dir / "recall.txt").write_text(recall_output, encoding="utf-8")
    readme = write_report(args.out_dir, name, recall_output)
    print(f"wrote {readme} and {args.out_dir / 'turns.png'}")


if __name__ == "__main__":
    main()
