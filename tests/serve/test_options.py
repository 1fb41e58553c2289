"""``ServerOptions``: the reward server's options, checked when made, and ``serve``'s flags."""

from __future__ import annotations

from dataclasses import fields

import pytest

from tinyjudge.cli import in_flags
from tinyjudge.commands._config_flags import flag_of
from tinyjudge.errors import UsageError
from tinyjudge.serve import ServerOptions


@pytest.mark.parametrize(
    ("options", "param", "shown"),
    [
        ({"port": 0}, "port", "--port must be a finite number in [1, 65535], got 0"),
        ({"port": 70000}, "port", "--port must be a finite number in [1, 65535], got 70000"),
        ({"max_batch": 0}, "max_batch", "--max-batch must be at least 1, got 0"),
        ({"max_items": -3}, "max_items", "--max-items must be at least 1, got -3"),
        ({"max_wait_ms": -1.0}, "max_wait_ms", "--max-wait-ms must be >= 0, got -1.0"),
        ({"max_wait_ms": float("nan")}, "max_wait_ms", "--max-wait-ms must be a finite number"),
        ({"body_timeout_s": 0.0}, "body_timeout_s", "--body-timeout-s must be positive"),
        ({"header_timeout_s": 1e6}, "header_timeout_s", "--header-timeout-s must be <= 86400"),
        ({"max_connections": 0}, "max_connections", "--max-connections must be >= 1, got 0"),
    ],
    ids=["port-0", "port-70000", "batch-0", "items-negative", "wait-negative", "wait-nan",
         "body-timeout-0", "header-timeout-huge", "connections-0"],
)  # fmt: skip
def test_a_value_out_of_range_names_the_field(options, param, shown) -> None:
    with pytest.raises(UsageError) as e:
        ServerOptions(**options)
    assert e.value.param == param and "--" not in str(e.value)
    assert in_flags(e.value).startswith(shown)


def test_a_change_is_checked_again() -> None:
    options = ServerOptions(port=9000, max_items=10)
    assert options.replace(max_items=20).max_items == 20
    with pytest.raises(UsageError, match="^max_items must be at least 1"):
        options.replace(max_items=0)


def test_the_serve_flags_are_the_fields() -> None:
    import typer

    from tinyjudge.cli import app

    serve = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    flags = {o for p in serve.params for o in p.opts}
    # given in other units or forms on the command line: MiB, repeatable, comma-separated
    other = {"max_body_bytes": "--max-body-mb", "allowed_hosts": "--allowed-host",
             "reward": "--reward"}  # fmt: skip
    assert {flag_of(f.name) for f in fields(ServerOptions) if f.name not in other} <= flags
    assert set(other.values()) <= flags
    token = next(p for p in serve.params if p.name == "token")
    assert token.envvar == "TINYJUDGE_TOKEN"
