"""Fit a calibrator on human labels, measure it honestly (cross-fitted), save it.

Two uses. A reward model's own probabilities on the human-labelled items
(:func:`calibrate_model`; :func:`tinyjudge.calibrate.calibrate` gives the
calibrated model itself, whose ``save`` writes ``calibration.json`` with the
weights, and :func:`save_model_calibration` writes it into an existing model
directory; ``load_model`` applies it from then on, and the model card gains
before/after figures). Or any label source that gives ``probs``
(:func:`calibrate_source`): its calibrated labels become a new source
``<source>+<method>`` (:func:`save_source_calibration`). A method that makes
held-out NLL or ECE worse than no calibration is not applied unless asked
(``if_worse``). A :class:`Calibration` carries what it was fitted with (the
human source, the :class:`CalibrateConfig`), so nothing is asked twice.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tinyjudge._atomic import atomic_dir
from tinyjudge._model_dir import (
    CALIBRATION_FILE,
    ModelDirUpdate,
    is_model_dir,
    update_model_dir,
    write_calibration,
)
from tinyjudge.calibrate._calibrators import BaseCalibrator, make_calibrator
from tinyjudge.calibrate._card import model_card_section
from tinyjudge.calibrate._config import CalibrateConfig
from tinyjudge.calibrate._crossfit import CrossFitResult
from tinyjudge.calibrate._data import calibrator_state, probs_matrix
from tinyjudge.calibrate._guard import MethodCheck, compare_methods
from tinyjudge.calibrate._plot import reliability_diagram
from tinyjudge.calibrate._result import Calibration, ProbabilisticModel, SourceCalibration
from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Label, index_labels, join_sources

__all__ = [
    "calibrate_model",
    "calibrate_source",
    "calibrate_source_methods",
    "save_model_calibration",
    "write_model_calibration",
    "save_source_calibration",
]

PLOT_FILE = "calibration.png"
# What a label source's calibration writes into its folder (all replaced together).
SOURCE_OUTPUTS = (CALIBRATION_FILE, PLOT_FILE, "metrics.json", "labels.jsonl")


def _human_targets(labels: Sequence[Label], human: str) -> tuple[dict[str, str], int]:
    table = index_labels(labels)
    if human not in table:
        raise UsageError(f"no labels from human source {human!r}; sources: {sorted(table)}")
    got = table[human]
    scored = {i: lab.label for i, lab in got.items() if lab.status == "ok" and lab.label}
    return scored, len(got) - len(scored)


def _groups(ids: Sequence[str], items: dict[str, Item], group_by: str | None) -> list[Any] | None:
    if group_by is None:
        return None
    if not items:
        raise UsageError(f"group_by {group_by} reads item metadata: pass items", param="items")
    # an item without the key is its own group; a falsy value (0, False, "") is a group
    values = [items[i].get(group_by) if i in items else None for i in ids]
    # strings: GroupKFold sorts the keys, and must not mistake a pair for two columns
    return [f"item:{i}" if v is None else f"group:{v!r}" for i, v in zip(ids, values, strict=True)]


# A calibrator fitted on fewer labels of a class than this learns nothing about it;
# on one class alone it maps every item to that class (and scores a perfect ECE).
MIN_PER_CLASS = 5


def check_label_counts(y: Sequence[str]) -> None:
    """Refuse human labels of one class, or with fewer than :data:`MIN_PER_CLASS` of a
    second one: there is nothing to calibrate against.

    Raises:
        UsageError: naming the counts and what is needed.
    """
    counts = Counter(y)
    enough = [c for c, n in counts.items() if n >= MIN_PER_CLASS]
    if len(enough) < 2:
        shown = ", ".join(f"{c!r} {n}" for c, n in counts.most_common(6))
        raise UsageError(
            f"the human labels hold {shown or 'nothing'}; calibration needs at least two "
            f"labels with {MIN_PER_CLASS} or more each: label more items of the other classes"
        )


def _fit(
    P: np.ndarray, y: list[str], classes: list[str], groups: list[Any] | None, cfg: CalibrateConfig
) -> tuple[BaseCalibrator | None, MethodCheck, str | None]:
    """Cross-fit for honest figures, then fit the calibrator to keep on every item.

    The calibrator is ``None`` when the method makes held-out NLL or ECE worse than
    no calibration and ``if_worse`` is ``"identity"`` (with a warning); ``"refuse"``
    raises instead, ``"keep"`` applies it anyway (with a warning).
    """
    method, if_worse = cfg.method, cfg.if_worse
    check_label_counts(y)
    check = compare_methods(
        method, P, y, classes=classes, groups=groups, n_splits=cfg.n_splits, n_boot=cfg.n_boot,
        seed=cfg.seed,
    )  # fmt: skip
    warning = None
    if not check.ok:
        if if_worse == "refuse":
            raise UsageError(f"{check.message()}; if_worse keep applies it anyway", "if_worse")
        keep = "kept anyway (if_worse keep)" if if_worse == "keep" else "not applied"
        warning = f"{check.message()}; {keep}"
        if if_worse == "identity":
            return None, check, warning
    return make_calibrator(method, classes).fit(P, y), check, warning


def _plot(cf: CrossFitResult, path: Path, title: str) -> None:
    """The before/after reliability diagram."""
    before_after = {"before": cf.before, f"after {cf.method} (held out)": cf.after}
    reliability_diagram(cf.y, before_after, path, title=title)


def calibrate_model(
    model: ProbabilisticModel,
    items: Sequence[Item],
    human_labels: Sequence[Label],
    *,
    human: str,
    config: CalibrateConfig | None = None,
    items_name: str = "the items given",
    **options: Any,
) -> Calibration:
    """Calibrate a reward model's probabilities against human labels.

    :func:`tinyjudge.calibrate.calibrate` gives the calibrated model itself; this
    gives the :class:`Calibration` alone.

    Args:
        model: a reward model loaded uncalibrated (``load_model(dir, calibrated=False)``).
        items: the items to calibrate on (those people labelled are used).
        human_labels: labels of any sources; those of ``human`` are the targets.
        human: the human source, e.g. ``human:final``.
        config: the options (:class:`CalibrateConfig`: ``method``, ``n_splits``,
            ``group_by`` an item key the folds never split, ``n_boot``, ``seed``,
            ``if_worse`` when the method makes held-out NLL or ECE worse than none:
            ``"identity"`` applies none (with a warning), ``"refuse"`` raises,
            ``"keep"`` applies it (with a warning)).
        items_name: how errors name the items (a file, for the command line).
        **options: fields of :class:`CalibrateConfig`, over ``config``.

    Raises:
        UsageError: an unknown method or option, no labels from ``human``, none
            about these items, a human label the model does not know, or a worse
            method with ``if_worse="refuse"``.
    """
    cfg = CalibrateConfig.from_options(config, **options)
    targets, unscored = _human_targets(human_labels, human)
    by_id = {it.id: it for it in items}
    ids = [i for i in targets if i in by_id]
    if not ids:
        raise UsageError(
            f"none of the {len(targets)} {human} labels is about an item in {items_name}"
        )
    classes = list(model.classes_)
    unknown = sorted({targets[i] for i in ids} - set(classes))
    if unknown:
        raise UsageError(f"{human} uses labels {unknown} that the model does not know: {classes}")
    P = model.predict_proba([by_id[i] for i in ids])
    y = [targets[i] for i in ids]
    groups = _groups(ids, by_id, cfg.group_by)
    cal, check, warning = _fit(P, y, classes, groups, cfg)
    return Calibration(
        cal, check.result, check, len(ids), unscored, cfg.method, warning, tuple(ids),
        human=human, config=cfg,
    )  # fmt: skip


def write_model_calibration(staged: ModelDirUpdate, calibration: Calibration, name: str) -> None:
    """Write a model's calibration into its staged directory: ``calibration.json`` (or
    remove a stale one when none is applied), ``calibration.png`` and the card's section.

    Args:
        staged: the model directory being written (``save`` or :func:`save_model_calibration`).
        calibration: from :func:`calibrate_model`, or the one a model carries.
        name: the model's name in the plot's title.
    """
    c = calibration
    if c.calibrator is not None:
        staged.write_calibration(c.to_dict())
    else:
        staged.remove(CALIBRATION_FILE)
    _plot(c.crossfit, staged.path(PLOT_FILE), f"{name} against {c.human}")
    section = model_card_section(
        c.crossfit, c.human, c.n_splits, c.group_by, PLOT_FILE, c.check, applied=c.applied
    )
    staged.set_card_section("calibration", section)


def save_model_calibration(
    calibration: Calibration, model_dir: Path, out_dir: Path | None = None
) -> Path:
    """Write ``calibration.json`` (or remove a stale one), ``calibration.png`` and the card section.

    The model directory changes as a whole (:func:`tinyjudge._model_dir.update_model_dir`):
    a failed or killed run leaves it, calibration and card, as it was. The human
    source, folds and grouping the card names are the calibration's own.

    Args:
        calibration: from :func:`calibrate_model`.
        model_dir: the model directory that was calibrated.
        out_dir: where to write (default: ``model_dir`` itself); another folder
            gets the calibrated model (hard links to the weights) and must be
            new or empty.

    Returns:
        The model directory written.

    Raises:
        ModelDirError: ``model_dir`` is not an intact model directory, or
            ``out_dir`` exists and is not empty.
    """
    model_dir = Path(model_dir)
    with update_model_dir(model_dir, out_dir) as staged:
        write_model_calibration(staged, calibration, model_dir.name)
    return Path(out_dir) if out_dir is not None else model_dir


def calibrate_source(
    labels: Sequence[Label],
    *,
    source: str,
    human: str,
    items: Sequence[Item] | None = None,
    config: CalibrateConfig | None = None,
    **options: Any,
) -> SourceCalibration:
    """Calibrate a label source's ``probs`` against human labels.

    Items people labelled get their held-out, cross-fitted probabilities (so an
    audit of the new source stays honest); the others get those of the
    calibrator fitted on every human-labelled item. When the method makes
    held-out NLL or ECE worse than none, ``if_worse`` decides as in
    :func:`calibrate_model`; with none applied there are no new labels.
    ``config`` and ``options`` are as for :func:`calibrate_model`; ``items`` give
    the key ``group_by`` reads.

    Raises:
        UsageError: an unknown method, option or source, no item with both labels,
            or a worse method with ``if_worse="refuse"``.
    """
    cfg = CalibrateConfig.from_options(config, **options)
    method = cfg.method
    table = index_labels(labels)
    if source not in table:
        raise UsageError(f"no labels from source {source!r}; sources: {sorted(table)}")
    if human not in table:
        raise UsageError(f"no labels from human source {human!r}; sources: {sorted(table)}")
    joined = join_sources(table, source, human)
    mine = joined.scored_a
    targets = {i: lab.label for i, lab in joined.scored_b.items() if lab.label}
    unscored = joined.n_b - len(targets)
    given = {c for lab in mine.values() for c in (lab.probs or {})}
    given |= {lab.label for lab in mine.values() if lab.label is not None}
    classes = sorted(given | set(targets.values()))
    ids = [x.item_id for x, y in joined.pairs if y.label]
    if not ids:
        raise UsageError(f"no item has both a scored {source} label and a {human} label")
    by_id = {it.id: it for it in items} if items is not None else {}
    P = probs_matrix([mine[i] for i in ids], classes)
    y = [targets[i] for i in ids]
    groups = _groups(ids, by_id, cfg.group_by)
    cal, check, warning = _fit(P, y, classes, groups, cfg)
    cf = check.result
    done = SourceCalibration(
        cal, cf, check, len(ids), unscored, method, warning,
        human=human, config=cfg, source=source, classes=classes,
    )  # fmt: skip
    if cal is None:
        return done
    held_out = dict(zip(ids, cf.after, strict=True))
    rest = [i for i in mine if i not in held_out]
    if rest:
        P_rest = cal.predict_proba(probs_matrix([mine[i] for i in rest], classes))
        held_out.update(zip(rest, P_rest, strict=True))
    new_source = f"{source}+{method}"
    for i, lab in table[source].items():
        if lab.status != "ok":
            done.labels.append(lab.model_copy(update={"source": new_source}))
            continue
        row = np.asarray(held_out[i])
        probs = {c: float(p) for c, p in zip(classes, row, strict=True)}
        # the old score was a function of the old probs; it no longer holds
        update = {"source": new_source, "probs": probs, "label": classes[int(row.argmax())]}
        done.labels.append(lab.model_copy(update=update | {"score": None}))
    return done


def calibrate_source_methods(
    labels: Sequence[Label], *, source: str, human: str, items: Sequence[Item] | None = None,
    config: CalibrateConfig | None = None, **options: Any,
) -> dict[str, SourceCalibration]:  # fmt: skip
    """:func:`calibrate_source` with every method, each kept (``if_worse="keep"``) so that
    its figures can be set side by side; ``config``'s own method is ignored.

    Returns:
        ``{method: SourceCalibration}`` in :data:`~tinyjudge.calibrate.CALIBRATORS` order.
    """
    from tinyjudge.calibrate._calibrators import CALIBRATORS

    cfg = CalibrateConfig.from_options(config, **options).replace(if_worse="keep")
    return {
        m: calibrate_source(labels, source=source, human=human, items=items, config=cfg, method=m)
        for m in CALIBRATORS
    }


def save_source_calibration(calibration: SourceCalibration, out_dir: Path) -> Path:
    """Write ``calibration.json``, ``calibration.png``, ``metrics.json`` and ``labels.jsonl``.

    They replace the folder's earlier ones together (its other files stay);
    with no calibration applied there is no ``calibration.json`` and no
    ``labels.jsonl`` after it.

    Raises:
        UsageError: ``out_dir`` is a model directory (its calibration is the model's own).
    """
    from tinyjudge.datasets.jsonl import write_jsonl

    out = Path(out_dir)
    if is_model_dir(out):
        raise UsageError(
            f"{out} is a model directory; a label source's calibration needs a folder of its own",
            param="out_dir",
        )
    c = calibration
    with atomic_dir(out, keep_others=True, drop=SOURCE_OUTPUTS) as tmp:
        if c.calibrator is not None:
            write_calibration(tmp, calibrator_state(c.calibrator))
            write_jsonl(tmp / "labels.jsonl", c.labels)
        _plot(c.crossfit, tmp / PLOT_FILE, f"{c.source} against {c.human}")
        text = json.dumps(c.summary(), indent=2) + "\n"
        (tmp / "metrics.json").write_text(text, encoding="utf-8")
    return out
