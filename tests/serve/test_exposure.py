"""The reward server refuses to listen beyond this machine without a real token."""

from __future__ import annotations

import pytest

from tinyjudge._http import check_exposure
from tinyjudge.errors import TinyjudgeError

TOKEN = "x" * 16


@pytest.mark.parametrize(
    ("host", "token", "insecure", "message"),
    [
        ("0.0.0.0", None, False, r"^host 0\.0\.0\.0 lets other machines reach the reward model"),
        ("192.168.1.5", None, False, "or insecure_no_token to run open on purpose$"),
        ("127.0.0.1", "short", False, "^token must be at least 16 characters"),
        ("0.0.0.0", "short", True, "^token must be at least 16 characters"),
    ],
    ids=["any-address", "lan-address", "short-token", "short-token-even-if-insecure"],
)
def test_exposure_rules(host, token, insecure, message) -> None:
    with pytest.raises(TinyjudgeError, match=message):
        check_exposure(host, token, what="the reward model", env="TINYJUDGE_TOKEN",
                       insecure=insecure)  # fmt: skip


@pytest.mark.parametrize(
    ("host", "token", "insecure"),
    [("127.0.0.1", None, False), ("::1", None, False), ("0.0.0.0", TOKEN, False),
     ("0.0.0.0", None, True)],
    ids=["loopback", "loopback-v6", "token", "insecure-on-purpose"],
)  # fmt: skip
def test_exposure_allowed(host, token, insecure) -> None:
    check_exposure(host, token, what="the reward model", env="TINYJUDGE_TOKEN", insecure=insecure)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--host", "0.0.0.0"],
            "--host 0.0.0.0 lets other machines reach the reward model: pass --token (or set "
            "TINYJUDGE_TOKEN)",
        ),
        (["--host", "0.0.0.0"], "or --insecure-no-token to run open on purpose"),
        (["--token", "short"], "--token must be at least 16 characters"),
        (["--chat-template", "chatml2"], "--chat-template 'chatml2': give one of"),
        (["--port", "70000"], "--port must be a finite number in [1, 65535], got 70000"),
        (["--max-items", "0"], "--max-items must be at least 1, got 0"),
    ],
    ids=[
        "open-host",
        "open-host-on-purpose",
        "short-token",
        "bad-template",
        "port-70000",
        "max-items-0",
    ],
)
def test_serve_refuses_before_loading_anything(cli, tmp_path, args, message) -> None:
    res = cli("serve", tmp_path / "no-model", *args)
    assert res.returncode == 2 and message in " ".join(res.stderr.split())
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
