"""A rubric's references: validated like the rest of the rubric, part of its hash, read
from items."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import make_item

from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item
from tinyjudge.rubric import VIEWS, load_rubric, load_rubric_copy, save_rubric_copy


def _write(tmp_path: Path, **changes: object) -> Path:
    data = load_rubric("compliance").model_dump(mode="json", by_alias=True)
    data.update(changes)
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _item(**metadata: object) -> Item:
    return make_item("q", "a", metadata=metadata)


@pytest.mark.parametrize(
    ("references", "reward_model", "match"),
    [
        ([{"name": "gold", "from": "answer"}], None, r"field references\.0\.from: 'answer' is not"),
        ([{"name": "gold", "from": "metadata."}], None, "metadata.KEY"),
        ([{"name": "gold", "from": "messages.0"}], None, "is not an item field"),
        ([{"name": "Gold", "from": "metadata.g"}], None, r"field references\.0\.name"),
        ([{"name": "g", "from": "metadata.g", "form": 1}], None, "unknown field"),
        ([{"name": "g"}], None, r"field references\.0\.from: missing"),
        (
            [{"name": "g", "from": "metadata.a"}, {"name": "g", "from": "metadata.b"}],
            None,
            "reference names are not unique",
        ),
        ([], {"references": True}, "the rubric names no references"),
        ([], {"view": "last"}, r"'last' is not one of \['window', 'answer'"),
    ],
    ids=["bare", "dangling", "messages", "name", "unknown", "no-from", "dupes", "rm", "view"],
)
def test_a_bad_reference_is_one_line_naming_the_rubric_file(
    tmp_path: Path, references: list, reward_model: dict | None, match: str
) -> None:
    extra = {"reward_model": reward_model} if reward_model else {}
    path = _write(tmp_path, references=references, **extra)
    with pytest.raises(TinyjudgeError, match=match) as e:
        load_rubric(path)
    assert str(e.value).startswith(f"{path}: ") and "\n" not in str(e.value)


def test_references_are_part_of_the_hash_and_of_the_stored_copy(tmp_path: Path) -> None:
    plain = load_rubric("compliance")
    with_refs = load_rubric(_write(tmp_path, references=[{"name": "g", "from": "metadata.g"}]))
    other = load_rubric(_write(tmp_path, references=[{"name": "g", "from": "metadata.h"}]))
    assert len({plain.hash, with_refs.hash, other.hash}) == 3
    # A rubric naming none keeps the hash it had before references existed.
    assert load_rubric(_write(tmp_path, references=[])).hash == plain.hash
    copy = load_rubric_copy(save_rubric_copy(with_refs, tmp_path / "copy"))
    assert copy == with_refs and copy.references[0].from_ == "metadata.g"
    assert "from: metadata.g" in (tmp_path / "copy" / f"rubric.{with_refs.hash}.yaml").read_text()


def test_item_references_by_name_and_what_is_missing() -> None:
    rubric = load_rubric("pushback_under_pressure")
    full = _item(presupposition="Cold wind is higher.", correction="Faster wind is higher.")
    assert rubric.item_references(full) == {
        "false_premise": "Cold wind is higher.",
        "correct_information": "Faster wind is higher.",
    }
    assert rubric.missing_references(full) == []
    for blank in ("", "  \n", None):
        assert rubric.missing_references(_item(presupposition="p", correction=blank)) == [
            "correct_information"
        ]
    assert rubric.missing_references(_item()) == ["false_premise", "correct_information"]


def test_a_structured_reference_is_json_and_an_optional_one_may_be_absent() -> None:
    rubric = load_rubric("task_success")
    actions = [{"name": "cancel_reservation", "kwargs": {"reservation_id": "EHGLP3"}}]
    item = _item(expected_actions=actions)
    assert rubric.item_references(item) == {
        "expected_actions": '[{"name": "cancel_reservation", "kwargs": {"reservation_id": '
        '"EHGLP3"}}]'
    }
    assert rubric.missing_references(item) == []  # user_instruction is optional


def test_views_table_is_the_one_the_docs_list() -> None:
    docs = (Path(__file__).parents[1] / "docs" / "distill.md").read_text()
    table = docs.split("| `view` | context (segment A) | reply (segment B) |")[1].split("\n\n")[0]
    names = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    assert names == list(VIEWS)
    schema = load_rubric("compliance").model_json_schema()
    assert schema["$defs"]["RewardModelSpec"]["properties"]["view"]["enum"] == list(VIEWS)
