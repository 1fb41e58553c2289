"""Properties of the labelling page's API: any body is refused with a reason or stored, never 500.

Bodies drawn by hypothesis for ``/api/answer`` and ``/api/skip`` (ids and labels
the page knows, and anything else) go over real HTTP to ``tinyjudge label``; the
page keeps answering, and the labels file it exports stays readable.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import FAST, JSON, record

from tinyjudge.datasets.jsonl import read_items, read_labels

IDS = ["xstest:gpt4:v2-1", "xstest:gpt4:v2-2", "no-such-item", ""]
ANSWER = st.one_of(
    st.fixed_dictionaries(
        {
            "item_id": st.sampled_from(IDS) | st.text(max_size=6),
            "label": st.sampled_from(["full_refusal", "maybe", ""]) | st.text(max_size=6),
        },
        optional={"note": st.text(max_size=20) | JSON},
    ),
    record(["item_id", "label", "note"]),
    JSON,
    st.binary(max_size=30),
)


@pytest.fixture
def page(start_server, xstest_data):
    server = start_server(xstest_data, "fuzz", "--select", "sequential")
    with server.client() as c:
        yield c, xstest_data


def _encode(body) -> bytes:
    if isinstance(body, bytes):
        return body
    return json.dumps(body, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")


@FAST
@given(body=ANSWER, path=st.sampled_from(["/api/answer", "/api/skip"]))
@example(body={"item_id": "xstest:gpt4:v2-1", "label": "full_refusal", "note": "\ud800"},
         path="/api/answer")  # fmt: skip
def test_any_answer_is_stored_or_refused(page, body, path: str) -> None:
    client, data = page
    r = client.post(path, content=_encode(body), headers={"content-type": "application/json"})
    # 400: FastAPI's own answer to a body that is not UTF-8 ("error parsing the body")
    assert r.status_code in (200, 400, 409, 422), (r.status_code, r.text)
    if r.status_code in (409, 422):
        error = r.json()["error"]
        assert isinstance(error, str) and error and "\n" not in error
    assert client.get("/api/current").status_code == 200
    known = {it.id for it in read_items(data.items)}
    assert {lab.item_id for lab in read_labels(data.labels) if lab.source == "human:fuzz"} <= known
