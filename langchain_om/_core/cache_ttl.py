"""Prompt-cache lifetimes of the agent's provider, for ``activate_after_idle="auto"``.

Buffered observations change the memory context, and so the prompt prefix the provider has
cached. With ``"auto"`` they activate once the conversation has been idle for as long as the
actor provider keeps a prompt cache: activating sooner would throw away a cache that is still
warm, activating later would miss the cheap moment (the cache is gone anyway).

The lifetimes are one table, :data:`CACHE_TTL_RULES`, read top to bottom; the first row that
matches the actor model wins and :data:`DEFAULT_TTL_MS` applies when none does. A row matches
when its ``provider`` occurs in the actor's provider name (so ``azure_openai`` and
``openai`` share rows, and ``gemini``/``google_genai``/``google_vertexai`` aliases share
Google's), its ``model`` pattern (if any) matches the start of the model name, and its
``retention`` (if any) equals the OpenAI ``prompt_cache_retention`` the agent's model is
called with. To follow a provider's change of policy, edit the table.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = ["CACHE_TTL_RULES", "DEFAULT_TTL_MS", "CacheTTLRule", "auto_ttl_ms"]

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS


@dataclass(frozen=True)
class CacheTTLRule:
    """One row of the prompt-cache lifetime table."""

    provider: str
    """Substring of the lowercased provider name (``"openai"`` matches ``"azure_openai"``)."""
    ttl_ms: int
    """How long the provider keeps a prompt cache, in milliseconds."""
    model: str | None = None
    """Regular expression matched at the start of the lowercased model name; None = any."""
    retention: str | None = None
    """OpenAI ``prompt_cache_retention`` this row is for (``"24h"``, ``"in_memory"``)."""
    note: str = ""
    """Why the row exists (source of the figure)."""

    def matches(self, provider: str, model: str, retention: str | None) -> bool:
        """Whether this row applies to the (lowercased) provider, model and retention."""
        if self.provider not in provider:
            return False
        if self.retention is not None and self.retention != retention:
            return False
        return self.model is None or re.match(self.model, model) is not None


DEFAULT_TTL_MS = 5 * MINUTE_MS
"""Unknown providers: the shortest common lifetime, so activation never waits too long."""

CACHE_TTL_RULES: tuple[CacheTTLRule, ...] = (
    CacheTTLRule("openai", HOUR_MS, retention="24h", note="extended retention requested"),
    CacheTTLRule("openai", 5 * MINUTE_MS, retention="in_memory", note="in-memory retention"),
    CacheTTLRule("openai", 5 * MINUTE_MS, model=r"gpt-4", note="gpt-4* keep caches in memory"),
    CacheTTLRule(
        "openai",
        5 * MINUTE_MS,
        model=r"gpt-5(?:$|-|\.[1-4](?:$|-))",
        note="gpt-5 and gpt-5.1 to gpt-5.4 keep caches in memory",
    ),
    CacheTTLRule("openai", HOUR_MS, note="gpt-5.5 and later, o-series: extended by default"),
    CacheTTLRule("google", 24 * HOUR_MS, note="Gemini implicit caching"),
    CacheTTLRule("gemini", 24 * HOUR_MS, note="Gemini under its own provider name"),
    CacheTTLRule("vertex", 24 * HOUR_MS, note="Gemini on Vertex AI"),
    CacheTTLRule("deepseek", HOUR_MS, note="DeepSeek context caching"),
    CacheTTLRule("groq", 2 * HOUR_MS, note="Groq prompt caching"),
    CacheTTLRule("anthropic", 5 * MINUTE_MS, note="Anthropic default cache_control TTL"),
    CacheTTLRule("xai", 5 * MINUTE_MS, note="xAI"),
    CacheTTLRule("grok", 5 * MINUTE_MS, note="xAI under its model family name"),
    CacheTTLRule("openrouter", 5 * MINUTE_MS, note="OpenRouter routes to many providers"),
)
"""The table, first match wins. Keep more specific rows above the general row of a provider."""


@functools.lru_cache(maxsize=256)
def auto_ttl_ms(model_id: str | None, *, retention: str | None = None) -> int:
    """The prompt-cache lifetime for the actor model ``provider/model``, in milliseconds.

    Args:
        model_id: ``"provider/model"`` of the agent's model (a bare name has no provider and
            gets :data:`DEFAULT_TTL_MS`); None = unknown.
        retention: the OpenAI ``prompt_cache_retention`` the agent's model is called with.

    Returns:
        The lifetime of the first matching row of :data:`CACHE_TTL_RULES`, else
        :data:`DEFAULT_TTL_MS`. Memoised (the table is fixed): every step asks.
    """
    if not model_id:
        return DEFAULT_TTL_MS
    provider, _, model = model_id.lower().partition("/")
    wanted = retention.lower() if isinstance(retention, str) else None
    for rule in CACHE_TTL_RULES:
        if rule.matches(provider, model, wanted):
            return rule.ttl_ms
    return DEFAULT_TTL_MS
