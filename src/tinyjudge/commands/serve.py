"""``tinyjudge serve``: a reward model over HTTP for RL loops."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from tinyjudge.errors import TinyjudgeError, UsageError

from ._io import fail, out

__all__ = ["command"]


def command(
    model_dir: Path = typer.Argument(..., help="a model directory from `tinyjudge distill`"),
    host: str = typer.Option("127.0.0.1", help="bind address; anything but loopback needs --token"),
    port: int = typer.Option(8000, min=1, max=65535, help="TCP port"),
    token: str = typer.Option(None, envvar="TINYJUDGE_TOKEN", help="bearer token to require"),
    max_batch: int = typer.Option(64, help="most items per forward pass (1 turns batching off)"),
    max_wait_ms: float = typer.Option(5.0, help="how long a forward pass waits for more items"),
    max_body_mb: float = typer.Option(8.0, help="larger requests are refused with 413"),
    max_items: int = typer.Option(
        2048, min=1, help="most items (rollouts) per request; more are refused with 413"
    ),
    insecure_no_token: bool = typer.Option(
        False, "--insecure-no-token", help="allow a non-loopback --host without a token"
    ),
    allowed_host: list[str] = typer.Option(
        None,
        "--allowed-host",
        help="a Host name to answer to (repeatable); on loopback only loopback names are "
        "answered besides these (no DNS rebinding)",
    ),
    max_text_chars: int = typer.Option(
        1 << 20, min=1, help="most characters in one text rollout; longer ones get 413"
    ),
    reward: str = typer.Option(
        None,
        "--reward",
        help="LABEL[,LABEL]: the labels whose probability is the reward "
        "(default: the rubric's positive labels)",
    ),
    chat_template: str = typer.Option(
        None,
        "--chat-template",
        help="how /get_reward reads text rollouts: chatml, llama3, gemma, phi3, or a pattern "
        "with {role} and {content} (default: recognised by their markers)",
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
) -> None:
    """Serve a reward model over HTTP for RL loops (POST /score, /get_reward)."""
    from tinyjudge._extras import require_extra
    from tinyjudge._numbers import check_number

    # Refused before anything heavy is imported or loaded: a refused start costs nothing.
    check_number("max_body_mb", max_body_mb, 0, 4096, low_open=True, unit=" MiB")
    check_number("max_wait_ms", max_wait_ms, 0, 10_000, unit=" ms")
    if max_batch < 1:
        fail(f"--max-batch must be at least 1, got {max_batch}")
    require_extra("serve", "tinyjudge serve")
    from tinyjudge.serve import ServerOptions

    options = ServerOptions(
        host=host, port=port, token=token, insecure_no_token=insecure_no_token,
        allowed_hosts=tuple(allowed_host or ()), max_batch=max_batch, max_wait_ms=max_wait_ms,
        max_body_bytes=int(max_body_mb * (1 << 20)), max_items=max_items,
        max_text_chars=max_text_chars, chat_template=chat_template,
        reward=reward.split(",") if reward else None,
    )  # fmt: skip
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
    out.print(f"serving {model.name} on http://{host}:{port} (POST /score, /get_reward)")
    out.print(describe_reward(model, labels), markup=False, soft_wrap=True)
    run_server(model, options, audit=audit)
