"""Shared plumbing for importers: the result type, and the one skip-bad reader."""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from tinyjudge.datasets.jsonl import describe_validation_error
from tinyjudge.errors import DataError
from tinyjudge.records import Item, Label

__all__ = ["Imported", "SkipBad", "not_utf8_message", "read_csv_rows", "require_file"]

# Some completions are long; the default 128 KiB field limit is too small.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


class _BadRecords(list):
    """Bad records, each remembered with how many items and labels came before it.

    Importers just ``append`` their errors; the marks let an import that must
    stop at the first bad record keep exactly what was read before it.
    """

    def __init__(self, owner: Imported) -> None:
        super().__init__()
        self.owner = owner
        self.marks: list[tuple[int, int]] = []

    def append(self, err: DataError) -> None:
        self.marks.append((len(self.owner.items), len(self.owner.labels)))
        super().append(err)

    def extend(self, errs: Iterable[DataError]) -> None:
        for err in errs:
            self.append(err)

    def __iadd__(self, errs: Iterable[DataError]) -> _BadRecords:  # type: ignore[override,misc]
        self.extend(errs)
        return self


@dataclass
class Imported:
    """What an importer produced: items, labels, and the rows it had to skip."""

    items: list[Item] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    bad: list[DataError] = field(default_factory=list)

    def __post_init__(self) -> None:
        given, self.bad = self.bad, _BadRecords(self)
        for err in given:
            self.bad.append(err)

    def before_first_bad(self) -> Imported:
        """The items and labels read before the first bad record (all if none)."""
        if not self.bad:
            return Imported(list(self.items), list(self.labels))
        # An importer that replaced ``bad`` with a plain list left no marks:
        # then everything read is kept, which loses nothing.
        marks = getattr(self.bad, "marks", None) or [(len(self.items), len(self.labels))]
        n_items, n_labels = marks[0]
        return Imported(self.items[:n_items], self.labels[:n_labels])

    def sources(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for lab in self.labels:
            out[lab.source] = out.get(lab.source, 0) + 1
        return dict(sorted(out.items()))


class SkipBad:
    """Where an importer's bad records go: raised at the first, or (``skip_bad``) listed.

    Call it with a :class:`DataError` (it is the ``on_error`` the readers take), or
    build one record inside ``with skip.record():``: a ``DataError`` raised there
    is handled the same way, and the rest of the block is passed over.

    Args:
        skip_bad: list bad records in ``bad`` and go on, instead of raising.
        bad: the list that keeps them (an :class:`Imported`'s ``bad``).
    """

    def __init__(self, skip_bad: bool, bad: list[DataError]) -> None:
        self.skip_bad = skip_bad
        self.bad = bad

    def __call__(self, error: DataError) -> None:
        """Raise ``error``, or with ``skip_bad`` keep it and go on."""
        if not self.skip_bad:
            raise error
        self.bad.append(error)

    @contextmanager
    def record(self, where: str | None = None) -> Iterator[None]:
        """Build one record; a bad one is raised or listed, and the block left.

        Args:
            where: the file the record comes from; given, a pydantic
                ``ValidationError`` (a field of the wrong type) is a bad record there too.
        """
        try:
            yield
        except DataError as e:
            self(e)
        except ValidationError as e:
            if where is None:
                raise
            error = DataError(where, None, describe_validation_error(e))
            error.__suppress_context__ = True
            self(error)


def require_file(path: Path, what: str) -> Path:
    if not path.exists():
        raise DataError(str(path), None, f"missing {what}; is this the right folder?")
    return path


def read_csv_rows(
    path: Path,
    required: list[str],
    on_error: Callable[[DataError], None] | None = None,
    delimiter: str = ",",
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line, row)`` for each CSV row; the line is where the row starts.

    Args:
        path: the CSV file, with a header row.
        required: columns the header must have (else the whole file is bad).
        on_error: called with the error of each row whose number of fields
            differs from the header's, and reading goes on; without it the
            first such row raises.
        delimiter: the field separator (``"\t"`` for TSV).
    """
    not_utf8: dict[int, str] = {}  # line -> what was wrong, for the row that holds it
    with path.open("rb") as fh:
        reader = csv.DictReader(_text_lines(fh, not_utf8), delimiter=delimiter)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(str(path), 1, f"missing columns {missing}; found {reader.fieldnames}")
        if 1 in not_utf8:
            raise DataError(str(path), 1, f"header: {not_utf8[1]}")
        n_columns = len(reader.fieldnames or [])
        line = reader.line_num + 1
        for row in reader:
            problem = next(
                (not_utf8[n] for n in range(line, reader.line_num + 1) if n in not_utf8), None
            )
            # DictReader pads a short row with None and files a long row's extra
            # fields under the key None; either way the row is not trustworthy.
            if problem is None and (None in row or None in row.values()):
                found = sum(v is not None for k, v in row.items() if k is not None)
                found += len(row.get(None) or [])  # type: ignore[call-overload]
                problem = f"expected {n_columns} fields as in the header, found {found}"
            if problem is None:
                yield line, row
            else:
                err = DataError(str(path), line, problem)
                if on_error is None:
                    raise err
                on_error(err)
            line = reader.line_num + 1


def not_utf8_message(byte: int) -> str:
    """The one-line problem of a record that is not UTF-8, naming the first bad byte."""
    return f"not UTF-8 text (byte {byte:#04x}); save the file as UTF-8"


def _text_lines(fh: BinaryIO, not_utf8: dict[int, str]) -> Iterator[str]:
    """Decode a file line by line, so one line that is not UTF-8 spoils one row, not the file.

    Such a line is decoded with replacement characters (so the CSV reader keeps
    its place) and noted in ``not_utf8``; a leading byte-order mark is dropped.
    """
    for n, raw in enumerate(fh, start=1):
        try:
            yield raw.decode("utf-8-sig" if n == 1 else "utf-8")
        except UnicodeDecodeError as e:
            not_utf8[n] = not_utf8_message(raw[e.start])
            yield raw.decode("utf-8", errors="replace")
