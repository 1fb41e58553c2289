"""A saved linear-tier reward model (compliance rubric) trained on the bundled XSTest sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import LinearRM


@pytest.fixture(scope="session")
def rm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tinyjudge.demo import bundled_sample

    imported = run_import("xstest", Path(bundled_sample()))
    teacher = {lab.item_id: lab.label for lab in imported.labels if lab.source == "judge:gpt-4"}
    train = [it for it in imported.items if teacher.get(it.id)]
    model = LinearRM("compliance").fit(train, [teacher[it.id] for it in train])
    out = tmp_path_factory.mktemp("rm") / "rm"
    model.save(out)
    return out
