"""HTTP reward server for RL loops: micro-batched scoring with a distilled model.

The server needs the ``serve`` extra (FastAPI and uvicorn); the rollout readers
and reward helpers it shares with ``tinyjudge.integrations`` do not, so
``create_app`` loads FastAPI only when it is first used.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tinyjudge._faces import lazy_names
from tinyjudge._http import is_loopback

from ._options import ServerOptions as ServerOptions
from ._rollouts import Rollout as Rollout
from ._rollouts import Scorer as Scorer
from ._rollouts import describe_reward as describe_reward
from ._rollouts import query_to_item as query_to_item
from ._rollouts import read_item as read_item
from ._rollouts import refuse_blind as refuse_blind
from ._rollouts import reward_labels_for as reward_labels_for
from ._rollouts import reward_of as reward_of
from ._rollouts import rollout_to_item as rollout_to_item
from ._templates import parse_chat_text as parse_chat_text

if TYPE_CHECKING:
    from ._app import create_app as create_app  # FastAPI loads on first use, not with the package

_log = logging.getLogger("tinyjudge.serve")


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
        _log.warning(
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


__getattr__, __dir__ = lazy_names(__name__)
