"""Agreement statistics against hand-derived values, published values and reference libraries."""

from __future__ import annotations

from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from tinyjudge.audit.agreement import (
    accuracy,
    alpha_from_confusion,
    bootstrap_ci,
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    fleiss_kappa_from_counts,
    kendall,
    krippendorff_alpha,
    pair_labels,
    ratings_matrix,
    spearman,
)
from tinyjudge.datasets.importers import run_import
from tinyjudge.errors import TinyjudgeError

XSTEST_ORDER = ["full_compliance", "partial_refusal", "full_refusal"]


def _xstest(path: Path):
    return run_import("xstest", path).labels


# --- Cohen's kappa -----------------------------------------------------------------------


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"], ids=["plain", "linear", "quad"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_cohen_kappa_equals_sklearn_on_random_ordinal_data(seed: int, weights) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    a = rng.integers(0, k, 300)
    b = np.clip(a + rng.integers(-1, 2, 300), 0, k - 1)
    noise = rng.random(300) < 0.2
    b[noise] = rng.integers(0, k, int(noise.sum()))
    assert cohen_kappa(a, b, weights) == pytest.approx(
        cohen_kappa_score(a, b, weights=weights), abs=1e-9
    )


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"], ids=["plain", "linear", "quad"])
def test_cohen_kappa_equals_sklearn_on_real_xstest(data_dir, weights) -> None:
    labels = _xstest(data_dir("xstest"))
    for other in ("judge:gpt-4", "classifier:string-match", "human:annotator_1"):
        p = pair_labels(labels, "human:final", other)
        ours = cohen_kappa(p.a, p.b, weights, labels=XSTEST_ORDER)
        theirs = cohen_kappa_score(p.a, p.b, weights=weights, labels=XSTEST_ORDER)
        assert ours == pytest.approx(theirs, abs=1e-9)


def test_gpt4_judge_on_xstest_matches_published_orientation(data_dir) -> None:
    # The data README quotes accuracy 0.80 and kappa 0.63 on all 2,250 rows; the shared copy
    # holds 1,500 of them (0.800, 0.629) and the bundled slice 500 (0.796, 0.621), so only
    # the neighbourhood is checked, not the digits.
    p = pair_labels(_xstest(data_dir("xstest")), "human:final", "judge:gpt-4")
    assert 0.75 < accuracy(p.a, p.b) < 0.9
    assert 0.5 < cohen_kappa(p.a, p.b) < 0.75


def test_cohen_kappa_hand_derived() -> None:
    # a = y y n n, b = y n n n: p_o = 3/4. Marginals a (y 2, n 2), b (y 1, n 3):
    # p_e = (2*1 + 2*3) / 16 = 1/2, kappa = (3/4 - 1/2) / (1 - 1/2) = 1/2.
    assert cohen_kappa(["y", "y", "n", "n"], ["y", "n", "n", "n"]) == pytest.approx(0.5)
    # Linear weights on 3 ordered labels, a = 0 1 2, b = 0 2 2: observed disagreement
    # sum |i-j| C_ij = 1 (the 1->2 item). Marginals a (1,1,1), b (1,0,2), n = 3:
    # expected E_ij = a_i b_j / 3; sum |i-j| E_ij = (1/3)[a0(b1*1 + b2*2) + a1(b0*1 + b2*1)
    # + a2(b0*2 + b1*1)] = (1/3)[4 + 3 + 2] = 3; kappa = 1 - 1/3 = 2/3.
    assert cohen_kappa([0, 1, 2], [0, 2, 2], "linear") == pytest.approx(2 / 3)


def test_cohen_kappa_label_order_sets_the_ordinal_scale() -> None:
    a = ["low", "mid", "high", "mid"]
    b = ["low", "high", "high", "low"]
    scale = ["low", "mid", "high"]
    assert cohen_kappa(a, b, "quadratic", labels=scale) == pytest.approx(
        cohen_kappa([0, 1, 2, 1], [0, 2, 2, 0], "quadratic")
    )


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (["x", "x", "x"], ["x", "x", "x"], "nan"),  # one class: chance agreement is 1
        (["x", "y", "z"], ["x", "y", "z"], 1.0),  # identical raters, several classes
        (["x", "y"], ["y", "x"], -1.0),  # perfect disagreement with balanced marginals
    ],
    ids=["one-class", "identical", "opposite"],
)
def test_cohen_kappa_edge_cases(a, b, expected) -> None:
    got = cohen_kappa(a, b)
    if expected == "nan":
        assert np.isnan(got)
    else:
        assert got == pytest.approx(expected)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: cohen_kappa([], []), "no items to compare"),
        (lambda: cohen_kappa(["a"], ["a", "b"]), "same items: got 1 and 2"),
        (lambda: cohen_kappa(["a", None], ["a", "b"]), r"a\[1\] is missing"),
        (lambda: cohen_kappa(["a", "c"], ["a", "b"], labels=["a", "b"]), r"\['c'\] are not in"),
        (lambda: cohen_kappa(["a"], ["a"], weights="cubic"), "weights must be"),
        (lambda: cohen_kappa([1, "a"], [1, "a"]), "cannot order mixed value types"),
        (lambda: accuracy([], []), "no items to compare"),
        (lambda: accuracy([None], ["a"]), r"a\[0\] is missing"),
        (lambda: cohen_kappa(["a"], ["a"], labels=["a", "a"]), "labels must be distinct"),
    ],
    ids=[
        "empty",
        "unequal",
        "missing",
        "unknown",
        "bad-weights",
        "mixed",
        "acc-empty",
        "acc-missing",
        "dup-labels",
    ],
)
def test_pairwise_errors(call, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        call()


def test_confusion_matrix_counts_rows_as_first_rater() -> None:
    cm = confusion_matrix(["a", "a", "b"], ["a", "b", "b"], labels=["a", "b"])
    assert cm.labels == ["a", "b"]
    assert cm.counts.tolist() == [[1, 1], [0, 1]]
    assert cm.to_dict() == {"labels": ["a", "b"], "counts": [[1, 1], [0, 1]]}


# --- Fleiss' kappa --------------------------------------------------------------------------


def test_fleiss_kappa_published_example() -> None:
    # Fleiss (1971) worked example as reproduced on Wikipedia: 10 items, 14 raters,
    # 5 categories; published kappa 0.210.
    table = [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]  # fmt: skip
    assert round(fleiss_kappa_from_counts(table), 3) == 0.210


def test_fleiss_kappa_hand_derived_and_from_ratings() -> None:
    # Items (a,a), (b,b), (a,b), m = 2: P_i = 1, 1, 0 so mean 2/3; p_a = p_b = 1/2, P_e = 1/2;
    # kappa = (2/3 - 1/2) / (1/2) = 1/3.
    assert fleiss_kappa([["a", "a"], ["b", "b"], ["a", "b"]]) == pytest.approx(1 / 3)
    assert fleiss_kappa([["a", "a", "a"], ["b", "b", "b"]]) == pytest.approx(1.0)
    assert np.isnan(fleiss_kappa([["a", "a"], ["a", "a"]]))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: fleiss_kappa([]), "ratings is empty"),
        (lambda: fleiss_kappa([["a", "b"], ["a"]]), "same number of ratings"),
        (lambda: fleiss_kappa([["a", None]]), "missing"),
        (lambda: fleiss_kappa_from_counts([[1, 1], [2, 0], [1, 0]]), "krippendorff_alpha"),
        (lambda: fleiss_kappa_from_counts([[1, 0]]), "at least 2 ratings"),
        (lambda: fleiss_kappa_from_counts([[-1, 3]]), "non-negative"),
    ],
    ids=["empty", "ragged", "missing", "unequal-counts", "one-rater", "negative"],
)
def test_fleiss_errors(call, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        call()


# --- Krippendorff's alpha -------------------------------------------------------------------


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alpha_equals_krippendorff_package_with_missing(seed: int, level: str) -> None:
    rng = np.random.default_rng(seed)
    raters, units = int(rng.integers(2, 7)), int(rng.integers(10, 80))
    truth = rng.integers(1, 6, units)
    data = np.clip(truth + rng.integers(-1, 2, (raters, units)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.3] = np.nan
    expected = krippendorff.alpha(data, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-9)
    # the same matrix with None for missing, as lists of Python numbers
    as_lists = [[None if np.isnan(v) else int(v) for v in row] for row in data]
    assert krippendorff_alpha(as_lists, level) == pytest.approx(expected, abs=1e-9)


def test_alpha_package_doc_examples() -> None:
    # Krippendorff (2011) reliability-data example, as in the krippendorff package's docs.
    nan = None
    data = [
        [nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
        [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
        [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4],
    ]
    assert round(krippendorff_alpha(data, "nominal"), 6) == 0.691358
    assert round(krippendorff_alpha(data, "interval"), 6) == 0.810845
    words = ["very low", "low", "mid", "high", "very high"]
    short = dict(zip(["vl", "l", "m", "h", "vh"], words, strict=True))
    coded = [
        "vl l m m l vl h vl l - - -",
        "vl l m m l l h vl l vh - m",
        "- m m m l m h l l vh vl -",
        "vl l m m l h h vl l vh vl -",
    ]
    ordinal = [[short.get(c) for c in row.split()] for row in coded]
    assert round(krippendorff_alpha(ordinal, "ordinal", labels=words), 3) == 0.815
    assert round(krippendorff_alpha(ordinal, "nominal"), 3) == 0.743


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_equals_package_on_real_xstest_raters(data_dir, level: str) -> None:
    labels = _xstest(data_dir("xstest"))
    sources = ["human:annotator_1", "human:annotator_2", "judge:gpt-4", "classifier:string-match"]
    _, rows = ratings_matrix(labels, sources)
    codes = np.array(
        [[np.nan if v is None else XSTEST_ORDER.index(v) for v in row] for row in rows]
    )
    assert np.isnan(codes).sum() > 0  # GPT-4's free-text answers are missing ratings
    expected = krippendorff.alpha(codes, level_of_measurement=level)
    assert krippendorff_alpha(rows, level, labels=XSTEST_ORDER) == pytest.approx(expected, abs=1e-9)


def test_alpha_hand_derived() -> None:
    # Units (a,a), (a,b), (b,b), two raters: o_aa = 2, o_bb = 2, o_ab = o_ba = 1 (m_u - 1 = 1).
    # n_a = n_b = 3, n = 6; e_ab = e_ba = 3*3/5. alpha = 1 - 2 / (18/5) = 4/9.
    assert krippendorff_alpha([["a", "a", "b"], ["a", "b", "b"]]) == pytest.approx(4 / 9)
    # Two raters with full data: the confusion-matrix shortcut gives the same value.
    assert alpha_from_confusion(np.array([[1, 1], [0, 1]])) == pytest.approx(4 / 9)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_confusion_shortcut_equals_general_form(level: str) -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 4, 120)
    b = np.clip(a + rng.integers(-1, 2, 120), 0, 3)
    cm = confusion_matrix(a, b, labels=[0, 1, 2, 3]).counts
    assert alpha_from_confusion(cm, level) == pytest.approx(
        krippendorff_alpha([a, b], level, labels=[0, 1, 2, 3]), abs=1e-12
    )


def test_alpha_edge_cases() -> None:
    # all raters identical, several values: perfect agreement
    assert krippendorff_alpha([["x", "y", "z"]] * 4) == pytest.approx(1.0)
    # one value everywhere: no variation, alpha undefined
    assert np.isnan(krippendorff_alpha([[1, 1, None], [1, 1, 1]]))
    # units rated once add nothing: same alpha as without them
    assert krippendorff_alpha([["a", "b", "a", None], ["a", "b", "b", "c"]]) == pytest.approx(
        krippendorff_alpha([["a", "b", "a"], ["a", "b", "b"]])
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: krippendorff_alpha([]), "no raters"),
        (lambda: krippendorff_alpha([[1, None], [None, 2]]), "no unit has ratings from two"),
        (lambda: krippendorff_alpha([[1, 2], [1]]), "one entry per unit"),
        (lambda: krippendorff_alpha([["a", "b"], ["a", "a"]], "ordinal"), "needs labels"),
        (lambda: krippendorff_alpha([[1, 2], [1, 2]], "cardinal"), "level must be one of"),
        (lambda: krippendorff_alpha([["a", "q"], ["a", "a"]], labels=["a"]), "not in labels"),
    ],
    ids=["empty", "no-pairable", "ragged", "ordinal-strings", "bad-level", "unknown"],
)
def test_alpha_errors(call, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        call()


# --- rank correlations ----------------------------------------------------------------------


def test_rank_correlations_hand_derived() -> None:
    # ranks (1,2,3) vs (1,3,2): sum d^2 = 2, rho = 1 - 6*2 / (3*8) = 1/2.
    assert spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    # pairs (1,2) and (1,3) concordant, (2,3) discordant: tau = (2 - 1) / 3.
    assert kendall([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))
    with pytest.raises(TinyjudgeError, match="must be numbers"):
        kendall(["a", "b"], [1, 2])


# --- bootstrap ------------------------------------------------------------------------------


def test_bootstrap_is_reproducible_and_covers_the_estimate() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 400)
    b = np.where(rng.random(400) < 0.7, a, rng.integers(0, 3, 400))
    one = bootstrap_ci(cohen_kappa, a, b, n_boot=300, seed=3)
    two = bootstrap_ci(cohen_kappa, a, b, n_boot=300, seed=3)
    assert one == two
    assert one.low < one.estimate < one.high
    assert one.interval() == [one.low, one.high]
    assert one.n_clusters == 400 and one.n_undefined == 0


def test_clustered_bootstrap_accounts_for_copies() -> None:
    # Each of 100 prompts appears 5 times with identical verdicts. Resampling items
    # pretends there are 500 independent items and gives a too-narrow interval;
    # resampling prompts gives about the width of the 100 distinct prompts alone.
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, 100)
    b = np.where(rng.random(100) < 0.75, a, 1 - a)
    groups = np.repeat(np.arange(100), 5)
    a5, b5 = np.repeat(a, 5), np.repeat(b, 5)
    distinct = bootstrap_ci(accuracy, a, b, n_boot=400)
    naive = bootstrap_ci(accuracy, a5, b5, n_boot=400)
    clustered = bootstrap_ci(accuracy, a5, b5, groups=groups, n_boot=400)
    width = lambda ci: ci.high - ci.low  # noqa: E731
    assert clustered.n_clusters == 100
    assert width(naive) < 0.7 * width(clustered)
    assert width(clustered) == pytest.approx(width(distinct), rel=0.25)


def test_bootstrap_counts_undefined_resamples() -> None:
    # With 3 items and one odd label, some resamples hold one class only: kappa is NaN there.
    ci = bootstrap_ci(cohen_kappa, ["a", "a", "b"], ["a", "a", "b"], n_boot=200)
    assert 0 < ci.n_undefined < 200
    assert ci.low == pytest.approx(1.0) and ci.high == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "arrays", "match"),
    [
        ({}, (), "at least one array"),
        ({}, ([1, 2], [1]), "equally long"),
        ({}, ([],), "empty sample"),
        ({"level": 1.5}, ([1, 2],), "level must be in"),
        ({"n_boot": 0}, ([1, 2],), "n_boot must be"),
        ({"groups": [1]}, ([1, 2],), "groups has 1 entries for 2"),
    ],
    ids=["none", "unequal", "empty", "level", "n_boot", "groups"],
)
def test_bootstrap_errors(kwargs, arrays, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        bootstrap_ci(lambda *x: 0.0, *arrays, **kwargs)


def test_clustered_bootstrap_keeps_its_coverage_when_items_share_prompts() -> None:
    # 200 seeded trials: 40 prompts x 5 answers, and a judge whose chance of being right
    # depends on the prompt (some prompts it always gets, some it never does). The true
    # accuracy is 0.7. Resampling prompts keeps the 90% interval near 90% coverage;
    # resampling answers as if independent covers far less often.
    rng = np.random.default_rng(2024)
    hits = {"clustered": 0, "naive": 0}
    groups = np.repeat(np.arange(40), 5)
    for trial in range(200):
        p_prompt = rng.beta(0.7, 0.3, 40)  # mean 0.7, strongly prompt-dependent
        right = (rng.random(200) < p_prompt[groups]).astype(float)
        stat = lambda x: float(np.mean(x))  # noqa: E731
        for name, g in (("clustered", groups), ("naive", None)):
            ci = bootstrap_ci(stat, right, groups=g, n_boot=200, level=0.9, seed=trial)
            hits[name] += ci.low <= 0.7 <= ci.high
    assert hits["clustered"] / 200 >= 0.84
    assert hits["naive"] / 200 <= 0.7
