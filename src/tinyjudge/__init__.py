"""Tinyjudge: judge agent trajectories, distill the judge, calibrate and audit.

Importing this package is cheap: heavy modules (torch, transformers) load only
when a name that needs them is used.
"""

from __future__ import annotations

from tinyjudge.datasets.jsonl import read_items, read_labels, write_jsonl
from tinyjudge.errors import DataError, TinyjudgeError
from tinyjudge.records import Hint, Item, Label, Message
from tinyjudge.rubric import Rubric, load_rubric

__version__ = "0.1.0"

__all__ = [
    "Item",
    "Label",
    "Message",
    "Hint",
    "Rubric",
    "load_rubric",
    "read_items",
    "read_labels",
    "write_jsonl",
    "TinyjudgeError",
    "DataError",
    "__version__",
]
