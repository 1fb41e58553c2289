"""A notebook user's help on the top-level verbs: Shift-Tab's signature, help(), dir()."""

from __future__ import annotations

import importlib
import inspect
import pydoc

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
