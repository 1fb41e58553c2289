"""Typed results that print themselves: an estimate with its interval.

A stage's result is a dataclass of such values rather than a dict, so a notebook
reads ``row.kappa.low`` and prints ``row.kappa`` as ``0.718 [0.548, 0.865]``.
Its JSON form is one function, :func:`plain`, over its fields: a result class
writes ``to_dict`` by inheriting :class:`Result` (or calling :func:`fields_dict`
where it renames or adds a key), rather than listing its fields again.

>>> k = Interval(0.7184, 0.5481, 0.8652)
>>> str(k)
'0.718 [0.548, 0.865]'
>>> 0.6 in k, k.width > 0.3
(True, True)
>>> Interval(0.5).to_dict()
{'value': 0.5, 'low': None, 'high': None}

That dict is the one JSON form of an interval in every file tinyjudge writes
(docs/formats.md); :meth:`Interval.read` reads it, and the older forms, back.
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import Any

__all__ = ["Interval", "Result", "Printed", "plain", "fields_dict", "short_repr", "html_summary"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with the bounds of its confidence interval.

    Args:
        value: the estimate (``nan`` where it could not be computed).
        low: the interval's lower bound (``None`` where none was computed).
        high: the interval's upper bound.
    """

    value: float
    low: float | None = None
    high: float | None = None

    @property
    def width(self) -> float:
        """``high - low``; ``nan`` without an interval."""
        if self.low is None or self.high is None:
            return math.nan
        return self.high - self.low

    def __contains__(self, x: object) -> bool:
        if self.low is None or self.high is None or not isinstance(x, numbers.Real):
            return False
        return self.low <= float(x) <= self.high

    def __format__(self, spec: str) -> str:
        fmt = spec or ".3f"
        text = "nan" if math.isnan(self.value) else format(self.value, fmt)
        if self.low is None or self.high is None:
            return text
        return f"{text} [{format(self.low, fmt)}, {format(self.high, fmt)}]"

    def __str__(self) -> str:
        return format(self)

    def shown(self, missing: str = "–", bounds: bool = True) -> str:
        """For a table cell: ``str(self)``, or ``missing`` where no value was computed
        (``nan``); with ``bounds=False`` the value alone.

        >>> Interval(math.nan).shown(), Interval(0.5, 0.25, 0.75).shown(bounds=False)
        ('–', '0.500')
        """
        if math.isnan(self.value):
            return missing
        return str(self if bounds else Interval(self.value))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of every interval tinyjudge writes: ``{"value", "low", "high"}``
        (a value that could not be computed, ``nan``, is ``None``)."""
        value = None if math.isnan(self.value) else self.value
        return {"value": value, "low": self.low, "high": self.high}

    @classmethod
    def read(cls, row: Mapping[str, Any], key: str, old: str | None = None) -> Interval:
        """``row[key]`` as an Interval: the JSON form, or a form files written before it hold.

        The older forms: the value under ``key`` with ``[low, high]`` beside it under
        ``old`` (default ``key`` and ``_ci``: ``kappa`` with ``kappa_ci``; an exploit row's
        ``flip_to_target`` with ``flip_ci``, an estimate's ``rate`` with ``ci``, the server
        audit's ``agreement`` with ``interval``), or an object ``{"value" or "estimate",
        "ci": [low, high]}``. ``None`` is ``nan``.

        Raises:
            KeyError: ``row`` has no ``key``.

        >>> Interval.read({"kappa": {"value": 0.5, "low": 0.25, "high": 0.75}}, "kappa")
        Interval(value=0.5, low=0.25, high=0.75)
        >>> Interval.read(dict(kappa=0.5, kappa_ci=[0.25, 0.75]), "kappa")
        Interval(value=0.5, low=0.25, high=0.75)
        >>> Interval.read({"rate": {"estimate": None, "ci": [None, None]}}, "rate").shown()
        '–'
        """
        got = row[key]
        if isinstance(got, Mapping):
            value = got.get("value", got.get("estimate"))
            ends = got["ci"] if "ci" in got else (got.get("low"), got.get("high"))
        else:
            value, ends = got, row.get(old or "_".join((key, "ci")))
        low, high = ends if ends is not None else (None, None)
        return cls(math.nan if value is None else float(value), low, high)


def plain(value: Any) -> Any:
    """``value`` in JSON's types: a result (anything with ``to_dict``) as its dict, another
    dataclass as the dict of its fields, a tuple as a list; nested values likewise.

    Numbers are left as they are (a ``nan`` stays ``nan``): what a result writes for a
    missing figure is its own choice.

    >>> plain({"k": Interval(0.5, 0.25, 0.75), "ns": (1, 2)})
    {'k': {'value': 0.5, 'low': 0.25, 'high': 0.75}, 'ns': [1, 2]}
    """
    if hasattr(value, "to_dict") and not isinstance(value, type):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return fields_dict(value)
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def fields_dict(
    obj: Any, *, rename: Mapping[str, str] | None = None, skip: Collection[str] = ()
) -> dict[str, Any]:
    """A dataclass's fields, in order, as :func:`plain` values.

    Args:
        obj: a dataclass instance.
        rename: field name -> the key it is written under.
        skip: fields left out (e.g. what a result holds but does not write).

    >>> @dataclass
    ... class Row:
    ...     n: int
    ...     kappa: Interval
    ...     note: str = ""
    >>> fields_dict(Row(3, Interval(0.5)), rename={"n": "count"}, skip=("note",))
    {'count': 3, 'kappa': {'value': 0.5, 'low': None, 'high': None}}
    """
    names = rename or {}
    return {
        names.get(f.name, f.name): plain(getattr(obj, f.name))
        for f in fields(obj)
        if f.name not in skip
    }


class Result:
    """A result dataclass's ``to_dict``: its fields as plain JSON values (:func:`fields_dict`).

    >>> @dataclass(frozen=True)
    ... class Rate(Result):
    ...     rate: Interval
    ...     n: int
    >>> Rate(Interval(0.25, 0.125, 0.5), 40).to_dict()
    {'rate': {'value': 0.25, 'low': 0.125, 'high': 0.5}, 'n': 40}
    """

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: every field, in order."""
        return fields_dict(self)


# a repr is for a glance: a notebook cell, a log line, a debugger's hover
_MAX_LINES = 16
_MAX_ROWS = 20


def short_repr(obj: object, lines: Sequence[str]) -> str:
    """``obj``'s repr as its class name and summary lines (at most 16; never every label).

    >>> print(short_repr(Interval(0.5), ["12 items", "kappa 0.718 [0.548, 0.865]"]))
    <Interval: 12 items
      kappa 0.718 [0.548, 0.865]>
    """
    shown = list(lines[:_MAX_LINES])
    if len(lines) > _MAX_LINES:
        shown.append(f"... {len(lines) - _MAX_LINES} more lines")
    head, *rest = shown or [""]
    return "\n".join([f"<{type(obj).__name__}: {head}", *(f"  {line}" for line in rest)]) + ">"


def html_summary(
    obj: object,
    lines: Sequence[str],
    table: tuple[Sequence[str], Sequence[Sequence[object]]] | None = None,
) -> str:
    """The HTML Jupyter shows for a result: its summary lines, then its table's first rows.

    >>> html_summary(Interval(0.5), ["3 items"], (["source", "n"], [["a<b", 3]]))[:46]
    '<div><strong>Interval</strong>: 3 items<table>'
    """
    head, *rest = list(lines) or [""]
    out = [f"<div><strong>{type(obj).__name__}</strong>: {html.escape(head)}"]
    out += [f"<br>{html.escape(line)}" for line in rest[:_MAX_LINES]]
    if table is not None and table[1]:
        columns, rows = table
        out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in columns))
        for row in rows[:_MAX_ROWS]:
            out.append("</tr><tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row))
        out.append("</tr></table>")
        if len(rows) > _MAX_ROWS:
            out.append(f"... {len(rows) - _MAX_ROWS} more rows")
    return "".join(out) + "</div>"


class Printed:
    """A result that prints as its summary: ``lines()`` and, where rows read better, ``table()``.

    Its repr is the class name and the summary lines, never every label, so a
    notebook cell or a log shows a screenful; Jupyter shows ``_repr_html_``, the same
    lines above the table. A dataclass using it is declared ``repr=False``, so that
    the generated repr does not take the place of this one.

    >>> @dataclass(repr=False)
    ... class Count(Printed):
    ...     n: int
    ...     def lines(self) -> list[str]:
    ...         return [f"{self.n} items"]
    >>> Count(3)
    <Count: 3 items>
    """

    def lines(self) -> list[str]:
        """The summary, a few short lines."""
        raise NotImplementedError

    def table(self) -> tuple[list[str], list[list[object]]] | None:
        """Column names and rows for the HTML view (None: the lines say it all)."""
        return None

    def __repr__(self) -> str:
        return short_repr(self, self.lines())

    def _repr_html_(self) -> str:
        return html_summary(self, self.lines(), self.table())
