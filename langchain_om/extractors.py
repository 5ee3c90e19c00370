"""Extractors: named values the Observer keeps up to date while it observes.

A text :class:`Extractor` adds one section to the Observer's answer, ``<slug>…</slug>``, filled
with what its ``instructions`` ask for. A schema extractor (``schema=`` a pydantic model, a
``TypedDict`` or a JSON schema) is filled after the Observer (or, in ``reflection.extract``,
the Reflector) by a structured-output call that gets the new observations and the previous
value; the value is validated and kept as JSON. Either way it is kept in the thread's record
under ``record["extracted"][slug]`` (and, by default, shown to the next cycle as the prior
value).

Example:
    >>> from langchain_om import Extractor
    >>> e = Extractor("Travel Preferences", "Seat, airline and meal preferences, if stated.")
    >>> e.slug
    'travel-preferences'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_om._core.bounds import value_problem
from langchain_om._core.schemas import schema_problem, validate_value
from langchain_om.errors import OMConfigError

__all__ = [
    "DEFAULT_WORKING_MEMORY_TEMPLATE",
    "ExtractionResult",
    "Extractor",
    "RESERVED_SLUGS",
    "WorkingMemoryExtractor",
    "check_extractors",
    "run_extractors",
]

ARCHIVE_SUMMARY_SLUG = "archive-summary"
"""Section in which the Observer labels its new observations for the archive catalog."""

RESERVED_SLUGS = frozenset(
    {
        "current-task",
        "suggested-response",
        "thread-title",
        "observations",
        "thread",
        ARCHIVE_SUMMARY_SLUG,
    }
)
"""Slugs that name the Observer's own sections."""


def slugify(name: str) -> str:
    """``"Travel Preferences!"`` → ``"travel-preferences"`` (lowercase, digits, hyphens)."""
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9]+", "-", name.lower())).strip("-")


@dataclass(frozen=True)
class Extractor:
    """A value the Observer extracts during observation.

    Args:
        name: a human name; its slug (lowercase, digits, hyphens) names the output section.
        instructions: what to extract, or a function of the run context returning that
            text. The context holds ``thread_id``, ``resource_id``, ``trigger``, ``cycle_id``,
            ``operation``, ``source`` (``"observation"`` or ``"reflection"``),
            ``actor_model`` (the agent's ``provider/model`` when known), ``memory`` (the
            :class:`~langchain_om.ObservationalMemory`), ``configurable`` (the run config's
            ``configurable`` for agents and graphs, without LangGraph's ``__`` keys; empty
            for standalone calls) and, for schema extractors, ``previous``.
        schema: ``None`` (a text value the Observer writes inline), or a pydantic model class,
            a ``TypedDict`` or a JSON-schema dict: the value is then filled by a
            structured-output call, validated and kept as JSON. It may also be a function of
            the run context (as for ``instructions``) returning such a schema for this run;
            a returned schema that is not one fails that extraction only.
        include_previous_extraction: show the last value to the next cycle.
        metadata_key_path: where the value is kept in the record (``"extracted.<slug>"`` by
            default); ``False`` keeps it only in the cycle's events.
        on_extracted: called with ``{"slug", "previous", "current", "thread_id"}``; a non-None
            return value replaces the value (a schema extractor validates it again); raising
            rejects it and records an extraction failure (the previous value stays).
    """

    name: str
    instructions: str | Callable[[Mapping[str, Any]], str]
    schema: Any = None
    include_previous_extraction: bool = True
    metadata_key_path: str | bool | None = None
    on_extracted: Callable[[Mapping[str, Any]], Any] | None = None
    slug: str = field(init=False)

    def __post_init__(self) -> None:
        slug = slugify(self.name)
        if not slug:
            raise OMConfigError(
                f"Extractor name {self.name!r} has no letters or digits; give it a name like "
                "'Travel Preferences'.",
                option="observation.extract",
            )
        if slug in RESERVED_SLUGS:
            raise OMConfigError(
                f"Extractor slug {slug!r} is reserved for the Observer's own sections; rename "
                f"the extractor (reserved: {', '.join(sorted(RESERVED_SLUGS))}).",
                option="observation.extract",
            )
        path = self.metadata_key_path
        if isinstance(path, str) and (not path.startswith("extracted.") or path == "extracted."):
            raise OMConfigError(
                f"Extractor {self.name!r}: metadata_key_path {path!r} must start with "
                f"'extracted.' (for example 'extracted.{slug}'), or be False.",
                option="observation.extract",
            )
        static = self.schema is not None and not self.dynamic_schema
        problem = schema_problem(self.schema) if static else None
        if problem:
            raise OMConfigError(
                f"Extractor {self.name!r}: {problem}. (On Python < 3.12 define TypedDicts with "
                "typing_extensions.TypedDict.)",
                option="observation.extract",
            )
        object.__setattr__(self, "slug", slug)

    @property
    def structured(self) -> bool:
        """Whether the value is filled by a structured-output call (``schema`` is set)."""
        return self.schema is not None

    @property
    def dynamic_schema(self) -> bool:
        """Whether ``schema`` is a function of the run context (not a schema itself)."""
        return callable(self.schema) and not isinstance(self.schema, type)

    def schema_for(self, context: Mapping[str, Any]) -> Any:
        """The schema for this run (``schema`` itself, or what its function returns).

        Raises:
            OMConfigError: the function returned something that is not a schema.
        """
        if not self.dynamic_schema:
            return self.schema
        schema = self.schema(context)
        problem = schema_problem(schema)
        if problem:
            raise OMConfigError(
                f"Extractor {self.name!r}: its schema function returned no schema: {problem}.",
                option="observation.extract",
            )
        return schema

    @property
    def path(self) -> list[str] | None:
        """Keys of the value inside ``record["extracted"]``; ``None`` when not persisted."""
        if self.metadata_key_path is False:
            return None
        if isinstance(self.metadata_key_path, str) and self.metadata_key_path:
            return self.metadata_key_path.split(".")[1:]
        return [self.slug]

    def text(self, context: Mapping[str, Any]) -> str:
        """The instructions for this run."""
        value = self.instructions
        return value(context) if callable(value) else value


DEFAULT_WORKING_MEMORY_TEMPLATE = """\
# About the user
- Name:
- Location:
- Preferences:
# Current goals and open tasks
-"""
"""The document a text :class:`WorkingMemoryExtractor` keeps when given no template."""

_WORKING_MEMORY_TEXT = """\
Keep the user's working memory current: write the WHOLE document again, filled in from \
everything known so far and updated with what the new messages change (corrections replace \
old values; keep every section and every value still true; leave unknown fields empty). \
The document's layout:
{template}"""

_WORKING_MEMORY_SCHEMA = """\
The user's working memory: stable facts about the user and their current goals. Keep every \
value still true, correct the ones the user changed, add what is new."""


@dataclass(frozen=True)
class WorkingMemoryExtractor(Extractor):
    """The working memory: one document about the user, kept current by the Observer.

    A text document laid out by ``template`` (rewritten whole by the Observer each cycle), or
    a typed value when ``schema`` is given (filled like a schema extractor). It is shown to the
    agent in its own ``<working-memory>`` block, read and written by the application with
    ``memory.get_working_memory`` / ``memory.update_working_memory``. It lives in the record,
    so it follows the memory's ``scope``: one per thread, or one per resource.
    ``observation.manage_working_memory=True`` adds ``WorkingMemoryExtractor()`` for you.

    Args:
        template: the document's layout (text form); :data:`DEFAULT_WORKING_MEMORY_TEMPLATE`
            when omitted.
        schema: a pydantic model, ``TypedDict`` or JSON schema (typed form) instead.
    """

    name: str = "Working Memory"
    instructions: str | Callable[[Mapping[str, Any]], str] = ""
    template: str | None = None

    def __post_init__(self) -> None:
        if self.dynamic_schema:
            raise OMConfigError(
                "WorkingMemoryExtractor takes a schema, not a function returning one: the "
                "application reads and writes it outside any run. Use a fixed schema, or a "
                "plain Extractor for a per-run schema.",
                option="observation.extract",
            )
        if not self.instructions:
            text = (
                _WORKING_MEMORY_SCHEMA
                if self.schema is not None
                else _WORKING_MEMORY_TEXT.format(
                    template=(self.template or DEFAULT_WORKING_MEMORY_TEMPLATE).strip()
                )
            )
            object.__setattr__(self, "instructions", text)
        super().__post_init__()


ARCHIVE_SUMMARY_INSTRUCTIONS = """\
One line of at most 15 words naming what the new observations are about (the people, \
topics and decisions), to label them in a catalog of older memory. No dates, no priority \
marks."""


@dataclass(frozen=True)
class _ArchiveSummary(Extractor):
    """Archive mode's built-in section: the label of a group in the archive catalog.

    Kept on the group (not in ``record["extracted"]``) and never shown back to the Observer.
    """

    name: str = "Archive Summary"
    instructions: str | Callable[[Mapping[str, Any]], str] = ARCHIVE_SUMMARY_INSTRUCTIONS
    include_previous_extraction: bool = False
    metadata_key_path: str | bool | None = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "slug", ARCHIVE_SUMMARY_SLUG)


def with_archive_summary(extractors: Sequence[Extractor], archive: bool) -> list[Extractor]:
    """``extractors`` plus archive mode's catalog label when ``archive`` is on."""
    return [*extractors, _ArchiveSummary()] if archive else list(extractors)


def working_memory_extractor(extractors: Sequence[Extractor]) -> WorkingMemoryExtractor | None:
    """The working-memory extractor of ``extractors``, if any."""
    return next((e for e in extractors if isinstance(e, WorkingMemoryExtractor)), None)


def observation_extractors(
    extractors: Sequence[Any], *, manage_working_memory: bool
) -> list[Extractor]:
    """``observation.extract`` validated, with a default working memory when it is managed."""
    out = check_extractors(extractors)
    if manage_working_memory and working_memory_extractor(out) is None:
        out = check_extractors([*out, WorkingMemoryExtractor()])
    return out


def check_extractors(
    extractors: Sequence[Any], *, option: str = "observation.extract"
) -> list[Extractor]:
    """Validate an extractor list: extractor objects with unique slugs.

    ``reflection.extract`` takes schema extractors only (the Reflector writes no sections).
    """
    seen: set[str] = set()
    out: list[Extractor] = []
    for item in extractors:
        if not isinstance(item, Extractor):
            raise OMConfigError(
                f"{option} holds {type(item).__name__!s}; use "
                "langchain_om.Extractor(name, instructions).",
                option=option,
            )
        if item.slug in seen:
            raise OMConfigError(
                f"Two extractors share the slug {item.slug!r}; give them distinct names.",
                option=option,
            )
        if isinstance(item, WorkingMemoryExtractor) and any(
            isinstance(e, WorkingMemoryExtractor) for e in out
        ):
            raise OMConfigError(
                "Two working-memory extractors; keep one WorkingMemoryExtractor.", option=option
            )
        if option == "reflection.extract" and not item.structured:
            raise OMConfigError(
                f"Extractor {item.name!r} in reflection.extract has no schema; the Reflector "
                "fills schema extractors only. Add schema=... or move it to observation.extract.",
                option=option,
            )
        seen.add(item.slug)
        out.append(item)
    return out


@dataclass
class ExtractionResult:
    """Values an observation cycle extracted, and the extractors that failed."""

    values: dict[str, Any] = field(default_factory=dict)
    failures: list[dict[str, str]] = field(default_factory=list)

    def merge(self, other: ExtractionResult) -> ExtractionResult:
        """This result with ``other``'s values and failures added."""
        self.values.update(other.values)
        self.failures.extend(other.failures)
        return self


def inline_extractors(extractors: Sequence[Extractor]) -> list[Extractor]:
    """The text extractors, whose sections the Observer writes."""
    return [e for e in extractors if not e.structured]


def on_extracted(
    extractor: Extractor, previous: Any, current: Any, *, thread_id: str, schema: Any = None
) -> Any:
    """``current`` after the extractor's ``on_extracted`` hook (validated for a schema).

    ``schema`` is the run's schema of a dynamic schema extractor (``extractor.schema`` when
    omitted).

    Raises:
        Exception: whatever the hook raised (the value is rejected).
    """
    if extractor.on_extracted is None:
        return current
    replaced = extractor.on_extracted(
        {"slug": extractor.slug, "previous": previous, "current": current, "thread_id": thread_id}
    )
    if replaced is None:
        return current
    if not extractor.structured:
        return replaced
    return validate_value(extractor.schema if schema is None else schema, replaced)


def get_path(root: Mapping[str, Any], keys: Sequence[str]) -> Any:
    """``root[k1][k2]…`` or ``None``."""
    node: Any = root
    for key in keys:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def set_path(root: Mapping[str, Any], keys: Sequence[str], value: Any) -> dict[str, Any]:
    """A copy of ``root`` with ``value`` at ``keys`` (intermediate dicts copied, not shared)."""
    out = dict(root)
    if not keys:
        return out
    head, *rest = keys
    child = out.get(head)
    out[head] = (
        set_path(child if isinstance(child, Mapping) else {}, rest, value) if rest else value
    )
    return out


def prior_values(extractors: Sequence[Extractor], extracted: Mapping[str, Any]) -> dict[str, str]:
    """Last values to show the Observer (``- prior <slug>: …``)."""
    out: dict[str, str] = {}
    for extractor in inline_extractors(extractors):
        if extractor.include_previous_extraction and extractor.path is not None:
            value = get_path(extracted, extractor.path)
            if value is not None:
                out[extractor.slug] = str(value)
    return out


def persist(
    extractors: Sequence[Extractor], extracted: Mapping[str, Any], values: Mapping[str, Any]
) -> dict[str, Any]:
    """``extracted`` with the new ``values`` stored at each extractor's path."""
    out = dict(extracted)
    for extractor in extractors:
        if extractor.slug in values and extractor.path is not None:
            out = set_path(out, extractor.path, values[extractor.slug])
    return out


def bounded(extractor: Extractor, value: Any, count: Callable[[str], int]) -> Any:
    """``value``, when it is small enough to keep (see :mod:`langchain_om._core.bounds`).

    Raises:
        ValueError: it is larger than an extractor's value may be; the message names the bound.
    """
    problem = value_problem(value, count, what=f"the {extractor.slug!r} value")
    if problem is not None:
        raise ValueError(f"{problem}; the previous value is kept")
    return value


def run_extractors(
    extractors: Sequence[Extractor],
    raw: Mapping[str, str],
    extracted: Mapping[str, Any],
    *,
    thread_id: str,
    count: Callable[[str], int],
) -> ExtractionResult:
    """Apply ``on_extracted`` to the parsed sections; keep the values that survive.

    A value larger than :data:`~langchain_om._core.bounds.MAX_VALUE_TOKENS` tokens (``count``
    measures it) is refused: an extraction failure, the previous value kept.
    """
    result = ExtractionResult()
    for extractor in inline_extractors(extractors):
        previous = get_path(extracted, extractor.path) if extractor.path else None
        current = raw.get(extractor.slug)
        if current is None or not str(current).strip():
            continue
        try:
            value = on_extracted(extractor, previous, str(current).strip(), thread_id=thread_id)
            value = bounded(extractor, value, count)
        except Exception as exc:
            result.failures.append(
                {"slug": extractor.slug, "error": f"{exc}", "reason": "extraction_failed"}
            )
            continue
        result.values[extractor.slug] = value
    return result
