"""The model directory has one owner: every file listed and hashed, changed only as a whole.

A sharded model is hashed shard by shard with its index, and a shard added,
edited or removed after the save is refused in one line; calibrate and export
stage their files beside the directory and swap it in, so a killed calibrate
leaves the previous model (and its calibration) loadable and unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tinyjudge._model_dir import update_model_dir
from tinyjudge.calibrate import calibrate_model, load_calibrator, save_model_calibration
from tinyjudge.datasets.importers import Imported
from tinyjudge.demo import bundled_sample
from tinyjudge.distill import (
    EncoderRM,
    LinearRM,
    TrainingSet,
    check_model_dir,
    export_onnx,
    load_model,
)
from tinyjudge.errors import ModelDirError

HUMAN = "human:final"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def linear(xs_set: TrainingSet) -> LinearRM:
    return LinearRM("compliance", name="dir-test").fit(xs_set.items[:300], xs_set.y_hard[:300])


def _calibrate(model_dir: Path, xs: Imported, method: str = "temperature") -> None:
    done = calibrate_model(
        load_model(model_dir, calibrated=False), xs.items, xs.labels, human=HUMAN,
        method=method, n_boot=20, if_worse="keep",
    )  # fmt: skip
    save_model_calibration(done, model_dir)


@pytest.fixture
def calibrated(linear: LinearRM, xs: Imported, tmp_path: Path) -> Path:
    d = linear.save(tmp_path / "m")
    _calibrate(d, xs)
    return d


# --- what is recorded, and what a check refuses -----------------------------------------


def test_every_file_is_recorded_and_a_calibrated_directory_checks(calibrated: Path) -> None:
    meta = json.loads((calibrated / "tinyjudge.json").read_text())
    assert sorted(meta["files"]) == [
        f"rubric.{meta['rubric_hash']}.yaml", "vocab.json", "weights.safetensors",
    ]  # fmt: skip
    assert sorted(meta["attached"]) == ["README.md", "calibration.png"]
    assert check_model_dir(calibrated)["name"] == "dir-test"
    assert load_model(calibrated).calibrator_ is not None


@pytest.mark.parametrize(
    ("spoil", "match"),
    [
        (
            lambda d: (d / "notes.txt").write_text("mine"),
            r"notes.txt: not in tinyjudge.json; added",
        ),
        (lambda d: (d / "calibration.png").unlink(), r"missing calibration.png"),
        (lambda d: (d / "README.md").write_text("# mine\n"), r"README.md: SHA-256 differs"),
    ],
    ids=["added", "removed", "card-edited"],
)
def test_a_change_after_the_save_is_one_line(calibrated: Path, spoil, match: str) -> None:
    spoil(calibrated)
    with pytest.raises(ModelDirError, match=match) as e:
        load_model(calibrated)
    assert "\n" not in str(e.value)


def test_hidden_files_are_no_part_of_the_model(calibrated: Path) -> None:
    (calibrated / ".DS_Store").write_bytes(b"\0\1")
    assert check_model_dir(calibrated)["tier"] == "linear"


V2 = Path(__file__).parents[1] / "fixtures" / "model_v2"


@pytest.fixture
def v2_dir(tmp_path: Path) -> Path:
    """A copy of a directory tinyjudge wrote in format version 2 (see its SOURCE.md)."""
    return Path(shutil.copytree(V2 / "linear", tmp_path / "v2"))


def test_a_version_2_directory_loads_and_gives_its_probabilities(v2_dir: Path) -> None:
    from tinyjudge.records import Item

    expected = json.loads((V2 / "expected.json").read_text())
    model = load_model(v2_dir)
    assert model.calibrator_ is not None  # its calibration is still bound to it
    P = model.predict_proba([Item.model_validate(it) for it in expected["items"]])
    np.testing.assert_allclose(P, expected["probs"], atol=1e-9)


def test_a_version_2_directory_still_checks_the_files_it_names(v2_dir: Path) -> None:
    (v2_dir / "vocab.json").write_text("{}")
    with pytest.raises(ModelDirError, match=r"vocab.json: SHA-256 differs"):
        load_model(v2_dir)


def test_a_version_2_directory_is_not_changed_in_place(v2_dir: Path, tmp_path: Path) -> None:
    before = {p.name: p.read_bytes() for p in v2_dir.iterdir()}
    with (
        pytest.raises(ModelDirError, match=r"version 2, which this tinyjudge loads and scores"),
        update_model_dir(v2_dir),
    ):
        pass
    assert {p.name: p.read_bytes() for p in v2_dir.iterdir()} == before


def test_another_format_version_is_refused_in_one_line(calibrated: Path) -> None:
    from tinyjudge._model_dir import write_meta

    meta = json.loads((calibrated / "tinyjudge.json").read_text())
    write_meta(calibrated, {**meta, "version": 1})
    with pytest.raises(ModelDirError, match=r"version 1; this tinyjudge reads .* versions 2 and 3"):
        load_model(calibrated)


# --- calibrate: one whole change ---------------------------------------------------------


def test_calibrating_again_replaces_its_files_and_keeps_the_check(calibrated: Path, xs) -> None:
    first = load_calibrator(calibrated)
    weights = (calibrated / "weights.safetensors").stat().st_ino
    _calibrate(calibrated, xs, method="vector")
    assert (calibrated / "weights.safetensors").stat().st_ino == weights  # linked, not copied
    again = load_calibrator(calibrated)
    assert type(again).__name__ != type(first).__name__
    card = (calibrated / "README.md").read_text()
    assert card.count("## Calibration against people") == 1 and "`vector` scaling" in card
    check_model_dir(calibrated)
    assert [p.name for p in calibrated.parent.iterdir()] == ["m"]  # no staging folder left


def test_calibrating_into_another_folder_links_the_weights(calibrated: Path, xs, tmp_path) -> None:
    before = _snapshot(calibrated)
    done = calibrate_model(
        load_model(calibrated, calibrated=False), xs.items, xs.labels, human=HUMAN,
        method="platt", n_boot=20, if_worse="keep",
    )  # fmt: skip
    out = save_model_calibration(done, calibrated, tmp_path / "copy")
    assert _snapshot(calibrated) == before
    assert os.path.samefile(out / "weights.safetensors", calibrated / "weights.safetensors")
    assert type(load_calibrator(out)).__name__ != type(load_calibrator(calibrated)).__name__
    check_model_dir(out)
    check_model_dir(calibrated)


_KILLED_CALIBRATE = """
import os, signal, sys
from pathlib import Path
import tinyjudge.calibrate._fit as fit
from tinyjudge.calibrate import calibrate_model, save_model_calibration
from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import load_model

model_dir = Path(sys.argv[1])
xs = run_import("xstest", Path(sys.argv[2]))
done = calibrate_model(
    load_model(model_dir, calibrated=False), xs.items, xs.labels, human="human:final",
    method="vector", n_boot=20, if_worse="keep",
)
draw = fit.reliability_diagram

def draw_then_die(*args, **kwargs):
    draw(*args, **kwargs)  # the new calibration.json is written by now, the card not yet
    os.kill(os.getpid(), signal.SIGKILL)

fit.reliability_diagram = draw_then_die
save_model_calibration(done, model_dir)
"""


def test_a_killed_calibrate_leaves_the_old_directory(calibrated: Path, xs) -> None:
    before = _snapshot(calibrated)
    old = load_model(calibrated).predict_proba(xs.items[:20])
    code = textwrap.dedent(_KILLED_CALIBRATE)
    done = subprocess.run(
        [sys.executable, "-c", code, str(calibrated), str(bundled_sample())],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert _snapshot(calibrated) == before
    check_model_dir(calibrated)
    np.testing.assert_array_equal(load_model(calibrated).predict_proba(xs.items[:20]), old)


def test_a_failed_update_changes_nothing(calibrated: Path) -> None:
    before = _snapshot(calibrated)
    with pytest.raises(OSError, match="No space left"):
        with update_model_dir(calibrated) as staged:
            staged.path("calibration.png").write_bytes(b"half a plot")
            staged.remove("calibration.json")
            raise OSError(28, "No space left on device")
    assert _snapshot(calibrated) == before


def test_an_update_cannot_touch_the_model_itself(calibrated: Path) -> None:
    with pytest.raises(ModelDirError, match="weights.safetensors: a file of the model itself"):
        with update_model_dir(calibrated) as staged:
            staged.path("weights.safetensors")
    check_model_dir(calibrated)


def test_a_label_source_calibration_is_not_written_into_a_model(calibrated: Path, xs) -> None:
    from tinyjudge.calibrate import calibrate_source, save_source_calibration
    from tinyjudge.errors import UsageError

    done = calibrate_source(xs.labels, source="judge:gpt-4", human=HUMAN, n_boot=20)
    with pytest.raises(UsageError, match="is a model directory"):
        save_source_calibration(done, calibrated)
    check_model_dir(calibrated)


# --- a sharded encoder, and export --------------------------------------------------------


class _ShardedEncoderRM(EncoderRM):
    """Saves its weights in shards of at most 1 MB, as large models are saved."""

    def _save_files(self, model_dir: Path) -> None:
        self.model_.save_pretrained(model_dir, max_shard_size="1MB")
        self.tokenizer_.save_pretrained(model_dir)
        self.model_dir_ = model_dir


@pytest.fixture(scope="module")
def encoder(tiny_bert: Path, small: TrainingSet) -> EncoderRM:
    fast = {"max_length": 32, "epochs": 1, "batch_size": 32, "precision": "fp32"}
    return _ShardedEncoderRM("compliance", base=str(tiny_bert), **fast).fit(
        small.items, small.y_hard
    )


@pytest.fixture
def sharded(encoder: EncoderRM, tmp_path: Path) -> Path:
    return encoder.save(tmp_path / "enc")


def test_a_sharded_model_is_hashed_shard_by_shard(sharded: Path, encoder, small) -> None:
    meta = json.loads((sharded / "tinyjudge.json").read_text())
    shards = sorted(p.name for p in sharded.glob("model-*-of-*.safetensors"))
    assert len(shards) >= 2 and not (sharded / "model.safetensors").exists()
    assert set(shards) | {"model.safetensors.index.json", "config.json"} <= set(meta["files"])
    assert {"tokenizer.json", "tokenizer_config.json"} <= set(meta["files"])
    again = load_model(sharded)
    np.testing.assert_allclose(
        again.predict_proba(small.items[:8]), encoder.predict_proba(small.items[:8]), atol=1e-6
    )


def _flip_last_byte(path: Path) -> None:
    blob = bytearray(path.read_bytes())
    blob[-1] ^= 0x01
    path.write_bytes(bytes(blob))


def _extra_shard(d: Path) -> None:
    first = sorted(d.glob("model-*-of-*.safetensors"))[0]
    (d / "model-00099-of-00099.safetensors").write_bytes(first.read_bytes())


@pytest.mark.parametrize(
    ("spoil", "match"),
    [
        (_extra_shard, r"model-00099-of-00099.safetensors: not in tinyjudge.json; added after"),
        (
            lambda d: _flip_last_byte(sorted(d.glob("model-*-of-*.safetensors"))[-1]),
            r"model-\d+-of-\d+.safetensors: SHA-256 differs",
        ),
        (
            lambda d: sorted(d.glob("model-*-of-*.safetensors"))[0].unlink(),
            r"missing model-00001-of-\d+.safetensors",
        ),
    ],
    ids=["extra-shard", "edited-shard", "missing-shard"],
)
def test_a_changed_shard_is_refused_in_one_line(sharded: Path, spoil, match: str) -> None:
    spoil(sharded)
    for check in (check_model_dir, load_model):
        with pytest.raises(ModelDirError, match=match) as e:
            check(sharded)
        assert "\n" not in str(e.value)


def test_export_attaches_its_files_and_keeps_the_calibration(sharded: Path, xs, small) -> None:
    from tinyjudge.calibrate import make_calibrator, save_calibrator

    model = load_model(sharded, calibrated=False)
    P = model.predict_proba(small.items)
    save_calibrator(make_calibrator("temperature", model.classes_).fit(P, small.y_hard), sharded)
    identity = json.loads((sharded / "tinyjudge.json").read_text())["sha256"]
    report = export_onnx(sharded)
    meta = json.loads((sharded / "tinyjudge.json").read_text())
    assert report.path == sharded / "model.onnx" and "model.onnx" in meta["attached"]
    assert meta["sha256"] == identity  # an export is no new model: the calibration still fits
    onnx = load_model(sharded).set_params(runtime="onnx")
    assert onnx.calibrator_ is not None
    np.testing.assert_allclose(
        onnx.predict_proba(small.items[:8]), load_model(sharded).predict_proba(small.items[:8]),
        atol=1e-4,
    )  # fmt: skip


def test_a_failed_export_leaves_the_directory(sharded: Path) -> None:
    before = _snapshot(sharded)
    with pytest.raises(ModelDirError, match=r"model.onnx: ONNX logits differ from torch"):
        export_onnx(sharded, atol=-1.0)  # no difference is below -1: the parity check fails
    assert _snapshot(sharded) == before
    assert [p.name for p in sharded.parent.iterdir()] == ["enc"]
