"""Which items' people labels a reward model learned from, so no one measures it on them.

A reward model distilled on people's labels (``distill --source human:...`` or
``--human``) or calibrated on them (``calibrate``) agrees with those labels more
than it will with new ones, and PPI's intervals are valid only when the cheap
source never saw the human labels it is combined with. So the model directory
records the people-labelled items it used, and ``estimate`` and ``audit``
refuse to compare the model with human labels on those items (unless told that
the overlap is on purpose).

The record (:func:`people_digest`) is the count, the SHA-256 of the sorted ids
(one line each) and the sorted list of each id's short hash (the first 16 hex
digits of its SHA-256). Membership is tested on the short hashes: exact up to
a 64-bit collision (about one in 10^9 for a million ids against a million), and
the ids themselves are not stored. It sits under :data:`PEOPLE_KEY` in the card
of ``tinyjudge.json`` (distilled on) and in ``calibration.json`` (calibrated on).

Labels do not name the model that wrote them, so ``score`` writes a small file
beside its labels (:func:`sidecar_path`: ``rm_labels.jsonl`` ->
``rm_labels.people.json``) that copies the records of the model it scored with
for the source it wrote: ``rm:<name>`` carries the distillation's,
``rm:<name>+cal`` that and the calibration's, and the card's people method (``auto``'s
chosen head, which ``label --select teach`` reads). ``estimate`` and ``audit`` read
the file beside each labels file they are given, or a model directory named
with ``--model-dir``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinyjudge._model_dir import CALIBRATION_FILE, META_FILE, read_record
from tinyjudge.errors import DataError, UsageError

__all__ = [
    "PEOPLE_KEY",
    "TEACHER_KEY",
    "SIDECAR_FORMAT",
    "people_digest",
    "LearnedFrom",
    "learned_from_model_dir",
    "card_people_method",
    "sidecar_path",
    "write_sidecar",
    "read_sidecars",
    "PeopleOverlapError",
    "check_people_overlap",
]

PEOPLE_KEY = "people_items"
TEACHER_KEY = "teacher_items"  # the items whose teacher labels it was distilled on
SIDECAR_FORMAT = "tinyjudge-people-items"
_CAL_SUFFIX = "+cal"


def _short_hash(item_id: str) -> str:
    return hashlib.sha256(item_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def people_digest(item_ids: Iterable[str]) -> dict[str, Any]:
    """The record of a set of people-labelled item ids: count, SHA-256, short hashes.

    >>> d = people_digest(["b", "a", "a"])
    >>> d["count"], len(d["hashes"]), d["hashes"] == sorted(d["hashes"])
    (2, 2, True)
    """
    ids = sorted(set(item_ids))
    whole = hashlib.sha256("\n".join(ids).encode("utf-8", "surrogatepass")).hexdigest()
    return {"count": len(ids), "sha256": whole, "hashes": sorted({_short_hash(i) for i in ids})}


def _hashes(digest: Any, where: str) -> frozenset[str]:
    if digest is None:
        return frozenset()
    hashes = digest.get("hashes") if isinstance(digest, dict) else None
    if not isinstance(hashes, list) or not all(isinstance(h, str) for h in hashes):
        raise DataError(where, None, f'"{PEOPLE_KEY}" must hold a list of "hashes"')
    return frozenset(hashes)


@dataclass(frozen=True)
class LearnedFrom:
    """The people-labelled items behind one reward model's labels.

    Attributes:
        source: the label source, ``rm:<name>`` or ``rm:<name>+cal``.
        where: the model directory or sidecar file it was read from.
        distilled: short hashes of the items whose people labels it was trained on.
        calibrated: the same for its calibration (empty for ``rm:<name>``).
        teacher: the source it was distilled from (``judge:gpt-4o``), when recorded.
        taught: short hashes of the items whose ``teacher`` labels it was trained on.
        people_method: how its head joined people's labels to the judge's (the card's
            method, ``auto``'s chosen candidate such as ``stack``); None without people.
    """

    source: str
    where: str
    distilled: frozenset[str] = frozenset()
    calibrated: frozenset[str] = frozenset()
    teacher: str | None = None
    taught: frozenset[str] = frozenset()
    people_method: str | None = None

    def _steps(self, human: str | None) -> list[tuple[str, frozenset[str]]]:
        steps = [("distilled", self.distilled), ("calibrated", self.calibrated)]
        if human is not None and human == self.teacher:
            steps.append(("distilled", self.taught))
        return steps

    def overlap(self, item_ids: Iterable[str], human: str | None = None) -> list[str]:
        """The ids among ``item_ids`` whose labels the model learned from, sorted: people's,
        and ``human``'s own where ``human`` is its teacher."""
        learned = frozenset().union(*(hashes for _, hashes in self._steps(human)))
        return sorted({i for i in item_ids if _short_hash(i) in learned})

    def how(self, item_ids: Iterable[str], human: str | None = None) -> str:
        """``distilled``, ``calibrated`` or ``distilled and calibrated``: on which it learned."""
        ids = [_short_hash(i) for i in item_ids]
        steps = [name for name, learned in self._steps(human) if any(h in learned for h in ids)]
        return " and ".join(dict.fromkeys(steps))

    def to_json(self) -> dict[str, Any]:
        """The sidecar's content."""
        return {
            "format": SIDECAR_FORMAT,
            "source": self.source,
            "model_dir": self.where,
            "distilled": sorted(self.distilled),
            "calibrated": sorted(self.calibrated),
            "teacher": self.teacher,
            "taught": sorted(self.taught),
            "people_method": self.people_method,
        }


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise DataError(str(path), None, f"not UTF-8 text (byte {e.start + 1})") from None
    except json.JSONDecodeError as e:
        raise DataError(str(path), e.lineno, f"malformed JSON ({e.msg})") from None
    except (ValueError, RecursionError):
        raise DataError(str(path), None, "malformed JSON (a number or nesting too large)") from None


def learned_from_model_dir(model_dir: str | Path, calibrated: bool) -> LearnedFrom:
    """What a model directory records of the people labels it learned from.

    Args:
        model_dir: a directory ``distill`` wrote (and ``calibrate`` may have calibrated).
        calibrated: whether its calibration is applied (the labels are ``rm:<name>+cal``).

    Raises:
        DataError: no ``tinyjudge.json``, or a record in it that is malformed.
    """
    d = Path(model_dir)
    meta = read_record(d / META_FILE) if (d / META_FILE).is_file() else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise DataError(str(d), None, f"not a tinyjudge model directory (no {META_FILE})")
    card = meta.get("card")
    card = card if isinstance(card, dict) else {}
    distilled = _hashes(card.get(PEOPLE_KEY), str(d / META_FILE))
    cal: frozenset[str] = frozenset()
    cal_path = d / CALIBRATION_FILE
    if calibrated and cal_path.is_file():
        state = read_record(cal_path)
        if isinstance(state, dict):
            cal = _hashes(state.get(PEOPLE_KEY), str(cal_path))
    source = f"rm:{meta['name']}" + (_CAL_SUFFIX if calibrated and cal_path.is_file() else "")
    teacher = card.get("teacher_source")
    taught = _hashes(card.get(TEACHER_KEY), str(d / META_FILE))
    return LearnedFrom(
        source, str(d), distilled, cal, teacher if isinstance(teacher, str) else None, taught,
        card_people_method(card),
    )  # fmt: skip


def card_people_method(card: dict[str, Any]) -> str | None:
    """How a model's head joined people's labels to the judge's, from its card: ``auto``'s
    chosen candidate (``judge``, ``people``, ``stack``, ``weighted``), else the method."""
    combo = card.get("combination")
    chosen = combo.get("chosen") if isinstance(combo, dict) else None
    method = chosen if chosen is not None else card.get("human_method")
    return method if isinstance(method, str) else None


def sidecar_path(labels_path: str | Path) -> Path:
    """The file beside a labels file that says what its reward model learned from."""
    p = Path(labels_path)
    return p.with_name(p.name.removesuffix(p.suffix) + ".people.json")


def write_sidecar(labels_path: str | Path, learned: LearnedFrom) -> Path:
    """Write :func:`sidecar_path` for ``labels_path`` (replacing one from an earlier score)."""
    from tinyjudge._atomic import atomic_writer

    path = sidecar_path(labels_path)
    with atomic_writer(path) as fh:
        fh.write(json.dumps(learned.to_json(), indent=1) + "\n")
    return path


def read_sidecars(labels_paths: Sequence[str | Path]) -> list[LearnedFrom]:
    """The records beside the labels files given (files without one are skipped).

    Raises:
        DataError: a sidecar that is not one.
    """
    found = []
    for labels_path in labels_paths:
        path = sidecar_path(labels_path)
        if not path.is_file():
            continue
        data = _read_json(path)
        if not isinstance(data, dict) or data.get("format") != SIDECAR_FORMAT:
            raise DataError(str(path), None, f'"format" is not {SIDECAR_FORMAT!r}')
        source, where = data.get("source"), data.get("model_dir")
        lists: list[Any] = [data.get("distilled"), data.get("calibrated")]
        if not isinstance(source, str) or not all(
            isinstance(x, list) and all(isinstance(h, str) for h in x) for x in lists
        ):
            raise DataError(str(path), None, 'needs "source" and lists "distilled", "calibrated"')
        teacher, taught = data.get("teacher"), data.get("taught") or []
        method = data.get("people_method")  # absent from sidecars older than it
        found.append(
            LearnedFrom(
                source,
                str(where or path),
                frozenset(lists[0]),
                frozenset(lists[1]),
                teacher if isinstance(teacher, str) else None,
                frozenset(h for h in taught if isinstance(h, str)),
                method if isinstance(method, str) else None,
            )  # fmt: skip
        )
    return found


class PeopleOverlapError(UsageError):
    """A cheap source compared with human labels on items it learned those labels from.

    Attributes:
        source: the cheap source.
        human: the human source (or sources) compared with it.
        n_overlap: items on which both meet.
        n_human: items the human source labelled.
        how: ``distilled``, ``calibrated`` or both.
        where: the model directory (or sidecar) that records it.
    """

    def __init__(
        self, source: str, human: str, n_overlap: int, n_human: int, how: str, where: str
    ) -> None:
        self.source, self.human, self.where = source, human, where
        self.n_overlap, self.n_human, self.how = n_overlap, n_human, how
        super().__init__(self.describe("allow_overlap=True"), param="allow_overlap")

    def describe(self, fix: str) -> str:
        """The one line, with ``fix`` (a parameter or a flag) as the way to go on anyway."""
        whose = "the people's" if self.human.startswith("human:") else f"{self.human}'s"
        return (
            f"{self.source} was {self.how} on {whose} labels of {self.n_overlap} of the "
            f"{self.n_human} items {self.human} labels here ({self.where}); compared with those "
            "labels it looks better than it is, and PPI's intervals need labels the cheap "
            f"source never learned from: use {self.human}'s labels of other items (held out of "
            f"training), or pass {fix} to compare anyway"
        )


def check_people_overlap(
    learned: LearnedFrom, human: str, human_item_ids: Iterable[str], allow_overlap: bool = False
) -> list[str]:
    """The items on which ``learned``'s model meets the human labels; refused unless allowed.

    Args:
        learned: what the cheap source learned from.
        human: the human source's name (for the message).
        human_item_ids: the items the human source labelled.
        allow_overlap: return the overlap instead of refusing it.

    Raises:
        PeopleOverlapError: the two meet and ``allow_overlap`` is False.
    """
    ids = sorted(set(human_item_ids))
    both = learned.overlap(ids, human)
    if both and not allow_overlap:
        raise PeopleOverlapError(
            learned.source, human, len(both), len(ids), learned.how(both, human), learned.where
        )
    return both
