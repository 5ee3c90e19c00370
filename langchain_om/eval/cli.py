"""``langchain-om eval``: measure what memory remembers, against the alternatives.

Registered on the main command line by :func:`add_eval_command`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from langchain_om._core.output_modes import is_loopback_url
from langchain_om._core.tokens import get_default_counter
from langchain_om.eval.data import FORMATS, load_dataset
from langchain_om.eval.models import scripted_answerer, scripted_judge, scripted_summarizer
from langchain_om.eval.report import to_markdown, write_reports
from langchain_om.eval.runner import EvalRunError, RunSettings, run_eval
from langchain_om.eval.systems import FRONT_DOORS, SYSTEMS, SystemSettings, summary_budget
from langchain_om.local import start_local_server
from langchain_om.models import resolve_model_string
from langchain_om.testing import memory_model

__all__ = ["add_eval_command", "cmd_eval"]

SCRIPTED_THRESHOLDS = (200, 400)
"""(message_tokens, observation_tokens) with ``--scripted``: the small fixtures observe."""
LOCAL_CONTEXT = 8192
DEFAULT_WINDOW = 128_000
LOCAL_THRESHOLDS = (1_500, 2_500)
"""(message_tokens, observation_tokens) with the local model: its prompts fit its window."""

EPILOG = """examples:
  langchain-om eval --format locomo --data examples/data/eval/locomo_synthetic.json --scripted
  langchain-om eval --format longmemeval --data lme.json --model openai/gpt-5-mini \\
      --judge-model openai/gpt-5-mini --limit 50 --seed 1 --out eval-lme
  langchain-om eval --format jsonl --data mine.jsonl --systems om,window --model local
"""


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive number")
    return value


def add_eval_command(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``eval`` subcommand to the ``langchain-om`` subparsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "eval",
        help="score memory against full context, a window and summarization",
        description=(
            "Feed each conversation of a benchmark file through memory and the baselines, "
            "ask its questions with one prompt and one answer model, score the answers and "
            "write report.json, report.md and report.png. Interrupted runs resume."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--format", required=True, choices=FORMATS, help="the data file format")
    parser.add_argument("--data", required=True, help="the data file")
    parser.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help=f"comma-separated, from {','.join(SYSTEMS)} (default: all)",
    )
    parser.add_argument("--model", help='answer model, e.g. "openai/gpt-5-mini", or "local"')
    parser.add_argument(
        "--memory-model", help="Observer/Reflector/summary model (default: --model)"
    )
    parser.add_argument("--judge-model", help="LLM judge (LongMemEval question types)")
    parser.add_argument(
        "--base-url",
        help="an OpenAI-compatible server (e.g. one `langchain-om serve` runs) for every model "
        "of the run; --model names the model it serves",
    )
    parser.add_argument(
        "--record-calls",
        action="store_true",
        help="write every memory-model call (prompt and raw reply) to memory_calls.jsonl in --out",
    )
    parser.add_argument("--out", default="eval-out", help="output folder (default: eval-out)")
    parser.add_argument("--limit", type=_positive, help="answer N sampled questions")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampling (default 0)")
    parser.add_argument("--scripted", action="store_true", help="offline scripted models")
    parser.add_argument(
        "--front-door", choices=FRONT_DOORS, default="agent", help="how OM reads (default agent)"
    )
    parser.add_argument("--message-tokens", type=_positive, help="OM observes above this")
    parser.add_argument("--observation-tokens", type=_positive, help="OM reflects above this")
    parser.add_argument(
        "--summary-tokens",
        type=_positive,
        help="longest summary of the summarization baseline (default: message_tokens / 4)",
    )
    parser.add_argument(
        "--context-window",
        type=_positive,
        help="the answer model's window in tokens: full is cut to it (default: the model "
        f"profile's max_input_tokens, else {DEFAULT_WINDOW:,})",
    )
    parser.add_argument(
        "--om-output",
        choices=("text", "structured", "auto"),
        default="text",
        help="OM's observation.output and reflection.output (default text)",
    )
    parser.add_argument(
        "--om-prompt",
        choices=("default", "compact", "auto"),
        default="default",
        help="OM's observation.prompt (default: default)",
    )
    parser.add_argument(
        "--om-part-tokens",
        help="OM's observation.part_tokens: 'auto' (default), a token count, or 'off'",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="more output")
    parser.add_argument("--slow-ms", type=int, default=None, help=argparse.SUPPRESS)
    parser.set_defaults(handler=cmd_eval)
    return parser


@contextlib.contextmanager
def _models(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    if args.scripted:
        yield {
            "answer": scripted_answerer(slow_ms=args.slow_ms),
            "memory": memory_model(words=10),
            "summarizer": scripted_summarizer(),
            "judge": scripted_judge(),
            "thresholds": SCRIPTED_THRESHOLDS,
            "local": False,
        }
        return
    if not args.model:
        raise EvalRunError("pass --model provider/name (or --model local, or --scripted)")
    if args.base_url:
        yield _served(args)
        return
    specs = {"answer": args.model, "memory": args.memory_model or args.model}
    if args.judge_model:
        specs["judge"] = args.judge_model
    with contextlib.ExitStack() as stack:
        server = None
        built: dict[str, Any] = {
            "thresholds": None,
            "summarizer": None,
            "judge": None,
            "local": False,
        }
        for role, spec in specs.items():
            if spec == "local":
                if server is None:
                    server = stack.enter_context(start_local_server(n_ctx=LOCAL_CONTEXT))
                built[role] = server.chat_model(max_tokens=400, temperature=0)
            else:
                built[role] = resolve_model_string(spec)
        if server is not None:
            built["thresholds"] = LOCAL_THRESHOLDS
            built["local"] = True
        yield built


def _served(args: argparse.Namespace) -> dict[str, Any]:
    """The models of a run on one OpenAI-compatible server (``--base-url``)."""
    try:
        from langchain_openai import ChatOpenAI  # noqa: PLC0415 - optional extra "openai"
    except ImportError as exc:
        raise EvalRunError(
            '--base-url needs langchain-openai: pip install "langchain-om[openai]"'
        ) from exc

    def client(name: str, **kwargs: Any) -> BaseChatModel:
        options: dict[str, Any] = {"api_key": "none", "temperature": 0, "max_retries": 0}
        return ChatOpenAI(model=name, base_url=args.base_url, **(options | kwargs))

    return {
        "answer": client(args.model, max_tokens=64),
        "memory": client(args.memory_model or args.model),
        "summarizer": None,
        "judge": client(args.judge_model) if args.judge_model else None,
        "thresholds": None,
        "local": is_loopback_url(args.base_url),
    }


def _profile_window(model: Any) -> int:
    profile = getattr(model, "profile", None) or {}
    value = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    return int(value) if isinstance(value, int) and value > 0 else DEFAULT_WINDOW


def _identity(
    args: argparse.Namespace, systems: list[str], thresholds: tuple[int, int], window: int
) -> dict[str, Any]:
    return {
        "format": args.format,
        "data": Path(args.data).name,
        "systems": systems,
        "model": "scripted" if args.scripted else args.model,
        "memory_model": "scripted" if args.scripted else (args.memory_model or args.model),
        "judge_model": "scripted" if args.scripted else args.judge_model,
        "front_door": args.front_door,
        "message_tokens": thresholds[0],
        "observation_tokens": thresholds[1],
        "context_window": window,
        "limit": args.limit,
        "seed": args.seed,
        "om_output": args.om_output,
        "om_prompt": args.om_prompt,
        "om_part_tokens": args.om_part_tokens,
        "base_url": bool(args.base_url),
    }


def _om_options(args: argparse.Namespace, *, local: bool) -> dict[str, Any]:
    observation: dict[str, Any] = {"output": args.om_output, "prompt": args.om_prompt}
    if args.om_part_tokens:
        value = args.om_part_tokens.strip().lower()
        observation["part_tokens"] = (
            False if value == "off" else value if value == "auto" else _positive(value)
        )
    if local:
        # The local model serves one call at a time: observe in the turn, not ahead of it.
        observation["buffer_tokens"] = False
    return {"observation": observation, "reflection": {"output": args.om_output}}


CALLS_FILE = "memory_calls.jsonl"
"""Where ``--record-calls`` writes the memory model's calls, one JSON object a line."""


def _recorder(out: Path) -> Any:
    out.mkdir(parents=True, exist_ok=True)
    path = out / CALLS_FILE
    lock = threading.Lock()

    def record(call: dict[str, Any]) -> None:
        with lock, path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(call, ensure_ascii=False) + "\n")

    return record


def cmd_eval(args: argparse.Namespace, console: Any = None) -> int:
    """Run ``langchain-om eval`` (the handler of :func:`add_eval_command`)."""
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    dataset = load_dataset(args.format, args.data)
    out = Path(args.out)
    with _models(args) as models:
        defaults = models["thresholds"] or (30_000, 40_000)
        thresholds = (
            args.message_tokens or defaults[0],
            args.observation_tokens or defaults[1],
        )
        window = args.context_window or _profile_window(models["answer"])
        if models["local"] and not args.base_url:
            window = min(window, LOCAL_CONTEXT - 1_000)
        counter = get_default_counter()
        shared = SystemSettings(
            memory_model=models["memory"],
            counter=counter,
            message_tokens=thresholds[0],
            observation_tokens=thresholds[1],
            context_window=window,
            front_door=args.front_door,
            summarizer=models["summarizer"],
            summary_tokens=args.summary_tokens,
            om_options=_om_options(args, local=models["local"]),
            recorder=_recorder(out) if args.record_calls else None,
        )
        judge: BaseChatModel | None = models["judge"]
        if args.format != "longmemeval" and not args.judge_model:
            judge = None
        settings = RunSettings(
            systems=tuple(systems),
            answer_model=models["answer"],
            systems_settings=shared,
            out=out,
            judge_model=judge,
            limit=args.limit,
            seed=args.seed,
            identity=_identity(args, systems, thresholds, window)
            | {"summary_tokens": summary_budget(shared)},
        )
        records = run_eval(dataset, settings, progress=None)
    report = write_reports(records, out)
    print(to_markdown(report))
    print(f"Reports: {out / 'report.md'}, {out / 'report.json'}, {out / 'report.png'}")
    return 0
