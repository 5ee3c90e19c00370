"""How many tokens an Observer or Reflector reply may take, derived from what it reads.

An observation is much smaller than the messages it observes, and a reflection is smaller
than the log it condenses, so neither call needs the model's whole output limit: a reply that
runs far past these budgets is a loop or a ramble, and with a provider model every token of
it is paid for. ``output_budget="auto"`` (the default of both roles) gives each call:

- Observer: :data:`OBSERVER_SHARE` of the batch's tokens, at least :data:`FLOOR_TOKENS`;
- Reflector: :data:`REFLECTOR_SHARE` of the size the reflection is asked to reach, at least
  :data:`FLOOR_TOKENS` and at most the log it condenses;

plus :data:`SECTION_TOKENS` for each extra section the call asks for (hints, title, extractor
values), never more than :data:`CEILING_TOKENS`. A reasoning model (its LangChain profile says
``reasoning_output``) is allowed :data:`REASONING_TOKENS` more in its provider limit, since
providers count hidden reasoning in that limit; the reply's own text is held to the budget.

An integer ``output_budget`` fixes the budget of every call of the role; ``False`` sets none
(only ``model_settings.max_output_tokens`` applies). A ``max_output_tokens`` set explicitly
caps the budget too.
"""

from __future__ import annotations

import math
from typing import Literal

__all__ = [
    "CEILING_TOKENS",
    "FLOOR_TOKENS",
    "OBSERVER_SHARE",
    "REASONING_TOKENS",
    "REFLECTOR_SHARE",
    "SECTION_TOKENS",
    "BudgetSetting",
    "observer_budget",
    "reflector_budget",
]

BudgetSetting = int | Literal["auto", False]

OBSERVER_SHARE = 0.3
"""An observation may hold up to this share of its batch's tokens."""

REFLECTOR_SHARE = 1.0
"""A reflection may be as large as the size it is asked for (a larger one fails anyway)."""

FLOOR_TOKENS = 512
"""No call gets less than this (small batches, short logs)."""

SECTION_TOKENS = 150
"""Added for each hint, title or extractor section a call asks for."""

CEILING_TOKENS = 32_000
"""No call gets more than this."""

REASONING_TOKENS = 8_192
"""Added to the provider limit of a reasoning model (hidden reasoning counts against it)."""


def _resolved(setting: BudgetSetting, derived: int) -> int | None:
    if setting is False:
        return None
    if setting == "auto":
        return min(CEILING_TOKENS, derived)
    return int(setting)


def observer_budget(
    input_tokens: int, *, sections: int, setting: BudgetSetting = "auto"
) -> int | None:
    """The output budget of an Observer call over a batch of ``input_tokens`` tokens."""
    derived = max(FLOOR_TOKENS, math.ceil(OBSERVER_SHARE * max(0, input_tokens)))
    return _resolved(setting, derived + SECTION_TOKENS * max(0, sections))


def reflector_budget(
    input_tokens: int, *, target_tokens: int, sections: int, setting: BudgetSetting = "auto"
) -> int | None:
    """The output budget of a Reflector call condensing ``input_tokens`` to ``target_tokens``."""
    asked = math.ceil(REFLECTOR_SHARE * max(1, target_tokens))
    derived = max(FLOOR_TOKENS, min(max(0, input_tokens), asked))
    return _resolved(setting, derived + SECTION_TOKENS * max(0, sections))
