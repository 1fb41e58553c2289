"""Round trips through a Hugging Face ``datasets.Dataset``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyjudge.datasets.hf import from_dataset, to_dataset
from tinyjudge.records import Item, Label

from .conftest import sample_items, sample_labels


@pytest.mark.parametrize(
    ("records", "model"),
    [(sample_items(), Item), (sample_labels(), Label)],
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
    (back, *_) = from_dataset(to_dataset(sample_items()), Item)
    call = back.messages[2].tool_calls[0]
    assert call.function.name == "get_reservation"
    assert back.messages[3].tool_call_id == "call_1"


def test_one_schema_for_different_shapes() -> None:
    """Messages are JSON strings, so rows with and without tools share columns."""
    ds = to_dataset(sample_items())
    assert ds.features["messages"].dtype == "string"
    assert set(ds.column_names) >= {"id", "messages", "metadata"}
