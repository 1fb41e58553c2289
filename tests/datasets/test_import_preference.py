"""Preference data in: HH-RLHF's chosen/rejected transcripts and TRL's prompt/chosen/rejected
become pairwise items (and, with a pairwise rubric, labels saying which side was chosen)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from support import real_data, run_tinyjudge

from tinyjudge.datasets.importers import import_chat
from tinyjudge.errors import DataError

TRL_ROWS = [
    {"prompt": "What is 2 + 2?", "chosen": "4.", "rejected": "5.", "id": "plain"},
    {
        "prompt": [{"role": "user", "content": "Name a prime."}],
        "chosen": [{"role": "assistant", "content": "7"}],
        "rejected": [{"role": "assistant", "content": "8"}],
        "id": "conversational",
        "score_chosen": 9.0,
    },
]


def _hh_file() -> Path:
    src = real_data("hh-rlhf")
    if src is None:
        pytest.skip("no HH-RLHF data")
    return src / "harmless-base" / "test.jsonl.gz"


def test_hh_rlhf_rows_are_pairs_sharing_their_context() -> None:
    path = _hh_file()
    got = import_chat(path, rubric="instruction_following", source="human:hh-rlhf", limit=24)
    with gzip.open(path, "rt") as fh:
        rows = [json.loads(next(fh)) for _ in range(24)]
    assert len(got.items) == 24 and not got.bad
    preferred = [it.metadata["preferred"] for it in got.items]
    assert set(preferred) == {"a", "b"}  # the chosen side is not always in one position
    for item, row, side in zip(got.items, rows, preferred, strict=True):
        assert item.is_pairwise and item.context and item.context[-1].role == "user"
        chosen = item.response_a if side == "a" else item.response_b
        rejected = item.response_b if side == "a" else item.response_a
        assert chosen[0].role == "assistant" and rejected[0].role == "assistant"
        assert row["chosen"].rstrip().endswith(chosen[-1].text)
        assert row["rejected"].rstrip().endswith(rejected[-1].text)
        turns = row["chosen"].count("\n\nHuman:") + row["chosen"].count("\n\nAssistant:")
        assert len(item.context) + len(chosen) == turns
    assert [lab.label for lab in got.labels] == preferred
    assert {lab.source for lab in got.labels} == {"human:hh-rlhf"}


def test_trl_preference_rows_and_message_lists(tmp_path: Path) -> None:
    path = tmp_path / "prefs.jsonl"
    rows = [
        *TRL_ROWS,
        {
            "chosen": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello!"},
            ],
            "rejected": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Go."},
            ],
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = import_chat(path)
    plain, conv, lists = got.items
    assert [m.text for m in plain.context] == ["What is 2 + 2?"]
    side = plain.metadata["preferred"]
    assert (plain.response_a if side == "a" else plain.response_b)[0].text == "4."
    assert conv.metadata["score_chosen"] == 9.0 and conv.id == "conversational"
    assert [m.text for m in lists.context] == ["Hi"]
    assert len(lists.id) == 16  # an id made from the content


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ({"chosen": "\n\nHuman: hi\n\nAssistant: yo", "rejected": "\n\nHuman: hi\n\nAssistant: yo"},
         "the same"),
        ({"prompt": "q", "chosen": [], "rejected": "b"}, '"chosen" must be text or a non-empty'),
        ({"chosen": "\n\nHuman: a\n\nAssistant: b", "rejected": "\n\nHuman: c"},
         '"rejected" has no assistant turn'),
    ],
    ids=["identical", "empty-side", "no-answer"],
)  # fmt: skip
def test_bad_preference_rows_name_file_and_line(tmp_path: Path, row, match: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(TRL_ROWS[0]) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(DataError, match=rf"bad.jsonl:2: .*{match}"):
        import_chat(path)


def test_import_chat_cli_check_and_write(tmp_path: Path) -> None:
    path = _hh_file()
    check = run_tinyjudge("import", "chat", path, "--check")
    assert check.returncode == 0, check.stderr
    assert "a pair (preferred:" in check.stdout and "response_b:" in check.stdout
    done = run_tinyjudge("import", "chat", path, "--out", tmp_path / "hh", "--rubric",
                         "instruction_following", "--source", "human:hh-rlhf")  # fmt: skip
    assert done.returncode == 0, done.stderr
    items = (tmp_path / "hh" / "items.jsonl").read_text().splitlines()
    assert all("response_a" in json.loads(line) for line in items)
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_text('{"text": "no messages here"}\n{"text": "nor here"}\n')
    none_read = run_tinyjudge("import", "chat", nothing, "--check")
    assert none_read.returncode != 0
    assert "none of the first 3 rows could be read (2 refused" in " ".join(none_read.stderr.split())


def test_linear_and_probe_name_the_pairwise_tier_by_its_name() -> None:
    from tinyjudge.distill import LinearRM
    from tinyjudge.errors import UsageError

    got = import_chat(_hh_file(), limit=4)
    with pytest.raises(UsageError, match="use tier transformer \\(Bradley-Terry\\) for pairs"):
        LinearRM("instruction_following").fit(got.items, ["a", "b", "a", "b"])
