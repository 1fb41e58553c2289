"""HTTP reward server for RL loops: micro-batched scoring with a distilled model.

The server needs the ``serve`` extra (FastAPI and uvicorn); the rollout readers
and reward helpers it shares with ``tinyjudge.integrations`` do not, so
``create_app`` loads FastAPI only when it is first used.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tinyjudge._http import is_loopback

from ._options import ServerOptions
from ._rollouts import (
    Rollout,
    Scorer,
    describe_reward,
    query_to_item,
    read_item,
    refuse_blind,
    reward_labels_for,
    reward_of,
    rollout_to_item,
)
from ._templates import parse_chat_text

if TYPE_CHECKING:
    from ._app import create_app

__all__ = [
    "create_app",
    "run_server",
    "ServerOptions",
    "Scorer",
    "query_to_item",
    "rollout_to_item",
    "Rollout",
    "refuse_blind",
    "read_item",
    "reward_labels_for",
    "reward_of",
    "describe_reward",
    "parse_chat_text",
]

log = logging.getLogger("tinyjudge.serve")


def __getattr__(name: str) -> Any:
    if name == "create_app":  # FastAPI is imported on first use, not with the package
        from ._app import create_app

        return create_app
    raise AttributeError(f"module 'tinyjudge.serve' has no attribute {name!r}")


def run_server(
    model: Scorer, options: ServerOptions | None = None, *, audit: Any = None, **changes: Any
) -> None:
    """Serve ``model`` until interrupted.

    Args:
        model: a loaded reward model.
        options: how to listen and answer (:class:`ServerOptions`, checked when made:
            a non-loopback ``host`` needs a token of 16 characters or more, unless
            ``insecure_no_token``).
        audit: an :class:`~tinyjudge.cascade.AuditSampler` watching the scored rollouts.
        **changes: fields of :class:`ServerOptions` to set on ``options``.
    """
    from tinyjudge._listen import serve_app

    from ._app import create_app

    opts = options or ServerOptions()
    if changes:
        opts = replace(opts, **changes)
    if not is_loopback(opts.host) and not opts.token:
        log.warning(
            "serving on %s without a token (--insecure-no-token): anyone who can reach this "
            "address can call the model",
            opts.host,
        )
    serve_app(
        create_app(model, opts, audit=audit),
        host=opts.host,
        port=opts.port,
        header_timeout_s=opts.header_timeout_s,
        body_timeout_s=opts.body_timeout_s,
        max_connections=opts.max_connections,
    )
