"""llama-cpp-python's OpenAI-compatible server as a child process that cannot outlive its parent.

The server runs ``python -m llama_cpp.server`` on a free loopback port. On Linux
it is started through a few lines of Python that ask the kernel to kill it when
its parent dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, which survives the
``exec`` into the server), so neither Ctrl-C, nor an exception, nor a
``kill -9`` of the judge leaves a model in memory. The death signal follows the
*thread* that started the child: start the server from a thread that outlives
it (the main thread, in scripts and notebooks).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tinyjudge.errors import EndpointError, UsageError

__all__ = ["LlamaServer", "spawn_guarded", "free_port", "default_threads", "INSTALL_LOCAL"]

INSTALL_LOCAL = (
    "CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF\" pip install 'tinyjudge[local]' "
    "(builds llama.cpp from source: several minutes)"
)
# Run by the child before it becomes the server: die with the parent (Linux), and do
# not start at all if the parent is already gone.
_GUARD = """\
import ctypes, os, signal, sys
parent = int(sys.argv[1])
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
if os.getppid() != parent:
    sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def spawn_guarded(cmd: list[str], **popen: Any) -> subprocess.Popen[bytes]:
    """Start ``cmd`` as a child that the kernel kills when this process dies (Linux).

    The child first runs a few lines of Python that set ``PR_SET_PDEATHSIG`` and
    then ``exec`` the command, so the guard covers the command itself. Elsewhere
    the command is started without the guard.
    """
    if not sys.platform.startswith("linux"):
        return subprocess.Popen(cmd, **popen)
    return subprocess.Popen([sys.executable, "-c", _GUARD, str(os.getpid()), *cmd], **popen)


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def default_threads() -> int:
    """The CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class LlamaServer:
    """A llama.cpp server for one GGUF on 127.0.0.1; a context manager yielding its base URL.

    Example:
        >>> with LlamaServer(default_gguf()) as base_url:  # doctest: +SKIP
        ...     Judge("compliance", LlamaServer.MODEL, base_url=base_url).run(items)

    Args:
        gguf: the model file.
        port: the port; 0 picks a free one.
        threads: CPU threads for generation and prompt processing (default: all usable).
        n_ctx: the context window in tokens (prompt plus verdict).
        model: the name the server answers to (the judge's ``model``).
        startup_timeout: seconds to wait for the server to answer.
        host: the address to listen on; loopback unless you mean to share the model.
    """

    def __init__(
        self,
        gguf: str | os.PathLike[str],
        *,
        port: int = 0,
        threads: int | None = None,
        n_ctx: int = 4096,
        model: str = "local",
        startup_timeout: float = 300.0,
        host: str = "127.0.0.1",
    ) -> None:
        self.gguf = Path(gguf)
        if not self.gguf.is_file():
            raise UsageError(f"gguf {self.gguf}: no such file", param="gguf")
        if threads is not None and threads < 1:
            raise UsageError(f"threads must be >= 1, got {threads}", param="threads")
        self.port = port
        self.threads = threads or default_threads()
        self.n_ctx = n_ctx
        self.model = model
        self.startup_timeout = startup_timeout
        self.host = host
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1`` of the running server."""
        if self.proc is None:
            raise RuntimeError("the server is not running; use it as a context manager")
        return f"http://{self.host}:{self.port}/v1"

    def settings(self) -> dict[str, str]:
        """``llama_cpp.server``'s settings, under that program's own option names."""
        return {
            "model": str(self.gguf), "model_alias": self.model, "host": self.host,
            "port": str(self.port), "n_threads": str(self.threads),
            "n_threads_batch": str(self.threads), "n_ctx": str(self.n_ctx), "verbose": "False",
        }  # fmt: skip

    def command(self) -> list[str]:
        """The server's command line (without the parent-death guard)."""
        argv = [sys.executable, "-m", "llama_cpp.server"]
        for name, value in self.settings().items():
            argv += [f"--{name}", value]
        return argv

    def start(self) -> str:
        """Start the server and wait until it answers; returns the base URL.

        Raises:
            TinyjudgeError: llama-cpp-python is missing, or the server exited or did
                not answer within ``startup_timeout`` (the error holds its last log lines).
        """
        import importlib.util

        if importlib.util.find_spec("llama_cpp") is None:
            raise UsageError(f"the local judge needs llama-cpp-python: {INSTALL_LOCAL}")
        if not self.port:
            self.port = free_port()
        fd, log = tempfile.mkstemp(prefix="tinyjudge-llama-", suffix=".log")
        self._log = Path(log)
        cmd = self.command()
        # Idle OpenMP threads sleep instead of spinning: on a shared or busy machine a
        # spinning barrier burns the cores the other thread is waiting for.
        env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
        with os.fdopen(fd, "wb") as fh:
            self.proc = spawn_guarded(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=env,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self.base_url

    def _wait_ready(self) -> None:
        import httpx

        assert self.proc is not None
        deadline = time.monotonic() + self.startup_timeout
        url = self.base_url + "/models"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise EndpointError(
                    f"the llama.cpp server exited with code {self.proc.returncode}: {self._tail()}"
                )
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise EndpointError(
            f"the llama.cpp server did not answer within {self.startup_timeout:.0f}s: "
            f"{self._tail()}"
        )

    def _tail(self) -> str:
        try:
            lines = (self._log.read_text(errors="replace") if self._log else "").splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(line.strip() for line in lines[-3:] if line.strip()) or "(empty log)"

    def cpu_seconds(self) -> float | None:
        """CPU seconds (user + system) the server has used so far (Linux; None elsewhere)."""
        if self.proc is None:
            return None
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout`` seconds) and remove its log."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log is not None:
            self._log.unlink(missing_ok=True)
            self._log = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
