"""The XSTest importer on the real data, on the bundled sample, and on broken copies."""

from __future__ import annotations

import csv
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from support import is_slice

from tinyjudge.datasets.importers import ImportStopped, import_xstest, run_import
from tinyjudge.datasets.importers._common import Imported
from tinyjudge.errors import DataError, TinyjudgeError
from tinyjudge.records import Item
from tinyjudge.rubric import load_rubric

MODELS = ["gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct"]
SOURCES = [
    "classifier:string-match",
    "human:annotator_1",
    "human:annotator_2",
    "human:final",
    "judge:gpt-4",
]


def _csv_rows(folder: Path, pattern: str) -> list[dict[str, str]]:
    rows = []
    for path in sorted(folder.glob(pattern)):
        with path.open(encoding="utf-8", newline="") as fh:
            rows += [{**r, "_file": path.name} for r in csv.DictReader(fh)]
    return rows


# The shared copy (300 prompts x 5 models) and the bundled slice (100 prompts, see
# tests/fixtures/data/xstest/SOURCE.md): prompts, free-text GPT-4 answers, final labels.
FIGURES = {
    "shared": (300, 7, {"full_compliance": 722, "full_refusal": 661, "partial_refusal": 117}),
    "slice": (100, 5, {"full_compliance": 247, "full_refusal": 209, "partial_refusal": 44}),
}


def test_xstest_against_the_csvs(data_dir) -> None:
    src = data_dir("xstest")
    prompts, n_free_text, finals = FIGURES["slice" if is_slice(src) else "shared"]
    n = prompts * len(MODELS)
    result = run_import("xstest", src)
    assert len(result.items) == n
    assert len(result.labels) == n * 5
    assert result.bad == []
    assert result.sources() == dict.fromkeys(SOURCES, n)
    per_model = Counter(i.metadata["answering_model"] for i in result.items)
    assert per_model == dict.fromkeys(MODELS, prompts)
    per_item = Counter(lab.item_id for lab in result.labels)
    assert set(per_item.values()) == {5}, "every item has exactly five sources"
    assert len({i.id for i in result.items}) == n, "ids are unique"

    # GPT-4's free-text answers, counted straight from the CSVs.
    gpt = _csv_rows(src, "xstest_v2_completions_*_gpteval.csv")
    pattern = re.compile(r"[123]_(full_compliance|full_refusal|partial_refusal)")
    free_text = [r["gpt4_label"] for r in gpt if not pattern.fullmatch(r["gpt4_label"].strip())]
    assert len(free_text) == n_free_text  # the release's 450 prompts have about 11
    unscored = [lab for lab in result.labels if lab.status == "unscored"]
    assert all(lab.source == "judge:gpt-4" for lab in unscored)
    assert sorted(lab.raw for lab in unscored) == sorted(free_text), "raw text kept verbatim"
    assert all(lab.label is None and lab.reason for lab in unscored)

    # Each human label equals the CSV's, with the 1_/2_/3_ prefix dropped.
    final = {f"xstest:{r['_file'].split('_')[3]}:{r['id']}": r["final_label"][2:] for r in gpt}
    mine = {lab.item_id: lab.label for lab in result.labels if lab.source == "human:final"}
    assert mine == final
    assert Counter(final.values()) == finals


def test_item_shape_and_ids(data_dir) -> None:
    src = data_dir("xstest")
    result = import_xstest(src, rubric_hash="h")
    by_id = {i.id: i for i in result.items}
    first = "v2-2" if is_slice(src) else "v2-1"  # the slice starts at the second prompt
    item = by_id[f"xstest:gpt4:{first}"]
    assert [m.role for m in item.messages] == ["user", "assistant"]
    assert item.metadata["prompt_id"] == first
    assert item.metadata["answering_model"] == "gpt4"
    assert item.metadata["type"]
    with (src / "xstest_v2_completions_gpt4_gpteval.csv").open(encoding="utf-8", newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == first)
    assert item.messages[0].content == row["prompt"]
    assert item.messages[1].content == row["completion"]
    assert item.metadata["type"] == row["type"]
    labels = [lab for lab in result.labels if lab.item_id == f"xstest:gpt4:{first}"]
    assert {lab.rubric for lab in labels} == {"compliance"}
    assert {lab.rubric_hash for lab in labels} == {"h"}
    ok = [lab for lab in labels if lab.status == "ok"]
    assert all(lab.probs == {lab.label: 1.0} for lab in ok)


def test_labels_fit_the_compliance_rubric(data_dir) -> None:
    rubric = load_rubric("compliance")
    result = run_import("xstest", data_dir("xstest"))
    assert {lab.rubric_hash for lab in result.labels} == {rubric.hash}
    assert [p for lab in result.labels if (p := rubric.label_problem(lab))] == []


def test_bundled_sample(xstest_sample: Path) -> None:
    result = run_import("xstest", xstest_sample)
    assert len(result.items) == 500
    assert result.sources() == dict.fromkeys(SOURCES, 500)
    assert Counter(i.metadata["answering_model"] for i in result.items) == dict.fromkeys(
        MODELS, 100
    )
    gpt = _csv_rows(xstest_sample, "*_gpteval.csv")
    assert len(gpt) == 500
    expected_unscored = sum(not r["gpt4_label"].startswith(("1_", "2_", "3_")) for r in gpt)
    assert sum(lab.status == "unscored" for lab in result.labels) == expected_unscored


@pytest.fixture
def copy(xstest_sample: Path, tmp_path: Path) -> Path:
    """A writable copy of the sample, laid out like the original release."""
    dst = tmp_path / "xstest"
    shutil.copytree(xstest_sample, dst)
    return dst


def _rewrite(path: Path, edit) -> None:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    edit(rows)
    with path.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(rows)


def _line_of_row(path: Path, index: int) -> int:
    """The line where data row ``index`` (0-based) starts, found by the csv reader."""
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        line = reader.line_num + 1
        for i, _ in enumerate(reader):
            if i == index:
                return line
            line = reader.line_num + 1
    raise AssertionError("no such row")


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda rows: rows[3].__delitem__(slice(4, None)),
            "expected 9 fields as in the header, found 4",
        ),
        (lambda rows: rows[3].append("extra"), "expected 9 fields as in the header, found 10"),
        (lambda rows: rows[3].__setitem__(0, ""), 'empty "id" or "prompt"'),
        (lambda rows: rows[3].__setitem__(0, rows[1][0]), "duplicate id 'v2-1'"),
    ],
    ids=["short-row", "long-row", "empty-id", "duplicate-id"],
)
def test_bad_row_stops_and_keeps_what_came_before(copy: Path, edit, match: str) -> None:
    path = copy / "xstest_v2_completions_gpt4_gpteval.csv"
    _rewrite(path, edit)
    line = _line_of_row(path, 2)
    with pytest.raises(ImportStopped, match=re.escape(f"gpt4_gpteval.csv:{line}: {match}")) as info:
        run_import("xstest", copy)
    assert info.value.line == line
    kept = info.value.kept
    # gpt4 sorts first, so exactly the two rows before the bad one are kept.
    first_two = [r["id"] for r in _csv_rows(copy, "*_gpt4_gpteval.csv")[:2]]
    assert [i.id for i in kept.items] == [f"xstest:gpt4:{i}" for i in first_two]
    assert len(kept.labels) == 10

    skipped = run_import("xstest", copy, skip_bad=True)
    assert len(skipped.items) == 499 and len(skipped.labels) == 499 * 5
    assert [str(e) for e in skipped.bad] == [str(info.value)]


def test_importer_raises_without_skip_bad(copy: Path) -> None:
    _rewrite(copy / "xstest_v2_completions_gpt4_streval.csv", lambda rows: rows[5].pop())
    with pytest.raises(DataError, match=r"gpt4_streval\.csv:\d+: expected 9 fields"):
        import_xstest(copy)
    assert len(import_xstest(copy, skip_bad=True).bad) == 1


def test_missing_column_is_a_file_error(copy: Path) -> None:
    _rewrite(
        copy / "xstest_v2_completions_llama2new_gpteval.csv",
        lambda rows: rows[0].__setitem__(8, "gpt_label"),
    )
    with pytest.raises(
        DataError, match=r"llama2new_gpteval\.csv:1: missing columns \['gpt4_label'\]"
    ):
        run_import("xstest", copy, skip_bad=True)


def test_string_match_file_is_optional(copy: Path) -> None:
    (copy / "xstest_v2_completions_mistralguard_streval.csv").unlink()
    result = run_import("xstest", copy)
    assert result.sources()["classifier:string-match"] == 400
    assert result.sources()["human:final"] == 500


@pytest.mark.parametrize(
    ("name", "folder", "match"),
    [
        ("xstest", "empty", "no xstest_v2_completions_<model>_gpteval.csv files"),
        ("xstest", "nowhere", "nowhere: no such folder"),
        ("xstest", "file.txt", r"file\.txt: not a folder"),
        ("nope", "empty", r"unknown dataset 'nope'; importers exist for \[.*'xstest'"),
    ],
    ids=["no-files", "missing-folder", "file-not-folder", "unknown-dataset"],
)
def test_bad_source(tmp_path: Path, name: str, folder: str, match: str) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(TinyjudgeError, match=match):
        run_import(name, tmp_path / folder)


def test_before_first_bad_however_bad_records_are_added() -> None:
    item = Item(id="x", messages=[{"role": "user", "content": "q"}])
    out = Imported()
    out.items.append(item)
    out.bad.extend([DataError("f.csv", 2, "bad")])
    out.items.append(item)
    out.bad += [DataError("f.csv", 3, "bad")]
    assert len(out.before_first_bad().items) == 1
    assert out.bad.marks == [(1, 0), (2, 0)]
    out.bad = [DataError("f.csv", 4, "replaced by a plain list")]
    assert len(out.before_first_bad().items) == 2, "no marks: keep everything read"


def test_imported_marks_survive_construction() -> None:
    err = DataError("f.csv", 3, "bad")
    done = Imported(items=[], labels=[], bad=[err])
    assert done.bad == [err]
    assert done.before_first_bad().items == []


def test_a_row_that_is_not_utf8_is_one_bad_record(copy: Path) -> None:
    path = copy / "xstest_v2_completions_gpt4_gpteval.csv"
    _rewrite(path, lambda rows: rows[3].__setitem__(4, "MARK"))
    line = _line_of_row(path, 2)
    # A Latin-1 byte where UTF-8 was expected (a file saved by a spreadsheet, say).
    path.write_bytes(path.read_bytes().replace(b"MARK", b"caf\xe9"))
    match = rf"gpt4_gpteval\.csv:{line}: not UTF-8 text \(byte 0xe9\)"
    with pytest.raises(ImportStopped, match=match) as info:
        run_import("xstest", copy)
    assert len(info.value.kept.items) == 2
    skipped = run_import("xstest", copy, skip_bad=True)
    assert len(skipped.items) == 499 and [e.line for e in skipped.bad] == [line]
