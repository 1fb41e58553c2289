"""Numbers that are not numbers are refused where they are taken in (issue 33): finite, in
range, the range in the one-line message; before any item is read or any model loads."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from support import XSTEST_SAMPLE, make_label, run_tinyjudge

from tinyjudge._numbers import check_number
from tinyjudge.calibrate import calibrate_source
from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.distill import make_model
from tinyjudge.errors import UsageError
from tinyjudge.label.select import cheap_scores
from tinyjudge.records import Label
from tinyjudge.rubric import load_rubric


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("xs")
    got = run_import("xstest", XSTEST_SAMPLE)
    write_jsonl(d / "items.jsonl", got.items[:5])
    write_jsonl(d / "labels.jsonl", got.labels)
    return d


JUDGE = ["judge", "{d}/items.jsonl", "--rubric", "compliance", "--replay", "{d}/labels.jsonl",
         "--out", "{d}/out.jsonl", "--no-progress"]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["serve", "{d}/nomodel", "--max-body-mb", "nan"],
         r"--max-body-mb must be a finite number in \(0, 4096\] MiB, got nan"),
        (["serve", "{d}/nomodel", "--max-body-mb", "inf"], r"--max-body-mb must be a finite"),
        (["serve", "{d}/nomodel", "--max-wait-ms", "-1"], r"--max-wait-ms must be >= 0"),
        ([*JUDGE, "--max-reply-mb", "inf"], r"--max-reply-mb must be a finite number in \(0, 1024"),
        ([*JUDGE, "--temperature", "nan"], r"--temperature must be a finite number in \[0, 2\]"),
        ([*JUDGE, "--temperature", "3"], r"--temperature must be <= 2, got 3.0; allowed: \[0, 2\]"),
        ([*JUDGE, "--price-in", "nan"], r"--price-in must be a finite number in \[0, 100000\]"),
        ([*JUDGE, "--price-in", "-1"], r"--price-in must be >= 0, got -1.0"),
        ([*JUDGE, "--price-out", "inf"], r"--price-out must be a finite number"),
        ([*JUDGE, "--max-tokens", "-5"], r"--max-tokens must be >= 1, got -5"),
        ([*JUDGE, "--timeout", "nan"], r"--timeout must be a finite number in \(0, 86400\]"),
        (["audit", "{d}/labels.jsonl", "--reference", "human:final", "--n-boot", "1000000000",
          "--json", "{d}/a.json"],
         r"--n-boot must be <= 100000, got 1000000000; allowed: \[1, 100000\]"),
        (["distill", "{d}/items.jsonl", "{d}/labels.jsonl", "--rubric", "compliance",
          "--source", "judge:gpt-4", "--tier", "linear", "--out", "{d}/m", "--param", "C=-1"],
         r"--c must be > 0, got -1.0; allowed: \(0, 1e\+09\]"),  # a float, as C is
        (["distill", "{d}/items.jsonl", "{d}/labels.jsonl", "--rubric", "compliance",
          "--source", "judge:gpt-4", "--tier", "linear", "--out", "{d}/m", "--param", "C=nan"],
         r"--c must be a finite number"),
        (["distill", "{d}/items.jsonl", "{d}/labels.jsonl", "--rubric", "compliance",
          "--source", "judge:gpt-4", "--tier", "linear", "--out", "{d}/m", "--c", "-1"],
         r"--c must be > 0, got -1"),
    ],
    ids=["body-nan", "body-inf", "wait-negative", "reply-inf", "temperature-nan",
         "temperature-3", "price-nan", "price-negative", "price-out-inf", "max-tokens-negative",
         "timeout-nan", "n-boot-1e9", "param-C-negative", "param-C-nan", "flag-C-negative"],
)  # fmt: skip
def test_bad_numbers_are_one_line_before_any_work(files: Path, args: list[str], match: str) -> None:
    done = run_tinyjudge(*(a.format(d=files) for a in args))
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    import re

    assert re.search(match, line), line
    assert not (files / "out.jsonl").exists() and not (files / "m").exists()


def test_a_refused_open_serve_loads_nothing(files: Path) -> None:
    """``serve --host 0.0.0.0`` without a token is refused before the model (or torch,
    scikit-learn) is loaded: the model directory given does not even exist."""
    code = (
        "import sys\n"
        "from tinyjudge.cli import main\n"
        f"sys.argv = ['tinyjudge', 'serve', {str(files / 'nomodel')!r}, '--host', '0.0.0.0']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "heavy = sorted(m for m in ('torch', 'sklearn', 'transformers') if m in sys.modules)\n"
        "print(code, heavy)\n"
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "2 []", done.stdout + done.stderr
    assert "lets other machines reach the reward model" in done.stderr


@pytest.mark.parametrize(
    ("value", "ok"),
    [(0.5, True), (2, True), (float("nan"), False), (float("inf"), False), (-0.1, False),
     (2.5, False), (True, False), ("1", False), (10**400, False)],
    ids=["half", "two", "nan", "inf", "negative", "over", "bool", "string", "huge-int"],
)  # fmt: skip
def test_check_number_takes_finite_numbers_in_range(value: object, ok: bool) -> None:
    if ok:
        check_number("temperature", value, 0, 2)
        return
    with pytest.raises(UsageError, match=r"^temperature must be .*(\[0, 2\]|got)"):
        check_number("temperature", value, 0, 2)


def test_make_model_checks_its_numbers() -> None:
    with pytest.raises(UsageError, match=r"C must be > 0, got -1"):
        make_model("linear", "compliance", C=-1)
    with pytest.raises(UsageError, match=r"emb_weight must be a finite number"):
        make_model("probe", "compliance", emb_weight=math.inf)


def _labels(source: str, labels: list[str], probs: list[float]) -> list[Label]:
    return [
        make_label(f"i{i}", source, lab, rubric="compliance",
                   probs={"full_compliance": p, "full_refusal": 1 - p, "partial_refusal": 0.0})
        for i, (lab, p) in enumerate(zip(labels, probs, strict=True))
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("human", "match"),
    [
        (["full_compliance"] * 500, r"the human labels hold 'full_compliance' 500; calibration "
         r"needs at least two labels with 5 or more each"),
        (["full_compliance"] * 300 + ["full_refusal"] * 2,
         r"'full_compliance' 300, 'full_refusal' 2; calibration needs"),
    ],
    ids=["one-class", "too-few-of-the-other"],
)  # fmt: skip
def test_calibration_refuses_a_one_class_label_set(human: list[str], match: str) -> None:
    rng = np.random.default_rng(0)
    probs = rng.uniform(0.05, 0.95, len(human)).tolist()
    model = _labels("judge:m", ["full_compliance"] * len(human), probs)
    people = [
        lab.model_copy(update={"source": "human:final", "label": h, "probs": None})
        for lab, h in zip(model, human, strict=True)
    ]
    with pytest.raises(UsageError, match=match):
        calibrate_source([*model, *people], source="judge:m", human="human:final")


def test_a_nan_score_is_missing_on_the_labelling_page() -> None:
    rubric = load_rubric("compliance")
    labels = [
        Label(item_id="a", rubric="compliance", source="judge:m", label="full_compliance",
              score=float("nan")),
        Label(item_id="b", rubric="compliance", source="judge:m", label="full_refusal",
              score=0.0),
    ]  # fmt: skip
    source, scores = cheap_scores(labels, rubric, ["a", "b"])
    assert source == "judge:m" and scores.tolist() == [0.5, 0.0]  # NaN -> missing (0.5)
