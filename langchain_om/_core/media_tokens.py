"""Token estimates for images, files, audio and video, by the agent's provider and model.

:func:`estimate_image_tokens` holds the image formulas and :func:`estimate_file_tokens` the
file/audio/video table (:data:`FILE_UNIT_TOKENS`). :func:`media_info` reads what those need from
the many shapes of LangChain image/file content blocks (sniffing image dimensions from the first
bytes of PNG, GIF, WebP and JPEG data; never the network), :func:`media_part_tokens` estimates one
block and :func:`client_estimate` reads a caller-supplied estimate.
:mod:`langchain_om._core.tokens` counts messages with them and keys their cache entries.

Images follow the provider's documented arithmetic:

* OpenAI (and any provider without its own rule): ``base + tiles × tile``. The image is fitted
  in 2048×2048, then shrunk so its short side is at most 768, and cut in 512-px tiles;
  ``detail="low"`` is the base alone and ``"auto"`` is high when the long side is over 768 px
  (or, size unknown, the payload is over 1 MiB). Base/tile per model: :data:`OPENAI_IMAGE_RATES`.
  Without dimensions the tiles come from the payload size (≤512 KiB 1, ≤2 MiB 4, ≤4 MiB 6,
  else 8), else the model's fallback.
* Anthropic: ``ceil(w·h / 750)`` after shrinking the long edge to 1568, at most
  :data:`ANTHROPIC_MAX_IMAGE`; unknown dimensions by payload size, else 1600.
* Google: Gemini 3 models by media resolution (:data:`GEMINI_3_IMAGE_TOKENS`, default high);
  earlier models 258 per 768-px tile (one tile when the size is unknown).

Files are estimated from their *descriptor* (kind, MIME type and name) plus what is known about
their length (page count, duration), never from the payload size: an uploaded PDF costs the
same whether it is sent inline or by URL. Only text-like files (``text/*``, JSON, XML, YAML)
sent inline are counted by their bytes (``bytes / 4``), because the model reads those bytes as
text.

A caller that knows better can stamp ``token_estimate`` (an int) in a block's ``metadata`` or
``extras``; it is used as is for that block.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

__all__ = [
    "FILE_UNIT_TOKENS",
    "GEMINI_3_IMAGE_TOKENS",
    "OPENAI_IMAGE_RATES",
    "MediaInfo",
    "client_estimate",
    "estimate_file_tokens",
    "estimate_image_tokens",
    "file_descriptor",
    "media_info",
    "media_part_tokens",
    "provider_family",
]

ProviderFamily = Literal["openai", "anthropic", "google"]


class ImageRate(NamedTuple):
    """OpenAI-style image rate: ``base + tiles × tile``; ``fallback_tiles`` when size unknown."""

    base: int
    tile: int
    fallback_tiles: int


OPENAI_IMAGE_RATES: tuple[tuple[str, ImageRate], ...] = (
    ("gpt-5", ImageRate(70, 140, 4)),
    ("gpt-4o-mini", ImageRate(2833, 5667, 1)),
    ("o1", ImageRate(75, 150, 4)),
    ("o3", ImageRate(75, 150, 4)),
    ("computer-use", ImageRate(65, 129, 4)),
)
"""Per-model image rates (first model-name prefix that matches; ``computer-use`` anywhere)."""
OPENAI_DEFAULT_RATE = ImageRate(85, 170, 4)
"""Every other model (gpt-4o, gpt-4.1, unknown providers)."""
GEMINI_IMAGE = 258
"""Gemini before 3: tokens per 768-px tile."""
GEMINI_3_IMAGE_TOKENS: dict[str, int] = {
    "low": 280,
    "medium": 560,
    "high": 1120,
    "ultra_high": 2240,
    "unspecified": 1120,
}
"""Gemini 3: tokens per image by ``media_resolution``."""
ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_MAX_IMAGE = 1600
"""Anthropic scales images down until they cost at most about 1600 tokens."""
ANTHROPIC_IMAGE_UNKNOWN_SIZE = 1600
_ANTHROPIC_BY_BYTES = ((512 * 1024, 341), (2 * 1024 * 1024, 1366))
_OPENAI_TILES_BY_BYTES = ((512 * 1024, 1), (2 * 1024 * 1024, 4), (4 * 1024 * 1024, 6))

FILE_UNIT_TOKENS: tuple[tuple[str, str, dict[str, int]], ...] = (
    ("pdf", "page", {"google": 258, "anthropic": 1500, "openai": 1000, "default": 1000}),
    ("audio", "second", {"google": 32, "openai": 10, "default": 32}),
    ("video", "second", {"google": 263, "default": 263}),
)
"""``(kind, unit, tokens per unit by provider)``: what one page or second costs once known.

PDFs: Gemini 258/page; Claude 1500-3000/page (text plus a page image, the lower bound here);
OpenAI text plus a page image, about 1000. Audio: Gemini 32/s, OpenAI about 10/s. Video: Gemini
263/s. Unknown providers use ``default``. A file whose length is unknown costs its descriptor.
"""
_TEXTLIKE_MIMES = frozenset(
    {"application/json", "application/xml", "application/x-yaml", "application/yaml"}
)
IMAGE_EXTENSIONS = frozenset(
    {"png", "jpg", "jpeg", "webp", "gif", "bmp", "tiff", "tif", "heic", "heif", "avif"}
)
_PAGE_KEYS = ("page_count", "pages", "num_pages", "n_pages")
_SECOND_KEYS = ("duration", "duration_s", "duration_seconds", "seconds")
_EXTENSION = re.compile(r"\.([a-z0-9]+)$", re.IGNORECASE)


def provider_family(provider: str | None) -> ProviderFamily | None:
    if not provider:
        return None
    p = provider.lower()
    if "anthropic" in p or "claude" in p:
        return "anthropic"
    if "google" in p or "gemini" in p or "vertex" in p:
        return "google"
    if "openai" in p or "azure" in p or "gpt" in p:
        return "openai"
    return None


def _openai_rate(model: str | None) -> ImageRate:
    name = (model or "").lower()
    for prefix, rate in OPENAI_IMAGE_RATES:
        if name.startswith(prefix) or (prefix == "computer-use" and prefix in name):
            return rate
    return OPENAI_DEFAULT_RATE


def _openai_tiles(width: int, height: int) -> int:
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    w, h = max(1, round(w)), max(1, round(h))
    return max(1, math.ceil(w / 512) * math.ceil(h / 512))


def _by_bytes(size: int, table: tuple[tuple[int, int], ...], last: int) -> int:
    return next((value for limit, value in table if size <= limit), last)


def estimate_image_tokens(
    provider: str | None,
    width: int | None = None,
    height: int | None = None,
    detail: str | None = None,
    *,
    model: str | None = None,
    size_bytes: int | None = None,
    media_resolution: str | None = None,
) -> int:
    """Estimate the tokens of one image for the agent's provider and model.

    See the module docstring for the formulas. Examples: OpenAI 1024×1024 → 765 (gpt-5: 630,
    gpt-4o-mini: 25 501); an image of unknown size → 85; Anthropic 1024×1024 → 1399; Gemini 2.5
    769×769 → 1032 (four tiles); Gemini 3 at ``media_resolution="medium"`` → 560.

    Args:
        provider: Provider name (``"openai"``, ``"anthropic"``, ``"google_genai"``, …) or None.
        width: Image width in pixels, if known.
        height: Image height in pixels, if known.
        detail: OpenAI ``detail`` (``"low"``, ``"high"``, ``"auto"``), if given.
        model: Model name (``"gpt-4o-mini"``, ``"gemini-3-pro"``, …), if known.
        size_bytes: Payload size, used when the dimensions are unknown.
        media_resolution: Gemini 3 ``media_resolution`` (``"low"`` … ``"ultra_high"``).

    Returns:
        The estimate (a positive int).
    """
    family = provider_family(provider)
    known = width is not None and height is not None and width > 0 and height > 0
    name = (model or "").lower().removeprefix("models/")
    if family == "google":
        if name.startswith("gemini-3"):
            resolution = (
                (media_resolution or "unspecified").lower().removeprefix("media_resolution_")
            )
            return GEMINI_3_IMAGE_TOKENS.get(resolution, GEMINI_3_IMAGE_TOKENS["unspecified"])
        if not known:
            return GEMINI_IMAGE
        assert width is not None and height is not None
        return GEMINI_IMAGE * max(1, math.ceil(width / 768) * math.ceil(height / 768))
    if family == "anthropic":
        if not known:
            if size_bytes is None:
                return ANTHROPIC_IMAGE_UNKNOWN_SIZE
            return _by_bytes(size_bytes, _ANTHROPIC_BY_BYTES, ANTHROPIC_MAX_IMAGE)
        assert width is not None and height is not None
        w, h = width, height
        if max(w, h) > ANTHROPIC_MAX_EDGE:
            scale = ANTHROPIC_MAX_EDGE / max(w, h)
            w, h = max(1, round(w * scale)), max(1, round(h * scale))
        return max(1, min(ANTHROPIC_MAX_IMAGE, math.ceil(w * h / 750)))
    rate = _openai_rate(name)
    effective = detail if detail in ("low", "high") else None
    if effective is None:  # "auto" or unset
        if known:
            assert width is not None and height is not None
            effective = "high" if max(width, height) > 768 else "low"
        elif size_bytes is not None:
            effective = "high" if size_bytes > 1024 * 1024 else "low"
        else:
            effective = "low"
    if effective == "low":
        return rate.base
    if known:
        assert width is not None and height is not None
        tiles = _openai_tiles(width, height)
    elif size_bytes is not None:
        tiles = _by_bytes(size_bytes, _OPENAI_TILES_BY_BYTES, 8)
    else:
        tiles = rate.fallback_tiles
    return rate.base + rate.tile * tiles


def _file_kind(mime: str | None, names: tuple[str, ...]) -> str:
    m = (mime or "").lower().split(";", 1)[0].strip()
    if m == "application/pdf" or any(n.lower().endswith(".pdf") for n in names):
        return "pdf"
    if m.startswith("audio/"):
        return "audio"
    if m.startswith("video/"):
        return "video"
    if m.startswith("text/") or m in _TEXTLIKE_MIMES:
        return "text"
    return "file"


def estimate_file_tokens(
    provider: str | None,
    *,
    kind: str,
    descriptor_tokens: int,
    pages: int | None = None,
    seconds: float | None = None,
    text_bytes: int | None = None,
) -> int:
    """Estimate the tokens of a file, audio or video part from its descriptor.

    ``descriptor_tokens`` (the tokens of its kind, MIME type and name) plus, when known, pages ×
    the provider's per-page rate (PDFs) or seconds × its per-second rate (audio, video), from
    :data:`FILE_UNIT_TOKENS`. Inline text-like files add ``ceil(text_bytes / 4)``.

    Args:
        provider: Provider name or None.
        kind: ``"pdf"``, ``"audio"``, ``"video"``, ``"text"`` or ``"file"``.
        descriptor_tokens: Tokens of the part's descriptor.
        pages: Page count, if known (PDFs).
        seconds: Duration in seconds, if known (audio, video).
        text_bytes: Size of an inline text-like file.

    Returns:
        The estimate (a non-negative int).
    """
    family = provider_family(provider) or "default"
    total = max(0, descriptor_tokens)
    for row_kind, unit, rates in FILE_UNIT_TOKENS:
        if row_kind != kind:
            continue
        amount = pages if unit == "page" else seconds
        if amount is not None and amount > 0:
            total += math.ceil(amount * rates.get(family, rates["default"]))
    if kind == "text" and text_bytes:
        total += -(-text_bytes // 4)
    return total


_SNIFF_CHARS = 65536  # base64 characters decoded to read image headers
_MAX_PIXELS = 1 << 20  # larger "dimensions" are nonsense: treated as unknown


def _image_size(head: bytes) -> tuple[int, int] | None:
    """Width and height from the first bytes of a PNG, GIF, WebP or JPEG image."""
    try:
        if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
            w, h = struct.unpack(">II", head[16:24])
            return int(w), int(h)
        if head[:6] in (b"GIF87a", b"GIF89a"):
            w, h = struct.unpack("<HH", head[6:10])
            return int(w), int(h)
        if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
            chunk = head[12:16]
            if chunk == b"VP8X":
                w = int.from_bytes(head[24:27], "little") + 1
                h = int.from_bytes(head[27:30], "little") + 1
                return w, h
            if chunk == b"VP8L":
                bits = int.from_bytes(head[21:25], "little")
                return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
            if chunk == b"VP8 ":
                w, h = struct.unpack("<HH", head[26:30])
                return int(w) & 0x3FFF, int(h) & 0x3FFF
            return None
        if head[:2] == b"\xff\xd8":
            i = 2
            while i + 9 < len(head):
                if head[i] != 0xFF:
                    return None
                marker = head[i + 1]
                if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
                    i += 1 if marker == 0xFF else 2
                    continue
                length = int.from_bytes(head[i + 2 : i + 4], "big")
                if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                    h, w = struct.unpack(">HH", head[i + 5 : i + 9])
                    return int(w), int(h)
                i += 2 + length
    except (struct.error, IndexError):
        return None
    return None


def _positive_int(value: object, limit: int) -> int | None:
    """``value`` as a positive int, or None when it is missing, non-numeric or absurd."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and 0 < value <= limit:
        return int(value)
    return None


class MediaInfo(NamedTuple):
    image: bool
    data: str | bytes | None  # base64 text, or raw bytes
    url: str | None
    mime: str | None
    detail: str | None
    width: int | None
    height: int | None
    size: int | None
    filename: str | None
    kind: str  # block type as given ("image", "file", "audio", …)
    pages: int | None
    seconds: float | None
    resolution: str | None
    client: int | None  # caller-supplied token_estimate


def _split_data_url(url: str) -> tuple[str | None, str | None]:
    """``data:<mime>;base64,<payload>`` → (mime, payload); (None, None) if not a data URL."""
    if not url.startswith("data:"):
        return None, None
    header, _, payload = url.partition(",")
    mime = header[5:].split(";", 1)[0] or None
    return mime, payload


def _url_name(url: str | None) -> str | None:
    """The last path segment of an http(s) URL (query and fragment dropped)."""
    if not url or not url.lower().startswith(("http://", "https://")):
        return None
    path = url.split("#", 1)[0].split("?", 1)[0]
    tail = path.split("://", 1)[-1].partition("/")[2].rstrip("/").rsplit("/", 1)[-1]
    return tail or None


def _has_image_extension(name: str | None) -> bool:
    match = _EXTENSION.search(name or "")
    return match is not None and match.group(1).lower() in IMAGE_EXTENSIONS


def client_estimate(value: object) -> int | None:
    if isinstance(value, dict):
        value = value.get("tokens")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if math.isfinite(value) and value >= 0 else None


def _seconds(first: Callable[..., Any]) -> float | None:
    value = first(*_SECOND_KEYS)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    ms = first("duration_ms")
    if isinstance(ms, int | float) and not isinstance(ms, bool) and ms > 0:
        return float(ms) / 1000
    return None


def media_info(block: dict[str, Any], image: bool) -> MediaInfo:
    """Collect what the estimate needs from the many shapes of image/file blocks."""
    nested: list[dict[str, Any]] = [block]
    for key in ("image_url", "file", "source", "input_audio", "metadata", "extras"):
        sub = block.get(key)
        if isinstance(sub, dict):
            nested.append(sub)
    data: str | bytes | None = None
    url: str | None = None
    mime: str | None = None
    for d in nested:
        for key in ("base64", "data", "file_data"):
            v = d.get(key)
            if data is None and isinstance(v, str | bytes) and v:
                data = v
        v = d.get("url")
        if url is None and isinstance(v, str):
            url = v
        for key in ("mime_type", "media_type", "mimeType"):
            v = d.get(key)
            if mime is None and isinstance(v, str):
                mime = v
    if isinstance(block.get("image_url"), str):
        url = block["image_url"]
    for text in (data, url):
        if isinstance(text, str):
            data_mime, payload = _split_data_url(text)
            if payload is not None:
                data = payload
                mime = mime or data_mime
    if url is not None and url.startswith("data:"):
        url = None  # its payload is `data` now
    if mime is None and isinstance(block.get("input_audio"), dict):
        fmt = block["input_audio"].get("format")
        mime = f"audio/{fmt}" if isinstance(fmt, str) else None

    def first(*keys: str) -> Any:
        for d in nested:
            for k in keys:
                if d.get(k) is not None:
                    return d[k]
        return None

    detail = first("detail", "image_detail")
    filename = first("filename", "name", "title")
    filename = filename.strip() or None if isinstance(filename, str) else None
    filename = filename or _url_name(url)
    resolution = first("media_resolution", "mediaResolution")
    looks_like_image = (
        (mime or "").lower().startswith("image/")
        or _has_image_extension(filename)
        or _has_image_extension(_url_name(url))
    )
    return MediaInfo(
        image=image or looks_like_image,
        data=data,
        url=url,
        mime=mime,
        detail=detail if isinstance(detail, str) else None,
        width=_positive_int(first("width", "image_width"), _MAX_PIXELS),
        height=_positive_int(first("height", "image_height"), _MAX_PIXELS),
        size=_positive_int(first("size", "size_bytes", "bytes"), 1 << 50),
        filename=filename,
        kind=str(block.get("type") or "file"),
        pages=_positive_int(first(*_PAGE_KEYS), 1 << 20),
        seconds=_seconds(first),
        resolution=resolution if isinstance(resolution, str) else None,
        client=client_estimate(first("token_estimate")),
    )


def _data_size(data: str | bytes) -> int:
    if isinstance(data, bytes):
        return len(data)
    return max(0, len(data) * 3 // 4 - (len(data) - len(data.rstrip("="))))


def _data_head(data: str | bytes) -> bytes:
    if isinstance(data, bytes):
        return data[: _SNIFF_CHARS * 3 // 4]
    chunk = data[:_SNIFF_CHARS]
    chunk = chunk[: len(chunk) - len(chunk) % 4]
    try:
        return base64.b64decode(chunk)
    except (binascii.Error, ValueError):
        return b""


def file_descriptor(media: MediaInfo) -> str:
    """The text a file part is estimated from: its kind, MIME type and name."""
    return " ".join(x for x in (media.kind, media.mime or "", media.filename or "") if x)


def media_part_tokens(
    media: MediaInfo, provider: str | None, model: str | None, count: Callable[[str], int]
) -> int:
    if media.client is not None:
        return media.client
    if media.image:
        width, height = media.width, media.height
        if (width is None or height is None) and media.data is not None:
            sniffed = _image_size(_data_head(media.data))
            if sniffed is not None:
                width, height = sniffed
        size = media.size
        if size is None and media.data is not None:
            size = _data_size(media.data)
        return estimate_image_tokens(
            provider,
            width,
            height,
            media.detail,
            model=model,
            size_bytes=size,
            media_resolution=media.resolution,
        )
    kind = _file_kind(media.mime, (media.filename or "", media.url or ""))
    if kind == "file" and media.kind in ("audio", "input_audio", "video"):
        kind = "video" if media.kind == "video" else "audio"
    text_bytes = None
    if kind == "text" and media.data is not None:
        text_bytes = _data_size(media.data)
    return estimate_file_tokens(
        provider,
        kind=kind,
        descriptor_tokens=count(file_descriptor(media)),
        pages=media.pages,
        seconds=media.seconds,
        text_bytes=text_bytes,
    )
