"""Transform hooks as plan steps: what memory sees before, and keeps after, each model call.

``hooks.before_observation`` / ``after_observation`` / ``before_reflection`` /
``after_reflection`` run as :class:`~langchain_om._plans.effects.Call` effects, so the one
driver pair calls a sync hook or awaits an async one. A hook that raises (or returns the wrong
type) fails its cycle with a :class:`~langchain_om.errors.HookError` (``reason`` code
``hook_failed``); the cycle's usual failure path then keeps everything as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import BaseMessage

from langchain_om._core.transforms import (
    archive_view,
    check_messages,
    check_text,
    without_memory_tool,
)
from langchain_om._plans.effects import Call, Plan
from langchain_om._plans.types import TurnEnv
from langchain_om.errors import HookError

HookName = Literal[
    "before_observation", "after_observation", "before_reflection", "after_reflection"
]


def _hook(env: TurnEnv, name: HookName) -> Any:
    hooks = env.config.hooks
    return getattr(hooks, name, None) if hooks is not None else None


def _run(env: TurnEnv, name: HookName, *args: Any) -> Plan[Any]:
    """Call hook ``name``; any error becomes a :class:`HookError` naming it."""
    hook = _hook(env, name)
    try:
        return (yield Call(name=name, fn=hook, args=args))
    except HookError:
        raise
    except Exception as exc:
        raise HookError(
            f"hooks.{name} raised {type(exc).__name__}; the cycle was not applied.",
            hook=name,
            reason="hook_failed",
        ) from exc


def has_hook(env: TurnEnv, name: HookName) -> bool:
    """Whether the user set hook ``name``."""
    return _hook(env, name) is not None


def before_observation(
    env: TurnEnv, ctx: Mapping[str, Any], batch: Sequence[BaseMessage]
) -> Plan[list[BaseMessage]]:
    """The messages the Observer may see.

    ``batch`` without the memory tool's own edits, then through the user's hook.
    """
    batch = without_memory_tool(batch)
    if not has_hook(env, "before_observation") or not batch:
        return batch
    result = yield from _run(env, "before_observation", batch, dict(ctx))
    return check_messages("before_observation", result)


def after_observation(env: TurnEnv, ctx: Mapping[str, Any], text: str) -> Plan[str]:
    """The observation text to record ("" when vetoed)."""
    if not has_hook(env, "after_observation"):
        return text
    result = yield from _run(env, "after_observation", text, dict(ctx))
    checked = check_text("after_observation", result, text, veto=True)
    return "" if checked is False else checked


def before_reflection(env: TurnEnv, ctx: Mapping[str, Any], text: str) -> Plan[str]:
    """The log text the Reflector is given."""
    if not has_hook(env, "before_reflection"):
        return text
    result = yield from _run(env, "before_reflection", text, dict(ctx))
    checked = check_text("before_reflection", result, text, veto=False)
    return text if checked is False else checked


def after_reflection(env: TurnEnv, ctx: Mapping[str, Any], text: str) -> Plan[str]:
    """The reflected text to commit.

    Raises:
        HookError: the hook vetoed the reflection (``reason="vetoed"``): the log stays.
    """
    if not has_hook(env, "after_reflection"):
        return text
    result = yield from _run(env, "after_reflection", text, dict(ctx))
    checked = check_text("after_reflection", result, text, veto=True)
    if checked is False:
        raise HookError(
            "hooks.after_reflection vetoed the reflection; the log is unchanged.",
            hook="after_reflection",
            reason="vetoed",
        )
    return checked


def archived_messages(
    env: TurnEnv,
    ctx: Mapping[str, Any],
    batch: Sequence[BaseMessage],
    transformed: Sequence[BaseMessage] | None = None,
) -> Plan[list[BaseMessage]]:
    """What the archive keeps of ``batch``.

    The originals, or with ``hooks.archive_transformed`` what ``before_observation`` returned
    (``transformed``, or the hook run again for buffered chunks).
    """
    if not env.config.hooks.archive_transformed or not has_hook(env, "before_observation"):
        return list(batch)
    if transformed is None:
        transformed = yield from before_observation(env, ctx, batch)
    return archive_view(batch, transformed)
