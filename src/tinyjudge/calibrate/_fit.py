"""Fit a calibrator on human labels, measure it honestly (cross-fitted), save it.

Two uses. A reward model's own probabilities on the human-labelled items
(:func:`calibrate_model`, then :func:`save_model_calibration` writes
``calibration.json`` into a model directory, which ``load_model`` applies from
then on, and adds before/after figures to the model card). Or any label source
that gives ``probs`` (:func:`calibrate_source`): its calibrated labels become a
new source ``<source>+<method>`` (:func:`save_source_calibration`). A method
that makes held-out NLL or ECE worse than no calibration is not applied unless
asked (``if_worse``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from tinyjudge._atomic import atomic_dir
from tinyjudge._model_dir import (
    CALIBRATION_FILE,
    is_model_dir,
    update_model_dir,
    write_calibration,
)
from tinyjudge.calibrate._calibrators import BaseCalibrator, make_calibrator
from tinyjudge.calibrate._card import crossfit_summary, model_card_section
from tinyjudge.calibrate._crossfit import CrossFitResult
from tinyjudge.calibrate._data import calibrator_state, probs_matrix
from tinyjudge.calibrate._guard import IF_WORSE, MethodCheck, compare_methods
from tinyjudge.calibrate._plot import reliability_diagram
from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Label, index_labels, join_sources

__all__ = [
    "Calibration",
    "SourceCalibration",
    "calibrate_model",
    "calibrate_source",
    "save_model_calibration",
    "save_source_calibration",
    "model_card_section",
]

PLOT_FILE = "calibration.png"
# What a label source's calibration writes into its folder (all replaced together).
SOURCE_OUTPUTS = (CALIBRATION_FILE, PLOT_FILE, "metrics.json", "labels.jsonl")


class ProbabilisticModel(Protocol):
    """What calibration needs of a reward model: its classes and its probabilities."""

    classes_: Sequence[str]

    def predict_proba(self, items: Sequence[Item]) -> np.ndarray: ...


@dataclass
class Calibration:
    """A fitted calibrator and its honest (cross-fitted) before/after figures.

    Attributes:
        calibrator: fitted on every human-labelled item; None when the method made
            held-out figures worse and ``if_worse`` was ``"identity"`` (none applied).
        crossfit: held-out probabilities and metrics, each item measured by a
            calibrator fitted without it.
        check: the method against no calibration (and the other methods), held out.
        n: items calibrated on.
        unscored: human labels left out because they were unscored.
        method: the calibrator's name.
        warning: why the method was not applied (or was kept although worse); None if fine.
        item_ids: the items whose people labels it was fitted on (their digest goes
            into ``calibration.json``, see :mod:`tinyjudge._people_items`).
    """

    calibrator: BaseCalibrator | None
    crossfit: CrossFitResult
    check: MethodCheck
    n: int
    unscored: int
    method: str
    warning: str | None = None
    item_ids: tuple[str, ...] = ()

    @property
    def applied(self) -> bool:
        """Whether a calibrator is kept (and saved)."""
        return self.calibrator is not None

    def summary(self) -> dict[str, Any]:
        """``n``, ``unscored``, ``method``, ``applied``, each metric before and after, the check."""
        head = {"n": self.n, "unscored": self.unscored, "method": self.method}
        return {**head, "applied": self.applied, **crossfit_summary(self.crossfit, self.check)}


@dataclass
class SourceCalibration(Calibration):
    """A label source's calibration, with its labels recalibrated as ``<source>+<method>``."""

    source: str = ""
    human: str = ""
    classes: list[str] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The figures written to ``metrics.json``."""
        return {
            "source": self.source,
            "human": self.human,
            "n": self.n,
            "unscored": self.unscored,
            "method": self.method,
            "classes": self.classes,
            "applied": self.applied,
            **crossfit_summary(self.crossfit, self.check),
        }


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
    P: np.ndarray,
    y: list[str],
    classes: list[str],
    groups: list[Any] | None,
    method: str,
    n_splits: int,
    n_boot: int,
    seed: int,
    if_worse: str = "identity",
) -> tuple[BaseCalibrator | None, MethodCheck, str | None]:
    """Cross-fit for honest figures, then fit the calibrator to keep on every item.

    The calibrator is ``None`` when ``method`` makes held-out NLL or ECE worse than
    no calibration and ``if_worse`` is ``"identity"`` (with a warning); ``"refuse"``
    raises instead, ``"keep"`` applies it anyway (with a warning).
    """
    if if_worse not in IF_WORSE:
        raise UsageError(
            f"if_worse {if_worse!r}: choose one of {', '.join(IF_WORSE)}", param="if_worse"
        )
    check_label_counts(y)
    check = compare_methods(
        method, P, y, classes=classes, groups=groups, n_splits=n_splits, n_boot=n_boot, seed=seed
    )
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
    method: str = "temperature",
    group_by: str | None = None,
    n_splits: int = 5,
    n_boot: int = 1000,
    seed: int = 0,
    if_worse: str = "identity",
    items_name: str = "the items given",
) -> Calibration:
    """Calibrate a reward model's probabilities against human labels.

    Args:
        model: a reward model loaded uncalibrated (``load_model(dir, calibrated=False)``).
        items: the items to calibrate on (those people labelled are used).
        human_labels: labels of any sources; those of ``human`` are the targets.
        human: the human source, e.g. ``human:final``.
        method: ``temperature``, ``vector``, ``platt`` or ``isotonic``.
        group_by: an item key that cross-fitting folds never split.
        n_splits: cross-fitting folds.
        n_boot: bootstrap resamples per interval.
        seed: seed of the folds and the bootstrap.
        if_worse: when ``method`` makes held-out NLL or ECE worse than no
            calibration: ``"identity"`` applies none (with a warning), ``"refuse"``
            raises, ``"keep"`` applies it (with a warning).
        items_name: how errors name the items (a file, for the command line).

    Raises:
        TinyjudgeError: an unknown method, no labels from ``human``, none about
            these items, a human label the model does not know, or a worse
            method with ``if_worse="refuse"``.
    """
    make_calibrator(method)  # an unknown method fails before any work
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
    groups = _groups(ids, by_id, group_by)
    cal, check, warning = _fit(P, y, classes, groups, method, n_splits, n_boot, seed, if_worse)
    return Calibration(cal, check.result, check, len(ids), unscored, method, warning, tuple(ids))


def save_model_calibration(
    calibration: Calibration,
    model_dir: Path,
    out_dir: Path | None = None,
    *,
    human: str,
    n_splits: int = 5,
    group_by: str | None = None,
) -> Path:
    """Write ``calibration.json`` (or remove a stale one), ``calibration.png`` and the card section.

    The model directory changes as a whole (:func:`tinyjudge._model_dir.update_model_dir`):
    a failed or killed run leaves it, calibration and card, as it was.

    Args:
        calibration: from :func:`calibrate_model`.
        model_dir: the model directory that was calibrated.
        out_dir: where to write (default: ``model_dir`` itself); another folder
            gets the calibrated model (hard links to the weights) and must be
            new or empty.
        human: the human source (for the card).
        n_splits: the folds used (for the card).
        group_by: the grouping key used (for the card).

    Returns:
        The model directory written.

    Raises:
        ModelDirError: ``model_dir`` is not an intact model directory, or
            ``out_dir`` exists and is not empty.
    """
    model_dir = Path(model_dir)
    c = calibration
    with update_model_dir(model_dir, out_dir) as staged:
        if c.calibrator is not None:
            staged.write_calibration(calibrator_state(c.calibrator, c.item_ids))
        else:
            staged.remove(CALIBRATION_FILE)
        _plot(c.crossfit, staged.path(PLOT_FILE), f"{model_dir.name} against {human}")
        section = model_card_section(
            c.crossfit, human, n_splits, group_by, PLOT_FILE, c.check, applied=c.applied
        )
        staged.set_card_section("calibration", section)
    return Path(out_dir) if out_dir is not None else model_dir


def calibrate_source(
    labels: Sequence[Label],
    *,
    source: str,
    human: str,
    method: str = "temperature",
    items: Sequence[Item] | None = None,
    group_by: str | None = None,
    n_splits: int = 5,
    n_boot: int = 1000,
    seed: int = 0,
    if_worse: str = "identity",
) -> SourceCalibration:
    """Calibrate a label source's ``probs`` against human labels.

    Items people labelled get their held-out, cross-fitted probabilities (so an
    audit of the new source stays honest); the others get those of the
    calibrator fitted on every human-labelled item. When the method makes
    held-out NLL or ECE worse than none, ``if_worse`` decides as in
    :func:`calibrate_model`; with none applied there are no new labels.

    Raises:
        TinyjudgeError: an unknown method or source, no item with both labels, or a
            worse method with ``if_worse="refuse"``.
    """
    make_calibrator(method)
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
    groups = _groups(ids, by_id, group_by)
    cal, check, warning = _fit(P, y, classes, groups, method, n_splits, n_boot, seed, if_worse)
    cf = check.result
    done = SourceCalibration(
        cal, cf, check, len(ids), unscored, method, warning,
        source=source, human=human, classes=classes,
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
