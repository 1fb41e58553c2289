"""``tinyjudge hints LABELS --out hints.jsonl``: hints kept with the step they target."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support import run_tinyjudge

from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.hints import export_hints
from tinyjudge.hints._export import hint_records
from tinyjudge.records import Hint, Label

J = "judge:test"

LABELS = [
    # the hint names its own step
    Label(item_id="r1", rubric="failure_step", source=J, label="Coder", step=4,
          hint=Hint(step=4, text="Load the real table instead of simulating it.")),
    # the hint has no step: it targets the step the verdict points at
    Label(item_id="r2", rubric="failure_step", source=J, label="Planner", step=1,
          hint=Hint(text="Keep the user's date constraint in the plan.")),
    # no hint, a blank hint, an unscored label: nothing to export
    Label(item_id="r3", rubric="failure_step", source=J, label="Coder", step=2),
    Label(item_id="r4", rubric="failure_step", source=J, label="Coder", step=2,
          hint=Hint(step=2, text="   ")),
    Label(item_id="r5", rubric="failure_step", source=J, status="unscored", raw="step: 40",
          reason="r5: step 40 is outside the trajectory (0..9)"),
    # another source and rubric
    Label(item_id="t1", rubric="tool_error_recovery", source="judge:other", label="repeats",
          step=21, hint=Hint(step=21, text="Recompute the split from the error's total.")),
]  # fmt: skip

EXPECTED = [
    {"item_id": "r1", "step": 4, "hint": "Load the real table instead of simulating it.",
     "source": J, "rubric": "failure_step"},
    {"item_id": "r2", "step": 1, "hint": "Keep the user's date constraint in the plan.",
     "source": J, "rubric": "failure_step"},
    {"item_id": "t1", "step": 21, "hint": "Recompute the split from the error's total.",
     "source": "judge:other", "rubric": "tool_error_recovery"},
]  # fmt: skip


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_tinyjudge(*args, timeout=120)


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_hint_records_keep_each_hint_with_its_step() -> None:
    assert list(hint_records(LABELS)) == EXPECTED


def test_cli_exports_hints(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    write_jsonl(labels, LABELS)
    out = tmp_path / "deep" / "hints.jsonl"
    done = _cli("hints", str(labels), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert _read(out) == EXPECTED
    assert "3 hints from 6 labels" in done.stdout
    assert "(2 without a hint, 1 unscored)" in done.stdout


@pytest.mark.parametrize(
    ("flags", "ids"),
    [
        (["--source", J], ["r1", "r2"]),
        (["--rubric", "tool_error_recovery"], ["t1"]),
        (["--source", "judge:nobody"], []),
    ],
    ids=["by-source", "by-rubric", "no-match"],
)
def test_cli_filters(tmp_path: Path, flags: list[str], ids: list[str]) -> None:
    labels = tmp_path / "labels.jsonl"
    write_jsonl(labels, LABELS)
    out = tmp_path / "hints.jsonl"
    done = _cli("hints", str(labels), "--out", str(out), *flags)
    assert done.returncode == 0, done.stderr
    assert [r["item_id"] for r in _read(out)] == ids


def test_bad_line_fails_in_one_line_and_leaves_the_old_file(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    write_jsonl(labels, LABELS[:2])
    with labels.open("a", encoding="utf-8") as fh:
        fh.write('{"item_id": "r9", "rubric": "failure_step"}\n')
    out = tmp_path / "hints.jsonl"
    out.write_text("previous export\n", encoding="utf-8")
    done = _cli("hints", str(labels), "--out", str(out))
    assert done.returncode == 2
    assert "labels.jsonl:3:" in done.stderr and 'missing field "source"' in done.stderr
    assert "Traceback" not in done.stderr
    # atomic: the failed export did not touch the earlier file or leave a temp file
    assert out.read_text(encoding="utf-8") == "previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hints.jsonl", "labels.jsonl"]

    kept = export_hints(labels, out, skip_bad=True)
    assert (kept.written, kept.labels, len(kept.bad)) == (2, 2, 1)
    assert [r["item_id"] for r in _read(out)] == ["r1", "r2"]


def test_missing_labels_file_is_one_line(tmp_path: Path) -> None:
    done = _cli("hints", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "h.jsonl"))
    assert done.returncode == 2
    assert "nope.jsonl: no such file" in done.stderr
    assert not (tmp_path / "h.jsonl").exists()
