"""A real reward server on 127.0.0.1 around a real (linear-tier) reward model."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import LinearRM
from tinyjudge.records import Item


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running(app: object) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread; yield its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the reward server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def xstest_items_labels(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Item], list]:
    from tinyjudge.demo import bundled_sample

    imported = run_import("xstest", Path(bundled_sample()))
    return imported.items, imported.labels


@pytest.fixture(scope="session")
def linear_model(xstest_items_labels: tuple[list[Item], list]) -> LinearRM:
    items, labels = xstest_items_labels
    teacher = {lab.item_id: lab.label for lab in labels if lab.source == "judge:gpt-4"}
    train = [it for it in items if teacher.get(it.id)]
    return LinearRM("compliance").fit(train, [teacher[it.id] for it in train])


@pytest.fixture
def serve_app() -> Callable[..., object]:
    return running
