"""The labelling page never loses or blocks a person's work: a torn labels file, two tabs
racing, a full disk and an oversized body. Servers are ``tinyjudge label`` on 127.0.0.1.

Before: a full disk left a torn last line that then blocked ``label`` and ``calibrate``;
two tabs racing answer and undo left the cursor on an answered item (every later answer
500, surviving a restart); a 300 MB body was parsed whole.
"""

from __future__ import annotations

import errno
import json
import os
import random
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest
from support import run_tinyjudge

from tinyjudge.datasets.jsonl import read_labels
from tinyjudge.errors import StorageError
from tinyjudge.label import LabelStore, _labels_file, open_session
from tinyjudge.label.store import store_path
from tinyjudge.rubric import load_rubric

from .conftest import LabelData

LABELS = ["full_compliance", "full_refusal", "partial_refusal"]


def _human(labels: Path, reviewer: str) -> dict[str, str]:
    return {
        lab.item_id: lab.label
        for lab in read_labels(labels)
        if lab.source == f"human:{reviewer}" and lab.label is not None
    }


def _answer_current(c: httpx.Client, label: str = "full_refusal") -> httpx.Response:
    item = c.get("/api/current").json()["item_id"]
    return c.post("/api/answer", json={"item_id": item, "label": label})


def _torn(labels: Path, reviewer: str) -> bytes:
    """The first 60 bytes of one more label line, as a write cut short leaves it."""
    line = json.dumps({"item_id": "never-committed", "rubric": "compliance",
                       "source": f"human:{reviewer}", "label": "full_refusal"})  # fmt: skip
    return line.encode()[:60]


def test_a_torn_last_line_is_cut_off_on_restart(start_server, xstest_data):
    server = start_server(xstest_data, "tom", "--select", "sequential")
    with server.client() as c:
        for _ in range(3):
            assert _answer_current(c).status_code == 200
    server.stop()
    before = _human(xstest_data.labels, "tom")
    with xstest_data.labels.open("ab") as fh:
        fh.write(_torn(xstest_data.labels, "tom"))

    again = start_server(xstest_data, "tom", "--select", "sequential")
    with again.client() as c:
        assert c.get("/api/progress").json()["labelled"] == 3
        assert _answer_current(c).status_code == 200
    assert len(_human(xstest_data.labels, "tom")) == 4  # the file reads whole again
    assert set(before) < set(_human(xstest_data.labels, "tom"))
    assert "never-committed" not in xstest_data.labels.read_text()


def test_a_torn_file_never_blocks_calibrate(xstest_data, tmp_path):
    with xstest_data.labels.open("ab") as fh:
        fh.write(_torn(xstest_data.labels, "tom"))
    n = len(xstest_data.labels.read_text().splitlines())
    args = ["calibrate", str(xstest_data.labels), "--source", "judge:gpt-4",
            "--human", "human:final", "--out", str(tmp_path / "cal"), "--n-boot", "20"]  # fmt: skip
    refused = run_tinyjudge(*args, timeout=300)
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and f"labels.jsonl:{n}: malformed JSON" in lines[0], lines
    done = run_tinyjudge(*args, "--skip-bad", timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"skipped {xstest_data.labels}:{n}: malformed JSON" in done.stderr


def _store_is_consistent(data: LabelData, reviewer: str) -> None:
    """Live answers unique per item; the file's labels are the store's; no cursor on an
    answered item."""
    import sqlite3

    db = sqlite3.connect(store_path(data.labels))
    live = db.execute(
        "SELECT item_id, kind, label FROM answers WHERE reviewer = ? AND undone IS NULL",
        (reviewer,),
    ).fetchall()
    cursor = db.execute("SELECT item_id FROM cursor WHERE reviewer = ?", (reviewer,)).fetchall()
    db.close()
    items = [i for i, _, _ in live]
    assert len(items) == len(set(items)), "two live answers for one item"
    assert not {c for (c,) in cursor} & set(items), "the cursor is on an answered item"
    assert _human(data.labels, reviewer) == {i: lab for i, kind, lab in live if kind == "label"}


@pytest.mark.slow
def test_tabs_racing_answer_and_undo_keep_the_store_consistent(start_server, xstest_data):
    server = start_server(xstest_data, "tab", "--select", "sequential")
    codes: list[int] = []
    failures: list[str] = []

    def tab(seed: int, role: str) -> None:
        # "answer" tabs answer what they were shown; "look" tabs reload (which assigns
        # the next item); "undo" tabs take answers back: every pair of steps races
        rng = random.Random(seed)
        with server.client() as c:
            for _ in range(80):
                try:
                    if role == "look":
                        r = c.get("/api/current")
                    elif role == "undo" and rng.random() < 0.5:
                        r = c.post("/api/undo", json={})
                    elif rng.random() < 0.15:
                        item = c.get("/api/current").json()["item_id"]
                        r = c.post("/api/skip", json={"item_id": item})
                    else:
                        r = _answer_current(c, rng.choice(LABELS))
                    codes.append(r.status_code)
                    if r.status_code not in (200, 409):
                        failures.append(r.text)
                except httpx.HTTPError as e:  # pragma: no cover - would be a failure
                    failures.append(repr(e))

    roles = ["answer", "answer", "look", "look", "undo"]
    threads = [threading.Thread(target=tab, args=(i, role)) for i, role in enumerate(roles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert 200 in codes
    _store_is_consistent(xstest_data, "tab")
    with server.client() as c:  # the page goes on: the next answer and skip work
        assert _answer_current(c).status_code == 200
    server.stop()
    again = start_server(xstest_data, "tab", "--select", "sequential")
    with again.client() as c:
        assert _answer_current(c).status_code == 200
        item = c.get("/api/current").json()["item_id"]
        assert c.post("/api/skip", json={"item_id": item}).status_code == 200
    _store_is_consistent(xstest_data, "tab")


def test_an_item_answered_while_the_next_is_chosen_is_not_assigned(xstest_data):
    """The race two tabs ran, made certain: tab A reloads (choosing the next item, slowly)
    while tab B, shown the same item, answers it. A must not assign the answered item."""
    session = open_session(
        xstest_data.items, "compliance", xstest_data.labels, "race", select="sequential"
    )
    first = session.current()
    session.store.answer("race", first, "full_refusal")  # no current item now
    nxt = session.selector.next_item({first})[0]
    choose = session.selector.next_item

    def slow(finished: set[str]):  # type: ignore[no-untyped-def]
        picked = choose(finished)
        time.sleep(0.5)  # the window in which tab B answers
        return picked

    session.selector.next_item = slow  # type: ignore[method-assign]
    tab_a = threading.Thread(target=session.current)
    tab_a.start()
    time.sleep(0.1)
    session.store.assign("race", nxt)  # tab B: shown the same item, answers it
    session.store.answer("race", nxt, "full_compliance")
    tab_a.join()
    session.selector.next_item = choose  # type: ignore[method-assign]
    current = session.current()
    assert current not in {first, nxt}
    session.store.answer("race", current, "full_refusal")  # and answering goes on
    session.store.close()
    _store_is_consistent(xstest_data, "race")


def test_a_cursor_left_on_an_answered_item_is_freed(xstest_data):
    """What an older version's race left behind no longer fails every answer."""
    rubric = load_rubric("compliance")
    store = LabelStore(xstest_data.labels, rubric)
    store.assign("old", "item-1")
    store.answer("old", "item-1", "full_refusal")
    store.assign("old", "item-1")  # the race: assigned again after it was answered
    with pytest.raises(Exception, match="already answered; reload the page"):
        store.answer("old", "item-1", "full_refusal")
    assert store.current("old") is None
    nxt = store.current_or_next("old", lambda done: ("item-2", None) if "item-1" in done else None)
    assert nxt == "item-2"
    store.answer("old", "item-2", "full_compliance")
    assert _human(xstest_data.labels, "old") == {"item-1": "full_refusal",
                                                 "item-2": "full_compliance"}  # fmt: skip


def test_a_failed_write_leaves_neither_a_line_nor_an_answer(xstest_data, monkeypatch):
    """ENOSPC injected at the labels file's write: the part written is cut off again."""
    rubric = load_rubric("compliance")
    store = LabelStore(xstest_data.labels, rubric)
    original = xstest_data.labels.read_bytes()
    real_fsync = os.fsync

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    store.assign("dee", "item-1")
    monkeypatch.setattr(_labels_file.os, "fsync", full)
    with pytest.raises(StorageError, match="No space left on device.*answer again"):
        store.answer("dee", "item-1", "full_refusal")
    monkeypatch.setattr(_labels_file.os, "fsync", real_fsync)
    assert xstest_data.labels.read_bytes() == original
    assert store.answers("dee") == [] and store.current("dee") == ("item-1", None)
    store.answer("dee", "item-1", "full_refusal")  # space is back: the same answer works
    assert _human(xstest_data.labels, "dee") == {"item-1": "full_refusal"}


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 2 MB tmpfs (root only: the variant without root is the injected ENOSPC above)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "disk"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(disk: Path) -> Path:
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as fh:  # unbuffered: nothing left to flush at close
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError as e:
            assert e.errno == errno.ENOSPC
    return filler


def test_a_full_disk_answers_507_and_the_next_answer_works(start_server, xstest_data, small_disk):
    data = LabelData(xstest_data.items, small_disk / "labels.jsonl")
    data.labels.write_bytes(xstest_data.labels.read_bytes()[:200_000].rsplit(b"\n", 1)[0] + b"\n")
    server = start_server(data, "fay", "--select", "sequential")
    with server.client() as c:
        assert _answer_current(c).status_code == 200
        item = c.get("/api/current").json()["item_id"]
        filler = _fill(small_disk)
        full = [c.post("/api/answer", json={"item_id": item, "label": "full_refusal"})
                for _ in range(3)]  # fmt: skip
        assert [r.status_code for r in full] == [507] * 3, [r.text for r in full]
        reason = full[0].json()["error"]  # SQLite's words or the file's, whichever filled first
        assert "database or disk is full" in reason or "No space left on device" in reason
        assert reason.endswith("free some space (or fix the folder), then answer again")
        assert len(_human(data.labels, "fay")) == 1  # the file reads whole, the answer is not in it
        filler.unlink()
        r = c.post("/api/answer", json={"item_id": item, "label": "full_refusal"})
        assert r.status_code == 200, r.text
        assert _answer_current(c).status_code == 200
    server.stop()
    again = start_server(data, "fay", "--select", "sequential")
    with again.client() as c:
        assert c.get("/api/progress").json()["labelled"] == 3
    _store_is_consistent(data, "fay")


def test_a_body_over_the_limit_is_413_unread(start_server, hostile_data):
    server = start_server(hostile_data, "big")
    with server.client() as c:
        item = c.get("/api/current").json()["item_id"]
        big = {"item_id": item, "label": "full_refusal", "pad": "x" * (2 << 20)}
        r = c.post("/api/answer", json=big)
        chunked = c.post(
            "/api/answer",
            content=(b"x" * 65536 for _ in range(40)),
            headers={"content-type": "application/json"},
        )
        ok = c.post("/api/answer", json={"item_id": item, "label": "full_refusal"})
    assert r.status_code == 413 and "the limit is 262144 (max_body_bytes)" in r.json()["error"]
    assert chunked.status_code == 413 and "more than" in chunked.json()["error"]
    assert ok.status_code == 200


def test_dns_rebinding_and_allowed_host(start_server, hostile_data):
    server = start_server(hostile_data, "dns", "--allowed-host", "labels.lan")
    port = server.url.split("?")[0].rstrip("/").rsplit(":", 1)[1]
    with server.client() as c:
        assert c.get("/api/current", headers={"Host": f"evil.example:{port}"}).status_code == 400
        assert c.get("/api/current", headers={"Host": f"labels.lan:{port}"}).status_code == 200
        assert c.get("/api/current", headers={"Host": f"localhost:{port}"}).status_code == 200
