"""What an endpoint can do to the judge is bounded: a reply that trickles is cut at the
call's deadline, a huge body at the size limit as it streams, and credentials in the URL
are neither sent nor printed.

The endpoints here are real HTTP servers on 127.0.0.1 that misbehave on purpose.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from judge_helpers import single, verdict
from support import tinyjudge_command

from tinyjudge.datasets.jsonl import read_labels, write_jsonl
from tinyjudge.judge import Judge
from tinyjudge.judge._endpoint import client_url, shown_url

GOOD = json.dumps(
    {
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": verdict("full_refusal")}}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }
).encode()


class Hostile:
    """A chat endpoint whose reply for a prompt is written by ``behave(handler, prompt)``."""

    def __init__(self, behave: Callable[[BaseHTTPRequestHandler, str], None]) -> None:
        self.sent = 0  # body bytes written before the client went away
        self.auth: list[str | None] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.auth.append(self.headers.get("Authorization"))
                prompt = json.dumps(body["messages"])
                try:
                    behave(self, prompt)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def write(self, data: bytes) -> None:
                self.wfile.write(data)
                self.wfile.flush()
                owner.sent += len(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> Hostile:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _good(h: Any) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(GOOD)))
    h.end_headers()
    h.write(GOOD)


def trickle(h: Any, prompt: str) -> None:
    """The whole good reply, one byte every 0.2 s (about 45 s for all of it)."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(GOOD)))
    h.end_headers()
    for b in GOOD:
        h.write(bytes([b]))
        time.sleep(0.2)


def endless(h: Any, prompt: str, declared: int | None = None, cap: int = 2**30) -> None:
    """200 with a body that never ends (chunked), or that declares ``declared`` bytes."""
    if "number 1" not in prompt:
        return _good(h)
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    if declared is not None:
        h.send_header("Content-Length", str(declared))
    else:
        h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    chunk = b'{"choices": [' + b" " * (2**20 - 13)
    written = 0
    while written < cap:
        h.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if declared is None else chunk)
        written += len(chunk)
        chunk = b" " * 2**20


def test_a_trickling_reply_is_cut_at_the_calls_deadline() -> None:
    with Hostile(trickle) as srv:
        judge = Judge(
            "compliance", "m", base_url=srv.base_url, timeout=2.0, max_retries=0, stop_after=0
        )
        start = time.monotonic()
        [lab] = judge.run([single(1)])
        took = time.monotonic() - start
    # Each byte arrives well inside the 2 s timeout; the call as a whole may not pass it.
    assert lab.status == "unscored" and "timed out" in (lab.reason or "")
    assert took < 6, took


def test_a_trickled_call_is_retried_like_other_timeouts() -> None:
    with Hostile(trickle) as srv:
        judge = Judge(
            "compliance",
            "m",
            base_url=srv.base_url,
            timeout=1.0,
            max_retries=1,
            backoff=0.01,
            stop_after=0,
        )
        [lab] = judge.run([single(1)])
    assert lab.status == "unscored" and "timed out (after 1 retries)" in (lab.reason or "")
    assert judge.summary.retries == 1


@pytest.mark.parametrize("declared", [None, 4 * 2**30], ids=["chunked", "content_length_4gb"])
def test_a_huge_body_is_cut_at_the_size_limit_as_it_streams(declared: int | None) -> None:
    with Hostile(lambda h, p: endless(h, p, declared, cap=512 * 2**20)) as srv:
        judge = Judge("compliance", "m", base_url=srv.base_url, max_reply_mb=1, max_retries=2)
        huge, fine = judge.run([single(1), single(2)])
        sent = srv.sent
    assert fine.label == "full_refusal"
    assert huge.status == "unscored" and "max_reply_mb" in (huge.reason or "")
    assert "1 MB" in (huge.reason or "")
    # Read as it streamed and cut: the server got to write little more than the limit
    # (and socket buffers); a declared 4 GB is refused before its body is read.
    assert sent < 64 * 2**20, sent
    assert judge.summary.calls == 2  # a body too large is not asked for again


def test_a_compressed_body_is_bounded_by_its_decoded_size() -> None:
    bomb = gzip.compress(b" " * (200 * 2**20))  # 200 MB of spaces in ~200 KB

    def behave(h: Any, prompt: str) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(bomb)))
        h.end_headers()
        h.write(bomb)

    with Hostile(behave) as srv:
        judge = Judge(
            "compliance", "m", base_url=srv.base_url, max_reply_mb=4, max_retries=0, stop_after=0
        )
        [lab] = judge.run([single(1)])
    assert lab.status == "unscored" and "max_reply_mb" in (lab.reason or "")


def test_a_reply_under_the_limit_is_read_whole() -> None:
    with Hostile(lambda h, p: _good(h)) as srv:
        judge = Judge("compliance", "m", base_url=srv.base_url, max_reply_mb=0.01)
        [lab] = judge.run([single(1)])
    assert lab.label == "full_refusal"


# Started from a small fresh interpreter: a child forked from this test process (hundreds of
# MB once the suite has loaded models) would count this process's memory at the fork as its
# own peak, since Linux carries the peak across exec.
_PEAK_OF = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(p.pid, 0)\n"
    "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n"
)


def _maxrss_mb(cmd: list[str], env: dict[str, str]) -> tuple[int, float, str]:
    """Run ``cmd``; its exit code, its own peak RSS (MB) and its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK_OF, *cmd], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    code, kb = done.stdout.split()
    return int(code), int(kb) / 1024, done.stderr


def test_judge_cli_stays_small_against_a_4gb_body(tmp_path: Path) -> None:
    items = tmp_path / "items.jsonl"
    write_jsonl(items, [single(1), single(2)])
    out = tmp_path / "labels.jsonl"
    with Hostile(lambda h, p: endless(h, p, None, cap=4 * 2**30)) as srv:
        cmd = [*tinyjudge_command(), "judge", str(items), "--rubric", "compliance", "--model",
               "m", "--base-url", srv.base_url, "--out", str(out), "--no-progress",
               "--max-retries", "0"]  # fmt: skip
        code, rss, err = _maxrss_mb(cmd, {**os.environ, "OPENAI_API_KEY": "k"})
        sent = srv.sent
    assert code == 0, err
    huge, fine = read_labels(out)
    assert fine.label == "full_refusal"
    assert huge.status == "unscored" and "16 MB" in (huge.reason or "")
    assert sent < 128 * 2**20, sent
    assert rss < 600, rss  # the default limit is 16 MB; the body was 4 GB


@pytest.mark.parametrize("given_as", ["flag", "env"], ids=["base_url_flag", "OPENAI_BASE_URL"])
def test_credentials_in_the_url_are_not_sent_and_not_printed(tmp_path: Path, given_as: str) -> None:
    def behave(h: Any, prompt: str) -> None:
        h.send_response(503)
        h.send_header("Content-Type", "application/json")
        body = b'{"error": {"message": "down"}}'
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.write(body)

    items = tmp_path / "items.jsonl"
    write_jsonl(items, [single(1), single(2)])
    env = {**os.environ, "OPENAI_API_KEY": "sk-the-key-1234"}
    with Hostile(behave) as srv:
        url = srv.base_url.replace("http://", "http://alice:hunter2-pass@")
        args = ["judge", str(items), "--rubric", "compliance", "--model", "m", "--out",
                str(tmp_path / "labels.jsonl"), "--no-progress", "--max-retries", "0"]  # fmt: skip
        if given_as == "flag":
            args += ["--base-url", url]
        else:
            env["OPENAI_BASE_URL"] = url
        done = subprocess.run(
            [*tinyjudge_command(), *args], capture_output=True, text=True, env=env, timeout=120
        )
        auth = list(srv.auth)
    assert done.returncode == 1, done.stderr
    assert "hunter2" not in done.stdout + done.stderr
    assert "alice:***@127.0.0.1" in done.stderr
    # The key is the only authorisation: no Basic auth made from the URL's userinfo.
    assert auth and all(a == "Bearer sk-the-key-1234" for a in auth), auth


@pytest.mark.parametrize(
    ("url", "sent", "shown"),
    [
        ("http://u:p@h:8000/v1", "http://h:8000/v1", "http://u:***@h:8000/v1"),
        ("https://tok@h/v1?x=1", "https://h/v1?x=1", "https://***@h/v1?x=1"),
        ("http://u:p@ss@h/v1", "http://h/v1", "http://u:***@h/v1"),
        ("http://h/v1", "http://h/v1", "http://h/v1"),
    ],
    ids=["user_password", "token_only", "at_in_password", "none"],
)
def test_url_credentials_are_stripped_and_hidden(url: str, sent: str, shown: str) -> None:
    assert client_url(url) == sent
    assert shown_url(url) == shown
    judge = Judge("compliance", "m", base_url=url, api_key="k")
    assert "p@" not in repr(judge) and ":p" not in repr(judge)
