"""The README's Python runs as written: each ```python block is run in a fresh interpreter,
offline, on the bundled data, from a folder laid out like the repository's root.

A block that cannot run here (it needs a running server, a GPU and a Hub model, a policy
to train, a Ray cluster) is named in FRAGMENTS with the reason; a new block is one or the
other, so none goes untested by oversight.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# a block's first line -> why it is not run here (its parts are tested elsewhere)
FRAGMENTS = {
    ">>> import httpx  # comes with the serve and rl extras": "asks a running reward server",
    "import tinyjudge": "fine-tunes a Hub model on a GPU",
    "import httpx  # comes with the serve and rl extras": "asks a running reward server",
    "from trl import GRPOConfig, GRPOTrainer": "a fragment of a TRL training script",
    "from trl.experimental.sdpo import SDPOConfig, SDPOTrainer": "a fragment of a TRL script",
    "from tinyjudge.scale import init_ray, items_to_ray, judge_dataset, labels_from_ray, "
    "score_dataset": "needs a Ray cluster",
}


def _blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)


def _runnable() -> list[str]:
    return [b for b in _blocks() if b.splitlines()[0] not in FRAGMENTS]


def test_every_block_is_run_or_named_as_a_fragment() -> None:
    firsts = [b.splitlines()[0] for b in _blocks()]
    assert set(FRAGMENTS) <= set(firsts), "a fragment named here is no longer in the README"
    assert len(_runnable()) >= 2  # the loop in memory and make_files.py


@pytest.mark.slow  # a fresh interpreter per block, scikit-learn loaded: ~30 s each here
@pytest.mark.parametrize("block", _runnable(), ids=[b.splitlines()[0][:40] for b in _runnable()])
def test_the_readme_block_runs_as_written(block: str, tmp_path: Path) -> None:
    (tmp_path / "data").symlink_to(ROOT / "data")  # "data/xstest_sample", as from the root
    script = tmp_path / "block.py"
    script.write_text(block, encoding="utf-8")
    env = {**os.environ, "PYTHONWARNINGS": "error::UserWarning"}  # a SplitWarning fails it
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
        timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
