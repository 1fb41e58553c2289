"""Calibrators, calibration metrics, save/load and honest (cross-fitted) evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.isotonic import IsotonicRegression

from tinyjudge.audit.agreement import pair_labels
from tinyjudge.calibrate import (
    CALIBRATORS,
    IsotonicCalibration,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
    brier_score,
    calibration_metrics,
    cross_fit,
    expected_calibration_error,
    is_one_hot,
    load_calibrator,
    make_calibrator,
    max_calibration_error,
    nll,
    probs_matrix,
    reliability_diagram,
    save_calibrator,
)
from tinyjudge.calibrate import _metrics as metrics_mod
from tinyjudge.datasets.importers import run_import
from tinyjudge.errors import DataError, TinyjudgeError
from tinyjudge.records import Label

METHODS = sorted(CALIBRATORS)


def _source(n: int, k: int, sharpen: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """True class probabilities from a Dirichlet; the source reports them sharpened
    (sharpen > 1: overconfident) or flattened (< 1: underconfident)."""
    rng = np.random.default_rng(seed)
    true = rng.dirichlet(np.full(k, 0.7), n)
    y = (rng.random(n)[:, None] > np.cumsum(true, axis=1)).sum(axis=1)
    logits = np.log(true) * sharpen
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    return P / P.sum(axis=1, keepdims=True), y


# --- properties on held-out folds -----------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("sharpen", "k"), [(3.0, 3), (0.4, 2), (2.0, 4)], ids=["over-3cls", "under-2cls", "over-4cls"]
)
def test_cross_fitted_calibration_improves_a_miscalibrated_source(method, sharpen, k) -> None:
    P, y = _source(2000, k, sharpen, seed=k)
    groups = np.arange(len(y)) // 4  # four items per "prompt", never split across folds
    r = cross_fit(method, P, y, groups=groups, n_splits=5, n_boot=50)
    assert np.allclose(r.after.sum(axis=1), 1.0)
    assert (r.after >= 0).all()
    before, after = r.metrics_before, r.metrics_after
    assert after["ece"].estimate < before["ece"].estimate
    assert after["brier"].estimate <= before["brier"].estimate
    assert after["nll"].estimate <= before["nll"].estimate
    for g in np.unique(groups)[:50]:
        assert len(set(r.fold[groups == g])) == 1


def test_real_one_hot_judge_calibrated_on_held_out_prompts(data_dir) -> None:
    # GPT-4's XSTest verdicts are one-hot: "100% sure" even where people disagree with it.
    imported = run_import("xstest", data_dir("xstest"))
    by_id = {it.id: it for it in imported.items}
    p = pair_labels(imported.labels, "human:final", "judge:gpt-4")
    judge = {lab.item_id: lab for lab in imported.labels if lab.source == "judge:gpt-4"}
    classes = ["full_compliance", "full_refusal", "partial_refusal"]
    P = probs_matrix([judge[i] for i in p.item_ids], classes)
    assert is_one_hot(P)
    groups = [by_id[i].get("metadata.prompt_id") for i in p.item_ids]
    for method in METHODS:
        r = cross_fit(method, P, p.a, classes=classes, groups=groups, n_boot=50)
        assert np.allclose(r.after.sum(axis=1), 1.0)
        assert r.metrics_after["ece"].estimate < r.metrics_before["ece"].estimate
        assert r.metrics_after["brier"].estimate < r.metrics_before["brier"].estimate


def test_temperature_recovers_a_known_temperature() -> None:
    P, y = _source(6000, 3, sharpen=2.5, seed=11)
    cal = TemperatureScaling().fit(P, y)
    assert cal.temperature_ == pytest.approx(2.5, rel=0.1)


# --- scikit-learn estimator conventions ---------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_estimator_conventions(method: str) -> None:
    P, y = _source(300, 3, 2.0, seed=1)
    cal = make_calibrator(method)
    with pytest.raises(NotFittedError):
        cal.predict_proba(P)
    assert cal.fit(P, y) is cal
    fitted = [a for a in vars(cal) if a.endswith("_") and not a.startswith("_")]
    assert "classes_" in fitted and len(fitted) >= 3
    twin = clone(cal)
    assert not hasattr(twin, "classes_") and twin.get_params() == cal.get_params()
    out = cal.predict_proba(P)
    assert out.shape == P.shape and np.allclose(out.sum(axis=1), 1.0)
    assert set(cal.predict(P)) <= {0, 1, 2}


@pytest.mark.parametrize("method", METHODS)
def test_one_hot_sources_and_string_classes(method: str) -> None:
    classes = ["no", "yes"]
    P = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]] * 20)
    y = ["no", "yes", "yes", "yes", "no"] * 20
    cal = make_calibrator(method, classes).fit(P, y)
    out = cal.predict_proba(P)
    assert np.isfinite(out).all() and np.allclose(out.sum(axis=1), 1.0)
    # "yes" verdicts were always right, "no" verdicts right 2 times in 3
    if method != "temperature":  # one temperature cannot treat the two verdicts differently
        assert out[0, 0] == pytest.approx(2 / 3, abs=0.08)
    assert list(cal.classes_) == classes
    assert cal.predict(P[:2]).tolist() == ["no", "yes"]


def test_platt_and_vector_stay_finite_when_a_class_never_occurs() -> None:
    P, _ = _source(200, 3, 1.0, seed=2)
    y = np.zeros(200, dtype=int)
    y[::2] = 1  # class 2 never occurs
    for cal in (PlattScaling(), VectorScaling()):
        out = cal.fit(P, y).predict_proba(P)
        assert np.isfinite(out).all() and out[:, 2].max() < 0.2


def test_isotonic_maps_equal_sklearn_isotonic_regression() -> None:
    P, y = _source(400, 2, 2.0, seed=3)
    cal = IsotonicCalibration(eps=1e-12).fit(P, y)
    ref = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(P[:, 1], y == 1)
    grid = np.linspace(0, 1, 101)
    xs, ys = cal.thresholds_[1]
    assert np.allclose(np.interp(grid, xs, ys), ref.predict(grid))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: TemperatureScaling().fit([[0.5, 0.5]], [0, 1]), "1 rows but y has 2"),
        (lambda: TemperatureScaling().fit([[0.5, 0.6]], [0]), "row 0 sums to 1.1000"),
        (lambda: TemperatureScaling().fit([[1.0]], [0]), "k >= 2 classes"),
        (lambda: TemperatureScaling().fit([[0.5, 0.5]], [2]), "y holds 2"),
        (lambda: TemperatureScaling().fit([[0.5, 0.5]], ["x"]), "y holds 'x'"),
        (lambda: TemperatureScaling(classes=["a"]).fit([[0.5, 0.5]], ["a"]), "1 names for 2"),
        (lambda: TemperatureScaling().fit(np.zeros((0, 2)), []), "zero items"),
        (lambda: make_calibrator("beta"), r"unknown calibration method 'beta'.*isotonic"),
        (lambda: save_calibrator(TemperatureScaling(), "/tmp"), "fit the calibrator"),
        (
            lambda: TemperatureScaling().fit([[0.5, 0.5]] * 2, [0, 1]).predict_proba([[1, 0, 0]]),
            "has 3 columns, the calibrator 2",
        ),
    ],
    ids=["len", "sum", "one-col", "bad-index", "name-no-classes", "classes-len", "empty",
         "unknown-method", "save-unfitted", "columns"],
)  # fmt: skip
def test_calibrator_errors(call, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        call()


# --- save / load ----------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_save_load_round_trip_without_pickle(tmp_path: Path, method: str) -> None:
    P, y = _source(300, 3, 2.0, seed=4)
    classes = ["a", "b", "c"]
    cal = make_calibrator(method, classes).fit(P, [classes[i] for i in y])
    path = save_calibrator(cal, tmp_path / "model")
    state = json.loads(path.read_text())
    assert state["method"] == method and state["classes"] == classes
    back = load_calibrator(tmp_path / "model")
    assert type(back) is type(cal)
    assert np.allclose(back.predict_proba(P), cal.predict_proba(P), atol=1e-12)
    assert list(back.predict(P[:5])) == list(cal.predict(P[:5]))


def test_load_calibrator_absent_and_broken(tmp_path: Path) -> None:
    assert load_calibrator(tmp_path) is None
    f = tmp_path / "calibration.json"
    cases = [
        ("{not json", "not valid JSON"),
        ('{"format": "other/9"}', "expected 'tinyjudge.calibration/1'"),
        ('{"format": "tinyjudge.calibration/1", "method": "beta"}', "method 'beta' is not one"),
        ('{"format": "tinyjudge.calibration/1", "method": "vector", "classes": ["a", "b"], '
         '"params": {"scale": [1, 1]}}', "bad \"params\" for vector"),
    ]  # fmt: skip
    for text, match in cases:
        f.write_text(text)
        with pytest.raises(DataError, match=match):
            load_calibrator(tmp_path)


def test_probs_matrix_from_labels() -> None:
    labs = [
        Label(item_id="1", rubric="r", source="rm:x", label="b", probs={"a": 0.25, "b": 0.75}),
        Label(item_id="2", rubric="r", source="judge:m", label="a"),
    ]
    assert probs_matrix(labs, ["a", "b"]).tolist() == [[0.25, 0.75], [1.0, 0.0]]
    with pytest.raises(TinyjudgeError, match=r"gives class 'b', not one of \['a', 'c'\]"):
        probs_matrix(labs, ["a", "c"])
    bad = Label(item_id="3", rubric="r", source="judge:m", status="unscored", reason="x")
    with pytest.raises(TinyjudgeError, match="is unscored"):
        probs_matrix([bad], ["a", "b"])


# --- metrics --------------------------------------------------------------------------------


def test_metrics_hand_derived() -> None:
    y = [0, 0, 1, 1]
    P = [[0.9, 0.1], [0.9, 0.1], [0.9, 0.1], [0.2, 0.8]]
    # Equal-width bins: confidences 0.9 (x3, 2 correct) and 0.8 (x1, correct) fall in
    # different bins: ECE = 3/4 |2/3 - 0.9| + 1/4 |1 - 0.8| = 0.175 + 0.05 = 0.225.
    assert expected_calibration_error(y, P) == pytest.approx(0.225)
    # MCE = max(|2/3 - 0.9|, |1 - 0.8|) = 0.2333...
    assert max_calibration_error(y, P) == pytest.approx(0.9 - 2 / 3)
    # Two equal-mass bins of two sorted confidences: {0.8, 0.9} (both correct, mean 0.85)
    # and {0.9, 0.9} (one correct): ECE = 1/2 |1 - 0.85| + 1/2 |1/2 - 0.9| = 0.075 + 0.2.
    assert expected_calibration_error(y, P, n_bins=2, strategy="quantile") == pytest.approx(0.275)
    # Brier: rows (0.1^2 * 2) x2, (0.9^2 * 2), (0.2^2 * 2): (0.02 + 0.02 + 1.62 + 0.08) / 4.
    assert brier_score(y, P) == pytest.approx(1.74 / 4)
    # NLL: -(2 log 0.9 + log 0.1 + log 0.8) / 4
    assert nll(y, P) == pytest.approx(-(2 * np.log(0.9) + np.log(0.1) + np.log(0.8)) / 4)
    # A one-hot mistake is finite thanks to the clip: -log(1e-6) / 1
    assert nll([1], [[1.0, 0.0]]) == pytest.approx(-np.log(1e-6))


def test_perfectly_calibrated_source_has_small_ece() -> None:
    P, y = _source(20000, 3, 1.0, seed=5)
    assert expected_calibration_error(y, P) < 0.02
    assert expected_calibration_error(y, P, strategy="quantile") < 0.02


def test_calibration_metrics_have_intervals() -> None:
    P, y = _source(500, 3, 2.0, seed=6)
    m = calibration_metrics(y, P, groups=np.arange(500) // 5, n_boot=100)
    assert set(m) == {"ece", "ece_mass", "mce", "brier", "nll"}
    for ci in m.values():
        assert ci.low <= ci.estimate <= ci.high and ci.n_clusters == 100


def test_ece_estimate_lies_inside_its_own_interval() -> None:
    """The demo card showed ECE 0.0404 outside its interval [0.0426, 0.1009]: a resample's
    repeated rows make every bin noisier, so the plain percentile interval of a small,
    well-calibrated sample sits above its ECE. The reported interval brackets it."""
    from tinyjudge._stats import bootstrap_many

    missed = 0
    for seed in range(10):
        P, y = _source(100, 3, 1.0, seed=seed)
        groups = np.arange(100) // 5
        plain = bootstrap_many(
            {"ece": metrics_mod.METRICS["ece"]}, y, P, groups=groups, n_boot=200
        )["ece"]
        missed += not plain.low <= plain.estimate <= plain.high
        m = calibration_metrics(y, P, groups=groups, n_boot=200)
        for name, ci in m.items():
            assert 0.0 <= ci.low <= ci.estimate <= ci.high, (seed, name, ci)
        assert m["ece"].estimate == pytest.approx(expected_calibration_error(y, P))
    assert missed >= 1  # the case the shift exists for does occur here


@pytest.mark.parametrize(
    ("y", "P", "match"),
    [
        ([0], [[0.5, 0.5], [0.5, 0.5]], "one class index per row"),
        ([], np.zeros((0, 2)), "no items"),
        ([0.5], [[0.5, 0.5]], "class indices 0..1"),
        ([2], [[0.5, 0.5]], "class indices 0..1"),
        ([0], [[0.5, 0.7]], "sums to 1.2000"),
        ([0], [[-0.1, 1.1]], r"probabilities in \[0, 1\]"),
    ],
    ids=["length", "empty", "float-y", "index-range", "sum", "range"],
)
def test_metric_errors(y, P, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        brier_score(y, P)


def test_bin_option_errors() -> None:
    with pytest.raises(TinyjudgeError, match="n_bins must be at least 1"):
        expected_calibration_error([0], [[0.6, 0.4]], n_bins=0)
    with pytest.raises(TinyjudgeError, match='strategy must be "uniform" or "quantile"'):
        expected_calibration_error([0], [[0.6, 0.4]], strategy="kmeans")


def test_cross_fit_errors() -> None:
    P, y = _source(20, 2, 1.0, seed=7)
    with pytest.raises(TinyjudgeError, match="n_splits=5 needs at least as many groups, got 2"):
        cross_fit("platt", P, y, groups=[0, 1] * 10)
    with pytest.raises(TinyjudgeError, match="n_splits must be at least 2"):
        cross_fit("platt", P, y, n_splits=1)


def test_reliability_diagram_png(tmp_path: Path) -> None:
    P, y = _source(1000, 3, 3.0, seed=8)
    after = TemperatureScaling().fit(P, y).predict_proba(P)
    png = reliability_diagram(y, {"before": P, "after": after}, tmp_path / "rel.png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert (tmp_path / "rel.png").read_bytes() == png


@pytest.mark.parametrize(
    ("sharpen", "method", "ok"),
    [(1.0, "isotonic", False), (3.0, "temperature", True)],
    ids=["calibrated-source-isotonic-worse", "overconfident-source-temperature-helps"],
)
def test_compare_methods_against_no_calibration(sharpen: float, method: str, ok: bool) -> None:
    from tinyjudge.calibrate import compare_methods

    P, y = _source(200, 3, sharpen, seed=0)
    check = compare_methods(method, P, y, groups=np.arange(200) // 4, n_boot=10)
    assert set(check.table) == {"identity", "temperature", "vector", "platt", "isotonic"}
    assert check.ok is ok
    ident, mine = check.table["identity"], check.table[method]
    # worse only where it is higher (and, alone, beyond the paired bootstrap's noise)
    assert set(check.worse) <= {m for m in ("nll", "ece") if mine[m] > ident[m]}
    # the figures are the cross-fitted ones, on the same rows as the identity's
    assert mine["ece"] == pytest.approx(check.result.metrics_after["ece"].estimate)
    assert ident["nll"] == pytest.approx(check.result.metrics_before["nll"].estimate)
    assert check.table[check.best]["nll"] <= ident["nll"]
    if ok:
        assert check.best != "identity" and "no worse" in check.message()
    else:
        named = "no calibration" if check.best == "identity" else f"method {check.best!r}"
        assert "worse than none" in check.message() and f"{named} is better" in check.message()
