"""Properties of the reward server's requests: any body is answered 200 or 4xx, never 500.

Bodies drawn by hypothesis for ``/score`` (items of any shape) and
``/get_reward`` (rollouts as text, as messages, or anything else), plus bytes
that are not JSON, go over real HTTP to a server around a real linear model.
A refusal carries a one-line ``detail``; an answer has one label or reward per
item or rollout; and the server keeps answering.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import FAST, ITEM, JSON, MESSAGES, record

from tinyjudge.serve import create_app

from .conftest import running

MAX_ITEMS = 3


@pytest.fixture(scope="module")
def client(linear_model) -> Iterator[httpx.Client]:
    with running(create_app(linear_model, max_items=MAX_ITEMS)) as url:
        with httpx.Client(base_url=url, timeout=30) as c:
            yield c


def _encode(body) -> bytes:
    if isinstance(body, bytes):
        return body
    return json.dumps(body, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")


def _count(body, key: str) -> int | None:
    ok = isinstance(body, dict) and isinstance(body.get(key), list)
    return len(body[key]) if ok else None


def _check(r: httpx.Response, n: int | None) -> dict:
    # 400: FastAPI's own answer to a body that is not UTF-8 ("error parsing the body")
    assert r.status_code in (200, 400, 413, 422), (r.status_code, r.text)
    data = r.json()
    if r.status_code != 200:
        assert isinstance(data["detail"], str) and data["detail"]
        assert "\n" not in data["detail"], data["detail"]
        if r.status_code == 413:
            assert f"{MAX_ITEMS}" in data["detail"]
    elif n is not None:
        assert n <= MAX_ITEMS
    return data


SCORE = st.one_of(
    st.fixed_dictionaries({"items": st.lists(ITEM, max_size=MAX_ITEMS + 1)}),
    record(["items"]),
    JSON,
    st.binary(max_size=40),
)


@FAST
@given(body=SCORE)
@example(body={"\n": None})  # a field name with a line break: the detail stays one line
@example(body={"items": [{"id": "\ud800", "messages": [{"role": "user", "content": "x"}]}]})
def test_any_score_body_is_answered(client: httpx.Client, body) -> None:
    r = client.post("/score", content=_encode(body), headers={"content-type": "application/json"})
    n = _count(body, "items")
    data = _check(r, n)
    if r.status_code == 200:
        assert len(data["labels"]) == n
    assert client.get("/health").status_code == 200


ROLLOUT = st.text(max_size=40) | MESSAGES | JSON
REWARD = st.one_of(
    st.fixed_dictionaries(
        {"query": st.lists(ROLLOUT, max_size=MAX_ITEMS + 1)},
        optional={"prompts": st.lists(ROLLOUT | st.none(), max_size=MAX_ITEMS + 1) | JSON},
    ),
    record(["query", "prompts", "labels"]),
    JSON,
    st.binary(max_size=40),
)


@FAST
@given(body=REWARD)
@example(body={"query": [[{"role": "system", "content": []}]]})  # was a 500 (TypeError)
def test_any_get_reward_body_is_answered(client: httpx.Client, body) -> None:
    r = client.post(
        "/get_reward", content=_encode(body), headers={"content-type": "application/json"}
    )
    n = _count(body, "query")
    data = _check(r, n)
    if r.status_code == 200:
        assert len(data["rewards"]) == n
        assert all(isinstance(x, float) and math.isfinite(x) for x in data["rewards"])
    assert client.get("/health").status_code == 200
