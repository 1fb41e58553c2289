"""``tinyjudge serve``: a reward model over HTTP for RL loops.

Its flags are :class:`~tinyjudge.serve.ServerOptions`' fields (checked there, before
anything heavy loads); the body limit is given in MiB here, and the audit sampler's.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from tinyjudge.errors import TinyjudgeError, UsageError
from tinyjudge.serve import ServerOptions

from ._config_flags import config_flags
from ._io import fail, out

__all__ = ["command"]


@config_flags(ServerOptions, skip=("allowed_hosts", "reward", "max_body_bytes"))
def command(
    model_dir: Path = typer.Argument(..., help="a model directory from `tinyjudge distill`"),
    max_body_mb: float = typer.Option(8.0, help="larger requests are refused with 413"),
    allowed_host: list[str] = typer.Option(
        None,
        "--allowed-host",
        help="a Host name to answer to (repeatable); on loopback only loopback names are "
        "answered besides these (no DNS rebinding)",
    ),
    reward: str = typer.Option(
        None,
        "--reward",
        help="LABEL[,LABEL]: the labels whose probability is the reward "
        "(default: the rubric's positive labels)",
    ),
    audit_model: str = typer.Option(
        None, "--audit-model", help="judge a random sample of scored rollouts with this model"
    ),
    audit_base_url: str = typer.Option(
        None, "--audit-base-url", help="the audit judge's OpenAI-compatible endpoint"
    ),
    audit_rate: float = typer.Option(0.05, "--audit-rate", help="share of rollouts audited"),
    audit_budget: int = typer.Option(
        None, "--audit-budget", help="most rollouts ever sent to the audit judge"
    ),
    *,
    config: ServerOptions,
) -> None:
    """Serve a reward model over HTTP for RL loops (POST /score, /get_reward)."""
    from tinyjudge._extras import require_extra
    from tinyjudge._numbers import check_number

    # Refused before anything heavy is imported or loaded: a refused start costs nothing.
    check_number("max_body_mb", max_body_mb, 0, 4096, low_open=True, unit=" MiB")
    options = config.replace(
        allowed_hosts=tuple(allowed_host or ()),
        max_body_bytes=int(max_body_mb * (1 << 20)),
        reward=reward.split(",") if reward else None,
    )
    require_extra("serve", "tinyjudge serve")
    # PyTorch's idle OpenMP threads sleep instead of spinning, leaving the cores to the
    # HTTP work between batches. Set before any OpenMP runtime loads (scikit-learn's
    # comes with the model code); the user's own setting wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from tinyjudge.distill import load_model
    from tinyjudge.serve import describe_reward, reward_labels_for, run_server

    model = load_model(model_dir)
    try:
        labels = reward_labels_for(model, list(options.reward) if options.reward else None)
    except TinyjudgeError as e:
        raise UsageError(f"--reward {reward}: {e}", param="reward") from None
    audit = None
    if audit_model is not None:
        from tinyjudge.cascade import audit_sampler

        audit = audit_sampler(
            model, audit_model, base_url=audit_base_url, rate=audit_rate, budget=audit_budget
        )
        out.print(f"auditing {audit_rate:.1%} of rollouts with judge:{audit_model} (see /health)")
    elif audit_base_url is not None:
        fail("--audit-base-url needs --audit-model")
    out.print(
        f"serving {model.name} on http://{options.host}:{options.port} (POST /score, /get_reward)"
    )
    out.print(describe_reward(model, labels), markup=False, soft_wrap=True)
    run_server(model, options, audit=audit)
