"""One config dataclass per stage: typed options, checked where they are made.

A stage's options are the fields of a :class:`Config` subclass, each declared
with :func:`option` (default, help, allowed range). The library takes the
config (``exploit(model, items, config=ExploitConfig(n_boot=500))``, keyword
options as sugar); the command line derives one flag per field from the same
declaration (``--n-boot 500``), so a field is written once.

Making a config checks every field: numbers are finite and inside their range,
a ``Literal`` field holds one of its choices. A fault raises
:class:`~tinyjudge.errors.UsageError` naming the field (``param``), the value
and what is allowed; the command line shows the field as its flag.

>>> from dataclasses import dataclass
>>> @dataclass
... class Toy(Config):
...     rate: float = option(0.1, "share sampled", low=0.0, high=1.0)
>>> Toy(rate=0.5).rate
0.5
>>> Toy(rate=float("nan"))
Traceback (most recent call last):
...
tinyjudge.errors.UsageError: rate must be a finite number in [0, 1], got nan
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import MISSING, dataclass, fields
from typing import Any, Literal, TypeVar, get_args, get_origin

from tinyjudge.errors import UsageError

__all__ = [
    "Config",
    "option",
    "field_help",
    "field_range",
    "field_types",
    "choices_of",
    "plain_type",
]

C = TypeVar("C", bound="Config")


def option(
    default: Any = MISSING,
    help: str = "",
    *,
    low: float | None = None,
    high: float | None = None,
    default_factory: Any = MISSING,
    aliases: tuple[str, ...] = (),
) -> Any:
    """A config field: its default, its help text and its allowed range.

    Args:
        default: the field's default (omit for a required field).
        help: one line for ``--help`` and the docs.
        low: the smallest allowed value (numbers; inclusive).
        high: the largest allowed value (numbers; inclusive).
        default_factory: for a mutable default (a list).
        aliases: other names the command line takes it by, as flags derived alike (a
            singular for a repeatable option: ``rater``, ``--rater`` beside ``--raters``).
    """
    meta = {"help": help, "low": low, "high": high, "aliases": aliases}
    if default_factory is not MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def field_help(f: dataclasses.Field[Any]) -> str:
    """The help text :func:`option` gave a field ("" for a plain field)."""
    return str(f.metadata.get("help", ""))


def field_range(f: dataclasses.Field[Any]) -> tuple[float | None, float | None]:
    """The ``(low, high)`` bounds :func:`option` gave a field."""
    return f.metadata.get("low"), f.metadata.get("high")


def field_types(cls: type) -> dict[str, Any]:
    """Each field's resolved annotation (the module uses postponed annotations)."""
    return typing.get_type_hints(cls)


def choices_of(tp: Any) -> tuple[Any, ...] | None:
    """The allowed values of a ``Literal`` annotation (also inside ``X | None``)."""
    if get_origin(tp) is Literal:
        return get_args(tp)
    for arg in get_args(tp):
        if get_origin(arg) is Literal:
            return get_args(arg)
    return None


def plain_type(tp: Any) -> tuple[Any, bool]:
    """``X | None`` -> ``(X, True)``; anything else -> ``(tp, False)``."""
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def _bounds_text(low: float | None, high: float | None) -> str:
    def num(x: float) -> str:
        return f"{x:g}"

    if low is not None and high is not None:
        return f"in [{num(low)}, {num(high)}]"
    if low is not None:
        return f">= {num(low)}"
    return f"<= {num(high)}" if high is not None else ""


@dataclass
class Config:
    """Base of the stages' configs: fields made with :func:`option`, checked on creation."""

    def __post_init__(self) -> None:
        types = field_types(type(self))
        for f in fields(self):
            self._check_field(f, getattr(self, f.name), types.get(f.name))

    def _check_field(self, f: dataclasses.Field[Any], value: Any, tp: Any) -> None:
        choices = choices_of(tp)
        if choices is not None and value is not None and value not in choices:
            allowed = ", ".join(repr(c) for c in choices)
            raise UsageError(f"{f.name} must be one of {allowed}, got {value!r}", param=f.name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return
        low, high = field_range(f)
        if low is None and high is None and isinstance(value, int):
            return
        bad = not math.isfinite(value)
        bad = bad or (low is not None and value < low) or (high is not None and value > high)
        if bad:
            where = _bounds_text(low, high)
            what = "a finite number" + (f" {where}" if where else "")
            raise UsageError(f"{f.name} must be {what}, got {value!r}", param=f.name)

    def replace(self: C, **changes: Any) -> C:
        """A copy with some fields changed (checked again)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_options(cls: type[C], config: C | None = None, **options: Any) -> C:
        """``config`` with keyword options over it (the library's sugar), or a new one.

        Raises:
            UsageError: an option that is not a field, naming the allowed ones.
        """
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise UsageError(
                f"unknown option {unknown[0]!r} for {cls.__name__}; allowed: "
                + ", ".join(sorted(names)),
                param=unknown[0],
            )
        if config is None:
            required = [f.name for f in fields(cls) if _required(f) and f.name not in options]
            if required:
                raise UsageError(
                    f"{cls.__name__} needs {' and '.join(required)}", param=required[0],
                    also=tuple(required[1:]),
                )  # fmt: skip
            return cls(**options)
        return config.replace(**options) if options else config


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is MISSING and f.default_factory is MISSING
