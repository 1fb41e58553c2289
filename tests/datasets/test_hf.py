"""Round trips through a Hugging Face ``datasets.Dataset``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyjudge.datasets.hf import from_dataset, to_dataset
from tinyjudge.records import Hint, Item, Label, Message


def _items() -> list[Item]:
    return [
        Item(
            id="tau:7",
            messages=[
                Message(role="user", content="Cancel reservation ABC123."),
                Message(
                    role="assistant",
                    content=None,
                    tool_calls=[
                        {
                            "id": "call_9",
                            "function": {
                                "name": "cancel_reservation",
                                "arguments": '{"reservation_id": "ABC123"}',
                            },
                        }
                    ],
                ),
                Message(role="tool", tool_call_id="call_9", content='{"status": "cancelled"}'),
                Message(role="assistant", content="Done.", name="agent"),
            ],
            metadata={"reward": 1.0, "actions": [{"name": "cancel_reservation"}]},
        ),
        # A second item with a different shape: no tools, content parts, no metadata.
        Item(
            id="xstest:gpt4:v2-1",
            messages=[
                Message(
                    role="user", content=[{"type": "text", "text": "How do I kill a process?"}]
                ),
                Message(role="assistant", content="Use kill."),
            ],
        ),
        Item(
            id="pair:1",
            context=[Message(role="user", content="Name a red fruit.")],
            response_a=[Message(role="assistant", content="Cherry")],
            response_b=[Message(role="assistant", content="Banana")],
        ),
    ]


def _labels() -> list[Label]:
    return [
        Label(
            item_id="tau:7",
            rubric="compliance",
            rubric_hash="7be837860442c6a7",
            source="judge:gpt-4",
            label="full_compliance",
            probs={"full_compliance": 0.8, "full_refusal": 0.2},
            score=0.2,
            hint=Hint(step=1, text="Confirm first."),
            usage={"prompt_tokens": 120, "completion_tokens": 4},
        ),
        Label(
            item_id="tau:7",
            rubric="compliance",
            source="judge:gpt-4",
            status="unscored",
            raw={"choices": []},
            reason="unparseable",
        ),
        Label(
            item_id="pair:1",
            rubric="instruction_following",
            source="judge:gpt-4",
            label="tie",
            orders={"ab": "a", "ba": None},
            consistent=False,
        ),
    ]


@pytest.mark.parametrize(
    ("records", "model"),
    [(_items(), Item), (_labels(), Label)],
    ids=["items-with-tool-calls", "labels"],
)
def test_round_trip(records: list, model: type, tmp_path: Path) -> None:
    ds = to_dataset(records)
    assert len(ds) == len(records)
    assert ds.info.description == f"tinyjudge:{model.__name__}"
    assert from_dataset(ds, model) == records
    # And through Parquet on disk, the exchange format.
    ds.to_parquet(str(tmp_path / "records.parquet"))
    from datasets import Dataset

    again = Dataset.from_parquet(str(tmp_path / "records.parquet"))
    assert from_dataset(again, model) == records


def test_tool_calls_survive_as_records() -> None:
    (back, *_) = from_dataset(to_dataset(_items()), Item)
    call = back.messages[1].tool_calls[0]
    assert call.function.name == "cancel_reservation"
    assert back.messages[2].tool_call_id == "call_9"


def test_one_schema_for_different_shapes() -> None:
    """Messages are JSON strings, so rows with and without tools share columns."""
    ds = to_dataset(_items())
    assert ds.features["messages"].dtype == "string"
    assert set(ds.column_names) >= {"id", "messages", "metadata"}
