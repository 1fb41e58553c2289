"""The docstring examples in src/ run with the suite: pytest collects them from every module."""

from __future__ import annotations

import pytest


def test_the_suite_collects_the_doctests_of_src(pytestconfig: pytest.Config) -> None:
    # The examples are tests of their modules (pyproject: --doctest-modules over src/tinyjudge,
    # which took the place of doctest.testmod calls in a few test files); dropping either
    # setting would stop them running without a failure.
    assert pytestconfig.getoption("doctestmodules")
    assert "src/tinyjudge" in pytestconfig.getini("testpaths")
