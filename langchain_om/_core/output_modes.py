"""How the Observer and the Reflector are asked to answer: output mode and prompt variant.

Two choices are made per model call, from the option and what is known about the model that
answers (a fallback model may differ from the first):

- the output mode (``observation.output``/``reflection.output``): ``"text"`` asks for the
  tagged text log; ``"structured"`` asks for :class:`~langchain_om._core.structured.\
StructuredObserverOutput` through ``with_structured_output`` and renders the answer to the
  same text; ``"auto"`` is text. It used to be structured for a model on a local server,
  whose decoding the schema constrains; measured on a 1.5B local model with the loop cut and
  salvage in place, text with the compact prompt compresses about 4x while structured output
  copies nearly every message into its ``text`` field (about 2x) for twice the output tokens
  (``benchmarks/results/eval-local-1.5b/modes.md``), and no run shows structured output
  better for larger models.
- the Observer's prompt variant (``observation.prompt``): ``"default"`` or ``"compact"``
  (:data:`~langchain_om._core.observer_prompts.COMPACT_OBSERVER_SYSTEM_PROMPT`, short, with
  placeholders instead of example content); ``"auto"`` is compact for small models: a name
  that states a size of at most :data:`SMALL_MODEL_BILLIONS` billion parameters
  (``SmolLM2-135M``, ``qwen2.5-1.5b-instruct``), or a local server whose model size is unknown.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = [
    "LOOPBACK_HOSTS",
    "SMALL_MODEL_BILLIONS",
    "OutputMode",
    "OutputOption",
    "PromptOption",
    "PromptVariant",
    "choose_output",
    "choose_prompt",
    "is_loopback_url",
    "parameter_billions",
]

OutputOption = Literal["text", "structured", "auto"]
OutputMode = Literal["text", "structured"]
PromptOption = Literal["default", "compact", "auto"]
PromptVariant = Literal["default", "compact"]

SMALL_MODEL_BILLIONS = 4.0
"""Models of at most this many billion parameters get the compact prompt under ``"auto"``."""

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]", "0.0.0.0"})
"""Hosts of a model server on this machine."""

_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", re.IGNORECASE)
_HOST = re.compile(r"^[a-z][a-z0-9+.-]*://(\[[^\]]+\]|[^/:?#]+)", re.IGNORECASE)


def parameter_billions(name: str) -> float | None:
    """The parameter count a model name states, in billions (``None`` when it states none).

    ``"SmolLM2-135M-Instruct"`` is 0.135, ``"qwen2.5-1.5b-instruct"`` 1.5, ``"Llama-3-70B"``
    70; a mixture-of-experts name (``8x7b``) counts its largest number. Version numbers
    (``qwen2.5``) are not sizes: a size needs its ``B``/``M`` unit.
    """
    sizes = []
    for match in _SIZE.finditer(name.replace("_", "-")):
        value = float(match.group(1))
        sizes.append(value if match.group(2).lower() == "b" else value / 1000)
    return max(sizes) if sizes else None


def is_loopback_url(url: str | None) -> bool:
    """Whether ``url`` (``http://127.0.0.1:8080/v1``) points at this machine."""
    if not url:
        return False
    match = _HOST.match(url.strip())
    return match is not None and match.group(1).lower() in LOOPBACK_HOSTS


def choose_output(option: OutputOption, *, local_server: bool) -> OutputMode:
    """The output mode for one call: the option, or text for ``"auto"`` (see the module)."""
    if option == "auto":
        return "text"
    return option


def choose_prompt(
    option: PromptOption, *, local_server: bool, billions: float | None
) -> PromptVariant:
    """The Observer's prompt variant for one call (see the module docstring for ``"auto"``)."""
    if option != "auto":
        return option
    if billions is not None:
        return "compact" if billions <= SMALL_MODEL_BILLIONS else "default"
    return "compact" if local_server else "default"
