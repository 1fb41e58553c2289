"""PandaLM test set v1 (Wang et al., 2024): 999 response pairs with three human annotators.

Layout of the release (``data/`` under the repository root), three JSON arrays
joined by ``idx``:

- ``testset-v1.json``: ``instruction``, ``input``, ``response1``, ``response2``,
  ``motivation_app``, ``cmp_key`` (the two answering models) and ``annotator1..3``
  (1 = response1 better, 2 = response2 better, 0 = tie).
- ``gpt-3.5-turbo-testset-v1.json``: ``gpt_result`` ("1", "2", "Tie", or "garbage"
  where GPT-3.5's answer could not be parsed), ``gpt_reason``, ``gpt_reference``.
- ``pandalm-7b-testset-v1.json``: ``pandalm_result`` (1, 2, 0 = tie), ``pandalm_reason``.

Each judge was asked once, in the original order, so judge labels carry no ``orders``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tinyjudge.errors import DataError
from tinyjudge.records import Item, Label, Message

from ._common import Imported, SkipBad
from ._json import need, read_json_array

__all__ = ["import_pandalm", "PANDALM_ANNOTATORS"]

PANDALM_ANNOTATORS = ("annotator1", "annotator2", "annotator3")
_RUBRIC = "instruction_following"
_TESTSET = "testset-v1.json"
# file name -> (source, verdict field, reason field)
_JUDGES = {
    "gpt-3.5-turbo-testset-v1.json": ("judge:gpt-3.5", "gpt_result", "gpt_reason"),
    "pandalm-7b-testset-v1.json": ("judge:pandalm-7b", "pandalm_result", "pandalm_reason"),
}
# Annotators and PandaLM-7B write ints, GPT-3.5 strings; both spellings mean the same.
_VERDICT = {1: "a", 2: "b", 0: "tie", "1": "a", "2": "b", "0": "tie", "tie": "tie"}


def _verdict(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip().lower()
    elif not isinstance(value, int | float):  # a list or an object is no verdict
        return None
    return _VERDICT.get(value)  # type: ignore[arg-type]


def _idx(row: Any, path: Path, line: int) -> int:
    idx = need(row, "idx", path, line)
    if not isinstance(idx, int) or isinstance(idx, bool):
        raise DataError(str(path), line, f'"idx" must be an integer, got {idx!r}')
    return idx


def _label(item_id: str, source: str, value: str, rubric_hash: str | None, **kw: Any) -> Label:
    return Label(
        item_id=item_id,
        rubric=_RUBRIC,
        rubric_hash=rubric_hash,
        source=source,
        label=value,
        probs={value: 1.0},
        **kw,
    )


def _majority(item_id: str, votes: list[str], rubric_hash: str | None) -> Label:
    value, n = Counter(votes).most_common(1)[0]
    if n * 2 > len(votes):
        return _label(item_id, "human:majority", value, rubric_hash)
    return Label(
        item_id=item_id,
        rubric=_RUBRIC,
        rubric_hash=rubric_hash,
        source="human:majority",
        status="unscored",
        raw=votes,
        reason="no majority: the annotators split three ways",
    )


def _test_row(
    path: Path, line: int, row: Any, rubric_hash: str | None
) -> tuple[int, Item, list[Label]]:
    idx = _idx(row, path, line)
    fields = {
        k: need(row, k, path, line) for k in ("instruction", "input", "response1", "response2")
    }
    # The release stores a few one-word answers as JSON scalars (response1: true for a
    # model that answered "True"); they are text, kept as Python spells them.
    converted = sorted(k for k, v in fields.items() if isinstance(v, bool | int | float))
    for key, text in fields.items():
        if key in converted:
            fields[key] = str(text)
        elif not isinstance(text, str):
            raise DataError(str(path), line, f'"{key}" must be text, got {type(text).__name__}')
    votes = []
    for name in PANDALM_ANNOTATORS:
        raw = need(row, name, path, line)
        value = _verdict(raw) if isinstance(raw, int) else None
        if value is None:
            raise DataError(
                str(path), line, f'"{name}" must be 1, 2 or 0 (tie), got {raw!r} (idx {idx})'
            )
        votes.append(value)
    item_id = f"pandalm:{idx}"
    # PandaLM prompts with the instruction, then the input (often empty) below it.
    prompt = fields["instruction"] + (f"\n\n{fields['input']}" if fields["input"].strip() else "")
    item = Item(
        id=item_id,
        context=[Message(role="user", content=prompt)],
        response_a=[Message(role="assistant", content=fields["response1"])],
        response_b=[Message(role="assistant", content=fields["response2"])],
        metadata={
            "idx": idx,
            "instruction": fields["instruction"],
            "input": fields["input"],
            "motivation_app": row.get("motivation_app"),
            "cmp_key": row.get("cmp_key"),
            **({"converted_to_text": converted} if converted else {}),
        },
    )
    labels = [
        _label(item_id, f"human:{name}", value, rubric_hash)
        for name, value in zip(PANDALM_ANNOTATORS, votes, strict=True)
    ]
    labels.append(_majority(item_id, votes, rubric_hash))
    return idx, item, labels


def _judge_row(
    path: Path, line: int, row: Any, spec: tuple[str, str, str], rubric_hash: str | None
) -> tuple[int, Label]:
    source, field, reason_field = spec
    idx = _idx(row, path, line)
    raw = need(row, field, path, line)
    value = _verdict(raw)
    reason = row.get(reason_field) or None
    if reason is not None and not isinstance(reason, str):
        got = type(reason).__name__
        raise DataError(str(path), line, f'"{reason_field}" must be text, got {got}')
    if value is None:
        # A judge answer that is no verdict (GPT-3.5's "garbage") is kept, never coerced.
        why = "marked garbage in the release" if raw == "garbage" else "not a verdict"
        return idx, Label(
            item_id=f"pandalm:{idx}",
            rubric=_RUBRIC,
            rubric_hash=rubric_hash,
            source=source,
            status="unscored",
            raw=raw,
            rationale=reason,
            reason=f"{why}: expected 1, 2 or tie",
        )
    return idx, _label(f"pandalm:{idx}", source, value, rubric_hash, raw=raw, rationale=reason)


def _folder(src: Path) -> Path:
    for folder in (src / "data", src):
        if (folder / _TESTSET).is_file():
            return folder
    raise DataError(str(src / "data" / _TESTSET), None, "missing; is this PandaLM's release?")


def import_pandalm(src: Path, rubric_hash: str | None = None, skip_bad: bool = False) -> Imported:
    """Import the PandaLM test set as pairwise items with human and judge labels.

    Item ids are ``pandalm:<idx>``; ``context`` is the instruction (and its input, if
    any, after a blank line) as a user message; ``response_a``/``response_b`` are
    ``response1``/``response2``. Sources (label values ``a``, ``b``, ``tie``):

    - ``human:annotator1``, ``human:annotator2``, ``human:annotator3``.
    - ``human:majority``: the value at least two of the three annotators gave (the
      reference PandaLM scores judges against); ``unscored`` if all three differ.
    - ``judge:gpt-3.5``: "garbage" (and any other non-verdict) is ``unscored`` with
      the raw value kept; ``rationale`` is the judge's stated reason.
    - ``judge:pandalm-7b``.

    A judge file that is absent is skipped (its source is then missing); one that
    is present must join the test set on ``idx``.

    Args:
        src: a folder laid out like the WeOpenML/PandaLM repository (holding
            ``data/testset-v1.json``), or that ``data`` folder.
        rubric_hash: the ``instruction_following`` rubric's hash, stamped on each label.
        skip_bad: record bad rows (and unreadable judge files) in ``Imported.bad``
            and go on; a bad test-set row drops that item and its judge labels.

    Raises:
        DataError: no test set, malformed JSON, or (without ``skip_bad``) a missing
            field, an annotator value other than 0/1/2, a duplicate ``idx``, or a
            judge row whose ``idx`` is not in the test set.
    """
    folder = _folder(src)
    out = Imported()
    bad = SkipBad(skip_bad, out.bad)

    path = folder / _TESTSET
    known: set[int] = set()
    dropped: set[Any] = set()  # idx of bad test rows: their judge rows go with them
    for line, row in read_json_array(path):
        try:
            idx, item, labels = _test_row(path, line, row, rubric_hash)
            if idx in known:
                raise DataError(str(path), line, f"duplicate idx {idx}")
        except DataError as e:
            bad(e)
            if isinstance(row, dict) and isinstance(row.get("idx"), int):
                dropped.add(row["idx"])
            continue
        known.add(idx)
        out.items.append(item)
        out.labels.extend(labels)
    for name, spec in _JUDGES.items():
        jpath = folder / name
        if not jpath.is_file():
            continue
        try:
            rows = read_json_array(jpath)
        except DataError as e:
            bad(e)
            continue
        seen: set[int] = set()
        for line, row in rows:
            try:
                idx, label = _judge_row(jpath, line, row, spec, rubric_hash)
                if idx in seen:
                    raise DataError(str(jpath), line, f"duplicate idx {idx}")
                seen.add(idx)
                if idx in dropped and idx not in known:
                    continue
                if idx not in known:
                    raise DataError(str(jpath), line, f"idx {idx} is not in {_TESTSET}")
            except DataError as e:
                bad(e)
                continue
            out.labels.append(label)
    return out
