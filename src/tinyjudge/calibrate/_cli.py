"""``tinyjudge calibrate``: fit a calibrator on human labels, measure it honestly, save it.

Two uses. With a model directory, the reward model's own probabilities on the
human-labelled items are calibrated; ``calibration.json`` goes into the model
directory (``load_model`` applies it from then on) and the model card gains
before/after figures. With ``--source``, any label source that gives ``probs``
(a judge, a classifier) is calibrated the same way, and its calibrated labels
are written as a new source ``<source>+<method>``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from tinyjudge.calibrate._calibrators import BaseCalibrator, make_calibrator
from tinyjudge.calibrate._crossfit import CrossFitResult
from tinyjudge.calibrate._data import CALIBRATION_FILE, probs_matrix, save_calibrator
from tinyjudge.calibrate._guard import IF_WORSE, MethodCheck, compare_methods
from tinyjudge.calibrate._metrics import METRICS
from tinyjudge.calibrate._plot import reliability_diagram
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item, Label, index_labels

__all__ = ["calibrate_command", "calibrate_model", "calibrate_source", "model_card_section"]

START, END = "<!-- tinyjudge:calibration:start -->", "<!-- tinyjudge:calibration:end -->"
NAMES = {
    "ece": "ECE (equal-width)",
    "ece_mass": "ECE (equal-mass)",
    "mce": "MCE",
    "brier": "Brier score",
    "nll": "NLL",
}


def _human_targets(labels: Sequence[Label], human: str) -> tuple[dict[str, str], int]:
    table = index_labels(labels)
    if human not in table:
        raise TinyjudgeError(f"no labels from human source {human!r}; sources: {sorted(table)}")
    got = table[human]
    scored = {i: lab.label for i, lab in got.items() if lab.status == "ok" and lab.label}
    return scored, len(got) - len(scored)


def _groups(ids: Sequence[str], items: dict[str, Item], group_by: str | None) -> list[Any] | None:
    if group_by is None:
        return None
    if not items:
        raise TinyjudgeError(f"--group-by {group_by} reads item metadata: pass the items file")
    # an item without the key is its own group; a falsy value (0, False, "") is a group
    values = [items[i].get(group_by) if i in items else None for i in ids]
    # strings: GroupKFold sorts the keys, and must not mistake a pair for two columns
    return [f"item:{i}" if v is None else f"group:{v!r}" for i, v in zip(ids, values, strict=True)]


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
    console: Console | None = None,
) -> tuple[BaseCalibrator | None, CrossFitResult, MethodCheck]:
    """Cross-fit for honest figures, then fit the calibrator to keep on every item.

    The calibrator is ``None`` when ``method`` makes held-out NLL or ECE worse than
    no calibration and ``if_worse`` is ``"identity"`` (warned); ``"refuse"`` raises
    instead, ``"keep"`` applies it anyway (warned).
    """
    if if_worse not in IF_WORSE:
        raise TinyjudgeError(f"--if-worse {if_worse!r}: choose one of {', '.join(IF_WORSE)}")
    check = compare_methods(
        method, P, y, classes=classes, groups=groups, n_splits=n_splits, n_boot=n_boot, seed=seed
    )
    if not check.ok:
        if if_worse == "refuse":
            raise TinyjudgeError(f"{check.message()}; --if-worse keep applies it anyway")
        if console is not None:
            keep = "kept anyway (--if-worse keep)" if if_worse == "keep" else "not applied"
            console.print(f"[yellow]warning: {check.message()}; {keep}[/]")
        if if_worse == "identity":
            return None, check.result, check
    cal = make_calibrator(method, classes).fit(P, y)
    return cal, check.result, check


def _save(
    cal: BaseCalibrator | None, cf: CrossFitResult, out: Path, what: str, console: Console
) -> None:
    """Write ``calibration.json`` (removed when ``cal`` is None: none is applied) and the
    before/after reliability diagram; print the table."""
    out.mkdir(parents=True, exist_ok=True)
    if cal is not None:
        save_calibrator(cal, out)
    else:
        (out / CALIBRATION_FILE).unlink(missing_ok=True)
    reliability_diagram(
        cf.y,
        {"before": cf.before, f"after {cf.method} (held out)": cf.after},
        out / "calibration.png",
        title=what,
    )
    _print(console, cf, f"{cf.method} calibration of {what}")


def _summary(cf: CrossFitResult, check: MethodCheck | None = None) -> dict[str, Any]:
    def one(ci) -> dict[str, Any]:
        return {"value": float(ci.estimate), "ci": ci.interval()}

    out: dict[str, Any] = {
        "before": {m: one(c) for m, c in cf.metrics_before.items()},
        "after": {m: one(c) for m, c in cf.metrics_after.items()},
    }
    if check is not None:
        out["check"] = {
            "worse_than_none": check.worse,
            "best_method": check.best,
            "held_out": check.table,
            "message": check.message(),
        }
    return out


def model_card_section(
    cf: CrossFitResult,
    human: str,
    n_splits: int,
    group_by: str | None,
    plot: str | None,
    check: MethodCheck | None = None,
    applied: bool = True,
) -> str:
    """The model card's "Calibration against people" section (Markdown)."""
    level = next(iter(cf.metrics_before.values())).level
    split = f"{n_splits} folds grouped by `{group_by}`" if group_by else f"{n_splits} random folds"
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    what = (
        f"Calibrated with `{cf.method}` scaling on {len(cf.y)} items labelled by `{human}` "
        f"({date}); `load_model` applies it from `calibration.json` whenever the model is "
        "loaded (`load_model(dir, calibrated=False)` gives the raw probabilities)."
        if applied
        else f"Not calibrated: `{cf.method}` scaling, fitted on {len(cf.y)} items labelled by "
        f"`{human}` ({date}), made held-out figures worse than the model's own "
        "probabilities, so none is applied (no `calibration.json`)."
    )
    lines = [
        START,
        "## Calibration against people",
        "",
        what,
        f"The figures are cross-fitted ({split}): every item is measured with a calibrator "
        f"fitted without it. Lower is better for all; brackets are {level:.0%} bootstrap "
        "intervals. Calibrate on items the model was not trained on: on its own training "
        "items a model looks more certain and more right than it will be on new ones.",
        "",
        "| metric | before | after (held out) |",
        "|---|---|---|",
    ]
    for m in METRICS:
        b, a = cf.metrics_before[m], cf.metrics_after[m]
        lines.append(
            f"| {NAMES[m]} | {b.estimate:.4f} [{b.low:.4f}, {b.high:.4f}] "
            f"| {a.estimate:.4f} [{a.low:.4f}, {a.high:.4f}] |"
        )
    if check is not None:
        lines += ["", f"Every method on the same folds: {_methods_line(check)}. {check.message()}."]
    if plot:
        lines += ["", f"![reliability diagram before and after]({plot})"]
    return "\n".join([*lines, END, ""])


def _methods_line(check: MethodCheck) -> str:
    return ", ".join(f"{m} NLL {v['nll']:.4f} / ECE {v['ece']:.4f}" for m, v in check.table.items())


def _update_card(readme: Path, section: str) -> None:
    text = readme.read_text(encoding="utf-8") if readme.exists() else ""
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + section + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    readme.write_text(text, encoding="utf-8")


def _print(console: Console, cf: CrossFitResult, title: str) -> None:
    table = Table(title=title)
    for col in ("metric", "before", "after (held out)"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for m in METRICS:
        b, a = cf.metrics_before[m], cf.metrics_after[m]
        table.add_row(NAMES[m], f"{b.estimate:.4f}", f"{a.estimate:.4f}")
    console.print(table)


def calibrate_model(
    model_dir: Path,
    items_path: Path,
    labels_paths: Sequence[Path],
    *,
    human: str,
    method: str = "temperature",
    out_dir: Path | None = None,
    group_by: str | None = None,
    n_splits: int = 5,
    n_boot: int = 1000,
    seed: int = 0,
    if_worse: str = "identity",
    console: Console | None = None,
) -> dict[str, Any]:
    """Calibrate a saved reward model against human labels; returns the before/after figures.

    ``if_worse`` says what happens when ``method`` makes held-out NLL or ECE worse
    than no calibration: ``"identity"`` warns and applies none, ``"refuse"`` raises,
    ``"keep"`` warns and applies it.
    """
    from tinyjudge.datasets.jsonl import read_items, read_labels
    from tinyjudge.distill import load_model

    console = console or Console()
    make_calibrator(method)  # an unknown method fails before any work
    model = load_model(model_dir, calibrated=False)
    labels = [lab for p in labels_paths for lab in read_labels(p)]
    targets, unscored = _human_targets(labels, human)
    items = {it.id: it for it in read_items(items_path)}
    ids = [i for i in targets if i in items]
    if not ids:
        raise TinyjudgeError(
            f"none of the {len(targets)} {human} labels is about an item in {items_path}"
        )
    classes = list(model.classes_)
    unknown = sorted({targets[i] for i in ids} - set(classes))
    if unknown:
        raise TinyjudgeError(
            f"{human} uses labels {unknown} that the model does not know: {classes}"
        )
    P = model.predict_proba([items[i] for i in ids])
    y = [targets[i] for i in ids]
    cal, cf, check = _fit(
        P, y, classes, _groups(ids, items, group_by), method, n_splits, n_boot, seed,
        if_worse, console,
    )  # fmt: skip
    out = Path(out_dir) if out_dir is not None else Path(model_dir)
    if out.resolve() != Path(model_dir).resolve():
        if out.exists() and any(out.iterdir()):
            raise TinyjudgeError(f"--out {out} exists and is not empty; choose a new folder")
        shutil.copytree(model_dir, out, dirs_exist_ok=True)
    _save(cal, cf, out, f"{model_dir.name} against {human}", console)
    section = model_card_section(
        cf, human, n_splits, group_by, "calibration.png", check, applied=cal is not None
    )
    _update_card(out / "README.md", section)
    extra = f", {unscored} unscored {human} labels left out" if unscored else ""
    wrote = f"wrote {out / CALIBRATION_FILE}" if cal is not None else "no calibration applied"
    console.print(f"{len(ids)} items{extra}; {wrote}")
    return {
        "n": len(ids),
        "unscored": unscored,
        "method": method,
        "applied": cal is not None,
        **_summary(cf, check),
    }


def calibrate_source(
    labels_paths: Sequence[Path],
    *,
    source: str,
    human: str,
    out_dir: Path,
    method: str = "temperature",
    items_path: Path | None = None,
    group_by: str | None = None,
    n_splits: int = 5,
    n_boot: int = 1000,
    seed: int = 0,
    if_worse: str = "identity",
    console: Console | None = None,
) -> dict[str, Any]:
    """Calibrate a label source's ``probs`` against human labels.

    Writes ``OUT/calibration.json`` (fitted on every human-labelled item),
    ``OUT/labels.jsonl`` with the source's labels recalibrated as source
    ``<source>+<method>`` (items people labelled get their held-out, cross-fitted
    probabilities, so an audit of the new source stays honest; the others get the
    full calibrator's), ``OUT/metrics.json`` and ``OUT/calibration.png``. When the
    method makes held-out NLL or ECE worse than none, ``if_worse`` decides as in
    :func:`calibrate_model`; with ``"identity"`` only the figures and the plot are
    written.
    """
    from tinyjudge.datasets.jsonl import read_items, write_jsonl
    from tinyjudge.datasets.jsonl import read_labels as read

    console = console or Console()
    make_calibrator(method)
    labels = [lab for p in labels_paths for lab in read(p)]
    table = index_labels(labels)
    if source not in table:
        raise TinyjudgeError(f"no labels from source {source!r}; sources: {sorted(table)}")
    targets, unscored = _human_targets(labels, human)
    mine = {i: lab for i, lab in table[source].items() if lab.status == "ok"}
    given = {c for lab in mine.values() for c in (lab.probs or {})}
    given |= {lab.label for lab in mine.values() if lab.label is not None}
    classes = sorted(given | set(targets.values()))
    ids = [i for i in mine if i in targets]
    if not ids:
        raise TinyjudgeError(f"no item has both a scored {source} label and a {human} label")
    items = {it.id: it for it in read_items(items_path)} if items_path is not None else {}
    P = probs_matrix([mine[i] for i in ids], classes)
    y = [targets[i] for i in ids]
    cal, cf, check = _fit(
        P, y, classes, _groups(ids, items, group_by), method, n_splits, n_boot, seed,
        if_worse, console,
    )  # fmt: skip
    summary = {
        "source": source,
        "human": human,
        "n": len(ids),
        "unscored": unscored,
        "method": method,
        "classes": classes,
        "applied": cal is not None,
        **_summary(cf, check),
    }
    out = Path(out_dir)
    _save(cal, cf, out, f"{source} against {human}", console)
    (out / "metrics.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if cal is None:
        (out / "labels.jsonl").unlink(missing_ok=True)
        console.print(f"{len(ids)} items; no calibration applied; wrote {out}/metrics.json")
        return summary
    held_out = dict(zip(ids, cf.after, strict=True))
    rest = [i for i in mine if i not in held_out]
    if rest:
        P_rest = cal.predict_proba(probs_matrix([mine[i] for i in rest], classes))
        held_out.update(zip(rest, P_rest, strict=True))
    new_source = f"{source}+{method}"
    out_labels = []
    for i, lab in table[source].items():
        if lab.status != "ok":
            out_labels.append(lab.model_copy(update={"source": new_source}))
            continue
        row = np.asarray(held_out[i])
        probs = {c: float(p) for c, p in zip(classes, row, strict=True)}
        # the old score was a function of the old probs; it no longer holds
        update = {"source": new_source, "probs": probs, "label": classes[int(row.argmax())]}
        out_labels.append(lab.model_copy(update=update | {"score": None}))
    write_jsonl(out / "labels.jsonl", out_labels)
    console.print(f"{len(ids)} items; wrote {out}/calibration.json, labels.jsonl ({new_source})")
    return summary


def calibrate_command(
    paths: Sequence[Path],
    *,
    human: str,
    method: str,
    out_dir: Path | None,
    source: str | None,
    items: Path | None,
    group_by: str | None,
    n_splits: int,
    n_boot: int,
    seed: int,
    console: Console,
    if_worse: str = "identity",
) -> dict[str, Any]:
    """Dispatch ``tinyjudge calibrate`` to the model-directory or the label-source form."""
    kw: dict[str, Any] = {
        "if_worse": if_worse,
        "method": method,
        "group_by": group_by,
        "n_splits": n_splits,
        "n_boot": n_boot,
        "seed": seed,
        "console": console,
    }
    if source is not None:
        if out_dir is None:
            raise TinyjudgeError("--source needs --out DIR for the calibrated labels")
        return calibrate_source(
            paths, source=source, human=human, out_dir=out_dir, items_path=items, **kw
        )
    if len(paths) < 3:
        raise TinyjudgeError(
            "expected MODEL_DIR ITEMS LABELS... (or LABELS... --source SOURCE for a label "
            f"source's probs), got {len(paths)} path(s)"
        )
    if items is not None:
        raise TinyjudgeError("ITEMS is the second argument here; --items is for --source")
    model_dir, items_path, *labels = paths
    return calibrate_model(model_dir, items_path, labels, human=human, out_dir=out_dir, **kw)
