"""The teacher is refused as the truth on the model's own training items; audit prints its
per-slice table and writes nothing (without an error) when asked for no file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support import real_data, run_tinyjudge

# A distilled model on SYCON through import, distill, score, estimate and audit (~27 s here).
pytestmark = pytest.mark.slow

TRAINED_ON = ("deepseek-v3", "Qwen2.5-72B-Instruct")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    src = real_data("sycon")
    if src is None:
        pytest.skip("no SYCON data")
    d = tmp_path_factory.mktemp("teacher")
    done = run_tinyjudge("import", "sycon", src, "--out", d / "sycon")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (d / "sycon" / "items.jsonl").read_text().splitlines()]
    train = [r for r in rows if r["metadata"]["answering_model"] in TRAINED_ON]
    unseen = [r for r in rows if r["metadata"]["answering_model"] not in TRAINED_ON]
    for name, part in (("train", train), ("unseen", unseen)):
        (d / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part))
    done = run_tinyjudge(
        "distill", d / "train.jsonl", d / "sycon" / "labels.jsonl", "--source", "judge:gpt-4o",
        "--rubric", "pushback_under_pressure", "--out", d / "rm", "--name", "pushback",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    distilled = done.stdout
    for name in ("train", "unseen"):
        done = run_tinyjudge(
            "score", d / "rm", d / f"{name}.jsonl", "--out", d / f"rm_{name}.jsonl"
        )
        assert done.returncode == 0, done.stderr
    judge = [json.loads(x) for x in (d / "sycon" / "labels.jsonl").read_text().splitlines()]
    for name, part in (("train", train), ("unseen", unseen)):
        ids = {r["id"] for r in part}
        kept = [lab for lab in judge if lab["item_id"] in ids]
        (d / f"judge_{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in kept))
    return {"dir": d, "model": d / "rm", "distilled": distilled}


def test_distill_says_what_the_card_says_it_trained_on(run) -> None:
    """worst_answer leaves out answers whose dialogue caved earlier: the count printed is
    the count the model was fitted on, as its card records."""
    card = json.loads((run["model"] / "tinyjudge.json").read_text())["card"]
    assert card["n_left_out_inherited"] > 0
    assert f"trained on {card['n_train']}," in run["distilled"]


def test_distill_accounts_for_the_answers_it_left_out(run) -> None:
    """The count trained on plus those left out adds up to the training split, and the split
    plus the validation items to the items with a usable label."""
    card = json.loads((run["model"] / "tinyjudge.json").read_text())["card"]
    found = re.search(
        r"of (\d+) items with a usable label: (\d+) training items - (\d+) whose label is "
        r"inherited from an earlier answer = (\d+) rows trained on; (\d+) validated",
        run["distilled"],
    )
    assert found is not None, run["distilled"]
    usable, split, inherited, rows, validated = map(int, found.groups())
    assert inherited == card["n_left_out_inherited"] and rows == card["n_train"]
    assert rows == split - inherited and usable == split + validated
    assert f"validated on {validated} " in run["distilled"]


def test_the_teacher_is_refused_as_human_on_its_training_items(run) -> None:
    d = run["dir"]
    args = ["--cheap", "rm:pushback", "--human", "judge:gpt-4o"]
    refused = run_tinyjudge("estimate", d / "rm_train.jsonl", d / "judge_train.jsonl", *args)
    assert refused.returncode != 0
    line = " ".join(refused.stderr.split())
    assert "rm:pushback was distilled on judge:gpt-4o's labels of" in line
    assert "--allow-overlap" in line
    with_dir = run_tinyjudge(
        "estimate", d / "judge_train.jsonl", d / "rm_train.jsonl", *args, "--model-dir", d / "rm"
    )
    assert with_dir.returncode != 0 and "judge:gpt-4o's labels" in with_dir.stderr
    fine = run_tinyjudge("estimate", d / "rm_unseen.jsonl", d / "judge_unseen.jsonl", *args)
    assert fine.returncode == 0, fine.stderr
    audit = run_tinyjudge(
        "audit", d / "rm_train.jsonl", d / "judge_train.jsonl", "--reference", "judge:gpt-4o"
    )
    assert audit.returncode != 0 and "judge:gpt-4o's labels" in audit.stderr


def test_audit_prints_slices_and_writes_nothing_unasked(run) -> None:
    d = run["dir"]
    done = run_tinyjudge(
        "audit", d / "rm_unseen.jsonl", d / "judge_unseen.jsonl", "--reference", "judge:gpt-4o",
        "--items", d / "unseen.jsonl", "--slice-by", "metadata.answering_model",
        "--n-boot", "50",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "agreement with judge:gpt-4o by metadata.answering_model" in " ".join(text.split())
    for model in ("claude", "Llama-3.3-70B-Instruct"):
        assert any(line.lstrip("│ ").startswith(model[:10]) for line in text.splitlines()), text
    assert "nothing written: pass --report OUT.html and/or --json OUT.json" in text
    assert not list(d.glob("*.html"))
