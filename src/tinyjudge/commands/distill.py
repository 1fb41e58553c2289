"""``tinyjudge distill``: a source's labels into a small reward model directory."""

from __future__ import annotations

from pathlib import Path

import typer

from tinyjudge._people_methods import DEFAULT_PEOPLE_METHOD, PEOPLE_METHODS

from ._io import err, out, read_label_files, resolve_rubric
from ._params import parse_params

__all__ = ["command"]

_HUMAN_METHODS_HELP = (
    " | ".join(f"{name} ({how.brief})" for name, how in PEOPLE_METHODS.items())
    + " (see docs/distill.md)"
)


def command(
    items: Path = typer.Argument(..., help="items.jsonl"),
    labels: list[Path] = typer.Argument(
        ..., help="labels.jsonl file(s) (any sources; --source and --human pick)"
    ),
    source: str = typer.Option(..., "--source", help="the teacher, e.g. judge:gpt-4"),
    rubric: str = typer.Option(..., "--rubric", help="rubric name or .yaml path"),
    tier: str = typer.Option(
        "linear",
        "--tier",
        help="linear | probe | transformer (any encoder or decoder --param base=)",
    ),
    group_by: str = typer.Option(None, "--group-by", help="split key, e.g. metadata.prompt_id"),
    val_fraction: float = typer.Option(0.2, "--val-fraction", help="share held out"),
    name: str = typer.Option(None, "--name", help="model name (labels get rm:<name>)"),
    param: list[str] = typer.Option([], "--param", help="tier option KEY=VALUE, repeatable"),
    out_dir: Path = typer.Option(..., "--out", help="model directory to write"),
    human: str = typer.Option(
        None, "--human", help="people's labels too (e.g. human:final): learn to predict them"
    ),
    human_method: str = typer.Option(
        DEFAULT_PEOPLE_METHOD,
        "--human-method",
        help=_HUMAN_METHODS_HELP,
    ),
    human_weight: float = typer.Option(
        None, "--human-weight", help="weighted: one person's row in judge rows (default: even)"
    ),
    rater: list[str] = typer.Option(
        [], "--rater", help="dawid-skene: a human rater source, repeatable (default: --human)"
    ),
) -> None:
    """Distill a source's labels (and, with --human, people's) into a small reward model.

    Under ``torchrun --nproc-per-node N -m tinyjudge distill ...`` (or ``accelerate
    launch -m tinyjudge distill ...``) the transformer tier trains data-parallel:
    every rank trains on its shard; rank 0 alone validates, writes --out and prints.
    """
    import contextlib
    import logging
    import warnings

    from rich.logging import RichHandler

    from tinyjudge.datasets.jsonl import read_items
    from tinyjudge.distill import SplitWarning, check_params, distill
    from tinyjudge.distill.hf import is_main_process, wait_for_everyone

    params = parse_params(param)
    check_params(params)  # before any file is read: C=-1 is one line, not a traceback later
    main = is_main_process()
    if main:
        # Training progress (epochs, loss) is logged by the transformer tier; show it live.
        progress_log = logging.getLogger("tinyjudge.distill")
        progress_log.setLevel(logging.INFO)
        progress_log.addHandler(RichHandler(console=err, show_path=False, show_time=False))
    else:
        from transformers.utils import logging as transformers_logging

        transformers_logging.set_verbosity_error()  # one rank reports (its load report too)
    item_list, label_list = read_items(items), read_label_files(labels)
    rub = resolve_rubric(rubric)
    status = err.status(f"distilling {source} into a {tier} model...")
    with (
        status if main else contextlib.nullcontext(),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always", SplitWarning)
        result = distill(
            item_list,
            label_list,
            source,
            rub,
            tier=tier,
            group_by=group_by,
            val_fraction=val_fraction,
            name=name,
            human=human,
            human_method=human_method,
            human_weight=human_weight,
            raters=rater,
            **params,
        )
        if main:
            result.model.save(out_dir)
    wait_for_everyone()  # the other ranks end once rank 0 has written the model
    if not main:
        return
    for w in caught:
        if isinstance(w.message, SplitWarning):
            said = w.message.describe("--val-fraction", f"--group-by {w.message.key}")
            err.print(f"warning: {said}", markup=False, soft_wrap=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    v = result.validation
    out.print(
        f"{result.model.name} ({tier}): trained on {result.n_train}, validated on {result.n_val}"
        f" ({result.n_unscored} unscored labels left out) -> {out_dir}"
    )
    if human is None:
        out.print(
            f"  agreement with {source}: accuracy {v['accuracy']:.3f}, "
            f"Cohen's kappa {v['cohen_kappa']:.3f}"
        )
        return
    card = result.model.card_
    out.print(
        f"  learnt from {card['n_human_labels']} {human} and {card['n_judge_labels']} {source} "
        f"labels ({card['human_method']})"
    )
    for who, src in (("people", human), ("judge", source)):
        if f"cohen_kappa_vs_{who}" in v:
            out.print(
                f"  agreement with {src} on {v[f'n_val_{who}']} held-out items: accuracy "
                f"{v[f'accuracy_vs_{who}']:.3f}, Cohen's kappa {v[f'cohen_kappa_vs_{who}']:.3f}"
            )
