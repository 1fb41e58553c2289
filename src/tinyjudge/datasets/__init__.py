"""Reading and writing records: JSON Lines, Hugging Face datasets, public-set importers."""

from tinyjudge._faces import lazy_names
from tinyjudge.datasets.jsonl import append_jsonl as append_jsonl
from tinyjudge.datasets.jsonl import read_items as read_items
from tinyjudge.datasets.jsonl import read_jsonl as read_jsonl
from tinyjudge.datasets.jsonl import read_labels as read_labels
from tinyjudge.datasets.jsonl import write_jsonl as write_jsonl

_, __dir__ = lazy_names(__name__)
