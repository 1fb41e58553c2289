"""What a public face needs from Python: names loaded on first use, and a package you can call.

Two stages are at once a package and a verb: ``tinyjudge.distill`` is the folder
and ``tinyjudge.distill(items, labels)`` fits a model. Importing a subpackage sets
the parent's attribute of that name to the package, so whichever was looked up
first, the package is what ``tinyjudge.<stage>`` holds; :func:`callable_package`
makes calling it call the verb. :func:`lazy_names` gives a face the module-level
``__getattr__`` and ``__dir__`` (PEP 562) that load a heavy module only when one of
its names is first used, so ``import tinyjudge`` and the CLI start cheaply.

A callable package reads as its verb to the tools a notebook user asks for help:
``inspect.signature`` (Jupyter's Shift-Tab, IDEs) gets the verb's signature,
``help()`` shows the verb's documentation before the package's, and ``dir()`` lists
the face's public names (``__all__``) rather than its imports.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names", "callable_package", "public_dir"]


def lazy_names(
    module_name: str, names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the module ``module_name``.

    Args:
        module_name: the face's ``__name__``.
        names: public name -> where it lives, ``"module"`` or ``"module:attribute"``
            when the attribute is named otherwise; a module starting with ``.`` is
            relative to the face. A name that is its module's own last part
            (``"distill": "tinyjudge.distill"``) is that module: a callable package.

    >>> getattr_, dir_ = lazy_names("json", {"pretty": "pprint:pformat"})
    >>> getattr_("pretty")([1])
    '[1]'
    """
    face = sys.modules[module_name]
    package = module_name if hasattr(face, "__path__") else module_name.rpartition(".")[0]

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        loaded = importlib.import_module(module, package)
        own = not attribute and loaded.__name__.rpartition(".")[2] == name
        value = loaded if own else getattr(loaded, attribute or name)
        face.__dict__[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return public_dir(face, names)

    return __getattr__, __dir__


def public_dir(face: types.ModuleType, names: Mapping[str, str] | None = None) -> list[str]:
    """What ``dir(face)`` lists: its ``__all__`` and its dunders (with no ``__all__``, the
    names not starting ``_`` and the lazy ``names``); never the face's own imports
    (``TYPE_CHECKING``, ``annotations``, ``lazy_names``), which tab completion would offer."""
    public = getattr(face, "__all__", None)
    if public is None:
        public = [n for n in face.__dict__ if not n.startswith("_")] + list(names or ())
    dunders = [n for n in face.__dict__ if n.startswith("__") and n.endswith("__")]
    return sorted(set(public) | set(dunders))


class _Verb:
    """A package's ``__call__``: the verb itself, looked up when called.

    Being a descriptor rather than a method, it puts no frame of its own between
    the caller and the verb, so a warning's ``stacklevel`` still points at the
    caller's line.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, module: types.ModuleType, owner: type | None = None) -> Any:
        return getattr(module, self.name)


def _package_dir(module: types.ModuleType) -> list[str]:
    """A callable package's ``dir()``: its lazy face's, else its public names."""
    own = module.__dict__.get("__dir__")
    return list(own()) if own is not None else public_dir(module)


def _verb_doc(module: types.ModuleType, function: str, package_doc: str | None) -> str:
    """The verb's signature and docstring, then the package's: what ``help()`` shows."""
    verb = getattr(module, function)
    head = f"{module.__name__.rpartition('.')[2]}{inspect.signature(verb)}"
    own = inspect.getdoc(verb) or ""
    rest = inspect.cleandoc(package_doc or "")
    return f"{head}\n\n{own}\n\nThe package {module.__name__}:\n\n{rest}\n"


def callable_package(module_name: str, function: str) -> None:
    """Make the package ``module_name`` callable: ``package(...)`` is ``package.function(...)``.

    The function may be one of the package's lazy names; it loads on the first call,
    or when a tool asks the package for its signature, ``__doc__`` or ``__wrapped__``,
    which are the verb's (the package's own docstring follows the verb's in ``__doc__``).
    """
    module = sys.modules[module_name]
    package_doc = module.__doc__
    verb = type(
        "CallablePackage",
        (types.ModuleType,),
        {
            "__call__": _Verb(function),
            "__wrapped__": property(lambda m: getattr(m, function)),
            "__signature__": property(lambda m: inspect.signature(getattr(m, function))),
            "__doc__": property(lambda m: _verb_doc(m, function, package_doc)),
            "__dir__": _package_dir,
        },
    )
    module.__class__ = verb
