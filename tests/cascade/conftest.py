"""A real linear-tier reward model on the bundled XSTest slice; a held-out split of prompts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from cascade_split import Split  # noqa: E402

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import LinearRM


def _split(train_of: slice, cal_of: slice) -> Split:
    from tinyjudge.demo import bundled_sample

    data = run_import("xstest", Path(bundled_sample()))
    prompts = sorted({it.metadata["prompt_id"] for it in data.items})
    train_p, cal_p = set(prompts[train_of]), set(prompts[cal_of])
    gpt4 = {lab.item_id: lab for lab in data.labels if lab.source == "judge:gpt-4"}
    train = [it for it in data.items if it.metadata["prompt_id"] in train_p]
    train = [it for it in train if gpt4[it.id].status == "ok"]
    model = LinearRM("compliance").fit(train, [gpt4[it.id].label for it in train])
    items = [it for it in data.items if it.metadata["prompt_id"] not in train_p]
    cal_ids = {it.id for it in items if it.metadata["prompt_id"] in cal_p}
    report_ids = {it.id for it in items} - cal_ids
    labels = [lab for lab in data.labels if lab.item_id in cal_ids | report_ids]
    calibration = [lab for lab in labels if lab.source == "judge:gpt-4" and lab.item_id in cal_ids]
    return Split(model, items, labels, calibration, cal_ids, report_ids)


@pytest.fixture(scope="session")
def split() -> Split:
    """40 prompts train, 40 calibrate (the cluster bound asks for at least 30), 20 report."""
    return _split(slice(0, 40), slice(40, 80))


@pytest.fixture(scope="session")
def half_split() -> Split:
    """Every other prompt trains (50), a quarter calibrate (25), a quarter report."""
    return _split(slice(0, None, 2), slice(1, None, 4))
