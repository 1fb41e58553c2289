"""A model directory's parts are bound together: config, calibration and weights.

``tinyjudge.json`` (classes, the rubric and its positive labels) and
``calibration.json`` carry hashes of their content, and the calibration the
model's: an edited config no longer flips labels silently, a calibration fitted
to earlier weights is not applied to a re-distilled model, and a save that fails
leaves the old model whole.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from tinyjudge.calibrate import load_calibrator, make_calibrator, save_calibrator
from tinyjudge.distill import LinearRM, TrainingSet, check_model_dir, load_model
from tinyjudge.errors import DataError, TinyjudgeError
from tinyjudge.rubric import load_rubric, load_rubric_copy


@pytest.fixture(scope="module")
def two_models(xs_set: TrainingSet) -> tuple[LinearRM, LinearRM]:
    items, y = xs_set.items, xs_set.y_hard
    first = LinearRM("compliance", name="first").fit(items[:250], y[:250])
    second = LinearRM("compliance", name="second").fit(items[250:], y[250:])
    return first, second


def _calibrate(model: LinearRM, d: Path, xs_set: TrainingSet) -> None:
    P = model.predict_proba(xs_set.items[:100])
    cal = make_calibrator("temperature", model.classes_).fit(P, xs_set.y_hard[:100])
    save_calibrator(cal, d)


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def _swap_classes(meta: dict) -> None:
    meta["classes"] = [meta["classes"][1], meta["classes"][0], *meta["classes"][2:]]


def _flip_positive(meta: dict) -> None:
    meta["rubric"]["positive"] = ["full_compliance"]


def _drop_hash(meta: dict) -> None:
    del meta["sha256"]


@pytest.mark.parametrize(
    "edit", [_swap_classes, _flip_positive, _drop_hash], ids=["classes", "positive", "no_hash"]
)
def test_an_edited_config_is_refused(two_models, tmp_path: Path, edit) -> None:
    d = two_models[0].save(tmp_path / "m")
    _edit(d / "tinyjudge.json", edit)
    with pytest.raises(TinyjudgeError, match=r"tinyjudge.json: edited after the model was saved"):
        check_model_dir(d)
    with pytest.raises(TinyjudgeError, match="edited after the model was saved"):
        load_model(d)


def test_a_calibration_from_earlier_weights_is_refused(two_models, xs_set, tmp_path: Path) -> None:
    first, second = two_models
    a, b = first.save(tmp_path / "a"), second.save(tmp_path / "b")
    _calibrate(first, a, xs_set)
    assert load_model(a).calibrator_ is not None
    (b / "calibration.json").write_bytes((a / "calibration.json").read_bytes())
    with pytest.raises(DataError, match=r"calibration.json: fitted to another model"):
        load_model(b)
    assert load_model(b, calibrated=False).name == "second"  # --uncalibrated still works


def test_an_edited_calibration_is_refused(two_models, xs_set, tmp_path: Path) -> None:
    d = two_models[0].save(tmp_path / "m")
    _calibrate(two_models[0], d, xs_set)
    _edit(d / "calibration.json", lambda s: s["params"].update(temperature=0.2))
    with pytest.raises(DataError, match=r"calibration.json: edited after it was written"):
        load_calibrator(d)


def test_redistilling_into_a_folder_drops_its_calibration(two_models, xs_set, tmp_path) -> None:
    first, second = two_models
    d = first.save(tmp_path / "m")
    _calibrate(first, d, xs_set)
    (d / "notes.txt").write_text("mine")
    second.save(d)
    assert sorted(p.name for p in d.iterdir()) == [
        "README.md", f"rubric.{second.rubric.hash}.yaml", "tinyjudge.json", "vocab.json",
        "weights.safetensors",
    ]  # fmt: skip
    loaded = load_model(d)
    assert loaded.name == "second" and loaded.calibrator_ is None
    assert [p.name for p in tmp_path.iterdir()] == ["m"]


def test_a_failed_save_leaves_the_old_model(two_models, xs_set, tmp_path: Path) -> None:
    first, second = two_models
    d = first.save(tmp_path / "m")
    _calibrate(first, d, xs_set)
    before = {p.name: p.read_bytes() for p in d.iterdir()}

    class Broken(LinearRM):
        def _save_files(self, model_dir: Path) -> list[str]:
            super()._save_files(model_dir)
            raise OSError(28, "No space left on device")

    broken = Broken("compliance", name="second")
    broken.__dict__.update({k: v for k, v in second.__dict__.items() if k.endswith("_")})
    with pytest.raises(OSError, match="No space left"):
        broken.save(d)
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before
    assert load_model(d).name == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["m"]


def test_saving_over_a_folder_that_is_not_a_model_is_refused(two_models, tmp_path) -> None:
    (tmp_path / "items.jsonl").write_text("{}\n")
    with pytest.raises(TinyjudgeError, match="holds files and is not a model directory"):
        two_models[0].save(tmp_path)
    assert (tmp_path / "items.jsonl").read_text() == "{}\n"


BAD_META = [
    ("not_an_object", b"[1, 2]", "expected a JSON object, got list"),
    ("not_utf8", b'{"format": "\xff"}', "not UTF-8 text"),
    ("nested_deep", b'{"a": ' * 100_000 + b"1" + b"}" * 100_000, "not valid JSON"),
    ("huge_number", b'{"version": ' + b"9" * 5000 + b"}", "not valid JSON"),
    ("bad_files", None, '"files" and "attached" must be objects'),
]


@pytest.mark.parametrize("text,match", [b[1:] for b in BAD_META], ids=[b[0] for b in BAD_META])
def test_a_malformed_config_is_one_line(two_models, tmp_path: Path, text, match: str) -> None:
    from tinyjudge._model_dir import identity_sha256

    d = two_models[0].save(tmp_path / "m")
    if text is None:  # well-formed and hashed, but the wrong shape
        meta = json.loads((d / "tinyjudge.json").read_text())
        meta["files"] = ["weights.safetensors"]
        meta["sha256"] = identity_sha256(meta)
        text = json.dumps(meta).encode()
    (d / "tinyjudge.json").write_bytes(text)
    with pytest.raises(TinyjudgeError, match=match) as e:
        check_model_dir(d)
    assert "\n" not in str(e.value)


HASHED_BUT_WRONG = [
    ("tier_a_list", {"tier": []}, "unknown tier list"),
    ("rubric_null", {"rubric": None}, r"malformed \(Input should be a valid dictionary"),
    ("rubric_id_a_number", {"rubric": {"id": 7}}, r'malformed \(.*field "id"'),
    ("classes_null", {"classes": None}, r"malformed \(TypeError"),
    ("params_a_list", {"params": [1]}, r"malformed \(TypeError"),
]


@pytest.mark.parametrize(
    "change,match", [b[1:] for b in HASHED_BUT_WRONG], ids=[b[0] for b in HASHED_BUT_WRONG]
)
def test_a_config_of_the_wrong_shape_is_one_line(two_models, tmp_path: Path, change, match) -> None:
    """Values of the wrong type under a valid hash (written by other code): one line, no crash."""
    from tinyjudge._model_dir import identity_sha256

    d = two_models[0].save(tmp_path / "m")

    def edit(meta: dict) -> None:
        meta.update(change)
        meta["sha256"] = identity_sha256(meta)

    _edit(d / "tinyjudge.json", edit)
    with pytest.raises(TinyjudgeError, match=match) as e:
        load_model(d)
    assert "\n" not in str(e.value) and "tinyjudge.json" in str(e.value)


BAD_CALIBRATION = [
    ("method_a_list", {"method": ["temperature"]}, r"method \['temperature'\] is not one of"),
    ("eps_not_a_number", {"eps": "x"}, 'bad "params"'),
    ("params_missing", {"params": None}, 'bad "params"'),
    ("not_utf8", b'{"format": "\xff"}', "not UTF-8"),
    ("nested_deep", b"[" * 100_000, "not valid JSON"),
]


@pytest.mark.parametrize(
    "change,match", [b[1:] for b in BAD_CALIBRATION], ids=[b[0] for b in BAD_CALIBRATION]
)
def test_a_malformed_calibration_is_one_line(
    two_models, xs_set, tmp_path: Path, change, match: str
) -> None:
    d = two_models[0].save(tmp_path / "m")
    _calibrate(two_models[0], d, xs_set)
    path = d / "calibration.json"
    if isinstance(change, bytes):
        path.write_bytes(change)
    else:
        _edit(path, lambda s: s.update(change))
    with pytest.raises(DataError, match=match) as e:
        load_calibrator(d)
    assert "\n" not in str(e.value)


def test_a_calibrated_model_scores_as_its_calibration_says(two_models, xs_set, tmp_path) -> None:
    d = two_models[0].save(tmp_path / "m")
    _calibrate(two_models[0], d, xs_set)
    raw = load_model(d, calibrated=False).predict_proba(xs_set.items[:5])
    cal = load_model(d).predict_proba(xs_set.items[:5])
    assert not np.allclose(raw, cal)


def _rewrite_meta(d: Path, change) -> None:
    """Change tinyjudge.json and stamp it again, as other code than ours could."""
    from tinyjudge._model_dir import write_meta

    meta = json.loads((d / "tinyjudge.json").read_text())
    change(meta)
    del meta["sha256"]
    write_meta(d, meta)


def test_a_model_directory_carries_its_rubric_copy(two_models, tmp_path: Path) -> None:
    d = two_models[0].save(tmp_path / "m")
    meta = json.loads((d / "tinyjudge.json").read_text())
    name = f"rubric.{meta['rubric_hash']}.yaml"
    assert meta["rubric_file"] == name and name in meta["files"]
    assert load_rubric_copy(d / name) == two_models[0].rubric


def test_a_custom_rubric_model_loads_after_its_yaml_moved(xs_set, tmp_path: Path) -> None:
    spec = load_rubric("compliance").model_dump(mode="json") | {"id": "my_compliance"}
    spec["reward_model"]["view"] = "first_user_last_answer"
    yaml_path = tmp_path / "mine.yaml"
    yaml_path.write_text(yaml.safe_dump(spec))
    model = LinearRM(str(yaml_path)).fit(xs_set.items[:200], xs_set.y_hard[:200])
    d = model.save(tmp_path / "m")
    yaml_path.unlink()
    loaded = load_model(d)
    assert loaded.rubric == model.rubric and loaded.view == "first_user_last_answer"
    labels = loaded.score_items(xs_set.items[:3])
    assert {(lab.rubric, lab.rubric_hash) for lab in labels} == {
        ("my_compliance", model.rubric.hash)
    }


def test_an_edited_rubric_copy_is_one_line(two_models, tmp_path: Path) -> None:
    from tinyjudge._digest import file_sha256

    d = two_models[0].save(tmp_path / "m")
    copy = next(d.glob("rubric.*.yaml"))
    copy.write_text(copy.read_text().replace("title: ", "title: Edited ", 1))
    with pytest.raises(TinyjudgeError, match=rf"{copy.name}: SHA-256 differs"):
        load_model(d)
    _rewrite_meta(d, lambda m: m["files"].update({copy.name: file_sha256(copy)}))
    edited = rf"{copy.name}: the rubric's hash is [0-9a-f]{{16}}"
    with pytest.raises(TinyjudgeError, match=edited) as e:
        load_model(d)
    assert "malformed" not in str(e.value)  # its own line, not wrapped as a bad tinyjudge.json


def test_a_model_saved_before_rubric_copies_still_loads(two_models, tmp_path: Path) -> None:
    d = two_models[0].save(tmp_path / "m")
    copy = next(d.glob("rubric.*.yaml"))
    copy.unlink()

    def older(meta: dict) -> None:
        del meta["rubric_file"], meta["files"][copy.name]

    _rewrite_meta(d, older)
    assert load_model(d).rubric == two_models[0].rubric
