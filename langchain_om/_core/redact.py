"""Redaction: error summaries safe to show to end users, and personal data in message text.

Events (``data-om-*-failed``) and hook payloads are streamed to UIs; a provider exception's
text can hold an API key (``Incorrect API key provided: sk-live-…``), a bearer token or a URL
with credentials. :func:`error_summary` keeps the error type, the HTTP status code when the
exception has one, and at most :data:`MAX_MESSAGE_CHARS` of the message with such secrets
masked. The full exception belongs only in the Python logger and the hook's ``error`` object,
and the logger gets it redacted too: every logger of the package carries
:class:`RedactingFilter` (:func:`redacted_logger`), which masks the same secrets in log
messages, their arguments and tracebacks.

:func:`redact_pii` is the default of :func:`langchain_om.transforms.redact_messages`. LangChain's
``PIIMiddleware`` (langchain 1.5) does not serve there: it is an agent middleware that rewrites
the agent's own messages in its state before the agent's model call, where memory's hook must
leave the conversation as it is and mask only the copy the Observer reads; its detectors find
no phone numbers and take a card number only as four groups of four digits (13 to 19 digits
here, Luhn-checked, like its check), and they live in a private module
(``langchain.agents.middleware._redaction``). Nothing in LangChain masks secrets in errors and
log records.
"""

from __future__ import annotations

import logging
import re
import traceback
from dataclasses import dataclass

__all__ = [
    "MASK",
    "MAX_MESSAGE_CHARS",
    "PII_MASKS",
    "ErrorSummary",
    "RedactingFilter",
    "error_summary",
    "redact_pii",
    "redact_secrets",
    "redact_text",
    "redacted_logger",
    "status_code",
]

MASK = "***"
MAX_MESSAGE_CHARS = 200
"""Longest redacted message kept in an event."""

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # scheme://user:password@host -> scheme://***@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/@:]*:[^\s/@]*@"), rf"\1{MASK}@"),
    # Authorization: Bearer <token>, Basic <token>
    (re.compile(r"(?i)\b(bearer|basic|token)(\s+|=|:\s*)[A-Za-z0-9._~+/=\-]{8,}"), rf"\1\2{MASK}"),
    # provider keys: sk-..., sk-proj-..., sk-ant-..., gsk_..., xai-..., AIza..., hf_...
    (
        re.compile(
            r"\b(?:sk|rk|pk)[-_][A-Za-z0-9_\-]{6,}|\bgsk_[A-Za-z0-9]{8,}|\bxai-[A-Za-z0-9]{8,}"
            r"|\bAIza[0-9A-Za-z_\-]{20,}|\bhf_[A-Za-z0-9]{8,}|\bgh[pousr]_[A-Za-z0-9]{16,}"
            r"|\bAKIA[0-9A-Z]{12,}"
        ),
        MASK,
    ),
    # key=..., api_key: ..., password=..., secret=... in query strings or messages
    (
        re.compile(
            r"(?i)\b((?:api[_-]?key|access[_-]?token|password|passwd|secret|client[_-]secret|key)"
            r"\s*[=:]\s*)(['\"]?)[^\s'\"&,;]{4,}"
        ),
        rf"\1\2{MASK}",
    ),
    # long opaque tokens (JWTs, hex/base64 blobs of 32+ chars); a dotted name in lower case
    # (an option path such as observation.model_settings.max_output_tokens) is no token
    (
        re.compile(
            r"\b(?=[\w.\-]*[A-Z0-9])[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\b"
        ),
        MASK,
    ),
    (re.compile(r"\b[A-Za-z0-9+/_\-]{40,}={0,2}"), MASK),
)


def _masked(text: str) -> str:
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def redact_text(text: str, *, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` on one line with credentials masked, cut to ``limit`` characters."""
    out = _masked(" ".join(text.split()))
    if len(out) > limit:
        out = out[: max(limit - 1, 0)].rstrip() + "…"
    return out


_FRAME_LINE = re.compile(r'^\s*File "')


def redact_secrets(text: str) -> str:
    """``text`` with credentials masked, its lines and length kept (log messages, tracebacks).

    The patterns of :func:`redact_text` apply line by line; the frame lines of a traceback
    (``File "…", line N, in f``) are left as they are (their paths are not secrets, and the
    long-token patterns would mask them).
    """
    lines = text.split("\n")
    return "\n".join(line if _FRAME_LINE.match(line) else _masked(line) for line in lines)


class RedactingFilter(logging.Filter):
    """Masks credentials in a log record: its message, arguments, traceback and stack.

    Attached to every logger of the package (:func:`redacted_logger`). The traceback is
    formatted and redacted here and the exception object dropped from the record, so no
    handler or formatter can print the unredacted error (``record.exc_text`` holds it).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: the logging module reports it itself
            return True
        clean = redact_secrets(message)
        if clean != message or record.args:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[0] is not None:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text = redact_secrets(text)
            record.exc_info = None
        elif record.exc_text:
            record.exc_text = redact_secrets(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_secrets(record.stack_info)
        return True


_FILTER = RedactingFilter()


def redacted_logger(name: str) -> logging.Logger:
    """The logger ``name`` with :class:`RedactingFilter` attached (once).

    A logger's filters see only the records logged on it, not its children's, so every
    logger of the package is made with this.
    """
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(_FILTER)
    return logger


@dataclass(frozen=True)
class ErrorSummary:
    """What an event or hook payload may say about an exception."""

    type: str
    status_code: int | None
    message: str

    def text(self) -> str:
        """``Type (status 401): message`` — the form used in failed-cycle events."""
        status = f" (status {self.status_code})" if self.status_code is not None else ""
        return f"{self.type}{status}: {self.message}" if self.message else f"{self.type}{status}"


def status_code(exc: BaseException) -> int | None:
    """The HTTP status code ``exc`` (or its ``response``) carries, else ``None``."""
    for owner in (exc, getattr(exc, "response", None)):
        for name in ("status_code", "status", "http_status", "code"):
            value = getattr(owner, name, None) if owner is not None else None
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                return value
    return None


def error_summary(exc: BaseException) -> ErrorSummary:
    """The type, HTTP status code (when known) and redacted short message of ``exc``."""
    return ErrorSummary(type(exc).__name__, status_code(exc), redact_text(str(exc)))


# --- personal data (the PII redactor of the before_observation hook) ------------------------

PII_MASKS = {"email": "[email]", "phone": "[phone]", "card": "[card]"}
"""What each kind of personal data is replaced with by :func:`redact_pii`."""

_EMAIL = re.compile(r"(?i)\b[a-z0-9._%+\-]+@[a-z0-9\-]+(?:\.[a-z0-9\-]+)*\.[a-z]{2,}\b")
# 13-19 digits, optionally in groups separated by single spaces or hyphens
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
# +country or a leading digit/parenthesis, 9-15 digits in groups of separators
_PHONE = re.compile(
    r"(?<![\w+\-])(?:\+\d{1,3}[ .\-]?)?(?:\(\d{2,4}\)[ .\-]?)?\d[\d .\-]{6,16}\d(?![\w\-])"
)
_DATE_LIKE = re.compile(r"^\d{4}-\d{2}-\d{2}$|^\d{1,2}[.\-]\d{1,2}[.\-]\d{2,4}$")


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    return PII_MASKS["card"] if _luhn(digits) else match.group(0)


def _phone(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = re.sub(r"\D", "", text)
    if not 9 <= len(digits) <= 15 or _DATE_LIKE.match(text.strip()):
        return text
    return PII_MASKS["phone"]


def redact_pii(text: str) -> str:
    """``text`` with email addresses, card numbers (Luhn-valid) and phone numbers masked.

    Dates (``2026-12-01``), times and short numbers are left alone; a card number is only
    masked when its checksum is valid, so order numbers of the same length survive.
    """
    out = _EMAIL.sub(PII_MASKS["email"], text)
    out = _CARD.sub(_card, out)
    return _PHONE.sub(_phone, out)
