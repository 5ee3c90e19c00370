"""Recall code mode as a plan: a program's ``recall(...)`` calls run as recall plans.

The program runs in :mod:`langchain_om._core.recall_code`'s interpreter; each recall call it
makes is validated like a tool call and run through :func:`~langchain_om._plans.recall.
recall_plan` for the same caller (identity comes from the tool's run, never from the
program: a ``state`` argument is refused). The plan yields only the recall plans' store
batches, so the tool drives it sync or async.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from langchain_om._core.recall import cut_chars, json_text
from langchain_om._core.recall_code import CodeError, Limits, ProgramResult, run_program
from langchain_om._plans.effects import Plan
from langchain_om._plans.recall import Caller, RecallInput, RecallSettings, recall_plan

__all__ = ["code_plan", "recall_signature"]


def _arguments_error(exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()[:5]
    )
    return f"Invalid recall arguments ({problems})."


def code_plan(
    settings: RecallSettings, caller: Caller, code: str, limits: Limits
) -> Plan[dict[str, Any]]:
    """Run ``code``; its result as the tool answers (``success``, ``result`` or ``error``)."""
    program = run_program(code, limits)
    outcome: ProgramResult | None = None
    try:
        request = next(program)
        while True:
            arguments = dict(request.arguments)
            if "state" in arguments:
                answer: dict[str, Any] = {"error": "recall() takes no `state` in a program."}
            else:
                try:
                    args = RecallInput.model_validate(arguments)
                except ValidationError as exc:
                    answer = {"error": _arguments_error(exc)}
                else:
                    answer = yield from recall_plan(settings, caller, args)
            request = program.send(answer)
    except StopIteration as done:
        outcome = done.value
    except CodeError as exc:
        error: dict[str, Any] = {"message": exc.message}
        if exc.line is not None:
            error["line"] = exc.line
        return {"success": False, "error": error}
    assert outcome is not None
    result: dict[str, Any] = {
        "success": True,
        "result": outcome.value,
        "calls": outcome.calls,
    }
    if outcome.logs:
        result["logs"] = outcome.logs[-20:]
    if settings.count(json_text(result)) > settings.token_budget:
        text = json_text(outcome.value)
        room = max(settings.token_budget * 3, 200)  # characters, about three a token
        while room > 100 and settings.count(cut_chars(text, room)[0]) > settings.token_budget - 64:
            room = int(room * 0.8)
        result["result"] = cut_chars(text, room)[0]
        result["result_truncated"] = True
        result.pop("logs", None)
    return result


def recall_signature() -> str:
    """``recall(...)``'s keyword arguments, as the code-mode guidance lists them."""
    rows = []
    for name, field in RecallInput.model_fields.items():
        if name == "state":
            continue
        default = field.default
        shown = "" if default is None else f" = {default!r}"
        rows.append(f"    {name}{shown}  # {field.description or ''}".rstrip())
    return "recall(\n" + "\n".join(rows) + "\n) -> dict  # the recall tool's JSON result"
