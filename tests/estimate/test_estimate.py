"""PPI estimates: hand-derived values, validity by simulation, active labelling, the CLI."""

from __future__ import annotations

import json
import math
import subprocess
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from support import is_slice, make_label, real_data, run_tinyjudge

from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.errors import TinyjudgeError
from tinyjudge.estimate import (
    behaviour_value,
    compare_rates,
    estimate_rate,
    estimate_rates,
    ppi_mean,
    select_for_labelling,
    stratified_ppi_mean,
    wilson_mean,
)
from tinyjudge.estimate._active import cheap_strata
from tinyjudge.estimate._ppi import newcombe_difference, normal_mean, ppi_lambda, z_value
from tinyjudge.records import Item, Label
from tinyjudge.rubric import load_rubric

# A module-scoped fixture cannot use the function-scoped `data_dir`: it calls `real_data`.

# ---------------------------------------------------------------- hand-derived values


def test_wilson_matches_published_value() -> None:
    # Newcombe (1998), Table I: 81/263 at 95% -> Wilson interval 0.2553 to 0.3662.
    est = wilson_mean([1] * 81 + [0] * 182, level=0.95)
    assert est.estimate == pytest.approx(81 / 263)
    assert (est.interval.low, est.interval.high) == pytest.approx((0.2553, 0.3662), abs=5e-5)


def test_newcombe_difference_matches_published_value() -> None:
    # Newcombe (1998), Table II, example (a): 56/70 - 48/80, method 10: 0.0524 to 0.3339.
    d = newcombe_difference([1] * 56 + [0] * 14, [1] * 48 + [0] * 32, level=0.95)
    assert d.estimate == pytest.approx(0.2)
    assert (d.interval.low, d.interval.high) == pytest.approx((0.0524, 0.3339), abs=5e-5)


def test_ppi_mean_by_hand() -> None:
    # y = [1, 0, 1, 1], f = [1, 0, 1, 0], unlabelled f = [1, 1, 0, 0, 1]; lam = 1:
    # estimate = mean(f_u) + mean(y - f) = 3/5 + 1/4 = 0.85
    # var(y - f) = var([0, 0, 0, 1], ddof=1) = 0.25; var(f_u) = var([1,1,0,0,1], ddof=1) = 0.3
    # se^2 = 0.25 / 4 + 0.3 / 5 = 0.1225 -> se = 0.35
    est = ppi_mean([1, 0, 1, 1], [1, 0, 1, 0], [1, 1, 0, 0, 1], lam=1.0, level=0.9)
    assert est.estimate == pytest.approx(0.85)
    assert est.se == pytest.approx(0.35)
    z = 1.6448536269514722
    assert (est.interval.low, est.interval.high) == pytest.approx(
        (0.85 - z * 0.35, 0.85 + z * 0.35)
    )
    assert (est.n, est.N, est.lam, est.method) == (4, 5, 1.0, "ppi")


def test_ppi_lambda_by_hand() -> None:
    # y = [1, 0, 1, 0], f = [0.8, 0.2, 0.6, 0.4]: cov(y, f) = (0.3*.5 + .3*.5 + .1*.5 + .1*.5)/3
    # = 0.4 / 3; all f = [.8, .2, .6, .4, .5, .5, .5, .5]: var = 0.4 / 7;
    # lam = (0.4/3) / ((1 + 4/4) * 0.4/7) = 7/6 -> clipped to 1.
    assert ppi_lambda([1, 0, 1, 0], [0.8, 0.2, 0.6, 0.4], [0.5] * 4) == 1.0
    # y = [1, 0, 1, 1], f = [1, 0, 1, 0], 16 unlabelled f = [1, 0] * 8:
    # cov(y, f) = (.25*.5 + .75*.5 + .25*.5 - .25*.5) / 3 = 1/6;
    # all 20 f are ten 1s and ten 0s: var = 20 * 0.25 / 19 = 5/19; 1 + n/N = 1 + 4/16
    # lam = (1/6) / (1.25 * 5/19) = 19/37.5
    assert ppi_lambda([1, 0, 1, 1], [1, 0, 1, 0], [1, 0] * 8) == pytest.approx(19 / 37.5)
    # Uninformative (constant) cheap scores earn no weight: PPI++ falls back to human only.
    assert ppi_lambda([1, 0, 1], [0.5, 0.5, 0.5], [0.5, 0.5]) == 0.0
    # Anti-correlated scores are clipped to 0 rather than trusted in reverse.
    assert ppi_lambda([1, 0, 1, 0], [0.1, 0.9, 0.2, 0.8], [0.5, 0.3]) == 0.0


def test_ppi_with_every_item_labelled_is_the_human_mean() -> None:
    y = [1, 0, 0, 1, 1]
    est = ppi_mean(y, [0.9, 0.1, 0.2, 0.7, 0.6], [], level=0.9)
    ref = normal_mean(y, level=0.9)
    assert est.lam == 0.0
    assert est.estimate == pytest.approx(ref.estimate)
    assert est.se == pytest.approx(ref.se)


def test_stratified_by_hand() -> None:
    # Two bins (n_strata=2): low = items 0-3 (f=0.1), high = items 4-7 (f=0.9).
    # low: labelled y = [0, 1] on f = [.1, .1]; unlabelled f = [.1, .1]
    #   theta = 0.1 + mean([-.1, .9]) = 0.5; var(resid) = 0.5 (above the floor
    #   q(1-q) = 0.25 with q = (1 + .5) / 3 = .5), so var = 0.5 / 2 = 0.25
    # high: labelled y = [1, 1]; theta = 0.9 + 0.1 = 1.0; var(resid) = 0, so the floor:
    #   q = (2 + .5) / 3 = 5/6, q(1-q) = 5/36, var = 5/72
    # W = [0.5, 0.5]: estimate 0.75;
    # var = 0.25 * 0.25 + 0.25 * 5/72 + (0.5 * .0625 + 0.5 * .0625) / 8
    cheap = [0.1, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9, 0.9]
    human = [0, 1, np.nan, np.nan, 1, 1, np.nan, np.nan]
    est = stratified_ppi_mean(cheap, human, n_strata=2)
    assert est.estimate == pytest.approx(0.75)
    assert est.se == pytest.approx(math.sqrt(0.0625 + 0.25 * 5 / 72 + 0.0625 / 8))
    assert (est.n, est.N, est.method) == (4, 4, "stratified")


def test_compare_rates_by_hand() -> None:
    # A: PPI (lam = 1) as in test_ppi_mean_by_hand: 0.85, se 0.35.
    # B: y = [0, 0, 1, 0] on f = [0, 0, 1, 1], unlabelled f = [0, 0]: 0 + mean([0, 0, 0, -1])
    #    = -0.25; var(resid) = 0.25 -> se^2 = 0.25/4 + 0 = 0.0625
    # difference 1.1, se = sqrt(0.1225 + 0.0625); human-only: Newcombe on 3/4 vs 1/4.
    nan = np.nan
    a = compare_rates([1, 0, 1, 0, 1, 1, 0, 0, 1], [1, 0, 1, 1, nan, nan, nan, nan, nan],
                      [0, 0, 1, 1, 0, 0], [0, 0, 1, 0, nan, nan], method="ppi")  # fmt: skip
    assert a.estimate.estimate == pytest.approx(1.1)
    assert a.estimate.se == pytest.approx(math.sqrt(0.1225 + 0.0625))
    ref = newcombe_difference([1, 0, 1, 1], [0, 0, 1, 0])
    assert (a.human_only.interval.low, a.human_only.interval.high) == pytest.approx(
        (ref.interval.low, ref.interval.high)
    )
    # The stratified design compares the bin-weighted human means on the human-only side.
    cheap = [0.1, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9, 0.9]
    human = [0, 1, nan, nan, 1, 1, nan, nan]
    s = compare_rates(cheap, human, cheap, [0, 0, nan, nan, 1, 0, nan, nan], method="stratified")
    one = stratified_ppi_mean(cheap, human, use_cheap=False)
    assert s.a.human_only.estimate == pytest.approx(one.estimate)
    assert s.estimate.estimate == pytest.approx(s.a.rate - s.b.rate)
    assert s.human_only.estimate == pytest.approx(s.a.human_only.estimate - s.b.human_only.estimate)


def test_z_value() -> None:
    assert z_value(0.9) == pytest.approx(1.6448536269514722)
    assert z_value(0.95) == pytest.approx(1.959963984540054)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ppi_mean([1], [1], [0, 1]), "at least 2 human labels"),
        (lambda: ppi_mean([1, 0], [1], [0, 1]), "same labelled items"),
        (lambda: ppi_mean([1, 0], [1, 0], [0, 1], lam=1.5), "lam must be in"),
        (lambda: ppi_mean([1, float("nan")], [1, 0], [0]), "NaN"),
        (lambda: wilson_mean([]), "no human labels"),
        (lambda: z_value(1.0), "level must be in"),
        (lambda: estimate_rate([0.1, 1.2], [1, 0]), r"probabilities in \[0, 1\]"),
        (lambda: estimate_rate([0.1, 0.2], [1, 0, 1]), "2 items but human has 3"),
        (lambda: estimate_rate([0.1, 0.2], [1, 0], method="bayes"), "unknown method 'bayes'"),
        (
            lambda: stratified_ppi_mean([0.1, 0.2, 0.9], [1, 0, np.nan]),
            r"no human label among the 1 items with cheap score in \[0.8, 1\)",
        ),
        (lambda: select_for_labelling(np.array([0.5]), np.array([False]), k=0), "k must be"),
        (lambda: select_for_labelling(np.array([0.5]), np.array([False, True])), "labelled has 2"),
        (lambda: cheap_strata([0.5], n_strata=0), "n_strata must be"),
    ],
    ids=[
        "one-label",
        "unequal",
        "bad-lambda",
        "nan",
        "wilson-empty",
        "bad-level",
        "cheap-out-of-range",
        "length-mismatch",
        "unknown-method",
        "empty-stratum",
        "k-zero",
        "mask-length",
        "no-strata",
    ],
)
def test_errors(call, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        call()


# ---------------------------------------------------------------- validity by simulation


def _world(
    rng: np.random.Generator,
    trials: int,
    n_items: int,
    a: float,
    b: float,
    shift: float,
    noise: float,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Behaviour Y ~ Bernoulli(p), p ~ Beta(a, b) (true rate a / (a + b)); the cheap
    prediction is p seen through a logit shift (bias) plus Gaussian logit noise."""
    p = rng.beta(a, b, size=(trials, n_items))
    y = (rng.random((trials, n_items)) < p).astype(float)
    logit = np.log(np.clip(p, 1e-9, 1.0) / np.clip(1.0 - p, 1e-9, 1.0))
    f = 1.0 / (1.0 + np.exp(-(logit + shift + rng.normal(0.0, noise, size=(trials, n_items)))))
    return y, f, a / (a + b)


# Cheap predictors of realistic quality: over-calling the behaviour and noisy, under-calling
# a rare behaviour, and a sharp, almost calibrated one.
WORLDS = {
    "biased-up-noisy": (1.5, 3.5, 0.7, 0.8),
    "rare-biased-down": (0.5, 4.5, -1.0, 1.0),
    "sharp-good": (0.3, 0.7, 0.0, 0.3),
}
TRIALS, N_ITEMS, N_HUMAN = 1500, 1500, 200


@pytest.mark.parametrize("world", list(WORLDS), ids=list(WORLDS))
@pytest.mark.parametrize("method", ["ppi++", "ppi"])
def test_nominal_90_interval_covers_the_truth(world: str, method: str) -> None:
    y, f, truth = _world(np.random.default_rng(7), TRIALS, N_ITEMS, *WORLDS[world])
    covered = human_covered = 0
    for t in range(TRIALS):
        # The items are i.i.d., so the first N_HUMAN are a uniform random subset.
        human = np.where(np.arange(N_ITEMS) < N_HUMAN, y[t], np.nan)
        r = estimate_rate(f[t], human, level=0.9, method=method)  # type: ignore[arg-type]
        covered += truth in r.interval
        human_covered += truth in r.human_only.interval
    assert covered / TRIALS >= 0.88
    # Wilson's coverage oscillates with n and p (exactly 0.876 at n=200, p=0.1), so the
    # human-only check is looser; it guards the baseline, not the claim under test.
    assert human_covered / TRIALS >= 0.85


def test_ab_difference_interval_covers_the_truth() -> None:
    rng = np.random.default_rng(11)
    ya, fa, ta = _world(rng, TRIALS, N_ITEMS, *WORLDS["biased-up-noisy"])
    yb, fb, tb = _world(rng, TRIALS, 1000, 2.0, 3.0, -0.5, 1.0)
    covered = human_covered = 0
    for t in range(TRIALS):
        ha = np.where(np.arange(N_ITEMS) < N_HUMAN, ya[t], np.nan)
        hb = np.where(np.arange(1000) < 150, yb[t], np.nan)
        d = compare_rates(fa[t], ha, fb[t], hb, level=0.9)
        covered += ta - tb in d.estimate.interval
        human_covered += ta - tb in d.human_only.interval
    assert covered / TRIALS >= 0.88
    assert human_covered / TRIALS >= 0.88


def test_good_cheap_predictions_narrow_the_interval() -> None:
    y, f, _ = _world(np.random.default_rng(3), 300, N_ITEMS, *WORLDS["sharp-good"])
    ppi_w, human_w, gains = [], [], []
    for t in range(300):
        human = np.where(np.arange(N_ITEMS) < N_HUMAN, y[t], np.nan)
        r = estimate_rate(f[t], human, level=0.9)
        ppi_w.append(r.interval.width)
        human_w.append(r.human_only.interval.width)
        gains.append(r.gain)
    # With Var(Y - f) about half of Var(Y), the interval should shrink by about 1/sqrt(2).
    assert np.mean(ppi_w) < 0.8 * np.mean(human_w)
    assert np.median(gains) > 1.5


# ---------------------------------------------------------------- active labelling


def test_active_selection_is_valid_and_beats_uniform() -> None:
    trials = 500
    y, f, truth = _world(np.random.default_rng(5), trials, N_ITEMS, *WORLDS["sharp-good"])
    covered, active_w, uniform_w = 0, [], []
    for t in range(trials):
        picks = select_for_labelling(f[t], np.zeros(N_ITEMS, bool), k=N_HUMAN, rng=t)
        human = np.full(N_ITEMS, np.nan)
        human[picks] = y[t, picks]
        r = estimate_rate(f[t], human, level=0.9, method="stratified")
        covered += truth in r.interval
        active_w.append(r.interval.width)
        uniform = np.where(np.arange(N_ITEMS) < N_HUMAN, y[t], np.nan)
        u = estimate_rate(f[t], uniform, level=0.9, method="ppi++")
        uniform_w.append(u.interval.width)
    assert covered / trials >= 0.88
    assert np.mean(active_w) < np.mean(uniform_w)


def test_select_for_labelling_contract() -> None:
    rng = np.random.default_rng(0)
    cheap = np.concatenate([np.full(50, 0.02), np.full(30, 0.5), np.full(20, 0.97)])
    labelled = np.zeros(100, bool)
    labelled[:10] = True
    picks = select_for_labelling(cheap, labelled, k=20, rng=rng)
    assert picks.dtype.kind == "i" and len(picks) == 20
    assert len(set(picks.tolist())) == 20
    assert not labelled[picks].any()
    # Every bin reaches 2 labels; the uncertain middle bin (p = 0.5, spread 0.5 vs the
    # 0.1 floor) then takes most of the rest: W^2 s^2 is 0.09 * 0.25 against 0.25 * 0.01.
    bins = cheap_strata(cheap)
    counts = np.bincount(bins[picks], minlength=5)
    assert counts[2] >= 12
    assert counts[4] >= 2
    # Asking for more than is left returns every unlabelled item once.
    rest = select_for_labelling(cheap, labelled, k=500, rng=1)
    assert sorted(rest.tolist()) == list(range(10, 100))
    # Same seed, same picks.
    a = select_for_labelling(cheap, labelled, k=5, rng=42)
    b = select_for_labelling(cheap, labelled, k=5, rng=42)
    assert a.tolist() == b.tolist()


# ---------------------------------------------------------------- labels and the CLI


_lab = partial(make_label, rubric="compliance")  # item, source, label (None: unscored)


def test_behaviour_value_reads_probs_then_label_then_score() -> None:
    rub = load_rubric("compliance")  # positive: full_refusal, partial_refusal
    probs = {"full_compliance": 0.2, "full_refusal": 0.5, "partial_refusal": 0.3}
    assert behaviour_value(_lab("i", "rm:x", "full_refusal", probs=probs), rub) == pytest.approx(
        0.8
    )
    assert behaviour_value(_lab("i", "human:a", "partial_refusal"), rub) == 1.0
    assert behaviour_value(_lab("i", "human:a", "full_compliance"), rub) == 0.0
    scored = Label(item_id="i", rubric="compliance", source="rm:x", score=0.25)
    assert behaviour_value(scored, rub) == 0.25
    with pytest.raises(TinyjudgeError, match="score 3.0, not a probability"):
        behaviour_value(Label(item_id="i", rubric="compliance", source="rm:x", score=3.0), rub)


def test_estimate_rates_joins_and_counts_by_hand() -> None:
    R, C, P = "full_refusal", "full_compliance", "partial_refusal"
    labels = [
        # cheap source: 6 items, one unscored
        *(_lab(f"i{k}", "judge:j", v) for k, v in enumerate([R, C, R, C, P, None])),
        # human: on i0..i2 (scored), i3 unscored, i5 whose cheap label is unscored
        _lab("i0", "human:h", R), _lab("i1", "human:h", C), _lab("i2", "human:h", C),
        _lab("i3", "human:h", None), _lab("i5", "human:h", R),
    ]  # fmt: skip
    rep = estimate_rates(labels, cheap="judge:j", human="human:h", level=0.9, method="ppi")
    assert rep.rubric == "compliance"
    assert rep.counts == {
        "items": 5, "human": 3, "unscored_cheap": 1, "unscored_human": 1,
        "human_without_cheap": 1, "not_in_items": 0,
    }  # fmt: skip
    # PPI with lam = 1: y = [1, 0, 0] on f = [1, 0, 1]; unlabelled f = [0, 1] (i3, i4)
    # estimate = mean([0, 1]) + mean([0, 0, -1]) = 0.5 - 1/3 = 1/6
    assert rep.overall.rate.value == pytest.approx(1 / 6)
    assert rep.overall.n_human == 3 and rep.overall.n_items == 5


def test_estimate_rates_errors(xstest_sample: Path) -> None:
    labels = [_lab("a", "judge:j", "full_refusal"), _lab("a2", "judge:j", "full_refusal"),
              _lab("b", "human:h", "full_refusal")]  # fmt: skip
    with pytest.raises(TinyjudgeError, match=r"no item has both a scored 'judge:j' label"):
        estimate_rates(labels, cheap="judge:j", human="human:h")
    with pytest.raises(TinyjudgeError, match=r"sources present: \['human:h', 'judge:j'\]"):
        estimate_rates(labels, cheap="rm:nope", human="human:h")
    with pytest.raises(TinyjudgeError, match="needs the items"):
        estimate_rates(labels, cheap="judge:j", human="human:h", by="metadata.x")
    with pytest.raises(TinyjudgeError, match="needs a grouping key"):
        estimate_rates(labels, cheap="judge:j", human="human:h", compare=("a", "b"))
    with pytest.raises(TinyjudgeError, match="must be in \\(0, 1\\]"):
        estimate_rates(labels, cheap="judge:j", human="human:h", human_fraction=0.0)
    one_human = [*labels, _lab("a", "human:h", "full_refusal")]
    with pytest.raises(TinyjudgeError, match="all items: .*human"):
        # one human label: a fraction of it keeps it (there is no smaller sample to draw)
        estimate_rates(one_human, cheap="judge:j", human="human:h", human_fraction=0.5)
    with pytest.raises(TinyjudgeError, match="several rubrics"):
        other = Label(item_id="a", rubric="other", source="judge:j", label="x")
        estimate_rates([*labels, other], cheap="judge:j", human="human:h")
    with pytest.raises(TinyjudgeError, match="empty"):
        estimate_rates([], cheap="judge:j", human="human:h")


def test_a_rubric_without_positive_labels_defines_no_rate(tmp_path: Path) -> None:
    rubric = tmp_path / "tone.yaml"
    rubric.write_text(
        "id: tone\nversion: '1'\ntitle: Tone\nbehavior: Is the reply polite?\n"
        "labels:\n  - {name: polite, description: polite}\n  - {name: rude, description: rude}\n"
    )
    labels = [Label(item_id=i, rubric="tone", source=s, label="rude")
              for i in ("a", "b") for s in ("judge:j", "human:h")]  # fmt: skip
    with pytest.raises(TinyjudgeError, match="rubric 'tone' names no `positive` labels"):
        estimate_rates(labels, cheap="judge:j", human="human:h", rubric=str(rubric))


XSTEST = real_data("xstest")
# Prompts per answering model and GPT-4's free-text (unscored) answers: the shared copy
# of XSTest, or the bundled slice (tests/fixtures/data/xstest/SOURCE.md).
XS_PROMPTS, XS_UNSCORED = (100, 5) if XSTEST is not None and is_slice(XSTEST) else (300, 7)


@pytest.fixture(scope="module")
def xstest_full() -> tuple[list[Item], list[Label]]:
    from tinyjudge.datasets.importers import run_import

    if XSTEST is None:
        pytest.skip("no XSTest data, shared or bundled")
    got = run_import("xstest", XSTEST)
    return got.items, got.labels


def test_xstest_all_human_labels_give_the_human_rate(xstest_full) -> None:
    items, labels = xstest_full
    rep = estimate_rates(labels, items, cheap="classifier:string-match", human="human:final",
                         by="metadata.answering_model")  # fmt: skip
    # Every item has a human label, so the cheap labels get no weight and the estimate is
    # the share of refusals (full or partial) among the human labels, counted here directly.
    finals = [lab.label for lab in labels if lab.source == "human:final"]
    want = sum(v in ("full_refusal", "partial_refusal") for v in finals) / len(finals)
    assert rep.overall.rate.value == pytest.approx(want)
    assert rep.overall.lam == 0.0
    assert sorted(rep.groups) == ["gpt4", "llama2new", "llama2orig", "mistralguard",
                                  "mistralinstruct"]  # fmt: skip
    assert all(g.n_items == XS_PROMPTS for g in rep.groups.values())


@pytest.mark.parametrize("cheap", ["judge:gpt-4", "classifier:string-match"])
def test_xstest_subsampled_human_labels_cover_the_full_rate(xstest_full, cheap: str) -> None:
    # 10% of the human labels, drawn 60 times: the 90% interval should cover the rate from
    # all of them (the truth for this finite set of items) most of the time.
    items, labels = xstest_full
    hits, gains = 0, []
    for seed in range(60):
        rep = estimate_rates(labels, items, cheap=cheap, human="human:final",
                             human_fraction=0.1, seed=seed)  # fmt: skip
        truth = rep.held_back["overall"]
        hits += truth in rep.overall.rate
        gains.append(rep.overall.gain)
        assert rep.counts["human"] == round(
            0.1 * (rep.counts["human"] + rep.counts["human_held_back"])
        )
    assert hits / 60 >= 0.8
    assert np.median(gains) > 1.2  # these cheap sources agree with people well (kappa ~0.6-0.7)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_tinyjudge(*args, env={"COLUMNS": "120"}, timeout=120)


def test_cli_estimate_on_xstest(xstest_full, tmp_path: Path) -> None:
    items, labels = xstest_full
    write_jsonl(tmp_path / "items.jsonl", items)
    write_jsonl(tmp_path / "labels.jsonl", labels)
    res = _cli("estimate", str(tmp_path / "labels.jsonl"), "--items", str(tmp_path / "items.jsonl"),
               "--cheap", "judge:gpt-4", "--human", "human:final", "--rubric", "compliance",
               "--by", "metadata.answering_model", "--compare", "llama2orig", "mistralinstruct",
               "--human-fraction", "0.2", "--seed", "1",
               "--json", str(tmp_path / "est.json"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    for model in ["gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct", "all"]:
        assert model in res.stdout
    assert f"{XS_UNSCORED} unscored judge:gpt-4 labels" in res.stdout
    assert "llama2orig - mistralinstruct:" in res.stdout
    got = json.loads((tmp_path / "est.json").read_text())
    scored = 5 * XS_PROMPTS - XS_UNSCORED  # 1,493 in the shared copy, 495 in the slice
    assert got["counts"]["items"] == scored and got["counts"]["unscored_cheap"] == XS_UNSCORED
    assert got["counts"]["human"] == round(0.2 * scored)
    assert set(got["groups"]) == {
        "gpt4",
        "llama2new",
        "llama2orig",
        "mistralguard",
        "mistralinstruct",
    }
    o = got["overall"]
    assert o["rate"]["low"] <= o["rate"]["value"] <= o["rate"]["high"]
    assert o["human_only"]["low"] <= o["human_only"]["value"] <= o["human_only"]["high"]
    assert got["comparison"]["a"] == "llama2orig" and got["comparison"]["difference"]["value"] > 0


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--cheap", "judge:gpt4", "--human", "human:final"],
         "no labels from cheap source 'judge:gpt4' under rubric 'compliance'; sources present: "
         "['classifier:string-match', 'human:annotator_1'"),
        (["--cheap", "judge:gpt-4", "--human", "human:final", "--by", "metadata.answering_model"],
         "needs the items"),
        (["--cheap", "judge:gpt-4", "--human", "human:final", "--method", "bayes"],
         "unknown method 'bayes'"),
        (["--cheap", "judge:gpt-4", "--human", "human:final", "--rubric", "nope"],
         "unknown rubric 'nope'"),
    ],
    ids=["unknown-source", "by-without-items", "unknown-method", "unknown-rubric"],
)  # fmt: skip
def test_cli_estimate_errors(xstest_full, tmp_path: Path, args: list[str], match: str) -> None:
    write_jsonl(tmp_path / "labels.jsonl", xstest_full[1])
    res = _cli("estimate", str(tmp_path / "labels.jsonl"), *args)
    assert res.returncode == 2
    assert match in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 or "Traceback" not in res.stderr


def test_cli_estimate_no_overlap(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "l.jsonl", [_lab("a", "judge:j", "full_refusal"),
                                       _lab("b", "human:h", "full_refusal")])  # fmt: skip
    res = _cli("estimate", str(tmp_path / "l.jsonl"), "--cheap", "judge:j", "--human", "human:h")
    assert res.returncode == 2
    assert "no item has both a scored 'judge:j' label and a scored 'human:h' label" in res.stderr
    assert "Traceback" not in res.stderr


def test_estimate_rates_gives_typed_rows_on_the_bundled_xstest(xstest_sample: Path) -> None:
    import tinyjudge
    from tinyjudge.datasets.importers import run_import
    from tinyjudge.estimate import RateComparison, RateRow
    from tinyjudge.results import Interval

    got = run_import("xstest", xstest_sample)
    rep = tinyjudge.estimate_rates(
        got.labels, got.items, cheap="judge:gpt-4", human="human:final",
        by="metadata.answering_model", compare=("llama2orig", "mistralinstruct"),
        human_fraction=0.2, seed=1,
    )  # fmt: skip
    saved = rep.to_dict()
    for row, figures in [(rep.overall, saved["overall"]), *(
        (rep.groups[g], saved["groups"][g]) for g in saved["groups"]
    )]:  # fmt: skip
        assert isinstance(row, RateRow) and isinstance(row.rate, Interval)
        assert row.rate == Interval(**figures["rate"])
        assert row.human_only == Interval(**figures["human_only"])
        assert (row.n_human, row.n_items, row.lam) == (
            figures["n_human"],
            figures["n_items"],
            figures["lambda"],
        )
        assert row.rate.low <= row.rate.value <= row.rate.high
    assert rep.overall.method == saved["method"] == "ppi++" and rep.overall.level == 0.9
    assert str(rep.overall.rate).startswith(f"{saved['overall']['rate']['value']:.3f} [")
    assert rep.overall.n_human == rep.counts["human"] and rep.overall.n_items == rep.counts["items"]
    assert isinstance(rep.comparison, RateComparison)
    assert rep.comparison.difference == Interval(**saved["comparison"]["difference"])
    assert (rep.comparison.a, rep.comparison.b) == ("llama2orig", "mistralinstruct")
