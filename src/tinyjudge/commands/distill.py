"""``tinyjudge distill``: a source's labels into a small reward model directory."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import typer

from tinyjudge.distill import (
    DEFAULT_TIER,
    TIER_REGISTRY,
    DistillConfig,
    EnsembleConfig,
    chosen_tiers,
)
from tinyjudge.errors import UsageError
from tinyjudge.exploit import HardenConfig

from ._bars import progress_bars, quiet_option, shows_bars
from ._config_flags import config_flags, flag_of, kind_flags, kinds_of
from ._io import err, out, read_label_files, resolve_rubric

__all__ = ["command", "tier_options"]

# the tiers' configs whose fields are flags, one each (encoder: the transformer's first name)
_TIER_CONFIGS = list(dict.fromkeys(t.config for t in chosen_tiers().values()))


@config_flags(
    HardenConfig,
    prefix="harden",
    into="harden",
    switch="harden against exploits (augmentation, adversarial rounds); any --harden-* implies it",
)
@config_flags(EnsembleConfig, prefix="ensemble", into="ensemble", bare="k")
@config_flags(DistillConfig)
@kind_flags(_TIER_CONFIGS)
def command(
    items: Path = typer.Argument(..., help="items.jsonl"),
    labels: list[Path] = typer.Argument(
        ..., help="labels.jsonl file(s) (any sources; --source and --human pick)"
    ),
    rubric: str = typer.Option(
        None, "--rubric", help="rubric name or .yaml path (default: the teacher's labels')"
    ),
    param: list[str] = typer.Option(
        [], "--param", help="a tier option as KEY=VALUE (--param lora_r=16 is --lora-r 16)"
    ),
    out_dir: Path = typer.Option(..., "--out", help="model directory to write"),
    quiet: bool = quiet_option(),
    *,
    config: DistillConfig,
    harden: HardenConfig | None,
    ensemble: EnsembleConfig | None,
    options: dict[str, Any],
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
    from tinyjudge.distill import SplitWarning, distill
    from tinyjudge.distill.hf import is_main_process, wait_for_everyone
    from tinyjudge.exploit import Hardened

    # before any file is read: C=-1 is one line, not a traceback later
    tier, source, human = config.tier or DEFAULT_TIER, config.source, config.human
    tier_opts = tier_options(tier, options, param)
    main = is_main_process()
    if main and not quiet:
        # Training progress (epochs, loss) is logged by the transformer tier; show it live.
        progress_log = logging.getLogger("tinyjudge.distill")
        progress_log.setLevel(logging.INFO)
        progress_log.addHandler(RichHandler(console=err, show_path=False, show_time=False))
    elif not main:
        from transformers.utils import logging as transformers_logging

        transformers_logging.set_verbosity_error()  # one rank reports (its load report too)
    rub = None if rubric is None else resolve_rubric(rubric)
    item_list, label_list = read_items(items), read_label_files(labels, rubric=rub)
    bars = main and shows_bars(quiet)
    status = err.status(f"distilling {source or 'the labels'} into a {tier} model...")
    with (
        status if bars else contextlib.nullcontext(),
        progress_bars(quiet or not main),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always", SplitWarning)
        result = distill(
            item_list,
            label_list,
            rubric=rub,
            harden=None if harden is None else Hardened(harden),
            ensemble=ensemble,
            **{f.name: getattr(config, f.name) for f in fields(config)},
            **tier_opts,
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
    source = result.model.card_["teacher_source"]
    out.print(
        f"{result.model.name} ({tier}): trained on {result.n_train}, validated on {result.n_val}"
        f" ({result.n_unscored} unscored labels left out) -> {out_dir}"
    )
    if result.n_copies or result.n_left_out:  # where the training count comes from
        parts = [f"{result.n_split} training items"]
        if result.n_copies:
            parts.append(f"+ {result.n_copies} edited copies (hardening)")
        if result.n_left_out:
            parts.append(f"- {result.n_left_out} whose label is inherited from an earlier answer")
        out.print(
            f"  of {result.n_split + result.n_val} items with a usable label: "
            f"{' '.join(parts)} = {result.n_train} rows trained on; {result.n_val} validated",
            markup=False,
            soft_wrap=True,
        )
    if result.n_no_item:
        err.print(
            f"note: {result.n_no_item} {source} labels name items not in {items}: left out "
            "(pass the items file they were made from to train on them)",
            markup=False,
            soft_wrap=True,
        )
    if TIER_REGISTRY[tier].takes("cache_dir"):  # the tier caches its embeddings
        from tinyjudge._cache import default_cache_dir

        where = getattr(result.model, "cache_dir", None) or default_cache_dir()
        out.print(f"  embeddings cached in {where} (TINYJUDGE_CACHE moves it)", markup=False)
    if human is None:
        out.print(
            f"  agreement with {source}: accuracy {v['accuracy']:.3f}, "
            f"Cohen's kappa {v['cohen_kappa']:.3f}"
        )
        _print_harden(result.model.card_.get("harden"))
        return
    card = result.model.card_
    out.print(
        f"  learnt from {card['n_human_labels']} {human} and {card['n_judge_labels']} {source} "
        f"labels ({card['human_method']})"
    )
    combo = card.get("combination")
    if combo and combo.get("cv"):
        out.print(
            f"  chose {combo['chosen']} by {combo['folds']}-fold cross-validation on people's "
            f"rows (temperature {combo['temperature']}); kappa with people (CV): "
            + ", ".join(f"{name} {row['kappa']:.3f}" for name, row in combo["cv"].items()),
            markup=False,
        )
    elif combo:
        out.print(f"  chose {combo['chosen']} (too few groups to cross-validate)", markup=False)
    for who, src in (("people", human), ("judge", source)):
        if f"cohen_kappa_vs_{who}" in v:
            out.print(
                f"  agreement with {src} on {v[f'n_val_{who}']} held-out items: accuracy "
                f"{v[f'accuracy_vs_{who}']:.3f}, Cohen's kappa {v[f'cohen_kappa_vs_{who}']:.3f}"
            )


def tier_options(tier: str, flags: dict[str, Any], pairs: list[str]) -> dict[str, Any]:
    """The tier's options from its flags and ``--param KEY=VALUE`` pairs, checked.

    A flag of another tier is refused naming the flag and the tiers it belongs
    to; a ``--param`` value is read as its field's declared type. The options are
    checked as the tier's config checks them (the rubric's defaults come later).

    Raises:
        UsageError: a flag of another tier, a pair without a key, an unknown
            option, a value of the wrong kind or out of range (naming the field).
    """
    if tier not in TIER_REGISTRY:  # distill names the unknown tier
        return {**flags, **TIER_REGISTRY[DEFAULT_TIER].config.from_pairs(pairs)}
    cls = TIER_REGISTRY[tier].config
    for name in flags:
        if name not in {f.name for f in fields(cls)}:
            kinds = kinds_of(_TIER_CONFIGS, name)
            owners = " and ".join(kinds) + (" tiers" if len(kinds) > 1 else " tier")
            raise UsageError(
                f"{flag_of(name)} is an option of the {owners}, not of --tier {tier}",
                param=name,
            )
    given = {**flags, **cls.from_pairs(pairs)}
    cls.options(**given)
    return given


def _print_harden(record: dict[str, Any] | None) -> None:
    """One line on hardening: the validation split's exploit figures before and after."""
    if not record:
        return
    b, a = record["before"], record["after"]
    out.print(
        f"  hardened in {len(record['rounds']) - 1} round(s) toward {record['target']}: "
        f"best searched phrase {b['best_search_flip']:.1%} -> {a['best_search_flip']:.1%}, "
        f"worst format edit {b['worst_format_flip']:.1%} -> {a['worst_format_flip']:.1%} "
        "of validation items flipped (phrases mined from the validation items)"
    )
    if "kept_round" in record and record["kept_round"] is None:
        out.print(
            "  no hardened round beat the plain model on the validation figures: the plain "
            "model is kept (--harden-if-worse keep takes the best round)"
        )
    worse = record.get("worse_edits") or {}
    if worse:
        out.print(
            f"  worse after hardening on the validation items ({len(worse)} edit(s)): "
            + ", ".join(f"{name} {b_:.1%} -> {a_:.1%}" for name, (b_, a_) in worse.items()),
            markup=False,  # edit names are a user's or the search's text
        )
    if "trained_bank_search_flip" in a:
        out.print(
            f"  on phrases mined from the training items (the bank it trained against): "
            f"{b.get('trained_bank_search_flip', float('nan')):.1%} -> "
            f"{a['trained_bank_search_flip']:.1%}"
        )
