"""Run the notebooks and compare their outputs: ``python -m tests.notebooks`` rewrites them.

The notebooks in ``notebooks/`` are committed with their outputs so a reader on a code host sees
the plots and the memory views. ``make notebooks`` runs this module from the repository root: it
executes every notebook in place (offline: they use scripted models). The integration test
executes them again in a temporary directory and compares the fresh outputs with the committed
ones through :func:`fingerprint`, which ignores what changes from run to run (times, dates, ids,
memory addresses, execution counts, image bytes).
"""

from __future__ import annotations

import asyncio
import re
import struct
import sys
from base64 import b64decode
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbclient
import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TIMEOUT = 300

_VOLATILE = [
    # ISO timestamps and dates, with or without seconds, fraction, zone
    (r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?", "<time>"),
    (r"\b\d{4}-\d\d-\d\d\b", "<date>"),
    (r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{1,2}, \d{4}\b", "<date>"),
    (r"\b\d\d:\d\d(:\d\d)?\b", "<clock>"),
    # labels relative to today: "(today)", "(3 days ago)", "(in 2 weeks)"
    (r"\((today|yesterday|tomorrow|in \d+ \w+|\d+ \w+ ago|\d+ \w+ from now)\)", "(<when>)"),
    (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<id>"),
    (r"lc_run--[0-9a-f-]+", "<id>"),
    (r"\b[0-9a-f]{16}\b", "<id>"),
    (r"\b0x[0-9a-f]{6,}\b", "<addr>"),
    (r"duration_ms\W+\d+", "duration_ms <n>"),
    (r"\d+(\.\d+)? ?(ms|s)\b", "<duration>"),
]
_PATTERNS = [(re.compile(pattern), repl) for pattern, repl in _VOLATILE]


def normalise(text: str) -> str:
    """``text`` with what changes between runs replaced by placeholders."""
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text.rstrip()


def png_size(data: str) -> tuple[int, int]:
    """(width, height) in pixels of a base64 PNG, from its IHDR header."""
    raw = b64decode(data)
    if raw[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", raw[16:24])
    return int(width), int(height)


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _output_print(output: dict[str, Any]) -> tuple[Any, ...]:
    kind = output.get("output_type")
    if kind == "stream":
        return (kind, output.get("name"), normalise(_text(output.get("text", ""))))
    if kind == "error":
        return (kind, output.get("ename"), normalise(str(output.get("evalue"))))
    data = output.get("data", {})
    shown: list[tuple[str, Any]] = []
    for mime in sorted(data):
        if mime == "image/png":
            shown.append((mime, png_size(_text(data[mime]))))
        elif mime.startswith("text/"):
            shown.append((mime, normalise(_text(data[mime]))))
        else:
            shown.append((mime, None))
    return (kind, tuple(shown))


def _merged(outputs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Outputs with consecutive stream chunks of one stream joined (chunking varies)."""
    merged: list[dict[str, Any]] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (
            last is not None
            and output.get("output_type") == "stream"
            and last.get("output_type") == "stream"
            and last.get("name") == output.get("name")
        ):
            last["text"] = _text(last["text"]) + _text(output.get("text", ""))
        else:
            merged.append(dict(output))
    return merged


def fingerprint(nb: Any) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Per code cell: its source and its outputs, normalised (see the module docstring)."""
    return [
        (_text(cell.source), [_output_print(o) for o in _merged(cell.get("outputs", []))])
        for cell in nb.cells
        if cell.cell_type == "code"
    ]


def client(nb: Any, cwd: Path) -> nbclient.NotebookClient:
    """A client that runs ``nb`` with the kernel of this interpreter, in ``cwd``."""
    # kernel "python3" (argv "python") runs the interpreter running this code
    return nbclient.NotebookClient(
        nb,
        timeout=TIMEOUT,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(cwd)}},
    )


async def _execute_all(notebooks: Sequence[Any], cwd: Path) -> None:
    await asyncio.gather(*(client(nb, cwd).async_execute() for nb in notebooks))


def execute_all(notebooks: Sequence[Any], cwd: Path) -> None:
    """Execute ``notebooks`` (nbformat nodes, changed in place) side by side."""
    asyncio.run(_execute_all(notebooks, cwd))


def main(paths: Sequence[Path] = NOTEBOOKS) -> None:
    """Execute every notebook in place from the repository root and write it back."""
    notebooks = [nbformat.read(path, as_version=4) for path in paths]  # type: ignore[no-untyped-call]
    execute_all(notebooks, ROOT)
    for path, nb in zip(paths, notebooks, strict=True):
        nbformat.write(nb, path)  # type: ignore[no-untyped-call]
        print(f"executed {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main([Path(p).resolve() for p in sys.argv[1:]] or NOTEBOOKS)
