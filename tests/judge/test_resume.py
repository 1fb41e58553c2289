"""Kill -9 mid-run, then resume: no finished judgment lost, no finished call repeated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from judge_helpers import single, verdict
from support import tinyjudge_command

from tinyjudge.datasets.jsonl import read_labels, write_jsonl
from tinyjudge.judge._store import Store
from tinyjudge.testing import Reply, Request

N_ITEMS = 40
CONCURRENCY = 4


def _cli(items: Path, out: Path, url: str, summary: Path) -> list[str]:
    return [
        *tinyjudge_command(), "judge", str(items),
        "--rubric", "compliance", "--model", "m", "--base-url", url,
        "--out", str(out), "--concurrency", str(CONCURRENCY), "--no-progress",
        "--summary", str(summary),
    ]  # fmt: skip


def test_kill_9_then_resume(serve, tmp_path: Path) -> None:
    def respond(req: Request) -> Reply:
        n = int((req.item_id or "it-0").split("-")[1])
        return Reply(verdict(["full_compliance", "full_refusal"][n % 2]))

    srv = serve(respond, latency=0.05)
    items = tmp_path / "items.jsonl"
    write_jsonl(items, [single(i) for i in range(N_ITEMS)])
    out, summary = tmp_path / "labels.jsonl", tmp_path / "summary.json"
    cache = Path(str(out) + ".cache.sqlite")
    env = {**os.environ, "OPENAI_API_KEY": "sk-local"}

    proc = subprocess.Popen(_cli(items, out, srv.base_url, summary), env=env)
    deadline = time.monotonic() + 120
    while srv.calls < N_ITEMS // 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL

    # Nothing half-written: no output file, no temporary file next to it.
    assert sorted(
        p.name for p in tmp_path.iterdir() if not p.name.startswith("labels.jsonl.cache")
    ) == ["items.jsonl"]
    time.sleep(0.3)  # let calls that were in flight at the kill reach the server's counter
    before = Counter(srv.calls_by_item)
    with Store(cache) as store:
        finished = store.item_ids()
    assert 0 < len(finished) < N_ITEMS
    # Every finished judgment was a call the server answered.
    assert all(before[i] == 1 for i in finished)

    done = subprocess.run(
        _cli(items, out, srv.base_url, summary), env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    labels = read_labels(out)
    assert [lab.item_id for lab in labels] == [f"it-{i}" for i in range(N_ITEMS)]
    assert all(lab.status == "ok" for lab in labels)
    assert [lab.label for lab in labels] == [
        ["full_compliance", "full_refusal"][i % 2] for i in range(N_ITEMS)
    ]
    after = srv.calls_by_item
    # No finished judgment was asked again; only calls in flight at the kill were repeated.
    assert all(after[i] == 1 for i in finished)
    repeated = [i for i, n in after.items() if n > 1]
    assert all(after[i] == 2 for i in repeated) and len(repeated) <= CONCURRENCY
    assert set(after) == {f"it-{i}" for i in range(N_ITEMS)}
    stats = json.loads(summary.read_text())
    assert stats["cache_hits"] == len(finished) and stats["calls"] == N_ITEMS - len(finished)
