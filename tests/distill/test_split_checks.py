"""distill warns when its validation figures would mislead: too few items held out, or items
that share a prompt on both sides of a split made without group_by."""

from __future__ import annotations

import re
import warnings

import pytest
from support import XSTEST_SAMPLE

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import SplitWarning, distill

from ..commands.test_cli import run


@pytest.fixture(scope="module")
def sample():
    return run_import("xstest", XSTEST_SAMPLE)


def test_a_split_of_shared_prompts_without_group_by_warns(sample) -> None:
    with pytest.warns(SplitWarning, match=r"values of metadata\.prompt_id are on both sides.*"
                      r"pass group_by='metadata\.prompt_id'") as got:  # fmt: skip
        distill(sample.items, sample.labels, "judge:gpt-4", "compliance")
    assert [w.message.kind for w in got if isinstance(w.message, SplitWarning)] == ["shared"]


def test_a_grouped_split_of_enough_items_is_quiet(sample) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", SplitWarning)
        distill(sample.items, sample.labels, "judge:gpt-4", "compliance",
                group_by="metadata.prompt_id")  # fmt: skip


def test_a_small_validation_split_warns(sample) -> None:
    items = sample.items[:150]  # 30 prompts: 6 held out, about 30 items
    with pytest.warns(SplitWarning, match=r"validation holds 3\d items \(fewer than 50\)"):
        distill(items, sample.labels, "judge:gpt-4", "compliance", group_by="metadata.prompt_id")


def test_the_command_prints_the_warnings_in_flags(tmp_path, sample) -> None:
    from tinyjudge.datasets.jsonl import write_jsonl

    write_jsonl(tmp_path / "items.jsonl", sample.items[:150])
    write_jsonl(tmp_path / "labels.jsonl", sample.labels)
    done = run("distill", tmp_path / "items.jsonl", tmp_path / "labels.jsonl", "--source",
               "judge:gpt-4", "--rubric", "compliance", "--out", tmp_path / "rm")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert re.search(r"warning: validation holds 3\d items \(fewer than 50\)", done.stderr)
    assert "raise --val-fraction" in done.stderr
    assert "pass --group-by metadata.prompt_id" in done.stderr
