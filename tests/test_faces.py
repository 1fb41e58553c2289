"""A notebook user's help on the top-level verbs: Shift-Tab's signature, help(), dir()."""

from __future__ import annotations

import importlib
import inspect
import pydoc
import subprocess
import sys
from pathlib import Path

import pytest

import tinyjudge as tj

# verb -> (the module its function lives in, the function, parameters it must show)
VERBS = {
    "distill": ("tinyjudge.distill._distill", "distill", ["items", "labels", "config", "harden"]),
    "calibrate": ("tinyjudge.calibrate._model", "calibrate", ["model", "items", "human"]),
    "audit": ("tinyjudge.audit.report", "audit", ["labels", "items", "config", "rubric"]),
    "exploit": ("tinyjudge.exploit._run", "run_exploit", ["model", "items", "config", "bank"]),
    "cascade": ("tinyjudge.cascade._run", "cascade", ["model", "items", "reference", "config"]),
}


@pytest.mark.parametrize("verb", list(VERBS), ids=list(VERBS))
def test_the_signature_of_each_verb_is_its_functions(verb: str) -> None:
    module, name, params = VERBS[verb]
    function = getattr(importlib.import_module(module), name)
    package = getattr(tj, verb)
    assert inspect.ismodule(package)  # still the package: tinyjudge.distill.LinearRM works
    sig = inspect.signature(package)
    assert sig == inspect.signature(function)
    assert set(params) <= set(sig.parameters)
    assert package.__wrapped__ is function


@pytest.mark.parametrize("verb", list(VERBS), ids=list(VERBS))
def test_help_shows_the_function_before_the_package(verb: str) -> None:
    module, name, _ = VERBS[verb]
    function = getattr(importlib.import_module(module), name)
    doc = getattr(tj, verb).__doc__
    head = doc.splitlines()[0]
    assert head == f"{verb}{inspect.signature(function)}"
    first_line = inspect.getdoc(function).splitlines()[0]
    package_line = f"The package tinyjudge.{verb}:"
    assert first_line in doc and package_line in doc
    assert doc.index(first_line) < doc.index(package_line)
    shown = pydoc.render_doc(getattr(tj, verb), renderer=pydoc.plaintext)
    assert shown.index(head) < shown.index(package_line)


def test_dir_lists_the_public_names_and_no_imports() -> None:
    public = {n for n in dir(tj) if not n.startswith("_")}
    assert public == set(tj.__all__) - {"__version__"}
    for leaked in ("TYPE_CHECKING", "annotations", "lazy_names"):
        assert leaked not in dir(tj)
    assert "__version__" in dir(tj) and "__doc__" in dir(tj)


@pytest.mark.parametrize("verb", list(VERBS), ids=list(VERBS))
def test_dir_of_each_stage_is_its_public_names(verb: str) -> None:
    package = getattr(tj, verb)
    assert {n for n in dir(package) if not n.startswith("_")} == set(package.__all__)


def test_a_model_prints_its_rubric_by_name_not_its_prose() -> None:
    from tinyjudge.distill import LinearRM

    rubric = tj.load_rubric("compliance")
    assert repr(rubric) == (
        "Rubric(id='compliance', version='1.0', "
        "labels=['full_compliance', 'full_refusal', 'partial_refusal'])"
    )
    shown = repr(LinearRM("compliance"))
    assert "Rubric(id='compliance'" in shown and rubric.behavior[:40] not in shown
    assert len(shown) < 400


# read_face: what a face's source makes public and lazy (each public name once, as ``X as X``)
FACE_SOURCES = {
    "eager-alias": ("from ._a import A as A\n", ["A"], {}),
    "eager-plain-import-is-the-faces-own": ("from ._a import helper\n", [], {}),
    "renamed-import-is-not-an-export": ("from ._a import A as B\n", [], {}),
    "lazy-alias": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._b import B as B\n",
        ["B"],
        {"B": "._b"},
    ),
    "typing-dot-type-checking": (
        "import typing\nif typing.TYPE_CHECKING:\n    from .c import C as C\n",
        ["C"],
        {"C": ".c"},
    ),
    "absolute-module": (
        "if TYPE_CHECKING:\n    from tinyjudge.distill import distill as distill\n",
        ["distill"],
        {"distill": "tinyjudge.distill"},
    ),
    "lazy-plain-import-is-only-typing": (
        "if TYPE_CHECKING:\n    from ._b import Hint\n",
        [],
        {},
    ),
    "assigned-lazy-name": (
        "if TYPE_CHECKING:\n    from ._run import run as run\n    go = run\n",
        ["run", "go"],
        {"run": "._run", "go": "._run:run"},
    ),
    "assigned-other-value-is-skipped": ("if TYPE_CHECKING:\n    x = y\n", [], {}),
    "other-if-is-not-lazy": ("if DEBUG:\n    from ._b import B as B\n", [], {}),
    "nested-block-is-not-read": (
        "if TYPE_CHECKING:\n    if X:\n        from ._b import B as B\n",
        [],
        {},
    ),
    "definitions": (
        "__version__ = '1'\n_log = 1\nlimit: int = 3\ndef run(): ...\nclass Box: ...\n"
        "def _helper(): ...\n",
        ["__version__", "limit", "run", "Box"],
        {},
    ),
}


@pytest.mark.parametrize("source", list(FACE_SOURCES), ids=list(FACE_SOURCES))
def test_read_face(source: str) -> None:
    from tinyjudge._faces import read_face

    text, public, lazy = FACE_SOURCES[source]
    assert read_face(text) == (public, lazy)


LAZY_FACES = [
    "tinyjudge",
    *(
        f"tinyjudge.{stage}"
        for stage in ("audit", "calibrate", "distill", "estimate", "exploit", "serve")
    ),
]
# every face is on the one form; these load all their names with the face
EAGER_FACES = [
    f"tinyjudge.{face}"
    for face in (
        "_model_dir",
        "audit.bias",
        "cascade",
        "commands",
        "datasets",
        "datasets.importers",
        "distill.hf",
        "hints",
        "integrations",
        "judge",
        "judge._replay",
        "judge.local",
        "label",
        "records",
        "records._read",
        "testing",
    )
]
FACES = LAZY_FACES + EAGER_FACES
# a face's own helpers, imported without the alias on purpose
OWN_IMPORTS = {
    "tinyjudge.datasets.importers": ["get_importer"],
    "tinyjudge.judge.local": ["Judge", "DEFAULT_MODEL"],
}


@pytest.mark.parametrize("face", FACES, ids=FACES)
def test_a_faces_own_public_imports_are_exports(face: str) -> None:
    # A name imported from the face's own package without ``as`` would load, but be
    # missing from __all__ and, to mypy --strict and pyright, not exported.
    import ast

    # the file, not inspect.getsource: a callable package's source is its verb's (__wrapped__)
    source = Path(importlib.import_module(face).__file__ or "").read_text(encoding="utf-8")
    tree = ast.parse(source)
    body = [n for n in tree.body if not isinstance(n, ast.If)]
    body += [inner for n in tree.body if isinstance(n, ast.If) for inner in n.body]
    plain = [
        a.name
        for n in body
        if isinstance(n, ast.ImportFrom)
        and (n.level or (n.module or "").startswith(face))
        and n.module != "tinyjudge._faces"
        for a in n.names
        if a.asname is None and not a.name.startswith("_")
    ]
    assert plain == OWN_IMPORTS.get(face, [])
    assert "lazy_names(__name__)" in source


@pytest.mark.parametrize("face", FACES, ids=FACES)
def test_star_import_gives_the_public_names(face: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {face} import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(importlib.import_module(face).__all__)


@pytest.mark.parametrize("face", FACES, ids=FACES)
def test_dir_of_each_face_is_its_public_names(face: str) -> None:
    module = importlib.import_module(face)
    assert {n for n in dir(module) if not n.startswith("_")} == set(module.__all__) - {
        "__version__"
    }


@pytest.mark.parametrize("face", FACES, ids=FACES)
def test_only_a_face_with_lazy_names_has_a_module_getattr(face: str) -> None:
    # A module __getattr__ makes mypy and pyright take any name from the face as Any, so a
    # face with no lazy names binds only __dir__ (``_, __dir__ = lazy_names(__name__)``)
    # and a misspelt import from it stays an error.
    module = importlib.import_module(face)
    assert ("__getattr__" in vars(module)) == (face in LAZY_FACES)


def test_the_records_face_has_the_readers_names_less_its_defaults_table() -> None:
    import tinyjudge.records as records
    import tinyjudge.records._read as read

    assert set(read.__all__) - set(records.__all__) == {"DEFAULT_SYSTEM_PROMPTS"}


def test_the_model_dir_face_is_its_modules_public_names() -> None:
    from tinyjudge._model_dir import __all__ as face
    from tinyjudge._model_dir import _calibration, _change, _record

    assert sorted(face) == sorted(_calibration.__all__ + _change.__all__ + _record.__all__)


def test_the_servers_face_loads_fastapi_on_first_use() -> None:
    code = (
        "import sys, tinyjudge.serve as s; print('fastapi' in sys.modules, 'create_app' in dir(s),"
        " 'create_app' in s.__all__, 'run_server' in s.__all__, 'logging' in dir(s))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["False", "True", "True", "True", "False"]


def test_a_face_without_its_source_says_so() -> None:
    import types

    from tinyjudge._faces import _face_source

    sourceless = types.ModuleType("tinyjudge.nowhere")
    with pytest.raises(ImportError, match=r"tinyjudge.nowhere: .*read from its source"):
        _face_source(sourceless)
