"""Fixtures for the labelling page: the XSTest sample as items and labels, and a real
``tinyjudge label`` server in a subprocess on a free 127.0.0.1 port."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from support import run_tinyjudge, tinyjudge_command

from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.records import Item, Message


@dataclass
class LabelData:
    items: Path
    labels: Path


@pytest.fixture
def xstest_data(xstest_sample: Path, tmp_path: Path) -> LabelData:
    """The bundled XSTest sample, imported as ``tinyjudge import xstest`` does."""
    result = run_import("xstest", xstest_sample)
    out = tmp_path / "xstest"
    write_jsonl(out / "items.jsonl", result.items)
    write_jsonl(out / "labels.jsonl", result.labels)
    return LabelData(out / "items.jsonl", out / "labels.jsonl")


XSS = '<script>window.__pwned = 1; document.title = "pwned"</script><b>bold?</b>'


@pytest.fixture
def hostile_data(tmp_path: Path) -> LabelData:
    """Items whose transcripts carry script and HTML payloads, in text and tool calls."""
    items = [
        Item(
            id="xss-1",
            messages=[
                Message(role="user", content=f"Say this back: {XSS}"),
                Message(
                    role="assistant",
                    content=f'<img src=x onerror="window.__pwned = 2">{XSS}',
                    tool_calls=[
                        {
                            "id": "call_<b>1</b>",
                            "function": {
                                "name": "<i>run</i>",
                                "arguments": '{"cmd": "' + "</pre>" + '"}',
                            },
                        }
                    ],
                ),
                Message(role="tool", tool_call_id="call_<b>1</b>", content=XSS),
                Message(role="assistant", content="done </details></article><script>x=1</script>"),
            ],
        ),
        Item(
            id="plain-2",
            messages=[
                Message(role="user", content="hi"),
                Message(role="assistant", content="hello"),
            ],
        ),
    ]
    out = tmp_path / "hostile"
    write_jsonl(out / "items.jsonl", items)
    return LabelData(out / "items.jsonl", out / "labels.jsonl")


@dataclass
class Server:
    proc: subprocess.Popen[str]
    url: str
    stdout: str

    def client(self, **kw: object) -> httpx.Client:
        return httpx.Client(base_url=self.url.split("?")[0], timeout=30.0, **kw)  # type: ignore[arg-type]

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, as when the machine loses power or OOM strikes."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> str:
        """Ctrl+C, then the process's remaining output (stdout and stderr)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        rest = self.proc.stdout.read() if self.proc.stdout else ""
        return self.stdout + rest


def _launch(args: list[str], env: dict[str, str] | None = None) -> Server:
    cmd = [*tinyjudge_command(), "label", *args]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "400", **(env or {})},
    )
    seen = ""
    deadline = time.monotonic() + 120
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
        m = re.search(r"open (http://\S+)", line)
        if m:
            return Server(proc, m.group(1), seen)
    proc.kill()
    rest = proc.stdout.read()
    raise AssertionError(f"server did not start: {cmd}\n{seen}{rest}")


@pytest.fixture
def start_server() -> Iterator[Callable[..., Server]]:
    """Start ``tinyjudge label ... --port 0``; every server is stopped after the test."""
    started: list[Server] = []

    def start(
        data: LabelData,
        reviewer: str,
        *extra: str,
        env: dict[str, str] | None = None,
        rubric: str = "compliance",
    ) -> Server:
        args = [str(data.items), "--rubric", rubric, "--labels", str(data.labels)]
        server = _launch([*args, "--as", reviewer, "--port", "0", *extra], env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``tinyjudge label`` to completion (for start-up refusals)."""
    return run_tinyjudge("label", *args, env={"COLUMNS": "400", **(env or {})}, timeout=120)


@pytest.fixture
def label_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """:func:`run_cli`, for tests that expect ``tinyjudge label`` to refuse and exit."""
    return run_cli


def long_trajectory(item_id: str = "long-1", turns: int = 40) -> Item:
    """An agent trajectory of ``4 * turns + 2`` messages: user asks, the assistant calls a
    tool, the tool answers (one in five with an error), the assistant reports."""
    messages = [
        Message(role="system", content="You are a support agent with a `lookup` tool."),
        Message(role="user", content="Please check every order of customer 42."),
    ]
    for t in range(turns):
        call = f"call_{t}"
        messages.append(
            Message(
                role="assistant",
                content=f"Checking order {t}.",
                tool_calls=[
                    {"id": call, "function": {"name": "lookup", "arguments": f'{{"order": {t}}}'}}
                ],
            )
        )
        result = '{"error": "timeout"}' if t % 5 == 4 else f'{{"order": {t}, "status": "shipped"}}'
        messages.append(Message(role="tool", tool_call_id=call, content=result))
        messages.append(Message(role="assistant", content=f"Order {t}: " + "details " * 40))
        messages.append(Message(role="user", content=f"Thanks, and order {t + 1}?"))
    return Item(id=item_id, messages=messages)


@pytest.fixture
def long_data(tmp_path: Path) -> LabelData:
    """One long tool-using trajectory (162 messages)."""
    out = tmp_path / "long"
    write_jsonl(out / "items.jsonl", [long_trajectory()])
    return LabelData(out / "items.jsonl", out / "labels.jsonl")


@pytest.fixture
def pair_data(tmp_path: Path) -> LabelData:
    """One pairwise item (context, response A, response B) with markup in B."""
    pair = Item(
        id="pair-1",
        context=[Message(role="user", content="List three primes, comma-separated.")],
        response_a=[Message(role="assistant", content="2, 3, 5")],
        response_b=[Message(role="assistant", content="Primes: <u>2</u> 3 5 7")],
    )
    out = tmp_path / "pairs"
    write_jsonl(out / "items.jsonl", [pair])
    return LabelData(out / "items.jsonl", out / "labels.jsonl")
