"""What a public face needs from Python: names loaded on first use, and a package you can call.

Two stages are at once a package and a verb: ``tinyjudge.distill`` is the folder
and ``tinyjudge.distill(items, labels)`` fits a model. Importing a subpackage sets
the parent's attribute of that name to the package, so whichever was looked up
first, the package is what ``tinyjudge.<stage>`` holds; :func:`callable_package`
makes calling it call the verb. :func:`lazy_names` gives a face the module-level
``__getattr__`` and ``__dir__`` (PEP 562) that load a heavy module only when one of
its names is first used, so ``import tinyjudge`` and the CLI start cheaply.

A face lists each public name once, as an import with a redundant alias (the PEP 484
re-export form, which mypy's ``--no-implicit-reexport`` and pyright read)::

    from ._configs import LinearConfig as LinearConfig    # public, loaded with the face
    if TYPE_CHECKING:
        from ._linear import LinearRM as LinearRM          # public, loaded on first use
    __getattr__, __dir__ = lazy_names(__name__)

:func:`lazy_names` reads the face's source (:func:`read_face`): the aliased imports
inside its top-level ``if TYPE_CHECKING:`` are the lazy names and where they live, and
``__all__`` is every aliased import plus the public functions, classes and
``__version__`` the face defines. ``__all__`` is set at run time rather than written in
the face: a computed ``__all__`` in the source would make mypy export nothing
(python/mypy#12582), while the aliases say the same to every static tool.

Every face has this one form, lazy or not. A face with no lazy names binds only the
``__dir__``, ``_, __dir__ = lazy_names(__name__)``: a module ``__getattr__`` makes mypy
and pyright read any name taken from the face as ``Any``, so a misspelt import from
``tinyjudge.records`` would no longer be an error.

A callable package reads as its verb to the tools a notebook user asks for help:
``inspect.signature`` (Jupyter's Shift-Tab, IDEs) gets the verb's signature,
``help()`` shows the verb's documentation before the package's, and ``dir()`` lists
the face's public names (``__all__``) rather than its imports.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

__all__ = ["lazy_names", "read_face", "Face", "callable_package", "public_dir"]


class Face(NamedTuple):
    """A face's names, read from its source by :func:`read_face`."""

    public: list[str]
    """``__all__``: the aliased imports and the public definitions, in source order."""
    lazy: dict[str, str]
    """Name -> where it lives, ``"module"`` or ``"module:attribute"`` when the attribute
    is named otherwise; a module starting with ``.`` is relative to the face."""


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _defined(node: ast.stmt) -> list[str]:
    """The names a top-level definition or assignment binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else []
    if isinstance(node, ast.AnnAssign):
        targets = [node.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _exported(node: ast.ImportFrom) -> list[tuple[str, str]]:
    """(name, where) for each ``name as name`` in an import: the re-export form."""
    module = "." * node.level + (node.module or "")
    return [(a.name, module) for a in node.names if a.asname == a.name]


def read_face(source: str) -> Face:
    r"""The public and lazy names of a face, from its source.

    Top-level ``from m import X as X`` is public and loads with the face; inside the
    top-level ``if TYPE_CHECKING:`` it is public and lazy, and so is ``Y = X`` there
    (``Y`` loads ``X``). Imports without the alias are the face's own (its typing, its
    helpers) and stay out. Public functions, classes and assignments the face defines,
    and ``__version__``, are public.

    >>> face = read_face(
    ...     "from typing import TYPE_CHECKING\n"
    ...     "from ._a import A as A, helper\n"
    ...     "if TYPE_CHECKING:\n"
    ...     "    from ._b import B as B\n"
    ...     "    from ._b import Hint\n"
    ...     "    C = B\n"
    ...     "__version__ = '1'\n"
    ...     "def run(): ...\n"
    ... )
    >>> face.public
    ['A', 'B', 'C', '__version__', 'run']
    >>> face.lazy
    {'B': '._b', 'C': '._b:B'}
    """
    public: list[str] = []
    lazy: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            public += [name for name, _ in _exported(node)]
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for inner in node.body:
                if isinstance(inner, ast.ImportFrom):
                    for name, module in _exported(inner):
                        lazy[name] = module
                        public.append(name)
                elif isinstance(inner, ast.Assign) and isinstance(inner.value, ast.Name):
                    where = lazy.get(inner.value.id)
                    if where is None:
                        continue
                    module, _, attribute = where.partition(":")
                    for name in _defined(inner):
                        lazy[name] = f"{module}:{attribute or inner.value.id}"
                        public.append(name)
        else:
            public += [n for n in _defined(node) if not n.startswith("_") or n == "__version__"]
    return Face(public, lazy)


def _face_source(face: types.ModuleType) -> str:
    get_source = getattr(face.__spec__.loader if face.__spec__ else None, "get_source", None)
    source = get_source(face.__name__) if get_source is not None else None
    if source is None:
        raise ImportError(
            f"{face.__name__}: its public names are read from its source, which this "
            "install does not have (a .pyc-only build); install tinyjudge with its .py files",
            name=face.__name__,
        )
    return source


def lazy_names(module_name: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the face ``module_name``, and its ``__all__``.

    Reads the face's source (:func:`read_face`), sets the face's ``__all__`` to its
    public names and returns the PEP 562 hooks that load each lazy name on first use.
    A lazy name that is its module's own last part (``from tinyjudge.distill import
    distill as distill``) is that module: a callable package.

    Args:
        module_name: the face's ``__name__``; call this at the end of the face, so
            that its eager imports and definitions exist.
    """
    face = sys.modules[module_name]
    names = read_face(_face_source(face))
    face.__dict__["__all__"] = names.public
    package = module_name if hasattr(face, "__path__") else module_name.rpartition(".")[0]
    lazy = names.lazy

    def __getattr__(name: str) -> Any:
        where = lazy.get(name)
        if where is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        module, _, attribute = where.partition(":")
        loaded = importlib.import_module(module, package)
        own = not attribute and loaded.__name__.rpartition(".")[2] == name
        value = loaded if own else getattr(loaded, attribute or name)
        face.__dict__[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return public_dir(face, lazy)

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
