"""HTTP reward server for RL loops: micro-batched scoring with a distilled model.

Install with the ``serve`` extra (FastAPI and uvicorn).
"""

from __future__ import annotations

import ipaddress
import logging

from ._app import (
    Scorer,
    create_app,
    describe_reward,
    query_to_item,
    reward_labels_for,
    rollout_to_item,
)
from ._batcher import MicroBatcher
from ._templates import CHAT_TEMPLATES, canonical, parse_chat_text

__all__ = [
    "create_app",
    "run_server",
    "MicroBatcher",
    "Scorer",
    "query_to_item",
    "rollout_to_item",
    "reward_labels_for",
    "describe_reward",
    "parse_chat_text",
    "canonical",
    "CHAT_TEMPLATES",
    "is_loopback",
]

log = logging.getLogger("tinyjudge.serve")


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
) -> None:
    """Serve ``model`` until interrupted (see :func:`create_app` for the options)."""
    import uvicorn

    if not is_loopback(host) and not token:
        log.warning(
            "serving on %s without --token: anyone who can reach this address can call the "
            "model; pass --token or bind 127.0.0.1",
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
    )
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
