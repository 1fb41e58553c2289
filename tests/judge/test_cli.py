"""``tinyjudge judge``: user mistakes are one line and exit 2; the output is written whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_helpers import run_cli, single, verdict

from tinyjudge.datasets.jsonl import read_labels, write_jsonl
from tinyjudge.rubric import load_rubric, load_rubric_copy
from tinyjudge.testing import Reply


@pytest.fixture
def items_file(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    write_jsonl(path, [single(i) for i in range(5)])
    return path


def test_judge_writes_labels_and_summary(serve, items_file, tmp_path, monkeypatch, capsys) -> None:
    srv = serve(lambda req: Reply(verdict("full_refusal")))
    out = tmp_path / "labels.jsonl"
    rc, stdout, _ = run_cli(
        monkeypatch, capsys, "judge", items_file, "--rubric", "compliance", "--model", "m",
        "--base-url", srv.base_url, "--out", out, "--summary", tmp_path / "s.json",
        "--price-in", "1", "--price-out", "2", "--no-progress",
    )  # fmt: skip
    assert rc == 0
    assert [lab.label for lab in read_labels(out)] == ["full_refusal"] * 5
    assert (
        "5 items: 5 labelled, 0 unscored" in stdout and "5 calls, 0 cache hits, 0 retries" in stdout
    )
    assert "cost $" in stdout
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["calls"] == 5 and summary["cost"] > 0
    rubric = load_rubric("compliance")
    assert summary["rubric"] == "compliance" and summary["rubric_hash"] == rubric.hash
    assert summary["source"] == "judge:m" and summary["unscored_reasons"] == {}
    assert load_rubric_copy(tmp_path / f"rubric.{rubric.hash}.yaml") == rubric  # beside the labels


@pytest.mark.parametrize(
    "args,message",
    [
        (["--rubric", "compliance"], "--model is required"),
        (["--rubric", "nope", "--model", "m"], "unknown rubric 'nope'"),
        (
            ["--rubric", "compliance", "--replay", "x.jsonl", "--base-url", "http://h/v1"],
            "give either --replay or --base-url",
        ),
        (
            [
                "--rubric",
                "compliance",
                "--model",
                "m",
                "--concurrency",
                "0",
                "--base-url",
                "http://h/v1",
            ],
            "concurrency must be >= 1",
        ),
    ],
    ids=["no_model", "unknown_rubric", "replay_and_base_url", "bad_concurrency"],
)
def test_user_mistakes_exit_2_with_one_line(
    items_file, tmp_path, monkeypatch, capsys, args, message
) -> None:
    out = tmp_path / "labels.jsonl"
    rc, _, err = run_cli(monkeypatch, capsys, "judge", items_file, "--out", out, *args)
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_bad_items_file_names_the_line(tmp_path, monkeypatch, capsys) -> None:
    bad = tmp_path / "items.jsonl"
    bad.write_text('{"id": "a", "messages": [{"role": "user", "content": "q"}]}\n{"id": "b"}\n')
    rc, _, err = run_cli(
        monkeypatch, capsys, "judge", bad, "--rubric", "compliance", "--model", "m",
        "--base-url", "http://127.0.0.1:9/v1", "--out", tmp_path / "o.jsonl",
    )  # fmt: skip
    assert rc == 2 and "items.jsonl:2:" in err


def test_a_refused_endpoint_keeps_no_half_output(
    serve, items_file, tmp_path, monkeypatch, capsys
) -> None:
    from tinyjudge.testing import Fault

    srv = serve(lambda req: Fault("status", 401, message="invalid api key"))
    out = tmp_path / "labels.jsonl"
    rc, _, err = run_cli(
        monkeypatch, capsys, "judge", items_file, "--rubric", "compliance", "--model", "m",
        "--base-url", srv.base_url, "--out", out, "--no-progress",
    )  # fmt: skip
    assert rc == 2 and "the endpoint refused the judge: HTTP 401: invalid api key" in err
    assert not out.exists()


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_exits_1_with_one_line(
    items_file, tmp_path, monkeypatch, capsys
) -> None:
    out = tmp_path / "labels.jsonl"
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    rc, _, err = run_cli(
        monkeypatch, capsys, "judge", items_file, "--rubric", "compliance", "--model", "m",
        "--base-url", url, "--out", out, "--no-progress", "--max-retries", "0",
    )  # fmt: skip
    assert rc == 1 and "stopped: 5 items in a row failed at http://127.0.0.1" in err
    assert "connection failed" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_limit_judges_the_first_items(serve, items_file, tmp_path, monkeypatch, capsys) -> None:
    srv = serve(lambda req: Reply(verdict("full_refusal")))
    out = tmp_path / "labels.jsonl"
    rc, stdout, _ = run_cli(
        monkeypatch, capsys, "judge", items_file, "--rubric", "compliance", "--model", "m",
        "--base-url", srv.base_url, "--out", out, "--no-progress", "--limit", "2",
    )  # fmt: skip
    assert rc == 0 and [lab.item_id for lab in read_labels(out)] == ["it-0", "it-1"]
    assert srv.calls == 2


def test_dry_run_prints_the_first_prompt_and_calls_nothing(
    serve, items_file, tmp_path, monkeypatch, capsys
) -> None:
    srv = serve(lambda req: Reply(verdict("full_refusal")))
    out = tmp_path / "labels.jsonl"
    rc, stdout, _ = run_cli(
        monkeypatch, capsys, "judge", items_file, "--rubric", "compliance", "--model", "m",
        "--base-url", srv.base_url, "--out", out, "--dry-run",
    )  # fmt: skip
    assert rc == 0 and srv.calls == 0 and not out.exists()
    assert "5 items would be judged under compliance" in stdout
    assert "question number 0" in stdout and "question number 1" not in stdout
    assert '"enum": [' in stdout and "full_refusal" in stdout


@pytest.mark.parametrize("which", ["items", "replay"], ids=["items", "replay"])
def test_out_may_not_be_an_input(items_file, tmp_path, monkeypatch, capsys, which: str) -> None:
    before = items_file.read_bytes()
    extra = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    if which == "replay":
        extra = ["--replay", str(items_file)]
    rc, _, err = run_cli(
        monkeypatch, capsys, "judge", items_file, "--rubric", "compliance",
        "--out", tmp_path / "." / items_file.name, *extra,
    )  # fmt: skip
    assert rc == 2 and "writing there would replace it" in err
    assert items_file.read_bytes() == before
