"""The reward server against hostile input: text built to make parsing slow, tool-call JSON
that Python cannot read, requests from another site, and more connections than files.

Each attack here once froze the server (6.5 s for a 48 KB body, 84 s for ``"<think>"`` x
40,000), answered 500, or answered a page on another name (DNS rebinding).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tinyjudge._http import allowed_hosts, host_of, refuse_foreign
from tinyjudge.errors import DataError, TinyjudgeError
from tinyjudge.serve import ServerOptions, create_app, parse_chat_text

from .conftest import running

USER = "<|im_start|>user\nhi<|im_end|>\n"
ASSISTANT = "<|im_start|>assistant\n"
ATTACKS = {
    "eos-near-miss": USER + ASSISTANT + " <eos>" * 8_000 + "x",
    "eos-run": USER + ASSISTANT + " <eos>" * 8_000,
    "unclosed-think": USER + ASSISTANT + "<think>" * 40_000,
    "unclosed-tool-call": USER + ASSISTANT + "<tool_call>" * 40_000,
    "unclosed-tool-response": "<|im_start|>user\n" + "<tool_response>" * 40_000,
    "special-names": USER + ASSISTANT + "x" + "<|a" * 40_000 + "|>",
    "newlines-before-tools": "<|im_start|>system\n" + "\n" * 200_000 + "<|im_end|>",
    "empty-turns": "<|im_start|>user\n" * 20_000,
    "llama-unclosed": "<|start_header_id|>assistant<|end_header_id|>\n\n" + "<|eot" * 40_000,
    "phi3-openers": "<|user|>\n" + "<|" * 100_000,
}


@pytest.mark.parametrize("text", ATTACKS.values(), ids=ATTACKS.keys())
def test_attack_text_is_parsed_in_linear_time(text: str) -> None:
    start = time.perf_counter()
    parse_chat_text(text)
    # each took seconds to minutes with the backtracking patterns; linear work is ~10 ms
    assert time.perf_counter() - start < 1.0


def test_an_empty_prefix_pattern_stays_linear_on_a_run_of_letters() -> None:
    start = time.perf_counter()
    parse_chat_text("a" * 100_000, "{role}: {content}\n")
    assert time.perf_counter() - start < 2.0


def test_attacks_do_not_change_what_real_text_reads_as() -> None:
    text = (
        USER + ASSISTANT + "<think>plan</think>Calling.<tool_call>\n"
        '{"name": "f", "arguments": {"x": 1}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n"
        + ASSISTANT + "Done. <|endoftext|><pad> \n"
    )  # fmt: skip
    assert parse_chat_text(text) == [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "reasoning": "plan",
            # canonical (records.canonical) writes arguments as one JSON text
            "tool_calls": [
                {"type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
            ],
            "content": "Calling.",
        },
        {"role": "tool", "content": "ok"},
        {"role": "assistant", "content": "Done."},
    ]


DEEP = "[" * 50_000 + "]" * 50_000
ABSURD_CALLS = {
    "nested-50000": '{"name": "f", "arguments": ' + DEEP + "}",
    "nested-100": '{"name": "f", "arguments": ' + "[" * 100 + "]" * 100 + "}",
    "digits-5000": '{"name": "f", "arguments": {"n": ' + "9" * 5_000 + "}}",
    "negative-digits-200": '{"name": "f", "arguments": {"n": -' + "1" * 200 + "}}",
}


@pytest.mark.parametrize("call", ABSURD_CALLS.values(), ids=ABSURD_CALLS.keys())
def test_absurd_tool_call_json_is_a_data_error(call: str) -> None:
    with pytest.raises(DataError, match=r"tool call JSON: (nests|holds a number)"):
        parse_chat_text(USER + ASSISTANT + f"<tool_call>\n{call}\n</tool_call><|im_end|>")


def test_absurd_llama3_call_is_a_data_error() -> None:
    text = "<|start_header_id|>assistant<|end_header_id|>\n\n" + ABSURD_CALLS["digits-5000"]
    with pytest.raises(DataError, match="holds a number of 5000 digits; the limit is 100"):
        parse_chat_text(text)


def test_absurd_tool_calls_answer_422_and_the_server_goes_on(linear_model) -> None:
    queries = [USER + ASSISTANT + f"<tool_call>\n{c}\n</tool_call>" for c in ABSURD_CALLS.values()]
    with running(create_app(linear_model)) as url:
        answers = [httpx.post(f"{url}/get_reward", json={"query": [q]}) for q in queries]
        fine = httpx.post(f"{url}/get_reward", json={"query": [USER + ASSISTANT + "ok"]})
    assert [r.status_code for r in answers] == [422] * len(queries)
    assert all(r.json()["detail"].startswith("query 0: tool call JSON: ") for r in answers)
    assert fine.status_code == 200


@pytest.mark.parametrize(
    "body",
    [b"[" * 50_000 + b"]" * 50_000, b'{"query": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"],
    ids=["bare", "in-query"],
)
def test_a_body_nested_past_reading_is_422(linear_model, body: bytes) -> None:
    with running(create_app(linear_model)) as url:
        r = httpx.post(f"{url}/get_reward", content=body)
    assert r.status_code == 422 and "nested too deep" in r.json()["detail"]


def test_text_over_the_limit_answers_413_naming_it(linear_model) -> None:
    with running(create_app(linear_model, max_text_chars=1000)) as url:
        r = httpx.post(f"{url}/get_reward", json={"query": ["ok", "x" * 1001]})
        p = httpx.post(f"{url}/get_reward", json={"query": ["ok"], "prompts": ["y" * 1001]})
        ok = httpx.post(f"{url}/get_reward", json={"query": ["x" * 1000]})
    assert r.status_code == 413
    assert r.json()["detail"] == (
        "query 1 holds 1001 characters; the limit is 1000 (max_text_chars)"
    )
    assert p.status_code == 413 and p.json()["detail"].startswith("prompt 0 holds 1001")
    assert ok.status_code == 200


def _big_reward_body(n: int = 1000) -> bytes:
    turn = USER + ASSISTANT + "<think>" + "thinking " * 150 + "</think>" + "answer " * 150
    return json.dumps({"query": [turn * 3 for _ in range(n)]}).encode()


def test_health_answers_while_a_big_request_is_parsed(linear_model) -> None:
    # big enough to take over a second to read on a fast machine, so the test means something
    body = _big_reward_body(3000)
    assert len(body) < 32 << 20
    with running(create_app(linear_model, max_items=4096, max_body_bytes=32 << 20)) as url:
        with ThreadPoolExecutor(2) as pool:
            big = pool.submit(httpx.post, f"{url}/get_reward", content=body, timeout=120.0)
            started = time.perf_counter()
            waits = []
            while not big.done():
                t = time.perf_counter()
                assert httpx.get(f"{url}/health", timeout=30.0).status_code == 200
                waits.append(time.perf_counter() - t)
                time.sleep(0.05)
            took = time.perf_counter() - started
        assert big.result().status_code == 200
    assert took > 1.0, "the big request should take a while for this test to mean anything"
    # parsed on the event loop, /health waited for all of it; in a thread it waits only
    # for the thread to hand back the interpreter lock, a few milliseconds at a time
    assert len(waits) >= 5 and max(waits) < took / 3, (took, waits)


LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]", "LOCALHOST"]


@pytest.mark.parametrize("path", ["/get_reward", "/metrics", "/score", "/health"])
def test_dns_rebinding_host_is_refused(linear_model, path: str) -> None:
    with running(create_app(linear_model)) as url:
        port = url.rsplit(":", 1)[1]
        method = httpx.post if path in ("/get_reward", "/score") else httpx.get
        kw = {"json": {"query": ["hi"]}} if path == "/get_reward" else {}
        foreign = method(f"{url}{path}", headers={"Host": f"evil.example:{port}"}, **kw)
        fine = [
            httpx.get(f"{url}/health", headers={"Host": f"{name}:{port}"})
            for name in LOOPBACK_NAMES
        ]
    assert foreign.status_code == 400
    assert "bad Host header 'evil.example'" in foreign.json()["detail"]
    assert [r.status_code for r in fine] == [200] * len(LOOPBACK_NAMES)


def test_a_foreign_origin_is_refused(linear_model) -> None:
    with running(create_app(linear_model)) as url:
        foreign = httpx.post(
            f"{url}/get_reward", json={"query": ["hi"]}, headers={"Origin": "http://evil.example"}
        )
        null = httpx.get(f"{url}/metrics", headers={"Origin": "null"})
        own = httpx.post(f"{url}/get_reward", json={"query": ["hi"]}, headers={"Origin": url})
    assert foreign.status_code == 403 and "evil.example" in foreign.json()["detail"]
    assert null.status_code == 403
    assert own.status_code == 200


def test_allowed_hosts_extend_loopback_and_limit_other_binds() -> None:
    assert allowed_hosts("127.0.0.1", ["rm.lan:8000"]) >= {"rm.lan", "localhost", "[::1]"}
    assert allowed_hosts("0.0.0.0") is None  # any name; the token guards it
    assert allowed_hosts("0.0.0.0", ["RM.lan"]) == {"rm.lan"}
    assert refuse_foreign("rm.lan:80", None, allowed_hosts("0.0.0.0", ["rm.lan"])) is None
    assert refuse_foreign("10.0.0.2", None, allowed_hosts("0.0.0.0", ["rm.lan"]))[0] == 400
    assert host_of("[::1]:8000") == "[::1]" and host_of("::1") == "::1"


def test_server_options_name_the_allowed_host(linear_model) -> None:
    token = "t" * 16
    opts = ServerOptions(host="0.0.0.0", token=token, allowed_hosts=("rm.lan",))
    with running(create_app(linear_model, opts)) as url:
        port = url.rsplit(":", 1)[1]
        named = httpx.get(f"{url}/health", headers={"Host": f"rm.lan:{port}"})
        other = httpx.get(f"{url}/health")  # 127.0.0.1 is not among the names here
    assert named.status_code == 200 and other.status_code == 400


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"host": "0.0.0.0"}, "lets other machines reach the reward model"),
        ({"token": "short"}, "at least 16 characters"),
        ({"max_text_chars": 0}, "max_text_chars must be at least 1, got 0"),
        ({"header_timeout_s": 0}, "header_timeout_s must be positive"),
        ({"chat_template": "nope"}, "give one of"),
    ],
    ids=["open-host", "short-token", "text-limit", "header-timeout", "template"],
)
def test_server_options_are_checked_when_made(kwargs, match) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        ServerOptions(**kwargs)
