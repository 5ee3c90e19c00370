"""Token estimates for images and files (and audio/video), by provider.

:func:`estimate_image_tokens` and :func:`estimate_file_tokens` hold the provider formulas.
:func:`media_info` reads what those need from the many shapes of LangChain image/file content
blocks (sniffing image dimensions from the first bytes of PNG, GIF, WebP and JPEG data), and
:func:`media_key_payload` builds the cache-key payload of a block.
:mod:`langchain_om._core.tokens` counts messages with them.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Any, Literal, NamedTuple

__all__ = [
    "MediaInfo",
    "estimate_file_tokens",
    "estimate_image_tokens",
    "media_info",
    "media_key_payload",
    "media_part_tokens",
    "provider_family",
]

ProviderFamily = Literal["openai", "anthropic", "google"]

# Image and file estimates (tokens). See estimate_image_tokens / estimate_file_tokens.
OPENAI_IMAGE_BASE = 85
OPENAI_IMAGE_TILE = 170
OPENAI_IMAGE_UNKNOWN_SIZE = 765  # a 1024x1024 image at high detail
GEMINI_IMAGE = 258
ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_MAX_IMAGE = 1600  # Anthropic resizes larger images to about 1.15 megapixels
ANTHROPIC_IMAGE_UNKNOWN_SIZE = 1600
UNKNOWN_PROVIDER_IMAGE = 1000  # unknown provider and unknown size
UNKNOWN_FILE = 1000  # file of unknown size


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


def _openai_image(width: int, height: int, detail: str | None) -> int:
    if detail == "low":
        return OPENAI_IMAGE_BASE
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return OPENAI_IMAGE_BASE + OPENAI_IMAGE_TILE * tiles


def estimate_image_tokens(
    provider: str | None,
    width: int | None = None,
    height: int | None = None,
    detail: str | None = None,
) -> int:
    """Estimate the tokens of one image for a provider.

    * OpenAI: ``detail="low"`` → 85; else fit in 2048×2048, shrink so the short side is at
      most 768, then 85 + 170 per 512-px tile (``auto`` counts as high). Unknown size → 765.
    * Google (Gemini): 258 per image.
    * Anthropic: ``w·h/750`` after shrinking the long edge to 1568, capped at 1600 (Anthropic
      resizes anything larger). Unknown size → 1600.
    * Other providers: the OpenAI formula when the size or ``detail="low"`` is known, else 1000.

    Args:
        provider: Provider name (``"openai"``, ``"anthropic"``, ``"google_genai"``, …) or None.
        width: Image width in pixels, if known.
        height: Image height in pixels, if known.
        detail: OpenAI ``detail`` (``"low"``, ``"high"``, ``"auto"``), if given.

    Returns:
        The estimate (a positive int).
    """
    family = provider_family(provider)
    known = width is not None and height is not None and width > 0 and height > 0
    if family == "google":
        return GEMINI_IMAGE
    if family == "anthropic":
        if not known:
            return ANTHROPIC_IMAGE_UNKNOWN_SIZE
        assert width is not None and height is not None
        w, h = float(width), float(height)
        if max(w, h) > ANTHROPIC_MAX_EDGE:
            scale = ANTHROPIC_MAX_EDGE / max(w, h)
            w, h = w * scale, h * scale
        return max(1, min(ANTHROPIC_MAX_IMAGE, math.ceil(w * h / 750)))
    if detail == "low" and family in ("openai", None):
        return OPENAI_IMAGE_BASE
    if known:
        assert width is not None and height is not None
        return _openai_image(width, height, detail)
    return OPENAI_IMAGE_UNKNOWN_SIZE if family == "openai" else UNKNOWN_PROVIDER_IMAGE


def estimate_file_tokens(provider: str | None, size: int | None, *, pdf: bool) -> int:
    """Estimate the tokens of a file (or audio/video) from its size in bytes.

    PDFs: Google ``max(258, b/20)``, Anthropic ``max(1500, b/3)``, others ``max(500, b/4)``.
    Other files: ``b/4``. Unknown size: 1000.

    Args:
        provider: Provider name or None.
        size: Size in bytes, if known.
        pdf: Whether the file is a PDF.

    Returns:
        The estimate (a non-negative int).
    """
    if size is None or size < 0:
        return UNKNOWN_FILE
    if not pdf:
        return -(-size // 4)
    family = provider_family(provider)
    if family == "google":
        return max(258, -(-size // 20))
    if family == "anthropic":
        return max(1500, -(-size // 3))
    return max(500, -(-size // 4))


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


def _split_data_url(url: str) -> tuple[str | None, str | None]:
    """``data:<mime>;base64,<payload>`` → (mime, payload); (None, None) if not a data URL."""
    if not url.startswith("data:"):
        return None, None
    header, _, payload = url.partition(",")
    mime = header[5:].split(";", 1)[0] or None
    return mime, payload


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
    if mime is None and isinstance(block.get("input_audio"), dict):
        fmt = block["input_audio"].get("format")
        mime = f"audio/{fmt}" if isinstance(fmt, str) else None

    def first(*keys: str) -> Any:
        for d in nested:
            for k in keys:
                if d.get(k) is not None:
                    return d[k]
        return None

    detail = first("detail")
    filename = first("filename", "name", "title")
    return MediaInfo(
        image=image or (mime or "").startswith("image/"),
        data=data,
        url=url,
        mime=mime,
        detail=detail if isinstance(detail, str) else None,
        width=_positive_int(first("width"), _MAX_PIXELS),
        height=_positive_int(first("height"), _MAX_PIXELS),
        size=_positive_int(first("size", "size_bytes", "bytes"), 1 << 50),
        filename=filename if isinstance(filename, str) else None,
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


def media_part_tokens(media: MediaInfo, provider: str | None) -> int:
    if media.image:
        width, height = media.width, media.height
        if (width is None or height is None) and media.data is not None:
            sniffed = _image_size(_data_head(media.data))
            if sniffed is not None:
                width, height = sniffed
        return estimate_image_tokens(provider, width, height, media.detail)
    size = media.size
    if size is None and media.data is not None:
        size = _data_size(media.data)
    names = (media.filename or "", media.url or "")
    pdf = media.mime == "application/pdf" or any(n.lower().endswith(".pdf") for n in names)
    return estimate_file_tokens(provider, size, pdf=pdf)


def media_key_payload(media: MediaInfo, family: str | None) -> str:
    data = media.data
    if isinstance(data, bytes):
        head = data[:4096].hex()
        tail = data[-256:].hex()
    elif data is not None:
        head, tail = data[:4096], data[-256:]
    else:
        head = tail = ""
    fields = (
        family,
        media.image,
        media.url,
        media.mime,
        media.detail,
        media.width,
        media.height,
        media.size,
        media.filename,
        len(data) if data is not None else -1,
    )
    return f"{fields!r}\x00{head}\x00{tail}"
