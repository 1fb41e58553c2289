"""The linear tier on the real XSTest sample: fit, predict, save, load, tamper checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import cohen_kappa_score

from tinyjudge.distill import LinearRM, TrainingSet, check_model_dir, grouped_split, load_model
from tinyjudge.errors import TinyjudgeError


@pytest.fixture(scope="module")
def fitted(xs_set: TrainingSet) -> tuple[LinearRM, TrainingSet, np.ndarray]:
    train, val = grouped_split(xs_set.items, "metadata.prompt_id", 0.3, seed=0)
    model = LinearRM("compliance", name="lin-test").fit(
        [xs_set.items[i] for i in train], [xs_set.y_hard[i] for i in train]
    )
    return model, xs_set, val


def test_linear_learns_the_teacher(fitted) -> None:
    model, ts, val = fitted
    assert model.classes_ == ["full_compliance", "full_refusal", "partial_refusal"]
    P = model.predict_proba([ts.items[i] for i in val])
    assert P.shape == (len(val), 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    kappa = cohen_kappa_score(
        [ts.y_hard[i] for i in val], model.predict([ts.items[i] for i in val])
    )
    # 350 training rows of the sample: well above chance, below the full-data bar.
    assert kappa > 0.5


def test_score_items_gives_rm_labels(fitted) -> None:
    model, ts, _ = fitted
    labels = model.score_items(ts.items[:10], batch_size=3)
    assert [lab.item_id for lab in labels] == [it.id for it in ts.items[:10]]
    for lab in labels:
        assert lab.source == "rm:lin-test" and lab.rubric == "compliance"
        assert lab.rubric_hash == model.rubric.hash
        assert lab.label == max(lab.probs, key=lab.probs.get)
        assert lab.score == pytest.approx(lab.probs["full_refusal"] + lab.probs["partial_refusal"])


def test_save_then_load_gives_identical_scores(fitted, tmp_path: Path) -> None:
    model, ts, _ = fitted
    model.save(tmp_path / "m")
    names = sorted(p.name for p in (tmp_path / "m").iterdir())
    copy = f"rubric.{model.rubric.hash}.yaml"
    assert names == ["README.md", copy, "tinyjudge.json", "vocab.json", "weights.safetensors"]
    again = load_model(tmp_path / "m")
    assert again.name == "lin-test" and again.classes_ == model.classes_
    np.testing.assert_array_equal(again.predict_proba(ts.items), model.predict_proba(ts.items))
    card = (tmp_path / "m" / "README.md").read_text()
    assert model.rubric.hash in card and model.card_["data_hash"] in card


def test_soft_targets_and_clone(xs_set: TrainingSet) -> None:
    items = xs_set.items[:200]
    Y = xs_set.y_soft[:200] * 0.8 + 0.2 / 3  # a teacher that hedges
    model = clone(LinearRM("compliance", C=2.0)).fit(items, Y)
    hard = LinearRM("compliance", C=2.0).fit(items, xs_set.y_hard[:200])
    assert model.get_params()["C"] == 2.0
    # Hedged targets give less confident predictions than hard ones.
    assert (
        model.predict_proba(items).max(axis=1).mean() < hard.predict_proba(items).max(axis=1).mean()
    )


@pytest.mark.parametrize(
    ("y", "match"),
    [
        (["full_compliance", "nope"], r"label 'nope' is not offered by rubric 'compliance'"),
        (np.ones((2, 2)), r"shape \(n_items, n_labels\) = \(2, 3\), got \(2, 2\)"),
        (["full_compliance"], r"got 2 items but 1 labels"),
    ],
    ids=["unknown-label", "soft-shape", "length"],
)
def test_fit_rejects_bad_targets(xs_set: TrainingSet, y, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        LinearRM().fit(xs_set.items[:2], y)


def test_predict_before_fit_is_an_error(xs_set: TrainingSet) -> None:
    with pytest.raises(TinyjudgeError, match="not fitted; call fit"):
        LinearRM().predict(xs_set.items[:1])


def _tamper_weights(d: Path) -> None:
    blob = bytearray((d / "weights.safetensors").read_bytes())
    blob[-1] ^= 0x01
    (d / "weights.safetensors").write_bytes(bytes(blob))


def _bump_version(d: Path) -> None:
    meta = json.loads((d / "tinyjudge.json").read_text())
    meta["version"] = 99
    (d / "tinyjudge.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("spoil", "match"),
    [
        (_tamper_weights, r"weights.safetensors: SHA-256 differs"),
        (_bump_version, r"version 99; this tinyjudge reads .* versions 2 and 3"),
        (lambda d: (d / "tinyjudge.json").unlink(), r"not a tinyjudge model directory"),
        (lambda d: (d / "vocab.json").unlink(), r"missing vocab.json"),
        (lambda d: (d / "tinyjudge.json").write_text("{oops"), r"tinyjudge.json:1: not valid"),
    ],
    ids=["tampered-weights", "other-version", "no-meta", "missing-file", "bad-json"],
)
def test_load_rejects_spoiled_dirs(fitted, tmp_path: Path, spoil, match: str) -> None:
    model, _, _ = fitted
    d = model.save(tmp_path / "m")
    assert check_model_dir(d)["tier"] == "linear"
    spoil(d)
    with pytest.raises(TinyjudgeError, match=match):
        load_model(d)
    with pytest.raises(TinyjudgeError, match=match):  # the same checks, without the weights
        check_model_dir(d)


def test_load_model_applies_a_saved_calibration(fitted, tmp_path: Path) -> None:
    from tinyjudge.calibrate import TemperatureScaling, save_calibrator

    model, ts, val = fitted
    d = model.save(tmp_path / "m")
    items = [ts.items[i] for i in val]
    raw = model.predict_proba(items)
    y = [model.classes_.index(ts.y_hard[i]) for i in val]
    cal = TemperatureScaling().fit(raw, y)
    save_calibrator(cal, d)
    calibrated = load_model(d)
    np.testing.assert_allclose(calibrated.predict_proba(items), cal.predict_proba(raw), atol=1e-9)
    np.testing.assert_array_equal(load_model(d, calibrated=False).predict_proba(items), raw)
    assert not np.allclose(calibrated.predict_proba(items), raw)


def test_text_features_equal_sklearn_tfidf(xs_set: TrainingSet) -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    from tinyjudge.distill._linear import _SPECS, TextFeatures, _field_texts

    train, test = xs_set.items[:300], xs_set.items[300:360]
    feats = TextFeatures(opening_chars=150).fit(train)
    ours = feats.transform(test).toarray()
    fields_train, fields_test = _field_texts(train, 150), _field_texts(test, 150)
    start = 0
    for name, vocab in feats.vocab_.items():
        spec = _SPECS[name]
        ref = TfidfVectorizer(
            analyzer=spec["analyzer"],
            ngram_range=spec["ngram_range"],
            min_df=2,
            max_features=50000,
            sublinear_tf=True,
        ).fit(fields_train[spec["field"]])
        assert ref.vocabulary_ == vocab
        block = ours[:, start : start + len(vocab)]
        np.testing.assert_allclose(
            block, ref.transform(fields_test[spec["field"]]).toarray(), atol=1e-6
        )
        start += len(vocab)
    assert start == ours.shape[1]


def test_text_features_refit_uses_the_new_vocabulary(xs_set: TrainingSet) -> None:
    from tinyjudge.distill._linear import TextFeatures

    feats = TextFeatures().fit(xs_set.items[:200])
    feats.transform(xs_set.items[:5])  # builds counters bound to the first vocabulary
    feats.fit(xs_set.items[200:260])
    again = TextFeatures().fit(xs_set.items[200:260])
    np.testing.assert_array_equal(
        feats.transform(xs_set.items[:20]).toarray(), again.transform(xs_set.items[:20]).toarray()
    )


@pytest.fixture(scope="module")
def two_class_head(xs) -> tuple[LinearRM, list, list[str], list[str]]:
    """A linear head trained on GPT-4's labels without partial_refusal (2 of the rubric's 3
    labels), and people's labels on held-out prompts that do use partial_refusal."""
    from tinyjudge.records import index_labels

    table = index_labels(xs.labels)
    judge, human = table["judge:gpt-4"], table["human:final"]
    train_ids, cal_ids = grouped_split(xs.items, "metadata.prompt_id", 0.4, seed=1)
    train = [
        xs.items[i]
        for i in train_ids
        if judge[xs.items[i].id].status == "ok" and judge[xs.items[i].id].label != "partial_refusal"
    ]
    model = LinearRM("compliance").fit(train, [judge[it.id].label for it in train])
    cal = [xs.items[i] for i in cal_ids]
    return (
        model,
        cal,
        [human[it.id].label for it in cal],
        [it.get("metadata.prompt_id") for it in cal],
    )


def test_a_class_absent_from_training_gets_a_small_probability(two_class_head) -> None:
    model, cal, _, _ = two_class_head
    assert model.head_.present_.tolist() == [0, 1]
    P = model.predict_proba(cal)
    assert P.shape == (len(cal), 3)
    n_train = model.card_["n_train"]
    np.testing.assert_allclose(P[:, 2], 1.0 / (n_train + 3))
    assert (P > 0).all() and (P < 1).all()
    np.testing.assert_allclose(P.sum(axis=1), 1.0)


def test_temperature_on_a_two_class_head_does_not_explode_ece(two_class_head) -> None:
    """The reported case: T fitted against people who use the absent label raised the
    held-out ECE (0.03 -> 0.25 on the demo) when that label had probability 0."""
    from tinyjudge.calibrate import cross_fit

    model, cal, y, groups = two_class_head
    cf = cross_fit(
        "temperature",
        model.predict_proba(cal),
        y,
        classes=model.classes_,
        groups=groups,
        n_boot=20,
    )
    assert "partial_refusal" in y
    before, after = cf.metrics_before["ece"].estimate, cf.metrics_after["ece"].estimate
    assert after < before + 0.02, (before, after)


def test_saturated_logits_give_no_exact_zero_or_one(fitted) -> None:
    model, ts, _ = fitted
    sharp = clone(model).set_params(C=1e6).fit(ts.items[:200], ts.y_hard[:200])
    P = sharp.predict_proba(ts.items[:200])
    assert (P > 0).all() and (P < 1).all()


def test_calibrated_scores_are_a_source_of_their_own(fitted) -> None:
    from tinyjudge.calibrate import TemperatureScaling

    model, ts, _ = fitted
    items = ts.items[:20]
    y = [model.classes_.index(lab) for lab in ts.y_hard[:20]]
    P = model.predict_proba(items)
    calibrated = copy.copy(model)
    calibrated.calibrator_ = TemperatureScaling().fit(P, y)
    plain, cal = model.score_items(items[:1])[0], calibrated.score_items(items[:1])[0]
    assert (plain.source, cal.source) == ("rm:lin-test", "rm:lin-test+cal")


def test_pairwise_items_are_refused_naming_the_tier(xs_set: TrainingSet) -> None:
    from tinyjudge.cli import in_flags
    from tinyjudge.errors import UsageError
    from tinyjudge.records import Item, Message

    pair = Item(
        id="pair-0",
        context=[Message(role="user", content="Answer the request.")],
        response_a=[Message(role="assistant", content="Yes.")],
        response_b=[Message(role="assistant", content="No.")],
    )
    with pytest.raises(
        UsageError, match=r"is pairwise; the linear tier .*use tier transformer"
    ) as e:
        LinearRM("compliance").fit([pair, *xs_set.items[:3]], ["full_refusal"] * 4)
    assert e.value.param == "tier" and "--" not in str(e.value)
    assert "use --tier transformer (Bradley-Terry) for pairs" in in_flags(e.value)
