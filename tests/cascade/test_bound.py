"""The exact binomial bound against hand-derived and textbook values; fixed-sequence testing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tinyjudge.cascade import choose_threshold, fewest_to_pass
from tinyjudge.cascade._bound import clopper_pearson, clopper_pearson_lower


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) >= k), summed term by term."""
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1))


@pytest.mark.parametrize(("n", "delta"), [(1, 0.1), (10, 0.1), (45, 0.1), (200, 0.05)])
def test_all_agreeing_gives_delta_to_the_one_over_n(n: int, delta: float) -> None:
    # P(X >= n) = p**n = delta  =>  p = delta ** (1 / n)
    assert clopper_pearson_lower(n, n, delta) == pytest.approx(delta ** (1 / n), rel=1e-10)


def test_the_textbook_interval_of_nine_in_ten() -> None:
    # the exact 95% interval of 9/10 printed in every table: [0.5550, 0.9975]
    low, high = clopper_pearson(9, 10, 0.05)
    assert (round(low, 4), round(high, 4)) == (0.5550, 0.9975)


@pytest.mark.parametrize(
    ("k", "n", "delta"),
    [(3, 10, 0.1), (53, 54, 0.1), (95, 100, 0.05), (380, 400, 0.1), (1, 2, 0.2)],
    ids=["few", "one-miss", "95-of-100", "large", "tiny"],
)
def test_the_bound_is_where_the_binomial_tail_equals_delta(k: int, n: int, delta: float) -> None:
    low = clopper_pearson_lower(k, n, delta)
    assert binomial_tail(k, n, low) == pytest.approx(delta, rel=1e-8)
    # and it is the largest such p: just above it the tail is past delta
    assert binomial_tail(k, n, low + 1e-6) > delta


def test_no_agreement_or_no_items_bound_zero() -> None:
    assert clopper_pearson_lower(0, 50, 0.1) == 0.0
    assert clopper_pearson_lower(0, 0, 0.1) == 0.0


def test_fewest_to_pass_is_the_first_n_whose_perfect_record_passes() -> None:
    for target, delta in [(0.9, 0.1), (0.95, 0.1), (0.98, 0.05)]:
        n = fewest_to_pass(target, delta)
        assert clopper_pearson_lower(n, n, delta) >= target
        assert clopper_pearson_lower(n - 1, n - 1, delta) < target


def test_the_scan_stops_at_the_first_failure_though_a_later_threshold_would_pass() -> None:
    # 60 sure and right, 20 less sure and wrong, then 500 least sure and right: over all
    # 580 the bound passes (560/580), but the sequence must stop where the wrong ones enter
    conf = np.r_[
        np.linspace(0.999, 0.99, 60), np.linspace(0.98, 0.97, 20), np.linspace(0.9, 0.6, 500)
    ]
    ok = np.r_[np.ones(60, bool), np.zeros(20, bool), np.ones(500, bool)]
    assert clopper_pearson_lower(560, 580, 0.1) >= 0.95
    choice = choose_threshold(conf, ok, target=0.95, delta=0.1, step=0.01)
    assert choice.guaranteed and choice.chosen is not None
    assert choice.chosen.n <= 60 and choice.threshold is not None and choice.threshold >= 0.99
    assert not choice.steps[-1].passed and all(s.passed for s in choice.steps[:-1])


def test_no_threshold_when_too_few_or_too_many_disagree() -> None:
    few = choose_threshold([0.99] * 20, [True] * 20, target=0.95, delta=0.1)
    assert not few.guaranteed and few.steps == []  # 20 < 45: no test could pass
    bad = choose_threshold(np.linspace(1, 0.5, 300), [True, False] * 150, target=0.95, delta=0.1)
    assert not bad.guaranteed and bad.threshold is None and len(bad.steps) == 1


def test_the_guarantee_holds_at_its_rate_on_simulated_calibration_sets() -> None:
    # confidence c ~ U(0.5, 1) and P(agree | c) = c: agreement kept at threshold t is
    # (1 + t) / 2, so a threshold below 2 * target - 1 breaks the target
    rng = np.random.default_rng(0)
    target, delta, trials = 0.9, 0.1, 400
    broken = kept = 0
    for _ in range(trials):
        c = rng.uniform(0.5, 1.0, 600)
        choice = choose_threshold(c, rng.random(600) < c, target=target, delta=delta)
        t = choice.threshold
        broken += t is not None and t < 2 * target - 1
        kept += t is not None
    assert broken / trials <= delta  # the guarantee (it is conservative: far fewer fail)
    assert kept / trials > 0.5  # and it is not bought by keeping nothing


def _clustered_calibration(rng: np.random.Generator, groups: int, size: int, icc: float):
    """``groups`` prompts of ``size`` answers: a prompt's confidence u ~ U(0.5, 1) is shared
    by its answers (plus a little noise), and so, with chance ``icc``, is one agreement draw
    (else each answer draws its own); P(agree | u) = u either way, so the agreement kept at
    threshold t is (1 + t) / 2 for any icc: a threshold below 2 * target - 1 breaks it."""
    u = np.repeat(rng.uniform(0.5, 1.0, groups), size)
    conf = np.clip(u + rng.normal(0.0, 0.005, groups * size), 0.5, 1.0)
    shared = np.repeat(rng.random(groups), size) < u
    own = rng.random(groups * size) < u
    block = np.repeat(rng.random(groups) < icc, size)
    return conf, np.where(block, shared, own), np.repeat(np.arange(groups), size)


@pytest.mark.parametrize("bound", ["cluster", "exact"])
def test_the_group_bounds_keep_their_promise_where_the_item_bound_breaks_it(bound: str) -> None:
    # 150 prompts of 8 answers whose agreement is shared within a prompt 90% of the time:
    # 1,200 items worth about 170. The binomial bound takes them as 1,200 and picks
    # thresholds that break the target far more often than delta; a bound over the
    # prompts (Korn-Graubard, or one random answer per prompt) does not.
    rng = np.random.default_rng(41)
    target, delta, reps = 0.9, 0.1, 300
    broken = {"item": 0, bound: 0}
    kept = {"item": 0, bound: 0}
    for _ in range(reps):
        conf, ok, g = _clustered_calibration(rng, 150, 8, icc=0.9)
        for how in broken:
            choice = choose_threshold(conf, ok, target=target, delta=delta, groups=g,
                                      bound=how)  # type: ignore[arg-type]  # fmt: skip
            t = choice.threshold
            broken[how] += t is not None and t < 2 * target - 1
            kept[how] += t is not None
    # decisive at 300 repetitions: the standard error of a 0.1 share is 0.017
    assert broken["item"] / reps > delta + 3 * 0.017, broken
    assert broken[bound] / reps <= delta, broken
    assert kept[bound] / reps > 0.2, kept  # not bought by never keeping anything


def test_too_few_groups_tests_no_threshold_and_says_so() -> None:
    conf, ok, g = _clustered_calibration(np.random.default_rng(0), 29, 10, icc=0.0)
    choice = choose_threshold(conf, ok, target=0.8, delta=0.1, groups=g)
    assert choice.too_few_groups and choice.steps == [] and choice.n_groups == 29
    assert choice.to_dict()["too_few_groups"] is True
    # the exact bound has no such floor: one item per group, 29 of them
    exact = choose_threshold(conf, ok, target=0.8, delta=0.1, groups=g, bound="exact")
    assert not exact.too_few_groups and exact.n_used == 29


def test_a_group_bound_without_groups_is_refused() -> None:
    with pytest.raises(ValueError, match="bound='exact' needs groups"):
        choose_threshold([0.9] * 50, [True] * 50, target=0.9, delta=0.1, bound="exact")


def test_the_cluster_sequence_starts_where_the_kept_items_span_min_groups() -> None:
    # 40 groups of 5 identical confidences, most confident group first: the first test
    # keeps 30 groups (150 items), though 22 items could pass the binomial bound
    conf = np.repeat(np.linspace(1.0, 0.6, 40), 5)
    g = np.repeat(np.arange(40), 5)
    choice = choose_threshold(conf, np.ones(200, bool), target=0.9, delta=0.1, groups=g)
    assert choice.steps[0].groups == 30 and choice.steps[0].n == 150
    item = choose_threshold(conf, np.ones(200, bool), target=0.9, delta=0.1)
    assert item.steps[0].n == 25  # fewest_to_pass(0.9, 0.1) = 22, ties keep the 5th group
