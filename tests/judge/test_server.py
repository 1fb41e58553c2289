"""The local OpenAI-compatible server: the real openai client, many concurrent clients, routes."""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest
from judge_helpers import single, verdict

from tinyjudge.judge import build_messages
from tinyjudge.testing import LocalServer, Reply, Request


def test_openai_client_parses_its_replies() -> None:
    srv = LocalServer(
        lambda req: Reply(
            verdict("full_refusal"), probs={"full_refusal": 0.9, "full_compliance": 0.1}
        )
    )
    with srv as url:
        client = openai.OpenAI(base_url=url, api_key="k")
        resp = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            logprobs=True,
            top_logprobs=5,
            n=2,
        )
    assert len(resp.choices) == 2 and resp.choices[0].message.content == verdict("full_refusal")
    tokens = resp.choices[0].logprobs.content
    assert "".join(t.token for t in tokens) == resp.choices[0].message.content
    assert resp.usage.completion_tokens > 0 and srv.calls == 1


def test_64_concurrent_clients(compliance) -> None:
    def respond(req: Request) -> Reply:
        return Reply(verdict("full_refusal", rationale=req.item_id or ""))

    items = [single(n) for n in range(64)]
    srv = LocalServer(respond, latency=0.2, items=items, rubric=compliance)
    with srv as url:

        async def main() -> list[str]:
            client = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0, timeout=30)
            calls = [
                client.chat.completions.create(
                    model="m",
                    messages=build_messages(it, compliance),  # type: ignore[arg-type]
                )
                for it in items
            ]
            got = await asyncio.gather(*calls)
            await client.close()
            return [r.choices[0].message.content for r in got]

        texts = asyncio.run(main())
    assert texts == [verdict("full_refusal", rationale=f"it-{n}") for n in range(64)]
    assert srv.calls == 64 and len(srv.calls_by_item) == 64


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions"], ids=["v1", "bare"])
def test_both_routes_answer(path: str) -> None:
    srv = LocalServer(lambda req: Reply("ok"))
    with srv as url:
        root = url.removesuffix("/v1")
        r = httpx.post(root + path, json={"model": "m", "messages": []})
        missing = httpx.post(root + "/v1/completions", json={})
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "ok"
    assert missing.status_code == 404


def test_not_running_raises() -> None:
    with pytest.raises(RuntimeError, match="the server is not running"):
        _ = LocalServer(lambda req: Reply("x")).base_url
