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
