"""Streaming JSON Lines for items and labels.

Reading never holds the whole file in memory; writing goes to a temporary file
that is renamed into place, so an output file is never left half-written.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from tinyjudge._atomic import atomic_writer, exclusive_lock
from tinyjudge.errors import DataError, UsageError
from tinyjudge.records import Item, Label
from tinyjudge.rubric import Rubric, load_rubric

__all__ = [
    "read_jsonl",
    "read_items",
    "read_labels",
    "labels_from_other_sources",
    "write_jsonl",
    "write_labels",
    "check_keepable",
    "KeptLabels",
    "atomic_writer",
    "append_jsonl",
    "count_lines",
    "describe_validation_error",
    "lone_surrogate",
]

R = TypeVar("R", bound=BaseModel)


def describe_validation_error(err: ValidationError) -> str:
    """One line for a pydantic error: the field path and what was wrong."""
    parts = []
    for e in err.errors()[:3]:
        loc = ".".join(str(x) for x in e["loc"])
        msg = e["msg"]
        if e["type"] == "missing":
            parts.append(f'missing field "{loc}"')
        elif e["type"] == "extra_forbidden":
            parts.append(f'unknown field "{loc}"')
        elif loc:
            parts.append(f'field "{loc}": {msg}')
        else:
            parts.append(msg.removeprefix("Value error, "))
    more = len(err.errors()) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def read_jsonl(
    path: str | os.PathLike[str],
    model: type[R],
    on_error: Callable[[DataError], None] | None = None,
    check: Callable[[R], str | None] | None = None,
) -> Iterator[R]:
    """Yield one validated record per non-empty line, lazily.

    Args:
        path: a ``.jsonl`` file.
        model: the record type, e.g. :class:`Item` or :class:`Label`.
        on_error: called with each bad line's :class:`DataError`; reading then
            goes on. Without it the first bad line raises.
        check: returns why a valid record is still unacceptable (e.g.
            :meth:`Rubric.label_problem`), or None; a problem is a bad line.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(
            str(p), None, "a folder, not a JSONL file" if p.is_dir() else "no such file"
        )
    # Binary lines: numbered like count_lines and editors (only b"\n" ends a line),
    # and a line that is not UTF-8 is one bad line, not a crash of the whole read.
    with p.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                # A byte-order mark (Windows editors write one) opens the first line only.
                text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
                obj = json.loads(text)
                if b"\\ud" in raw.lower():
                    _refuse_lone_surrogates(obj, p, lineno)
                if not isinstance(obj, dict):
                    raise DataError(
                        str(p), lineno, f"expected a JSON object, got {type(obj).__name__}"
                    )
                record = model.model_validate(obj)
                if check is not None and (problem := check(record)):
                    raise DataError(str(p), lineno, problem)
            except json.JSONDecodeError as e:
                err = DataError(str(p), lineno, f"malformed JSON ({e.msg} at column {e.colno})")
            except UnicodeDecodeError as e:
                err = DataError(str(p), lineno, f"not UTF-8 text (byte {e.start + 1})")
            except RecursionError:
                err = DataError(str(p), lineno, "JSON nested too deep to read")
            except ValidationError as e:
                hint = _other_kind(obj, model)
                err = DataError(str(p), lineno, describe_validation_error(e) + hint)
            except DataError as e:
                err = e
            except ValueError as e:  # e.g. an integer of more than 4,300 digits
                what = "a number of more than 4,300 digits" if "digits" in str(e) else str(e)
                err = DataError(str(p), lineno, f"malformed JSON ({what[:120]})")
            else:
                yield record
                continue
            if on_error is None:
                raise err
            on_error(err)


def _other_kind(obj: dict[str, object], model: type[BaseModel]) -> str:
    """A hint when a row is the other kind of record: files given in each other's place."""
    if model is Item and "item_id" in obj and "source" in obj:
        return (
            "; this line is a label, not an item: is this the labels file given where the "
            "items file goes? (items come first, then labels)"
        )
    if model is Label and ("messages" in obj or "response_a" in obj) and "item_id" not in obj:
        return (
            "; this line is an item, not a label: is this the items file given where a "
            "labels file goes? (items come first, then labels)"
        )
    return ""


def lone_surrogate(obj: object) -> str | None:
    """The problem with a decoded JSON value holding a lone surrogate, or None.

    A ``\\ud800`` escape with no partner decodes to text that no file, hash or
    JSON response can hold.
    """
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        bad = e.object[e.start : e.end].encode("unicode_escape").decode()
        return f"a lone surrogate ({bad}) in a string: not valid Unicode text"
    except (TypeError, ValueError, RecursionError):
        return None  # not JSON data; whoever reads it says so
    return None


def _refuse_lone_surrogates(obj: object, path: Path, lineno: int) -> None:
    if problem := lone_surrogate(obj):
        raise DataError(str(path), lineno, problem)


def read_items(
    path: str | os.PathLike[str], on_error: Callable[[DataError], None] | None = None
) -> list[Item]:
    """Read every item of a JSONL file (see :func:`read_jsonl`).

    An id given twice is a bad line (``items.jsonl:7: item id 'x' appears twice
    (lines 3 and 7)``): each would be judged, scored or labelled twice.
    """
    seen: dict[str, int] = {}
    count = iter(range(1, 1 << 62))

    def once(item: Item) -> str | None:
        n = next(count)
        first = seen.setdefault(item.id, n)
        if first == n:
            return None
        shown = _quoted(item.id)
        return f"item id {shown} appears twice (items {first} and {n}); ids must be unique"

    return list(read_jsonl(path, Item, on_error=on_error, check=once))


def _quoted(value: str, width: int = 80) -> str:
    """``value`` as a quoted prefix of at most ``width`` characters (a message stays short)."""
    return repr(value if len(value) <= width else value[:width] + "...")


def read_labels(
    path: str | os.PathLike[str],
    rubric: str | os.PathLike[str] | Rubric | None = None,
    on_error: Callable[[DataError], None] | None = None,
    *,
    other_rubrics: bool = False,
) -> list[Label]:
    """Read every label of a JSONL file (see :func:`read_jsonl`).

    Args:
        path: a ``labels.jsonl`` file.
        rubric: when given (a name, a path or a :class:`Rubric`), each label's
            value, ``probs`` keys and ``orders`` verdicts must be the rubric's
            labels; otherwise the line is bad (``labels.jsonl:57: label "maybe"
            is not one of [...] of rubric compliance``).
        on_error: as in :func:`read_jsonl`.
        other_rubrics: with ``rubric``, read labels of other rubrics unchecked
            (a file that holds several rubrics' labels) instead of refusing them.

    Raises:
        DataError: a bad line, when ``on_error`` is not given.
    """
    check = None
    if rubric is not None:
        rub = load_rubric(rubric)

        def check(label: Label) -> str | None:
            if other_rubrics and label.rubric != rub.id:
                return None
            return rub.label_problem(label)

    return list(read_jsonl(path, Label, on_error=on_error, check=check))


def labels_from_other_sources(
    path: str | os.PathLike[str], written: Iterable[Label]
) -> list[Label]:
    """The labels of a labels file that a writer of ``written`` does not own, in order.

    A writer (an import) owns the (source, rubric) pairs it writes; every other
    label in the file (people's ``human:<name>`` labels from the labelling page,
    a judge's) came from someone else, and rewriting the file must keep them.

    Args:
        path: the labels file about to be rewritten; missing means none.
        written: the labels the writer is about to write.

    Raises:
        DataError: a line of the file is not a label (``path:line``): dropping
            it would lose what it holds, keeping it would break the file.
    """
    if not Path(path).exists():
        return []
    owned = {(lab.source, lab.rubric) for lab in written}
    return [lab for lab in read_jsonl(path, Label) if (lab.source, lab.rubric) not in owned]


class KeptLabels(NamedTuple):
    """What :func:`write_labels` wrote: its own labels, and the others' it kept or dropped.

    Attributes:
        written: the labels given to write.
        kept: other sources' labels kept in the file, by source.
        dropped: other sources' labels dropped (``replace_labels``), by source.
    """

    written: int
    kept: dict[str, int]
    dropped: dict[str, int]


def _other_lines(
    path: Path, owned: set[tuple[str, str]]
) -> tuple[list[str], Counter[str]] | DataError:
    """The file's labels that belong to no (source, rubric) in ``owned``, as lines."""
    keep: list[str] = []
    sources: Counter[str] = Counter()
    if not path.exists():
        return keep, sources
    try:
        for lab in read_jsonl(path, Label):
            if (lab.source, lab.rubric) not in owned:
                sources[lab.source] += 1
                keep.append(_dump(lab) + "\n")
    except DataError as e:
        return e
    return keep, sources


def _unkeepable(problem: DataError) -> UsageError:
    return UsageError(
        f"{problem}; the labels already there from other sources are kept and this line "
        "cannot be: fix or remove it, or pass replace_labels to drop them all",
        "replace_labels",
    )


def check_keepable(path: str | os.PathLike[str], replace_labels: bool = False) -> None:
    """Refuse, before any work, a labels file whose other labels could not be kept.

    Raises:
        UsageError: a line of ``path`` is not a label and ``replace_labels`` is off.
    """
    if not replace_labels:
        problem = _other_lines(Path(path), set())
        if isinstance(problem, DataError):
            raise _unkeepable(problem)


def write_labels(
    path: str | os.PathLike[str], labels: Iterable[Label], replace_labels: bool = False
) -> KeptLabels:
    """Write labels to a labels file, keeping the labels there from other sources.

    The writer owns the (source, rubric) pairs it writes; any other label in the
    file (people's ``human:`` labels from the labelling page, another judge's)
    is kept after the new ones, unless ``replace_labels``. The new labels stream
    into the output's temporary file (a long scoring run holds no lock); the read
    of the old file and the rename of the new one happen under the file's
    exclusive lock (:func:`~tinyjudge._atomic.exclusive_lock`), so a concurrent
    writer's update is never lost.

    Raises:
        UsageError: a line of the file is not a label (``path:line``), so what
            it holds cannot be kept: fix it, or pass ``replace_labels``.
    """
    p = Path(path)
    owned: set[tuple[str, str]] = set()
    n = 0
    with contextlib.ExitStack() as held:  # let go after the rename below
        with atomic_writer(p) as fh:
            for lab in labels:
                owned.add((lab.source, lab.rubric))
                fh.write(_dump(lab) + "\n")
                n += 1
            held.enter_context(exclusive_lock(p))
            others = _other_lines(p, owned)
            if isinstance(others, DataError):
                if not replace_labels:
                    raise _unkeepable(others)
                others = ([], Counter({"(unreadable file)": 1}))
            lines, sources = others
            if not replace_labels:
                fh.writelines(lines)
    counts = dict(sources)
    return KeptLabels(n, {} if replace_labels else counts, counts if replace_labels else {})


def _dump(record: BaseModel | dict) -> str:
    if isinstance(record, BaseModel):
        return record.model_dump_json(exclude_none=True)
    return json.dumps(record, ensure_ascii=False)


def write_jsonl(path: str | os.PathLike[str], records: Iterable[BaseModel | dict]) -> int:
    """Write records atomically, one JSON object per line; returns the count."""
    n = 0
    with atomic_writer(path) as fh:
        for r in records:
            fh.write(_dump(r) + "\n")
            n += 1
    return n


def append_jsonl(path: str | os.PathLike[str], records: Iterable[BaseModel | dict]) -> int:
    """Append records and fsync, for logs that must survive a crash."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with p.open("a", encoding="utf-8") as fh:
        for r in records:
            fh.write(_dump(r) + "\n")
            n += 1
        fh.flush()
        os.fsync(fh.fileno())
    return n


def count_lines(path: str | os.PathLike[str], chunk: int = 1 << 20) -> int:
    """Count lines (one record each) without reading the file into memory."""
    n = 0
    last = b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")
