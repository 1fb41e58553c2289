"""``tinyjudge demo``: the whole loop on the bundled XSTest sample."""

from __future__ import annotations

from pathlib import Path

import typer

from tinyjudge.distill import FEW_LABELS_TIER, chosen_tiers

from ._config_flags import flag_of
from ._io import out

__all__ = ["command"]


def command(
    data: Path = typer.Option(None, help="XSTest-shaped folder (default: the bundled sample)"),
    out_dir: Path = typer.Option(Path("runs/demo"), "--out", help="where the demo writes"),
    tier: str = typer.Option(
        FEW_LABELS_TIER, help="reward-model tier: " + ", ".join(chosen_tiers())
    ),
    judge: str = typer.Option(
        "replay", "--judge", help="replay (recorded GPT-4 verdicts) or local (a live local model)"
    ),
    limit: int = typer.Option(
        None,
        "--limit",
        help="run the loop on N items from all splits (the reward model needs two classes "
        "among the train items: 30 or more)",
    ),
) -> None:
    """Run the whole loop on the bundled XSTest sample."""
    from tinyjudge.demo import run_demo

    run_demo(data, out_dir, console=out, tier=tier, judge=judge, limit=limit, name_of=flag_of)
