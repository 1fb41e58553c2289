"""The command line as users run it: the installed ``tinyjudge`` script in a subprocess."""

from __future__ import annotations

import csv
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support import is_slice, run_tinyjudge

from tinyjudge.datasets.jsonl import count_lines, read_labels
from tinyjudge.rubric import load_rubric, load_rubric_copy

VERBS = [
    "import", "judge", "distill", "calibrate", "score", "audit", "estimate", "exploit", "serve",
    "demo",
]  # fmt: skip


def run(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None):
    return run_tinyjudge(*args, env=env, cwd=cwd, timeout=120)


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got {lines}"
    assert lines[0].startswith("error: ")
    return lines[0]


def test_help_lists_every_verb() -> None:
    proc = run("--help")
    assert proc.returncode == 0
    for verb in VERBS:
        assert f" {verb} " in proc.stdout, f"{verb} missing from --help"


def _bad_copy(xstest_sample: Path, tmp_path: Path) -> tuple[Path, int]:
    """A copy of the sample whose third gpt4 row lost its last five fields."""
    src = tmp_path / "xstest"
    shutil.copytree(xstest_sample, src)
    path = src / "xstest_v2_completions_gpt4_gpteval.csv"
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    rows[3] = rows[3][:4]
    with path.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(rows)
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        for _ in range(3):
            next(reader)
        line = reader.line_num + 1  # where the fourth physical row (the bad one) starts
    return src, line


def test_import_stops_at_a_bad_row_and_writes_nothing(xstest_sample: Path, tmp_path: Path):
    src, line = _bad_copy(xstest_sample, tmp_path)
    out = tmp_path / "out"
    message = _one_error_line(run("import", "xstest", src, "--out", out))
    assert f"xstest_v2_completions_gpt4_gpteval.csv:{line}: " in message
    assert "expected 9 fields as in the header, found 4" in message
    assert "nothing written" in message and "--skip-bad" in message
    assert not (out / "items.jsonl").exists() and not (out / "labels.jsonl").exists()


def test_a_failed_import_leaves_the_earlier_pair_and_other_files(
    xstest_sample: Path, tmp_path: Path
):
    out = tmp_path / "out"
    assert run("import", "xstest", xstest_sample, "--out", out).returncode == 0
    (out / "judge.jsonl").write_text("a judge's labels\n")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    src, _ = _bad_copy(xstest_sample, tmp_path)
    message = _one_error_line(run("import", "xstest", src, "--out", out))
    assert f"{out} is as it was" in message
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert count_lines(out / "items.jsonl") == 500


def test_an_import_over_an_earlier_one_keeps_the_workspace(xstest_sample: Path, tmp_path: Path):
    out = tmp_path / "out"
    src, _ = _bad_copy(xstest_sample, tmp_path)
    assert run("import", "xstest", xstest_sample, "--out", out).returncode == 0
    (out / "judge.jsonl").write_text("a judge's labels\n")
    assert run("import", "xstest", src, "--out", out, "--skip-bad").returncode == 0
    assert count_lines(out / "items.jsonl") == 499
    assert count_lines(out / "labels.jsonl") == 2495
    assert (out / "judge.jsonl").read_text() == "a judge's labels\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "xstest"], "no staging left"


def test_import_skip_bad_reports_and_continues(xstest_sample: Path, tmp_path: Path):
    src, line = _bad_copy(xstest_sample, tmp_path)
    out = tmp_path / "out"
    proc = run("import", "xstest", src, "--out", out, "--skip-bad")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f"skipped: {src}/xstest_v2_completions_gpt4_gpteval.csv:{line}: "
        "expected 9 fields as in the header, found 4",
        "1 bad records skipped (listed above)",
    ]
    assert "xstest: 499 items, 2495 labels" in proc.stdout
    assert count_lines(out / "items.jsonl") == 499
    assert count_lines(out / "labels.jsonl") == 2495
    rubric = load_rubric("compliance")  # the labels' rubric, stored beside them
    assert load_rubric_copy(out / f"rubric.{rubric.hash}.yaml") == rubric


def test_import_xstest_writes_items_and_labels(data_dir, tmp_path: Path) -> None:
    src = data_dir("xstest")
    # The shared copy: 1,500 answers, 7 of GPT-4's free text; the bundled slice: 500, 5.
    n, unscored = (500, 5) if is_slice(src) else (1500, 7)
    out = tmp_path / "xs"
    proc = run("import", "xstest", src, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert f"xstest: {n} items, {5 * n} labels" in proc.stdout
    assert "judge:gpt-4" in proc.stdout and f"({unscored} unscored)" in proc.stdout
    assert count_lines(out / "items.jsonl") == n
    assert count_lines(out / "labels.jsonl") == 5 * n
    labels = read_labels(out / "labels.jsonl", rubric="compliance")
    assert sum(lab.status == "unscored" for lab in labels) == unscored


def _bad_rubric_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "rubrics"
    folder.mkdir()
    data = yaml.safe_load((Path(__file__).parents[2] / "rubrics" / "compliance.yaml").read_text())
    data["labels"].append(dict(data["labels"][0]))
    (folder / "compliance.yaml").write_text(yaml.safe_dump(data))
    return folder


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["import", "xstest", "/nonexistent", "--out", "{tmp}/x"], "/nonexistent: no such folder"),
        (["import", "nope", "{tmp}", "--out", "{tmp}/x"], "unknown dataset 'nope'; importers"),
        (["import", "xstest", "{tmp}", "--out", "{tmp}/x"], "no xstest_v2_completions_<model>"),
        (["import", "xstest", "{sample}", "--out", "{tmp}/afile"], "afile is a file"),
        (
            ["import", "xstest", "{sample}", "--out", "{tmp}/x", "RUBRICS"],
            "compliance.yaml: field labels: label names are not unique: ['full_compliance']",
        ),
    ],
    ids=["missing-folder", "unknown-dataset", "empty-folder", "out-is-a-file", "bad-rubric"],
)
def test_user_errors_are_one_line(tmp_path: Path, xstest_sample: Path, args, expect) -> None:
    (tmp_path / "afile").write_text("")
    env = {}
    if "RUBRICS" in args:
        args = [a for a in args if a != "RUBRICS"]
        env["TINYJUDGE_RUBRICS"] = str(_bad_rubric_dir(tmp_path))
    args = [a.format(tmp=tmp_path, sample=xstest_sample) for a in args]
    line = _one_error_line(run(*args, env=env))
    assert expect in line, "the message (brackets included) is printed as written"


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["import", "xstest"], "Missing argument"),
        (["import", "xstest", "somewhere", "--out", "x", "--bogus"], "No such option: --bogus"),
        (["no-such-verb"], "No such command"),
        (["serve", "m", "--port", "many"], "Invalid value for '--port'"),
    ],
    ids=["missing-argument", "unknown-option", "unknown-verb", "not-a-number"],
)
def test_usage_errors_are_one_line(args: list[str], expect: str) -> None:
    line = _one_error_line(run(*args))
    assert expect in line and "--help`" in line


def test_a_bare_group_still_shows_its_help() -> None:
    proc = run("import")
    assert proc.returncode == 2 and "Usage:" in proc.stdout + proc.stderr


OVER_AN_INPUT = [
    ("hints", ["hints", "{labels}", "--out", "{labels}"], "--out"),
    ("audit-json", ["audit", "{labels}", "--reference", "human:final", "--json", "{labels}"],
     "--json"),
    ("audit-report-items", ["audit", "{labels}", "--reference", "human:final", "--items",
     "{items}", "--report", "{items}"], "--report"),
    ("estimate-json", ["estimate", "{labels}", "--cheap", "judge:gpt-4", "--human",
     "human:final", "--json", "{labels}"], "--json"),
    ("import-labels", ["import", "labels", "{labels}", "--rubric", "compliance", "--out",
     "{labels}", "--item-field", "item_id", "--label-field", "label"], "--out"),
    ("calibrate-source", ["calibrate", "{labels}", "--source", "judge:gpt-4", "--human",
     "human:final", "--out", "{dir}"], "--out"),
    ("audit-json-is-report", ["audit", "{labels}", "--reference", "human:final", "--report",
     "{dir}/r", "--json", "{dir}/r"], "--json"),
    ("judge-summary-is-out", ["judge", "{items}", "--rubric", "compliance", "--model", "m",
     "--base-url", "http://127.0.0.1:9/v1", "--out", "{dir}/j", "--summary", "{dir}/j"],
     "--summary"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "option"), [o[1:] for o in OVER_AN_INPUT], ids=[o[0] for o in OVER_AN_INPUT]
)
def test_an_output_over_an_input_is_refused(xstest_sample: Path, tmp_path: Path, args, option):
    """``hints L --out L`` replaced 2,500 labels with 0 hints; every verb refuses it now."""
    assert run("import", "xstest", xstest_sample, "--out", tmp_path).returncode == 0
    paths = {"labels": tmp_path / "labels.jsonl", "items": tmp_path / "items.jsonl"}
    before = {p: p.read_bytes() for p in paths.values()}
    args = [a.format(**paths, dir=tmp_path) for a in args]
    line = _one_error_line(run(*args))
    assert f"error: {option} " in line
    assert "writing there would replace it" in line or "give each its own file" in line
    assert {p: p.read_bytes() for p in paths.values()} == before
