"""Shared plumbing for importers: the result type and bad-row bookkeeping."""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tinyjudge.errors import DataError
from tinyjudge.records import Item, Label

__all__ = ["Imported", "read_csv_rows", "require_file"]

# Some completions are long; the default 128 KiB field limit is too small.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


@dataclass
class Imported:
    """What an importer produced: items, labels, and the rows it had to skip."""

    items: list[Item] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    bad: list[DataError] = field(default_factory=list)

    def sources(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for lab in self.labels:
            out[lab.source] = out.get(lab.source, 0) + 1
        return dict(sorted(out.items()))


def require_file(path: Path, what: str) -> Path:
    if not path.exists():
        raise DataError(str(path), None, f"missing {what}; is this the right folder?")
    return path


def read_csv_rows(path: Path, required: list[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line, row)`` for each CSV row; the line is where the row starts."""
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(str(path), 1, f"missing columns {missing}; found {reader.fieldnames}")
        line = reader.line_num + 1
        for row in reader:
            yield line, row
            line = reader.line_num + 1
