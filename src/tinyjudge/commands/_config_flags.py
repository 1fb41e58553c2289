"""A command's flags derived from its stage's config dataclass.

``@config_flags(ExploitConfig)`` on a command adds one option per config field
(``n_boot`` -> ``--n-boot``, a bool -> ``--flag/--no-flag``, a ``Literal`` ->
its choices, a list -> a repeatable option), with the field's default and help,
and hands the command ``config=ExploitConfig(...)`` built from them. The
config's own checks run there, so a bad value is refused before any work, and
its error names the field, which the CLI shows as the flag (:func:`flag_of`).
"""

from __future__ import annotations

import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any, TypeVar, get_args, get_origin

import typer

from tinyjudge.config import Config, choices_of, field_help, field_types

__all__ = ["config_flags", "flag_of", "DERIVED"]

F = TypeVar("F", bound=Callable[..., Any])

# every field name that some command shows as a derived flag
DERIVED: set[str] = set()


def flag_of(name: str) -> str:
    """The flag a config field is shown as: ``n_boot`` -> ``--n-boot``."""
    return "--" + name.replace("_", "-")


def _plain(tp: Any) -> tuple[Any, bool]:
    """``X | None`` -> ``(X, True)``; anything else -> ``(tp, False)``."""
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def _parameter(cls: type[Config], name: str) -> inspect.Parameter:
    f = next(f for f in fields(cls) if f.name == name)
    tp, _ = _plain(field_types(cls)[name])
    default = f.default if f.default is not MISSING else None
    if f.default_factory is not MISSING:
        default = f.default_factory()
    help_text = field_help(f)
    decls = [flag_of(name)]
    annotation: Any = tp  # ranges are the config's to check: one message for both faces
    choices = choices_of(tp)
    if choices is not None:
        # an Enum is how every typer version shows a choice; the command reads .value
        choice = enum.Enum(f"{cls.__name__}_{name}", {str(c): str(c) for c in choices})  # type: ignore[misc]
        annotation = choice
        default = None if default is None else choice(str(default))
    elif tp is bool:
        decls = [f"{flag_of(name)}/--no-{name.replace('_', '-')}"]
    elif get_origin(tp) is list:
        annotation = list[get_args(tp)[0]] if get_args(tp) else list[str]  # type: ignore[misc]
        default = list(default or [])
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=typer.Option(default, *decls, help=help_text, envvar=f.metadata.get("envvar")),
        annotation=annotation,
    )


def _value(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def config_flags(cls: type[Config], *, skip: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Give a command one flag per field of ``cls`` and ``config=cls(...)`` from them.

    Args:
        cls: the stage's config dataclass.
        skip: fields the command sets itself (they keep their defaults here).
    """
    names = [f.name for f in fields(cls) if f.name not in skip]
    DERIVED.update(names)

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.name != "config"]
        clash = {p.name for p in own} & set(names)
        if clash:
            raise TypeError(
                f"{fn.__name__}: options both in the signature and {cls.__name__}: {sorted(clash)}"
            )
        params = own + [_parameter(cls, n) for n in names]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            values = {n: _value(kwargs.pop(n)) for n in names}
            return fn(config=cls(**values), **kwargs)

        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command  # type: ignore[return-value]

    return wrap
