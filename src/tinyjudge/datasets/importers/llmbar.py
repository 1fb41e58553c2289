"""LLMBar (Zeng et al., 2024): which of two outputs follows the instruction, with gold labels.

Layout of the release (``Dataset/`` under the repository root)::

    Dataset/<group>/<subset...>/dataset.json                  [{input, output_1, output_2, label}]
    Dataset/<group>/<subset...>/evaluators/<judge>/<prompting>/result.json

``group`` is ``LLMBar`` (``Natural``, ``Adversarial/Neighbor``, ...), ``Processed``
(``MT-Bench``, ``FairEval``, ``LLMEval^2``) or ``CaseStudy``. ``label`` (1 or 2) is the
gold label. A ``result.json`` repeats ``dataset.json`` row for row and adds
``results``: a list whose last entry is the verdict (earlier entries are auxiliary
generations such as self-written metrics or references), holding
``{"swap = False": {"winner", "completion"}, "swap = True": {...}}``.

Swap semantics, checked against LLMBar's ``LLMEvaluator/evaluate.py`` and the data:
under ``swap = True`` the judge was shown ``output_2`` first, and the stored
``winner`` has already been mapped back to the original positions
(``reverse_label``), so ``winner == "1"`` always means ``output_1``. (In the data,
a swapped completion reading "Output (a)" is stored as winner ``"2"``.) A winner
of ``null`` means the judge's answer could not be parsed (or was refused).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tinyjudge.errors import DataError
from tinyjudge.records import Item, Label, Message

from ._common import Imported, SkipBad
from ._json import need, read_json_array

__all__ = ["import_llmbar", "LLMBAR_GOLD_SOURCE"]

LLMBAR_GOLD_SOURCE = "human:gold"
_RUBRIC = "instruction_following"
_POSITION = {"1": "a", "2": "b"}
_ORDERS = {"ab": "swap = False", "ba": "swap = True"}


def _subsets(src: Path) -> list[tuple[str, str, Path]]:
    """``(group, subset, folder)`` for each ``dataset.json``, in a stable order."""
    root = src / "Dataset" if (src / "Dataset").is_dir() else src
    found: dict[str, tuple[str, str, Path]] = {}
    for path in sorted(root.rglob("dataset.json")):
        rel = path.parent.relative_to(root).parts
        if "evaluators" in rel:
            continue
        # Subsets are named by the path below their group ("Natural", "Adversarial/Neighbor",
        # "MT-Bench"), which is how the paper names them and what item ids carry.
        group, subset = (rel[0], "/".join(rel[1:])) if len(rel) > 1 else ("", "/".join(rel))
        subset = subset or path.parent.name
        if subset in found:
            raise DataError(
                str(path), None, f"subset {subset!r} also at {found[subset][2]}; ids would clash"
            )
        found[subset] = (group, subset, path.parent)
    if not found:
        raise DataError(str(src), None, "no Dataset/**/dataset.json files; is this LLMBar?")
    return list(found.values())


def _gold(row: Any, path: Path, line: int) -> str:
    value = need(row, "label", path, line)
    key = str(value) if isinstance(value, int | str) and not isinstance(value, bool) else None
    if key not in _POSITION:
        raise DataError(
            str(path), line, f'"label" must be 1 or 2 (output_1/output_2), got {value!r}'
        )
    return _POSITION[key]


def _item(row: Any, path: Path, line: int, item_id: str, meta: dict[str, Any]) -> Item:
    texts = [need(row, k, path, line) for k in ("input", "output_1", "output_2")]
    for key, text in zip(("input", "output_1", "output_2"), texts, strict=True):
        if not isinstance(text, str):
            raise DataError(str(path), line, f'"{key}" must be a string, got {type(text).__name__}')
    return Item(
        id=item_id,
        context=[Message(role="user", content=texts[0])],
        response_a=[Message(role="assistant", content=texts[1])],
        response_b=[Message(role="assistant", content=texts[2])],
        metadata=meta,
    )


def _order_verdict(
    res: dict[str, Any], order: str, path: Path, line: int
) -> tuple[str | None, Any]:
    """The verdict of one order in original positions, and the judge's raw completion."""
    entry = need(res, _ORDERS[order], path, line)
    winner = need(entry, "winner", path, line)
    if winner is not None and (not isinstance(winner, str) or winner not in _POSITION):
        raise DataError(
            str(path), line, f'"{_ORDERS[order]}" winner must be "1", "2" or null, got {winner!r}'
        )
    completion = entry.get("completion") if isinstance(entry, dict) else None
    if isinstance(completion, list) and completion:
        completion = completion[0]  # [text, finish_reason]
    return (_POSITION[winner] if winner is not None else None), completion


def _judge_label(
    item_id: str, source: str, row: Any, path: Path, line: int, rubric_hash: str | None
) -> Label:
    results = need(row, "results", path, line)
    if not isinstance(results, list) or not results or not isinstance(results[-1], dict):
        raise DataError(str(path), line, '"results" must be a list ending in the verdict object')
    ab, raw_ab = _order_verdict(results[-1], "ab", path, line)
    ba, raw_ba = _order_verdict(results[-1], "ba", path, line)
    common: dict[str, Any] = {
        "item_id": item_id,
        "rubric": _RUBRIC,
        "rubric_hash": rubric_hash,
        "source": source,
        "orders": {"ab": ab, "ba": ba},
        "raw": {"ab": raw_ab, "ba": raw_ba},
    }
    if ab is None or ba is None:
        missing = [o for o, v in (("ab", ab), ("ba", ba)) if v is None]
        return Label(
            **common, status="unscored", reason=f"no verdict parsed in order {'/'.join(missing)}"
        )
    # A verdict that flips with the presentation order is no preference: a tie.
    value = ab if ab == ba else "tie"
    return Label(**common, label=value, probs={value: 1.0}, consistent=ab == ba)


def _judges(folder: Path) -> list[tuple[str, Path]]:
    """``(judge/prompting, result.json)`` for every evaluator run of a subset."""
    runs = sorted((folder / "evaluators").glob("*/*/result.json"))
    return [(f"{p.parent.parent.name}/{p.parent.name}", p) for p in runs]


def _import_subset(
    group: str, subset: str, folder: Path, out: Imported, rubric_hash: str | None, skip: SkipBad
) -> None:
    path = folder / "dataset.json"
    rows = read_json_array(path)
    good: dict[int, tuple[str, Any]] = {}  # index -> (item id, dataset row)
    for index, (line, row) in enumerate(rows):
        item_id = f"llmbar:{subset}:{index}"
        meta = {"group": group, "subset": subset, "index": index}
        try:
            gold = _gold(row, path, line)
            out.items.append(_item(row, path, line, item_id, meta))
        except DataError as e:
            skip(e)
            continue
        good[index] = (item_id, row)
        out.labels.append(
            Label(
                item_id=item_id,
                rubric=_RUBRIC,
                rubric_hash=rubric_hash,
                source=LLMBAR_GOLD_SOURCE,
                label=gold,
                probs={gold: 1.0},
            )
        )
    for judge, rpath in _judges(folder):
        try:
            results = read_json_array(rpath)
            if len(results) != len(rows):
                raise DataError(
                    str(rpath), None, f"{len(results)} rows but dataset.json has {len(rows)}"
                )
        except DataError as e:
            skip(e)
            continue
        for index, (line, res) in enumerate(results):
            if index not in good:
                continue
            item_id, row = good[index]
            try:
                for key in ("input", "output_1", "output_2"):
                    if need(res, key, rpath, line) != row[key]:
                        raise DataError(
                            str(rpath), line, f'"{key}" differs from dataset.json row {index}'
                        )
                out.labels.append(
                    _judge_label(item_id, f"judge:{judge}", res, rpath, line, rubric_hash)
                )
            except DataError as e:
                skip(e)


def import_llmbar(src: Path, rubric_hash: str | None = None, skip_bad: bool = False) -> Imported:
    """Import every LLMBar subset as pairwise items, with gold and judge labels.

    Item ids are ``llmbar:<subset>:<index>`` (``index`` = 0-based position in the
    subset's ``dataset.json``; e.g. ``llmbar:MT-Bench:12``), the instruction as a user
    message in ``context`` and the two outputs as assistant messages in
    ``response_a``/``response_b``. Sources:

    - ``human:gold``: the gold label, ``a`` (output_1) or ``b`` (output_2).
    - ``judge:<judge>/<prompting>`` for each ``evaluators/<judge>/<prompting>/result.json``:
      ``orders={"ab": verdict shown in original order, "ba": verdict shown swapped}``,
      both in original positions; ``label`` = the verdict when both orders agree
      (``consistent=True``), ``tie`` when they disagree (``consistent=False``);
      ``status="unscored"`` when either order has no parsed verdict (the other order's
      verdict stays in ``orders``). ``raw`` holds the judge's completion per order.

    Args:
        src: a folder laid out like the princeton-nlp/LLMBar repository (holding
            ``Dataset/``), or its ``Dataset`` folder.
        rubric_hash: the ``instruction_following`` rubric's hash, stamped on each label.
        skip_bad: record bad rows (and unreadable result files) in ``Imported.bad``
            and go on; a bad ``dataset.json`` row drops that item and its judge labels.

    Raises:
        DataError: no subsets, or (without ``skip_bad``) malformed JSON, a missing
            field, a gold label other than 1/2, a winner other than "1"/"2"/null, or a
            ``result.json`` that does not match its ``dataset.json`` row for row.
    """
    out = Imported()
    skip = SkipBad(skip_bad, out.bad)
    for group, subset, folder in _subsets(src):
        try:
            _import_subset(group, subset, folder, out, rubric_hash, skip)
        except DataError as e:
            skip(e)  # only a dataset.json that cannot be read at all gets here
    return out
