"""More connections than files: idle sockets cannot starve a server, a slow request head is
cut off, and running out of file descriptors is one line on stderr, not a traceback each.

The server is :func:`tinyjudge._listen.serve_app` (what ``tinyjudge serve`` and ``tinyjudge
label`` run) in a subprocess whose file limit is lowered, the way 1,500 idle connections
once met the usual 1,024: ``/health`` timed out for 15 s and stderr took 151 MB.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from .conftest import free_port

SERVER = textwrap.dedent(
    """
    import resource, sys
    limit, max_connections, header_timeout = int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    body_timeout = float(sys.argv[5])
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    from tinyjudge._listen import serve_app

    async def app(scope, receive, send):  # reads the body first, as the servers do
        message = {"more_body": True}
        while message.get("more_body"):
            message = await receive()
            if message["type"] == "http.disconnect":
                return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})

    serve_app(app, host="127.0.0.1", port=int(sys.argv[1]), lifespan="off",
              header_timeout_s=header_timeout, body_timeout_s=body_timeout,
              max_connections=None if max_connections == "auto" else int(max_connections))
    """
)


@contextmanager
def listener(
    fd_limit: int,
    max_connections: int | None = None,
    header_timeout_s: float = 10.0,
    body_timeout_s: float = 60.0,
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = free_port()
    limits = [fd_limit, max_connections or "auto", header_timeout_s, body_timeout_s]
    args = [str(port), *map(str, limits)]
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{url}/health", timeout=1.0)
            break
        except httpx.TransportError:
            assert proc.poll() is None and time.monotonic() < deadline, "did not start"
            time.sleep(0.1)
    try:
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _idle_sockets(port: int, n: int) -> list[socket.socket]:
    """``n`` connections that never send a byte (connect only: the kernel accepts them)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks.append(s)
    return socks


def _health_within(url: str, seconds: float) -> float:
    """How long ``/health`` took to answer 200 (retrying a refused connection)."""
    start = time.monotonic()
    while True:
        try:
            r = httpx.get(f"{url}/health", timeout=seconds)
            assert r.status_code == 200
            return time.monotonic() - start
        except httpx.TransportError:
            assert time.monotonic() - start < seconds, "no answer"
            time.sleep(0.05)


def test_idle_connections_past_the_file_limit_cannot_starve_health() -> None:
    with listener(fd_limit=256) as (url, proc):
        port = int(url.rsplit(":", 1)[1])
        socks = _idle_sockets(port, 600)
        try:
            time.sleep(1.0)  # let the server take them all in
            took = [_health_within(url, 5.0) for _ in range(5)]
        finally:
            for s in socks:
                s.close()
        assert max(took) < 5.0
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err[:2000]


def test_running_out_of_descriptors_is_one_line_and_the_server_recovers() -> None:
    # a cap past the file limit: accept() itself runs out (EMFILE), as without one
    with listener(fd_limit=128, max_connections=100_000, header_timeout_s=1.0) as (url, proc):
        port = int(url.rsplit(":", 1)[1])
        socks = _idle_sockets(port, 400)
        try:
            time.sleep(3.0)  # fds run out; the idle ones are cut after 1 s
            took = _health_within(url, 10.0)
        finally:
            for s in socks:
                s.close()
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert took < 10.0
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err, err[:2000]
    assert 1 <= len(lines) <= 3, lines
    assert "cannot accept connections (Too many open files)" in lines[0]


def _trickle_until_closed(port: int, start_bytes: bytes, byte: bytes) -> float | None:
    """Send ``start_bytes``, then ``byte`` every 0.3 s; seconds until the server closed the
    connection (None if it had not after 6 s)."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(start_bytes)
        start = time.monotonic()
        s.settimeout(0.3)
        while time.monotonic() - start < 6.0:
            try:
                s.sendall(byte)
                if s.recv(1024) == b"":
                    return time.monotonic() - start
            except TimeoutError:
                continue
            except OSError:  # reset by the server
                return time.monotonic() - start
    return None


def test_a_request_head_sent_too_slowly_is_cut_off() -> None:
    with listener(fd_limit=1024, header_timeout_s=1.0) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        # one byte of a header line at a time, never a whole head
        took = _trickle_until_closed(port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X")
        assert took is not None and took < 4.0
        assert _health_within(url, 5.0) < 5.0


def test_a_body_sent_too_slowly_is_cut_off() -> None:
    with listener(fd_limit=1024, body_timeout_s=1.0) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        head = b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n"
        took = _trickle_until_closed(port, head, b"x")  # the body never completes in time
        assert took is not None and took < 4.0


def test_slow_uploads_past_the_limit_cannot_starve_health() -> None:
    """At the limit with no idle connection, the oldest one still sending its body goes."""
    with listener(fd_limit=1024, max_connections=50) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        head = b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n"
        socks = []
        for _ in range(80):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(head + b"x")
            socks.append(s)
        try:
            time.sleep(0.5)
            assert _health_within(url, 5.0) < 5.0
        finally:
            for s in socks:
                s.close()


def test_keep_alive_connections_are_reused_not_cut() -> None:
    with listener(fd_limit=1024, header_timeout_s=1.0) as (url, _):
        with httpx.Client(base_url=url) as c:
            for _ in range(3):
                assert c.get("/health").status_code == 200
                time.sleep(0.3)
