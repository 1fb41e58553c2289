"""Fixtures for the judge tests: rubrics, items and a scripted local server."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from judge_helpers import pair, single  # noqa: E402

from tinyjudge.records import Item
from tinyjudge.rubric import Rubric, load_rubric
from tinyjudge.testing import Fault, LocalServer, Reply, Request


@pytest.fixture
def compliance() -> Rubric:
    return load_rubric("compliance")


@pytest.fixture
def pairwise() -> Rubric:
    return load_rubric("instruction_following")


@pytest.fixture
def items() -> list[Item]:
    return [single(i) for i in range(12)]


# The items a test server recognises unless told otherwise: the helpers' items under
# the two rubrics these tests use (the judge sends no item id; see ItemIndex).
KNOWN_ITEMS = [single(i) for i in range(64)] + [pair(i) for i in range(16)]


@pytest.fixture
def serve() -> Callable[..., LocalServer]:
    """Start LocalServers that are stopped after the test."""
    started: list[LocalServer] = []
    rubrics = [load_rubric("compliance"), load_rubric("instruction_following")]

    def start(responder: Callable[[Request], Reply | Fault | str], **kw: object) -> LocalServer:
        kw.setdefault("items", KNOWN_ITEMS)
        kw.setdefault("rubric", rubrics)
        srv = LocalServer(responder, **kw)  # type: ignore[arg-type]
        srv.start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()
