"""A real Chroma server (`chroma run --path DIR --port PORT`) on loopback, for tests and bench.

    with ChromaServer(tmp_path / "chroma") as server:
        settings = ...store.mode = "http", host = server.host, port = server.port...

The `chroma` command comes with the chromadb package, so nothing extra is installed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from testkit.local_server import LocalServer

HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def chroma_command() -> str:
    """The `chroma` CLI installed beside this Python (the venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("chroma")
    if beside.exists():
        return str(beside)
    found = shutil.which("chroma")
    if found is None:
        raise RuntimeError("the `chroma` command is missing: install chromadb (`make install`)")
    return found


class ChromaServer(LocalServer):
    """`chroma run` in a child process; `start()` returns once its heartbeat answers."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path = Path(path)
        self.host = HOST
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.path.with_name(self.path.name + ".log")

    def heartbeat(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2) as reply:
                return reply.status == 200 and b"heartbeat" in reply.read()
        except OSError:
            return False

    def start(self, timeout: float = 60.0) -> ChromaServer:
        if self.process is not None:
            return self
        self.path.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [chroma_command(), "run", "--path", str(self.path)]
                + ["--host", self.host, "--port", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + timeout
        while not self.heartbeat():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self.log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"chroma run on port {self.port} did not start:\n{tail}")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and reap it."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None
