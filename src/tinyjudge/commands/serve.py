"""``tinyjudge serve``: a reward model over HTTP for RL loops.

Its flags are :class:`~tinyjudge.serve.ServerOptions`' fields (checked there, before
anything heavy loads) and :class:`~tinyjudge.cascade.AuditSamplerConfig`'s under ``--audit-``
(its judge's among them: ``--audit-model``); the body limit is given in MiB here.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from tinyjudge.cascade import AuditSamplerConfig
from tinyjudge.errors import TinyjudgeError, UsageError
from tinyjudge.judge import JudgeConfig
from tinyjudge.serve import ServerOptions

from ._config_flags import config_flags, under
from ._io import out

__all__ = ["command"]


@config_flags(ServerOptions, skip=("allowed_hosts", "reward", "max_body_bytes"))
@config_flags(AuditSamplerConfig, prefix="audit", into="audit")
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
    *,
    config: ServerOptions,
    audit: AuditSamplerConfig | None,
) -> None:
    """Serve a reward model over HTTP for RL loops (POST /score, /get_reward)."""
    from tinyjudge._extras import require_extra
    from tinyjudge._numbers import check_number

    # Refused before anything heavy is imported or loaded: a refused start costs nothing.
    check_number("max_body_mb", max_body_mb, 0, 4096, low_open=True, unit=" MiB")
    judge = audit.judge if audit is not None else None
    if judge is not None:
        with under("audit", JudgeConfig):
            judge.check_runnable()
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
    sampler = None
    if audit is not None and judge is not None:  # the rate and budget alone audit nothing
        from tinyjudge.cascade import audit_sampler

        sampler = audit_sampler(model, audit)
        name = f"judge:{judge.model}" if judge.model else "the judge"
        out.print(f"auditing {audit.rate:.1%} of rollouts with {name} (see /health)")
    out.print(
        f"serving {model.name} on http://{options.host}:{options.port} (POST /score, /get_reward)"
    )
    out.print(describe_reward(model, labels), markup=False, soft_wrap=True)
    run_server(model, options, audit=sampler)
