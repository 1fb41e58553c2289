"""Hostile input to the cascade: labels the rubric lacks, repeated ids, a judge that drips."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest
from cascade_split import Split

from tinyjudge.cli import main
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.testing import Fault, LocalServer, Reply, replay_server


def _cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: object):
    monkeypatch.setattr(sys, "argv", ["tinyjudge", *map(str, args)])
    with pytest.raises(SystemExit) as e:
        main()
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _written(split: Split, tmp_path: Path) -> tuple[Path, Path, Path]:
    model_dir = split.model.save(tmp_path / "rm")
    items, calib = tmp_path / "items.jsonl", tmp_path / "calibration.jsonl"
    write_jsonl(items, split.items)
    write_jsonl(calib, split.calibration)
    return model_dir, items, calib


def _args(model_dir: Path, items: Path, calib: Path, out: Path) -> list[object]:
    return ["cascade", model_dir, items, "--calibration", calib, "--reference", "judge:gpt-4",
            "--target", "0.9", "--out", out]  # fmt: skip


def test_a_calibration_label_the_rubric_lacks_is_refused_by_file_and_line(
    split: Split, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    model_dir, items, calib = _written(split, tmp_path)
    lines = calib.read_text().splitlines()
    bad = json.loads(lines[6])
    bad["label"] = "ful_compliance"
    bad.pop("probs", None)
    lines[6] = json.dumps(bad)
    calib.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    rc, _, err = _cli(monkeypatch, capsys, *_args(model_dir, items, calib, out))
    assert rc == 2
    line = " ".join(err.split())
    assert 'calibration.jsonl:7: label "ful_compliance" is not one of' in line
    assert "full_compliance" in line and "of rubric compliance" in line
    assert not out.exists()  # refused before anything was written


def test_labels_of_another_rubric_in_the_calibration_file_are_left_alone(
    split: Split, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    model_dir, items, calib = _written(split, tmp_path)
    other = split.calibration[0].model_copy(update={"rubric": "other", "label": "anything"})
    with calib.open("a") as fh:
        fh.write(other.model_dump_json() + "\n")
    rc, _, err = _cli(monkeypatch, capsys, *_args(model_dir, items, calib, tmp_path / "out"))
    assert rc == 0, err


def test_a_repeated_item_id_is_refused_by_file_and_line(
    split: Split, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    model_dir, items, calib = _written(split, tmp_path)
    first = split.items[2]
    answer = first.messages[-1].model_copy(update={"content": "another answer"})
    twin = first.model_copy(update={"messages": [*first.messages[:-1], answer]})
    with items.open("a") as fh:
        fh.write(twin.model_dump_json() + "\n")
    n = len(split.items) + 1
    rc, _, err = _cli(monkeypatch, capsys, *_args(model_dir, items, calib, tmp_path / "out"))
    assert rc == 2
    assert f"items.jsonl:{n}: item id {first.id!r} appears twice (items 3 and {n})" in " ".join(
        err.split()
    )


def test_a_judge_that_drips_is_given_up_on_in_one_line_and_the_run_resumes(
    split: Split, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    model_dir, items, calib = _written(split, tmp_path)
    out = tmp_path / "out"

    def slow(_request: object) -> Fault:
        return Fault("slow", delay=3.0, then=Reply('{"label": "full_compliance"}'))

    start = time.monotonic()
    with LocalServer(slow) as url:
        rc, _, err = _cli(monkeypatch, capsys, *_args(model_dir, items, calib, out),
                          "--judge-model", "drip", "--judge-base-url", url,
                          "--judge-timeout", "0.3", "--judge-max-retries", "0",
                          "--judge-stop-after", "4")  # fmt: skip
    took = time.monotonic() - start
    assert rc == 1 and took < 30
    message = [line for line in err.splitlines() if line.strip()]
    assert len(message) == 1 and "drip" in message[0], err
    # the same command against an endpoint that answers finishes: nothing was half-written
    gpt4 = [lab for lab in split.labels if lab.source == "judge:gpt-4"]
    report = [it for it in split.items if it.id in split.report_ids]
    with replay_server(gpt4, "judge:gpt-4", items=report, rubric="compliance") as srv:
        rc, _, err = _cli(monkeypatch, capsys, *_args(model_dir, items, calib, out),
                          "--judge-model", "replay-gpt-4", "--judge-base-url", srv.base_url,
                          "--judge-timeout", "30", "--judge-max-retries", "1")  # fmt: skip
    assert rc == 0, err
    assert (out / "labels.jsonl").is_file()


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--judge-timeout", "-1"], r"--judge-timeout must be"),
        (["--judge-max-retries", "-2"], r"--judge-max-retries must be"),
        (["--judge-base-url", "http://127.0.0.1:9/v1"], r"--judge-model is required"),
    ],
    ids=["negative-timeout", "negative-retries", "url-without-model"],
)
def test_the_judge_flags_are_checked_and_named_as_given(
    split: Split, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, flags, match
) -> None:
    model_dir, items, calib = _written(split, tmp_path)
    rc, _, err = _cli(monkeypatch, capsys, *_args(model_dir, items, calib, tmp_path / "o"), *flags)
    assert rc == 2

    assert re.search(match, " ".join(err.split())), err
