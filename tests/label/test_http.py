"""The labelling server over real HTTP on 127.0.0.1: durability, undo, two reviewers,
the token and the request guards. Each server is ``tinyjudge label`` in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tinyjudge.audit.agreement import pair_labels
from tinyjudge.datasets.jsonl import read_items, read_labels
from tinyjudge.label.store import store_path

TOKEN = "s3cret-token-for-tests-0123456789"


def _human(labels: Path, reviewer: str) -> dict[str, dict]:
    out = {}
    for line in labels.read_text().splitlines():
        obj = json.loads(line)
        if obj["source"] == f"human:{reviewer}":
            out[obj["item_id"]] = obj
    return out


def _current(c: httpx.Client) -> str:
    r = c.get("/api/current")
    assert r.status_code == 200, r.text
    return r.json()["item_id"]


def _answer(c: httpx.Client, item_id: str, label: str, note: str | None = None) -> dict:
    """Answer ``item_id``, which must be the current item (as the page would show it)."""
    assert _current(c) == item_id
    r = c.post("/api/answer", json={"item_id": item_id, "label": label, "note": note})
    assert r.status_code == 200, r.text
    return r.json()


def test_answers_survive_sigkill_and_the_reviewer_continues(start_server, xstest_data):
    ids = [it.id for it in read_items(xstest_data.items)]
    server = start_server(xstest_data, "bob", "--select", "sequential")
    with server.client() as c:
        assert _current(c) == ids[0]
        _answer(c, ids[0], "full_compliance")
        _answer(c, ids[1], "partial_refusal", "hedges, then answers")
        assert _current(c) == ids[2]  # assigned, not answered
    server.kill()

    mine = _human(xstest_data.labels, "bob")
    assert {k: v["label"] for k, v in mine.items()} == {
        ids[0]: "full_compliance",
        ids[1]: "partial_refusal",
    }
    assert mine[ids[1]]["rationale"] == "hedges, then answers"
    assert store_path(xstest_data.labels).exists()

    again = start_server(xstest_data, "bob", "--select", "sequential")
    with again.client() as c:
        assert _current(c) == ids[2]
        assert c.get("/api/progress").json()["labelled"] == 2
        _answer(c, ids[2], "full_refusal")
    assert len(_human(xstest_data.labels, "bob")) == 3


def test_undo_withdraws_the_latest_answer_and_brings_its_item_back(start_server, xstest_data):
    ids = [it.id for it in read_items(xstest_data.items)]
    server = start_server(xstest_data, "carol", "--select", "sequential")
    with server.client() as c:
        _answer(c, ids[0], "full_refusal")
        assert _current(c) == ids[1]
        r = c.post("/api/skip", json={"item_id": ids[1]})
        assert r.status_code == 200
        _answer(c, ids[2], "full_compliance")
        assert set(_human(xstest_data.labels, "carol")) == {ids[0], ids[2]}

        undone = c.post("/api/undo", json={}).json()["undone"]
        assert (undone["item_id"], undone["label"]) == (ids[2], "full_compliance")
        assert _current(c) == ids[2]
        assert "saw what the machines said" in c.get("/").text
        assert set(_human(xstest_data.labels, "carol")) == {ids[0]}

        undone = c.post("/api/undo", json={}).json()["undone"]  # the skip
        assert (undone["item_id"], undone["kind"]) == (ids[1], "skip")
        assert _current(c) == ids[1]
        assert "saw what the machines said" not in c.get("/").text  # a skip reveals nothing
        c.post("/api/undo", json={})
        assert _current(c) == ids[0]
        assert _human(xstest_data.labels, "carol") == {}
        assert c.post("/api/undo", json={}).json()["undone"] is None

        # A stale page (an item that is no longer current) cannot answer.
        assert _current(c) == ids[0]
        r = c.post("/api/answer", json={"item_id": ids[5], "label": "full_refusal"})
        assert r.status_code == 409 and "not carol's current item" in r.json()["error"]
        r = c.post("/api/answer", json={"item_id": ids[0], "label": "maybe"})
        assert r.status_code == 409 and "not one of rubric" in r.json()["error"]


def test_two_reviewers_label_the_same_items_without_seeing_each_other(start_server, xstest_data):
    # Default order (active on judge:gpt-4): both get the same items, for agreement figures.
    alice = start_server(xstest_data, "alice")
    bob = start_server(xstest_data, "bob")
    picks = ["full_compliance", "full_refusal", "partial_refusal"]
    seen = []
    with alice.client() as a, bob.client() as b:
        for i in range(3):
            item_id = _current(a)
            assert _current(b) == item_id
            seen.append(item_id)
            # Interleaved: each export must keep the other's labels.
            said = _answer(a, item_id, picks[i], f"alice-note-{i}")
            assert all(not v["source"].startswith("human:") for v in said["verdicts"])
            assert "alice-note" not in b.get("/").text
            said = _answer(b, item_id, picks[-1 - i])
            assert all(not v["source"].startswith("human:") for v in said["verdicts"])
            assert "human:" not in said["verdicts_html"]
        page = b.get("/").text
        assert "alice" not in page and "annotator_1" not in page
        agree = b.get("/api/progress").json()["agreement"]
        assert {x["source"] for x in agree} == {"judge:gpt-4", "classifier:string-match"}

    labels = read_labels(xstest_data.labels)  # the whole file still validates
    pairs = pair_labels(labels, "human:alice", "human:bob", rubric="compliance")
    assert pairs.item_ids == seen and len(set(seen)) == 3
    assert pairs.a == picks and pairs.b == picks[::-1]
    gpt4 = pair_labels(labels, "human:alice", "judge:gpt-4", rubric="compliance")
    assert gpt4.n == 3


def test_budget_ends_the_session(start_server, xstest_data):
    server = start_server(xstest_data, "dana", "--budget", "2")
    with server.client() as c:
        _answer(c, _current(c), "full_compliance")
        _answer(c, _current(c), "full_compliance")
        assert _current(c) is None
        page = c.get("/").text
        assert "Budget reached" in page and "human:dana" in page
        c.post("/api/undo", json={})
        assert _current(c) is not None


def test_token_is_required_and_never_logged(start_server, xstest_data):
    server = start_server(xstest_data, "erin", env={"TINYJUDGE_LABEL_TOKEN": TOKEN})
    assert server.url.endswith(f"?token={TOKEN}")
    with server.client() as c:
        assert c.get("/").status_code == 401
        assert c.get("/", params={"token": "wrong" + TOKEN}).status_code == 401
        assert c.get("/api/current").status_code == 401
        assert c.post("/api/undo", json={}).status_code == 401
        assert c.get("/static/label.js").status_code == 401

        r = c.get("/", params={"token": TOKEN})
        assert r.status_code == 303 and r.headers["location"] == "/"
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert c.get("/").status_code == 200  # the cookie now
    with server.client(headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        assert c.get("/api/current").status_code == 200
    output = server.stop()
    # The token appears only in the URL printed for the user, nowhere in the logs.
    assert [line for line in output.splitlines() if TOKEN in line] == [
        line for line in output.splitlines() if line.startswith("open http")
    ]


def test_a_public_host_without_a_token_is_refused(label_cli, xstest_data):
    proc = label_cli(
        str(xstest_data.items), "--rubric", "compliance", "--labels", str(xstest_data.labels),
        "--as", "frank", "--host", "0.0.0.0", "--port", "0",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = " ".join(proc.stderr.split())
    assert "--host 0.0.0.0 lets other machines reach the labelling page: pass --token" in line
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_a_reviewer_with_labels_from_elsewhere_is_told_the_flag(label_cli, xstest_data):
    proc = label_cli(
        str(xstest_data.items), "--rubric", "compliance", "--labels", str(xstest_data.labels),
        "--as", "annotator_1", "--port", "0",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "choose another --reviewer name" in " ".join(proc.stderr.split())


def test_a_busy_port_names_the_parameter_and_the_cli_the_flag():
    import socket

    from tinyjudge.cli import in_flags
    from tinyjudge.errors import UsageError
    from tinyjudge.label import serve

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        with pytest.raises(
            UsageError, match=r"^cannot listen on 127\.0\.0\.1:\d+ .*; try port 0$"
        ) as e:
            serve(None, "127.0.0.1", port)
    finally:
        busy.close()
    assert e.value.param == "port" and in_flags(e.value).endswith("; try --port 0")


def test_active_needs_a_cheap_source(label_cli, hostile_data):
    proc = label_cli(
        str(hostile_data.items),
        "--rubric",
        "compliance",
        "--labels",
        str(hostile_data.labels),
        "--as",
        "gil",
        "--select",
        "active",
        "--port",
        "0",
    )
    assert proc.returncode == 2
    line = " ".join(proc.stderr.split())
    assert "active selection needs a cheap score per item" in line
    assert "(see --cheap), or use --select random" in line


def test_request_guards(start_server, hostile_data):
    server = start_server(hostile_data, "hal")
    with server.client() as c:
        # DNS rebinding: a page on another name that resolves to 127.0.0.1 is refused.
        assert c.get("/", headers={"Host": "evil.example"}).status_code == 400
        r = c.post("/api/undo", json={}, headers={"Origin": "http://evil.example"})
        assert r.status_code == 403
        r = c.post("/api/undo", content="{}", headers={"Content-Type": "text/plain"})
        assert r.status_code == 415
        assert c.get("/static/../app.py").status_code == 404
        assert c.get("/static/secret.txt").status_code == 404
        page = c.get("/")
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert page.headers["referrer-policy"] == "no-referrer"


def test_transcript_html_is_escaped_in_the_page(start_server, hostile_data):
    server = start_server(hostile_data, "ivy", "--select", "sequential")
    with server.client() as c:
        html = c.get("/").text
    assert "&lt;script&gt;window.__pwned = 1;" in html
    assert "<script>window" not in html and "<script>x=1" not in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=" in html
    assert "<b>bold?</b>" not in html and "<i>run</i>" not in html
    assert html.count("<script") == 1  # the page's own label.js


def test_a_pair_is_shown_side_by_side_and_labelled_a_b_or_tie(start_server, pair_data):
    server = start_server(pair_data, "lee", rubric="instruction_following")
    with server.client() as c:
        html = c.get("/").text
        assert "Response A" in html and "Response B" in html
        assert "2, 3, 5" in html and "Primes: &lt;u&gt;2&lt;/u&gt; 3 5 7" in html
        for name in ("a", "b", "tie"):
            assert f'data-label="{name}"' in html
        _answer(c, "pair-1", "a", "B adds a fourth prime")
    (lab,) = read_labels(pair_data.labels)
    assert (lab.source, lab.rubric, lab.label) == ("human:lee", "instruction_following", "a")


@pytest.mark.parametrize(
    "path,location",
    [("//evil.com/x", "/evil.com/x"), ("/\\evil.com/x", "/%5Cevil.com/x"), ("///a", "/a")],
    ids=["double-slash", "backslash", "triple-slash"],
)
def test_the_token_redirect_stays_on_this_origin(start_server, xstest_data, path, location):
    import http.client
    from urllib.parse import urlsplit

    server = start_server(xstest_data, "erin", env={"TINYJUDGE_LABEL_TOKEN": TOKEN})
    where = urlsplit(server.url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    conn.request("GET", f"{path}?token={TOKEN}")
    r = conn.getresponse()
    assert r.status == 303 and r.getheader("location") == location
    conn.close()
    server.stop()
