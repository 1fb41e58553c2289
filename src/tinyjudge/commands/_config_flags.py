"""A command's flags derived from its stage's config dataclass.

``@config_flags(ExploitConfig)`` on a command adds one option per config field
(``n_boot`` -> ``--n-boot``, a bool -> ``--flag/--no-flag``, a ``Literal`` ->
its choices, a list -> a repeatable option), with the field's default and help,
and hands the command ``config=ExploitConfig(...)`` built from them. The
config's own checks run there, so a bad value is refused before any work, and
its error names the field, which the CLI shows as the flag (:func:`flag_of`).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import MISSING, fields
from typing import Any, TypeVar, get_args, get_origin

import typer

from tinyjudge.config import Config, choices_of, field_help, field_types
from tinyjudge.config import plain_type as _plain
from tinyjudge.errors import UsageError

__all__ = ["config_flags", "kind_flags", "kinds_of", "flag_of", "under", "DERIVED"]

F = TypeVar("F", bound=Callable[..., Any])

# every field name that some command shows as a derived flag
DERIVED: set[str] = set()


def flag_of(name: str) -> str:
    """The flag a config field is shown as: ``n_boot`` -> ``--n-boot``, ``C`` -> ``--c``."""
    return "--" + name.replace("_", "-").lower()


def _parameter(cls: type[Config], name: str, shown: str | None = None) -> inspect.Parameter:
    """The option of ``cls``'s field ``name``, as parameter ``shown`` (``--shown``)."""
    shown = shown or name
    f = next(f for f in fields(cls) if f.name == name)
    tp, _ = _plain(field_types(cls)[name])
    default: Any = f.default if f.default is not MISSING else ...  # none: a required flag
    if f.default_factory is not MISSING:
        default = f.default_factory()
    help_text = field_help(f)
    aliases = f.metadata.get("aliases", ()) if shown == name else ()
    decls = [flag_of(shown), *map(flag_of, aliases)]
    annotation: Any = tp  # ranges are the config's to check: one message for both faces
    choices = choices_of(tp)
    if choices is not None:
        # an Enum is how every typer version shows a choice; the command reads .value
        choice = enum.Enum(f"{cls.__name__}_{shown}", {str(c): str(c) for c in choices})  # type: ignore[misc]
        annotation = choice
        default = None if default is None else choice(str(default))
    elif tp is bool:
        decls = [f"{flag_of(shown)}/--no-{shown.replace('_', '-')}"]
    elif get_origin(tp) is list:
        annotation = list[get_args(tp)[0]] if get_args(tp) else list[str]  # type: ignore[misc]
        default = list(default or [])
    return inspect.Parameter(
        shown,
        inspect.Parameter.KEYWORD_ONLY,
        default=typer.Option(default, *decls, help=help_text, envvar=f.metadata.get("envvar")),
        annotation=annotation,
    )


def _value(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _nested(cls: type[Config], name: str) -> type[Config] | None:
    """The config class a field holds whole (``judge: JudgeConfig | None``), else None."""
    tp, _ = _plain(field_types(cls)[name])
    return tp if isinstance(tp, type) and issubclass(tp, Config) else None


def _unset(p: inspect.Parameter) -> inspect.Parameter:
    """``p`` unset by default (None), so a nested config is made only from flags given."""
    info = p.default
    info.default = None
    return p.replace(annotation=p.annotation | None)


def _shown(prefix: str, name: str, bare: str | None = None) -> str:
    """The parameter a nested field is shown as: ``judge_model``, or ``prefix`` for ``bare``."""
    return prefix if name == bare else f"{prefix}_{name}"


def _prefixed(cls: type[Config], prefix: str, bare: str | None = None) -> list[inspect.Parameter]:
    """Every field of ``cls`` under ``prefix``, unset; a config it holds whole gives its own
    fields under the same prefix (the audit's judge: ``--audit-model`` beside ``--audit-rate``)."""
    params: list[inspect.Parameter] = []
    for f in fields(cls):
        inner = _nested(cls, f.name)
        params += (
            _prefixed(inner, prefix)
            if inner is not None
            else [_unset(_parameter(cls, f.name, _shown(prefix, f.name, bare)))]
        )
    names = [p.name for p in params]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise TypeError(f"{cls.__name__} under {prefix!r}: fields shown twice: {clash}")
    return params


def _build_nested(
    cls: type[Config],
    prefix: str,
    values: dict[str, Any],
    bare: str | None = None,
    switched: bool = False,
) -> Config | None:
    """``cls`` from the ``prefix_*`` flags given, or None when none was given (nor ``switched``).

    A config it holds whole is built the same way from the same prefix. Its errors
    name the flags as given (``judge_timeout``, not ``timeout``).
    """
    given: dict[str, Any] = {}
    for f in fields(cls):
        inner = _nested(cls, f.name)
        if inner is not None:
            if (whole := _build_nested(inner, prefix, values)) is not None:
                given[f.name] = whole
        elif values.get(_shown(prefix, f.name, bare)) is not None:
            given[f.name] = values[_shown(prefix, f.name, bare)]
    if not given and not switched:
        return None
    with under(prefix, cls, bare):
        return cls(**given)


@contextlib.contextmanager
def under(prefix: str, cls: type[Config], bare: str | None = None) -> Iterator[None]:
    """Show the fields of ``cls`` that an error in the block names under ``prefix``.

    A nested config's own checks name its fields (``model``); the command shows
    them as its flags (``--judge-model``; ``bare``, the field shown as ``--prefix``).
    """
    try:
        yield
    except UsageError as e:
        raise _renamed(e, prefix, {f.name for f in fields(cls)}, bare) from None


def _renamed(
    error: UsageError, prefix: str, names: set[str], bare: str | None = None
) -> UsageError:
    """``error`` with the fields it names shown under ``prefix`` (``model`` -> ``judge_model``)."""

    def shown(name: str | None) -> str | None:
        return _shown(prefix, name, bare) if name is not None and name in names else name

    message = str(error)
    for name in dict.fromkeys([p for p in (error.param, *error.also) if p in names]):
        message = re.sub(rf"(?<![\w.'\"`/-]){re.escape(name)}(?![\w'\"`/-])", shown(name) or name,
                         message)  # fmt: skip
    also = tuple(shown(a) or a for a in error.also)
    return UsageError(message, shown(error.param), also=also)


def config_flags(
    cls: type[Config],
    *,
    skip: tuple[str, ...] = (),
    prefix: str | None = None,
    into: str = "config",
    switch: str | None = None,
    bare: str | None = None,
) -> Callable[[F], F]:
    """Give a command one flag per field of ``cls`` and ``config=cls(...)`` from them.

    A field that holds a config whole (``judge: JudgeConfig | None``) gives one flag
    per field of that config under the field's name (``--judge-model``,
    ``--judge-timeout``), and is None unless one of them is given.

    Args:
        cls: the stage's config dataclass.
        skip: fields the command sets itself (they keep their defaults here).
        prefix: show every field under this name (``--audit-model``) and hand the
            command None unless one of them is given (an optional judge).
        into: the command's parameter that receives the config.
        switch: with ``prefix``, the help of a flag ``--prefix`` that, given alone,
            makes ``cls()`` with its defaults (``--harden``; ``--harden-rounds 2``
            alone hardens too).
        bare: with ``prefix``, the field shown as ``--prefix`` itself (``--ensemble 5``
            for ``EnsembleConfig.k``).
    """
    if prefix is not None:
        params = _prefixed(cls, prefix, bare)
        if switch is not None:
            on = typer.Option(False, flag_of(prefix), help=switch)
            params.append(inspect.Parameter(prefix, inspect.Parameter.KEYWORD_ONLY, default=on,
                                            annotation=bool))  # fmt: skip
        DERIVED.update(p.name for p in params)

        def build_one(v: dict[str, Any]) -> Config | None:
            return _build_nested(cls, prefix, v, bare, bool(switch and v.get(prefix)))

        return _adding(params, into, cls.__name__, build_one)
    names = [f.name for f in fields(cls) if f.name not in skip]
    nested = {n: c for n in names if (c := _nested(cls, n)) is not None}
    params = []
    for n in names:
        params += _prefixed(nested[n], n) if n in nested else [_parameter(cls, n)]
    DERIVED.update(p.name for p in params)

    def build(values: dict[str, Any]) -> Config:
        whole = {n: _build_nested(c, n, values) for n, c in nested.items()}
        own = {n: values[n] for n in names if n not in nested}
        return cls(**own, **whole)

    return _adding(params, into, cls.__name__, build)


def kind_flags(classes: Sequence[type[Config]]) -> Callable[[F], F]:
    """Give a command one flag per field of any of ``classes``, and ``options=`` of those given.

    For a stage with kinds, each with its config (distill's tiers): a field the
    kinds share is one flag. Every flag is unset by default (the kind's own
    default, or a rubric's, applies), and the command gets ``options``, a dict
    of the flags given, to build the chosen kind's config with; which kinds have
    a field is :func:`kinds_of`'s to say.
    """
    first: dict[str, type[Config]] = {}
    for cls in classes:
        for f in fields(cls):
            first.setdefault(f.name, cls)
    DERIVED.update(first)
    params = []
    for name, cls in first.items():
        p = _parameter(cls, name)
        info = p.default
        info.default = None
        info.help = f"{info.help} ({', '.join(kinds_of(classes, name))})"
        params.append(p.replace(annotation=p.annotation | None))

    def given(values: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in values.items() if v is not None}

    return _adding(params, "options", "its kinds' configs", given)


def kinds_of(classes: Sequence[type[Config]], name: str) -> list[str]:
    """The kinds (``LinearConfig`` -> ``linear``) among ``classes`` with a field ``name``."""
    return [
        c.__name__.removesuffix("Config").lower()
        for c in classes
        if name in {f.name for f in fields(c)}
    ]


def _adding(
    params: list[inspect.Parameter], target: str, what: str, build: Callable[[dict[str, Any]], Any]
) -> Callable[[F], F]:
    """A decorator adding ``params`` to a command and passing ``target=build(their values)``."""
    names = [p.name for p in params]

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.name != target]
        clash = {p.name for p in own} & set(names)
        if clash:
            raise TypeError(
                f"{fn.__name__}: options both in the signature and {what}: {sorted(clash)}"
            )
        every = own + params

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            values = {n: _value(kwargs.pop(n)) for n in names}
            return fn(**{target: build(values)}, **kwargs)

        command.__signature__ = sig.replace(parameters=every)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in every}
        return command  # type: ignore[return-value]

    return wrap
