"""Reading and writing records: JSON Lines, Hugging Face datasets, public-set importers."""

from tinyjudge.datasets.jsonl import (
    append_jsonl,
    read_items,
    read_jsonl,
    read_labels,
    write_jsonl,
)

__all__ = [
    "append_jsonl",
    "read_items",
    "read_jsonl",
    "read_labels",
    "write_jsonl",
]
