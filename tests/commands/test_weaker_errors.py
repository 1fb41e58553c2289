"""The weaker errors, each one line naming the file and the fix: files swapped, labels of
items not given."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import XSTEST_SAMPLE, run_tinyjudge


@pytest.fixture(scope="module")
def xs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("xs")
    done = run_tinyjudge("import", "xstest", XSTEST_SAMPLE, "--out", d)
    assert done.returncode == 0, done.stderr
    return d


def test_items_and_labels_swapped_get_a_hint(xs: Path, tmp_path: Path) -> None:
    args = ["--source", "judge:gpt-4", "--rubric", "compliance", "--out", tmp_path / "rm"]
    swapped = run_tinyjudge("distill", xs / "labels.jsonl", xs / "items.jsonl", *args)
    assert swapped.returncode != 0
    line = " ".join(swapped.stderr.split())
    assert f"{xs / 'labels.jsonl'}:1:" in line
    assert "is this the labels file given where the items file goes?" in line
    assert len(swapped.stderr.strip().splitlines()) == 1 or "Traceback" not in swapped.stderr
    score = run_tinyjudge("estimate", xs / "items.jsonl", "--cheap", "a", "--human", "b")
    assert score.returncode != 0
    assert "is this the items file given where a labels file goes?" in " ".join(
        score.stderr.split()
    )


def test_labels_of_items_not_given_are_counted_and_said(xs: Path, tmp_path: Path) -> None:
    rows = (xs / "items.jsonl").read_text().splitlines()[:80]
    (tmp_path / "items.jsonl").write_text("\n".join(rows) + "\n")
    done = run_tinyjudge(
        "distill", tmp_path / "items.jsonl", xs / "labels.jsonl", "--source", "judge:gpt-4",
        "--rubric", "compliance", "--out", tmp_path / "rm", "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    n_labels = sum(1 for line in (xs / "labels.jsonl").read_text().splitlines()
                   if '"judge:gpt-4"' in line and '"ok"' in line)  # fmt: skip
    assert f"note: {n_labels - 80} judge:gpt-4 labels name items not in" in said
