"""An import never deletes labels it did not write.

With the README's layout, the labelling page writes people's ``human:<name>`` labels into
``runs/x/labels.jsonl``; re-running ``import ... --out runs/x`` rewrites that file. The
labels of other (source, rubric) pairs stay, after the imported ones; ``--replace-labels``
drops them; a line that is not a label is refused in one line rather than lost.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from support import XSTEST_SAMPLE, run_tinyjudge

from tinyjudge.datasets.jsonl import labels_from_other_sources, read_items, read_labels
from tinyjudge.label.store import LabelStore
from tinyjudge.rubric import load_rubric


def _sources(path: Path) -> Counter[str]:
    return Counter(lab.source for lab in read_labels(path))


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    """runs/x from an import, then 30 answers by alice through the labelling page's store."""
    runs = tmp_path / "runs" / "x"
    done = run_tinyjudge("import", "xstest", XSTEST_SAMPLE, "--out", runs)
    assert done.returncode == 0, done.stderr
    store = LabelStore(runs / "labels.jsonl", load_rubric("compliance"))
    store.register("alice")
    for item in read_items(runs / "items.jsonl")[:30]:
        store.assign("alice", item.id)
        store.answer("alice", item.id, "full_refusal", note="looked at it")
    assert _sources(runs / "labels.jsonl")["human:alice"] == 30
    return runs


def test_a_reimport_keeps_the_labelling_pages_labels(labelled: Path) -> None:
    labels = labelled / "labels.jsonl"
    alice = [lab for lab in read_labels(labels) if lab.source == "human:alice"]
    done = run_tinyjudge("import", "xstest", XSTEST_SAMPLE, "--out", labelled)
    assert done.returncode == 0, done.stderr
    assert "kept 30 labels of other sources" in done.stdout and "human:alice 30" in done.stdout
    after = read_labels(labels)
    assert [lab for lab in after if lab.source == "human:alice"] == alice
    counts = Counter(lab.source for lab in after)
    # The import's own labels are replaced, not doubled.
    assert counts["human:final"] == 500 and counts["judge:gpt-4"] == 500
    # The store still agrees with the file: a restart of the page exports the same labels.
    store = LabelStore(labels, load_rubric("compliance"))
    store.export()
    assert _sources(labels) == counts


def test_replace_labels_drops_them(labelled: Path) -> None:
    done = run_tinyjudge("import", "xstest", XSTEST_SAMPLE, "--out", labelled, "--replace-labels")
    assert done.returncode == 0, done.stderr
    assert "dropped (--replace-labels) 30 labels of other sources" in done.stdout
    assert "human:alice" not in _sources(labelled / "labels.jsonl")


def test_a_line_that_is_not_a_label_is_refused_not_lost(labelled: Path) -> None:
    labels = labelled / "labels.jsonl"
    with labels.open("a") as fh:
        fh.write('{"item_id": "x", "source": "human:bob", "rub')  # torn by a full disk
    before = labels.read_bytes()
    done = run_tinyjudge("import", "xstest", XSTEST_SAMPLE, "--out", labelled)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    torn_line = before.count(b"\n") + 1
    assert f"labels.jsonl:{torn_line}: malformed JSON" in line
    assert "--replace-labels" in line
    assert labels.read_bytes() == before
    done = run_tinyjudge("import", "xstest", XSTEST_SAMPLE, "--out", labelled, "--replace-labels")
    assert done.returncode == 0, done.stderr
    assert "human:alice" not in _sources(labels)


def test_import_chat_keeps_other_sources(tmp_path: Path) -> None:
    chats = tmp_path / "chats.jsonl"
    turns = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "no"}]
    rows = [{"id": f"c{i}", "messages": turns, "verdict": "full_refusal"} for i in range(5)]
    chats.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "runs"
    args = ["import", "chat", chats, "--out", out, "--label-field", "verdict",
            "--rubric", "compliance", "--source", "human:final"]  # fmt: skip
    assert run_tinyjudge(*args).returncode == 0
    store = LabelStore(out / "labels.jsonl", load_rubric("compliance"))
    store.register("carol")
    store.assign("carol", "c1")
    store.answer("carol", "c1", "full_compliance")
    done = run_tinyjudge(*args)
    assert done.returncode == 0, done.stderr
    assert _sources(out / "labels.jsonl") == {"human:final": 5, "human:carol": 1}


def test_import_labels_keeps_other_sources(tmp_path: Path) -> None:
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("item,label\na,full_refusal\nb,full_compliance\n")
    out = tmp_path / "labels.jsonl"
    args = ["import", "labels", sheet, "--rubric", "compliance", "--out", out,
            "--item-field", "item", "--label-field", "label"]  # fmt: skip
    assert run_tinyjudge(*args).returncode == 0
    store = LabelStore(out, load_rubric("compliance"))
    store.register("dave")
    store.assign("dave", "a")
    store.answer("dave", "a", "full_compliance")
    done = run_tinyjudge(*args)
    assert done.returncode == 0, done.stderr
    assert _sources(out)["human:dave"] == 1


def test_the_same_source_under_another_rubric_is_not_the_imports(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    mine = {"item_id": "a", "rubric": "compliance", "source": "human:final",
            "label": "full_refusal", "probs": {"full_refusal": 1.0}}  # fmt: skip
    theirs = {**mine, "rubric": "other_rubric", "label": "yes", "probs": {"yes": 1.0}}
    labels.write_text(json.dumps(mine) + "\n" + json.dumps(theirs) + "\n")
    written = read_labels(labels)[:1]
    assert [lab.rubric for lab in labels_from_other_sources(labels, written)] == ["other_rubric"]
    assert labels_from_other_sources(tmp_path / "none.jsonl", written) == []
