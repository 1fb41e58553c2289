"""No command deletes labels it did not write, and no two writers lose each other's update
(issue 33): ``judge --out`` and ``score --out`` onto a file of people's labels keep them;
every read-modify-write of a labels file holds its lock (``import labels``, the labelling
page's store), tested with real concurrent processes."""

from __future__ import annotations

import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from support import XSTEST_SAMPLE, run_tinyjudge, tinyjudge_command

from tinyjudge._atomic import exclusive_lock
from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import read_labels, write_jsonl, write_labels
from tinyjudge.distill import LinearRM, training_set
from tinyjudge.errors import UsageError
from tinyjudge.label import LabelStore
from tinyjudge.records import Label
from tinyjudge.rubric import load_rubric

PEOPLE = [
    Label(item_id=f"p{i}", rubric="compliance", source="human:alice", label="full_refusal")
    for i in range(4)
]


@pytest.fixture(scope="module")
def xs_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The bundled XSTest sample: items.jsonl and its recorded labels (GPT-4, people)."""
    d = tmp_path_factory.mktemp("xs")
    got = run_import("xstest", XSTEST_SAMPLE)
    write_jsonl(d / "items.jsonl", got.items[:20])
    write_jsonl(d / "recorded.jsonl", got.labels)
    return d / "items.jsonl", d / "recorded.jsonl"


def _sources(path: Path) -> Counter[str]:
    return Counter(lab.source for lab in read_labels(path))


def test_judge_out_keeps_peoples_labels(xs_files: tuple[Path, Path], tmp_path: Path) -> None:
    items, recorded = xs_files
    out = tmp_path / "labels.jsonl"
    write_jsonl(out, PEOPLE)
    args = ["judge", items, "--rubric", "compliance", "--replay", recorded, "--out", out,
            "--no-progress", "--no-cache"]  # fmt: skip
    done = run_tinyjudge(*args)
    assert done.returncode == 0, done.stderr
    assert _sources(out) == {"human:alice": 4, "judge:replay-gpt-4": 20}
    assert "kept 4 labels of other sources" in done.stdout and "human:alice 4" in done.stdout
    # judging again replaces its own labels only
    assert run_tinyjudge(*args).returncode == 0
    assert _sources(out) == {"human:alice": 4, "judge:replay-gpt-4": 20}
    done = run_tinyjudge(*args, "--replace-labels")
    assert done.returncode == 0, done.stderr
    assert "dropped (--replace-labels) 4 labels" in done.stdout
    assert _sources(out) == {"judge:replay-gpt-4": 20}


def test_judge_refuses_an_out_file_it_cannot_keep_before_any_call(
    xs_files: tuple[Path, Path], tmp_path: Path
) -> None:
    items, recorded = xs_files
    out = tmp_path / "labels.jsonl"
    write_jsonl(out, PEOPLE)
    with out.open("a") as fh:
        fh.write('{"item_id": "p9", "source": "human:bob", "rub')  # torn
    before = out.read_bytes()
    done = run_tinyjudge("judge", items, "--rubric", "compliance", "--replay", recorded,
                         "--out", out, "--no-progress")  # fmt: skip
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "labels.jsonl:5: malformed JSON" in line and "--replace-labels" in line
    assert out.read_bytes() == before
    assert not out.with_name("labels.jsonl.cache.sqlite").exists()  # nothing was judged


def test_score_out_keeps_peoples_labels(xs_files: tuple[Path, Path], tmp_path: Path) -> None:
    items, recorded = xs_files
    got = run_import("xstest", XSTEST_SAMPLE)
    data = training_set(got.items, got.labels, "judge:gpt-4", "compliance")
    model_dir = LinearRM("compliance", name="lin").fit(data.items, data.y_hard).save(tmp_path / "m")
    out = tmp_path / "labels.jsonl"
    write_jsonl(out, PEOPLE)
    done = run_tinyjudge("score", model_dir, items, "--out", out)
    assert done.returncode == 0, done.stderr
    assert _sources(out) == {"human:alice": 4, "rm:lin": 20}
    assert "kept 4 labels of other sources" in done.stdout


def test_write_labels_refuses_a_line_it_cannot_keep(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    out.write_text("not json\n")
    with pytest.raises(UsageError, match=r"labels\.jsonl:1: malformed JSON.*replace_labels"):
        write_labels(out, PEOPLE)
    assert out.read_text() == "not json\n"
    assert write_labels(out, PEOPLE, replace_labels=True).written == 4


def _sheet(path: Path, rater: str, n: int) -> Path:
    rows = [f"x{i},{rater},full_refusal" for i in range(n)]
    path.write_text("item,rater,label\n" + "\n".join(rows) + "\n")
    return path


def _import_labels(sheet: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*tinyjudge_command(), "import", "labels", str(sheet), "--rubric", "compliance",
         "--out", str(out), "--item-field", "item", "--label-field", "label",
         "--rater-field", "rater"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_import_labels_waits_for_the_files_lock(tmp_path: Path) -> None:
    """A writer holding the lock is never overwritten: the import reads after it is done."""
    out = tmp_path / "labels.jsonl"
    write_jsonl(out, PEOPLE)
    sheet = _sheet(tmp_path / "bob.csv", "bob", 50)
    with exclusive_lock(out):
        proc = _import_labels(sheet, out)
        time.sleep(4.0)  # the import has started and reached the lock
        assert proc.poll() is None and _sources(out) == {"human:alice": 4}
        # another writer's update, made while it holds the lock
        write_jsonl(out, [*PEOPLE, PEOPLE[0].model_copy(update={"source": "human:carol"})])
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert _sources(out) == {"human:alice": 4, "human:carol": 1, "human:bob": 50,
                             "human:final": 50}  # fmt: skip


def test_two_imports_at_once_lose_no_raters_labels(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    sheets = {r: _sheet(tmp_path / f"{r}.csv", r, 500) for r in ("ann", "ben", "cal")}
    # each import owns its rater's source and human:final: the last one's final stands
    procs = [_import_labels(sheet, out) for sheet in sheets.values()]
    for proc in procs:
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
    counts = _sources(out)
    assert {r: counts[f"human:{r}"] for r in sheets} == {"ann": 500, "ben": 500, "cal": 500}


def test_the_labelling_page_waits_for_an_import_in_progress(tmp_path: Path) -> None:
    out = tmp_path / "labels.jsonl"
    write_jsonl(out, PEOPLE)
    store = LabelStore(out, load_rubric("compliance"))
    store.assign("dee", "i1", "sequential")
    done = threading.Event()

    def answer() -> None:
        store.answer("dee", "i1", "full_compliance")
        done.set()

    with exclusive_lock(out):  # as `import labels` holds it from its read to its rename
        worker = threading.Thread(target=answer)
        worker.start()
        assert not done.wait(1.0)  # the answer waits: it would be appended to a file
        write_jsonl(out, PEOPLE[:2])  # about to be replaced
    worker.join(30)
    assert done.is_set()
    assert _sources(out) == {"human:alice": 2, "human:dee": 1}
