"""The API key reaches the endpoint and nothing else: not the cache, labels, summary or logs."""

from __future__ import annotations

from pathlib import Path

from judge_helpers import single, verdict
from support import run_tinyjudge

from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.judge import Judge
from tinyjudge.testing import Fault, Reply, Request

KEY = "sk-tinyjudge-SECRET-7f3a9c"


def test_the_key_is_in_no_artifact(serve, tmp_path: Path) -> None:
    seen_auth: list[str] = []

    def respond(req: Request) -> Reply | Fault:
        seen_auth.append(req.headers.get("authorization", ""))
        if req.item_id == "it-1":
            # The fault's message echoes the key, as a careless proxy might.
            return Fault("status", 500, message=f"upstream rejected key {KEY}")
        if req.item_id == "it-2":
            return Reply(f"I will not judge; your key is {KEY[:6]}")
        return Reply(verdict("full_refusal"))

    srv = serve(respond)
    items = tmp_path / "items.jsonl"
    write_jsonl(items, [single(i) for i in range(4)])
    out = tmp_path / "out" / "labels.jsonl"
    env = {"OPENAI_API_KEY": KEY, "OPENAI_LOG": "debug"}
    done = run_tinyjudge(
        "judge", items, "--rubric", "compliance", "--model", "m", "--base-url", srv.base_url,
        "--out", out, "--max-retries", "1", "--summary", tmp_path / "out" / "summary.json",
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # The key was really used: the endpoint got it.
    assert seen_auth and all(a == f"Bearer {KEY}" for a in seen_auth)
    artifacts = sorted(p for p in (tmp_path / "out").rglob("*") if p.is_file())
    names = {p.name for p in artifacts}
    assert {"labels.jsonl", "summary.json", "labels.jsonl.cache.sqlite"} <= names
    for path in artifacts:
        assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in done.stdout and KEY not in done.stderr
    assert "[redacted]" in out.read_text()  # the echoed key was blanked in the reason


def test_the_key_is_not_in_the_judges_repr(serve) -> None:
    srv = serve(lambda req: Reply(verdict("full_refusal")))
    judge = Judge("compliance", "m", base_url=srv.base_url, api_key=KEY)
    assert KEY not in repr(judge) and KEY not in str(judge.summary.as_dict())
    [lab] = judge.run([single(1)])
    assert KEY not in lab.model_dump_json()
