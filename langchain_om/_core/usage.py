"""Provider-reported token usage of the agent's last reply, as a size of the window (pure).

An AI message's ``usage_metadata`` counts the whole prompt that produced it (the agent's system
prompt, tool schemas, the memory context and the messages before it) plus the reply. Taken as
the size of the unobserved window it is an upper bound: :func:`reported_window_tokens` removes
the observation log's own tokens and adds the estimate of the messages that came after that
reply, and is meant only to decide whether a threshold is crossed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.messages import AIMessage, BaseMessage

from langchain_om._core.media_tokens import provider_family

__all__ = ["reported_window_tokens"]


def _same_provider(reported: str, actor_model: str | None) -> bool:
    """Whether the reply came from the agent's provider (true when either is unknown)."""
    actor_provider, slash, _ = (actor_model or "").partition("/")
    if not slash or not actor_provider or not reported:
        return True
    a, b = reported.lower(), actor_provider.lower()
    family_a, family_b = provider_family(a), provider_family(b)
    if family_a is not None or family_b is not None:
        return family_a == family_b
    return a == b


def reported_window_tokens(
    messages: Sequence[BaseMessage],
    count: Callable[[Sequence[BaseMessage]], int],
    *,
    actor_model: str | None,
    logged_tokens: int,
) -> int:
    """The window's tokens as the provider last reported them; 0 when it did not.

    Args:
        messages: the unobserved window, oldest first.
        count: the estimate of a list of messages (for those after the last AI reply).
        actor_model: ``provider/model`` of the agent's model; a reply from another provider
            (its ``response_metadata["model_provider"]``) is not used.
        logged_tokens: tokens of the observation log the memory context showed.

    Returns:
        ``total_tokens`` (else input plus output) of the last AI message, less
        ``logged_tokens``, plus ``count`` of the messages after it; 0 without usage.
    """
    index = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), None
    )
    if index is None:
        return 0
    reply = messages[index]
    assert isinstance(reply, AIMessage)
    usage = reply.usage_metadata
    if not usage:
        return 0
    total = usage.get("total_tokens") or usage.get("input_tokens", 0) + usage.get(
        "output_tokens", 0
    )
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        return 0
    provider = reply.response_metadata.get("model_provider")
    if isinstance(provider, str) and not _same_provider(provider, actor_model):
        return 0
    after = messages[index + 1 :]
    return max(0, total - max(0, logged_tokens)) + (count(after) if after else 0)
