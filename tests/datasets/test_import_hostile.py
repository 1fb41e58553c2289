"""Hostile preference rows: sides that answer different prompts, lone surrogates; and the
label a preference row carries by default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import run_tinyjudge

from tinyjudge.datasets.importers import import_chat
from tinyjudge.datasets.jsonl import read_labels
from tinyjudge.errors import DataError

GOOD = {"prompt": "What is 2 + 2?", "chosen": "4.", "rejected": "5.", "id": "good"}


@pytest.mark.parametrize(
    "row",
    [
        {"chosen": "\n\nHuman: Is tea healthy?\n\nAssistant: In moderation, yes.",
         "rejected": "\n\nHuman: How do I pick a lock?\n\nAssistant: Use a tension wrench."},
        {"chosen": "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: name a fruit\n\nAssistant: pear",
         "rejected": "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: name a car\n\nAssistant: saab"},
        {"prompt": [{"role": "user", "content": "Name a prime."}],
         "chosen": [{"role": "user", "content": "Actually, name an even number."},
                    {"role": "assistant", "content": "4"}],
         "rejected": [{"role": "assistant", "content": "8"}]},
        {"chosen": [{"role": "user", "content": "Capital of France?"},
                    {"role": "assistant", "content": "Paris"}],
         "rejected": [{"role": "user", "content": "Capital of Spain?"},
                      {"role": "assistant", "content": "Madrid"}]},
    ],
    ids=["hh-other-question", "hh-differs-later", "trl-side-opens-with-user", "message-lists"],
)  # fmt: skip
def test_two_sides_that_answer_different_prompts_are_refused_by_line(
    tmp_path: Path, row: dict
) -> None:
    path = tmp_path / "prefs.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(DataError, match=r"prefs.jsonl:2: .*answer different prompts"):
        import_chat(path)
    got = import_chat(path, skip_bad=True)
    assert [it.id for it in got.items] == ["good"]
    assert [(e.line, "different prompts" in str(e)) for e in got.bad] == [(2, True)]


def test_the_refused_pairs_are_listed_by_the_command(tmp_path: Path) -> None:
    path = tmp_path / "prefs.jsonl"
    bad = {"chosen": "\n\nHuman: a?\n\nAssistant: b", "rejected": "\n\nHuman: c?\n\nAssistant: d"}
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(bad) + "\n")
    done = run_tinyjudge("import", "chat", path, "--out", tmp_path / "o", "--skip-bad")
    assert done.returncode == 0, done.stderr
    assert "prefs.jsonl:2:" in done.stderr and "answer different prompts" in done.stderr
    assert "1 bad rows skipped" in done.stderr


@pytest.mark.parametrize(
    ("text", "name"),
    [
        (
            '{"chosen": "\\n\\nHuman: hi \\ud800\\n\\nAssistant: yo", "rejected": '
            '"\\n\\nHuman: hi \\ud800\\n\\nAssistant: no"}',
            "rows.jsonl",
        ),
        (
            '[{"prompt": "q", "chosen": "a", "rejected": "b"},\n'
            '{"prompt": "q", "chosen": "a \\udfff", "rejected": "b"}]',
            "rows.json",
        ),
    ],
    ids=["jsonl", "json-array"],
)
def test_a_lone_surrogate_is_one_bad_line_never_a_traceback(
    tmp_path: Path, text: str, name: str
) -> None:
    path = tmp_path / name
    first = json.dumps(GOOD) + "\n" if name.endswith("l") else ""
    path.write_text(first + text + "\n")
    with pytest.raises(DataError, match=rf"{name}:2: a lone surrogate \(\\ud[8f]"):
        import_chat(path)
    done = run_tinyjudge("import", "chat", path, "--out", tmp_path / "o")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{name}:2: a lone surrogate" in done.stderr


def test_preference_rows_are_labelled_with_the_chosen_side_by_default(tmp_path: Path) -> None:
    path = tmp_path / "prefs.jsonl"
    rows = [GOOD, {**GOOD, "id": "two", "chosen": "Four.", "rejected": "Five."}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = run_tinyjudge("import", "chat", path, "--out", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert "labels: 2 (2 human:preference)" in said
    assert "source human:preference, rubric preference" in said
    labels = read_labels(tmp_path / "o" / "labels.jsonl", "preference")
    items = [json.loads(x) for x in (tmp_path / "o" / "items.jsonl").read_text().splitlines()]
    assert [lab.label for lab in labels] == [it["metadata"]["preferred"] for it in items]
    assert {lab.source for lab in labels} == {"human:preference"}
    assert all(lab.probs is None for lab in labels)  # the side chosen: no phantom tie
    assert list((tmp_path / "o").glob("rubric.*.yaml"))  # the rubric's copy beside them
    plain = run_tinyjudge("import", "chat", path, "--out", tmp_path / "p",
                          "--no-preference-labels")  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert not (tmp_path / "p" / "labels.jsonl").exists()
    named = import_chat(path, source="human:raters")
    assert {lab.source for lab in named.labels} == {"human:raters"}
