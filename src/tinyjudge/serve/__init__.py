"""HTTP reward server for RL loops: micro-batched scoring with a distilled model.

The server needs the ``serve`` extra (FastAPI and uvicorn); the rollout readers
and reward helpers it shares with ``tinyjudge.integrations`` do not, so
``create_app`` loads FastAPI only when it is first used.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from tinyjudge._http import check_exposure, is_loopback
from tinyjudge.records import canonical

from ._batcher import MicroBatcher
from ._rollouts import (
    Scorer,
    describe_reward,
    query_to_item,
    reward_labels_for,
    reward_of,
    rollout_to_item,
)
from ._templates import CHAT_TEMPLATES, parse_chat_text

if TYPE_CHECKING:
    from ._app import create_app

__all__ = [
    "create_app",
    "run_server",
    "MicroBatcher",
    "Scorer",
    "query_to_item",
    "rollout_to_item",
    "reward_labels_for",
    "reward_of",
    "describe_reward",
    "parse_chat_text",
    "canonical",
    "CHAT_TEMPLATES",
]

log = logging.getLogger("tinyjudge.serve")


def __getattr__(name: str) -> Any:
    if name == "create_app":  # FastAPI is imported on first use, not with the package
        from ._app import create_app

        return create_app
    raise AttributeError(f"module 'tinyjudge.serve' has no attribute {name!r}")


def run_server(
    model: Scorer,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    max_batch: int = 64,
    max_wait_ms: float = 5.0,
    max_body_bytes: int = 8 << 20,
    reward: list[str] | None = None,
    chat_template: str | None = None,
    max_items: int = 2048,
    insecure_no_token: bool = False,
) -> None:
    """Serve ``model`` until interrupted (see :func:`create_app` for the options).

    Raises:
        TinyjudgeError: a non-loopback ``host`` without a token (unless
            ``insecure_no_token``), or a token shorter than 16 characters.
    """
    import uvicorn

    from ._app import create_app

    check_exposure(
        host, token, what="the reward model", env="TINYJUDGE_TOKEN", insecure=insecure_no_token
    )
    if not is_loopback(host) and not token:
        log.warning(
            "serving on %s without a token (--insecure-no-token): anyone who can reach this "
            "address can call the model",
            host,
        )
    app = create_app(
        model,
        token,
        max_batch,
        max_wait_ms,
        max_body_bytes,
        reward=reward,
        chat_template=chat_template,
        max_items=max_items,
    )
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
