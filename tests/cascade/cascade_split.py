"""The split the cascade tests share (imported by name: conftest puts this folder on sys.path)."""

from __future__ import annotations

from dataclasses import dataclass

from tinyjudge.distill import LinearRM
from tinyjudge.records import Item, Label


@dataclass
class Split:
    """Training prompts fit the model; calibration and reported prompts are ``items``."""

    model: LinearRM
    items: list[Item]  # calibration items and reported items, mixed
    labels: list[Label]  # every recorded label (GPT-4's and people's) on ``items``
    calibration: list[Label]  # GPT-4's labels on the calibration items only
    cal_ids: set[str]
    report_ids: set[str]
