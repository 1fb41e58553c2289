"""The loopback check and token guard that ``serve`` and ``label`` share (tinyjudge._http)."""

from __future__ import annotations

import pytest

from tinyjudge._http import LOOPBACK_HOSTS, bearer_token, is_loopback, token_matches


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("::1", True),
     ("[::1]", True), ("0.0.0.0", False), ("::", False), ("[::]", False),
     ("10.1.2.3", False), ("192.168.1.5", False), ("example.org", False), ("", False)],
    ids=["v4", "v4-other", "name", "v6", "v6-bracketed", "any-v4", "any-v6",
         "any-v6-bracketed", "private", "lan", "dns", "empty"],
)  # fmt: skip
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_every_accepted_host_header_is_loopback() -> None:
    assert all(is_loopback(h) for h in LOOPBACK_HOSTS)


@pytest.mark.parametrize(
    ("header", "token"),
    [(b"Bearer s3cret", b"s3cret"), ("bearer s3cret", b"s3cret"), (b"BEARER  s3cret ", b"s3cret"),
     (b"Basic czNjcmV0", b""), (b"s3cret", b""), (b"", b"")],
    ids=["bytes", "lower-case-str", "upper-case-padded", "basic", "no-scheme", "none"],
)  # fmt: skip
def test_bearer_token(header: str | bytes, token: bytes) -> None:
    assert bearer_token(header) == token


@pytest.mark.parametrize(
    ("given", "expected", "ok"),
    [("s3cret", "s3cret", True), (b"s3cret", "s3cret", True), ("s3cre", "s3cret", False),
     ("", "s3cret", False), ("S3CRET", "s3cret", False)],
    ids=["same", "bytes-vs-str", "prefix", "empty", "case"],
)  # fmt: skip
def test_token_matches(given: str | bytes, expected: str, ok: bool) -> None:
    assert token_matches(given, expected) is ok
