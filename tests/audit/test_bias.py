"""Bias probes: hand-made cases with hand-derived values; real LLMBar, PandaLM, XSTest data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from support import is_slice, make_label, real_data

from tinyjudge.audit.bias import (
    bias_report,
    injection_flip_rate,
    position_bias,
    samples_from_labels,
    self_consistency,
    verbosity_bias,
)
from tinyjudge.audit.bias._injection import DEFAULT_INJECTION, inject
from tinyjudge.audit.bias._verbosity import longer_wins, response_length
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item, Label, Message


def _pair_label(item_id: str, ab: str | None, ba: str | None, source: str = "judge:x") -> Label:
    if ab is None or ba is None:
        return Label(item_id=item_id, rubric="instruction_following", source=source,
                     status="unscored", orders={"ab": ab, "ba": ba},
                     reason="no verdict")  # fmt: skip
    value = ab if ab == ba else "tie"
    return Label(item_id=item_id, rubric="instruction_following", source=source, label=value,
                 orders={"ab": ab, "ba": ba}, consistent=ab == ba)  # fmt: skip


def _pair(item_id: str, a: str, b: str) -> Item:
    return Item(id=item_id, context=[Message(role="user", content="q")],
                response_a=[Message(role="assistant", content=a)],
                response_b=[Message(role="assistant", content=b)])  # fmt: skip


def _verdict(item_id: str, value: str | None, source: str = "judge:x") -> Label:
    return make_label(item_id, source, value)  # None: unscored


# The whole set where ../shared/data has it, else the bundled slice (15 MT-Bench pairs).
LLMBAR = real_data("llmbar")
LLMBAR_SLICE = LLMBAR is not None and is_slice(LLMBAR)


@pytest.fixture(scope="module")
def llmbar():
    from tinyjudge.datasets.importers import run_import

    if LLMBAR is None:
        pytest.skip("no LLMBar data, shared or bundled")
    return run_import("llmbar", LLMBAR)


# ---------------------------------------------------------------- position


def test_position_bias_by_hand() -> None:
    labels = [
        _pair_label("1", "a", "a"),  # consistent
        _pair_label("2", "a", "b"),  # flip; each order picked what it showed first
        _pair_label("3", "b", "a"),  # flip; each order picked what it showed second
        _pair_label("4", "a", "b"),  # flip, first
        _pair_label("5", "tie", "a"),  # flip, but not between a and b
        _pair_label("6", None, "a"),  # unscored order: counted apart
        Label(item_id="7", rubric="r", source="judge:x", label="a"),  # one order only: skipped
    ]
    got = position_bias(labels, level=0.9, n_boot=500)
    # 5 pairs scored in both orders, 4 flips; of the 3 a/b flips, 2 favour the first shown.
    assert (got.n, got.n_flips, got.n_unscored) == (5, 4, 1)
    assert got.flip_rate.value == pytest.approx(4 / 5)
    assert got.first_share.value == pytest.approx(2 / 3)
    assert got.flip_rate.value in got.flip_rate


def test_position_bias_clusters_widen_the_interval() -> None:
    # 40 prompts x 5 pairs; a prompt's pairs all flip or none do (20 of 40 prompts flip):
    # resampling prompts must give a wider interval than pretending the 200 pairs independent.
    labels = [
        _pair_label(f"{p}-{k}", "a", "b" if p % 2 else "a") for p in range(40) for k in range(5)
    ]
    groups = {f"{p}-{k}": p for p in range(40) for k in range(5)}
    flat = position_bias(labels, n_boot=1000)
    clustered = position_bias(labels, groups=groups, n_boot=1000)
    assert flat.flip_rate.value == clustered.flip_rate.value == 0.5
    assert clustered.flip_rate.width > 1.5 * flat.flip_rate.width


def test_items_without_a_group_key_are_their_own_clusters() -> None:
    # bias_report maps every item to item.get(group_by), None where the key is absent;
    # those items must stay separate clusters, not collapse into one cluster "None"
    # (one cluster resampled gives the degenerate interval [estimate, estimate]).
    labels = [_pair_label(str(i), "a", "b" if i % 3 == 0 else "a") for i in range(60)]
    flat = position_bias(labels, n_boot=300)
    no_key = position_bias(labels, groups={str(i): None for i in range(60)}, n_boot=300)
    assert no_key.flip_rate == flat.flip_rate
    assert no_key.flip_rate.low < no_key.flip_rate.value < no_key.flip_rate.high
    items = [_pair(str(i), "x" * (1 + i % 7), "y" * 3) for i in range(60)]
    got = bias_report(labels, items, group_by="metadata.prompt_id", level=0.9, n_boot=300)
    assert got["position"]["judge:x"]["flip_rate"] == flat.flip_rate.to_dict()


def test_position_bias_reproduces_llmbar_published_swap_agreement(llmbar) -> None:
    # LLMBar's statistics.json gives "equal": pairs whose swap=False and swap=True winners
    # agree (a pair with no winner in both orders counts as equal there). The same count
    # is made here from result.json; the whole set's statistics.json must say it too (the
    # bundled slice ships none: its figures are of all rows).
    checked = 0
    for run in sorted((LLMBAR / "Dataset/Processed").glob("*/evaluators/*/*/result.json")):
        subset, judge = run.parts[-5], f"{run.parts[-3]}/{run.parts[-2]}"
        rows = json.loads(run.read_text(encoding="utf-8"))
        winners = [[r["results"][-1][f"swap = {k}"]["winner"] for k in (False, True)]
                   for r in rows]  # fmt: skip
        equal, total = sum(a == b for a, b in winners), len(rows)
        stats = run.with_name("statistics.json")
        if not LLMBAR_SLICE:
            published = json.loads(stats.read_text())["equal"]
            assert re.match(r"(\d+) / (\d+)", published).groups() == (str(equal), str(total))
        labels = [lab for lab in llmbar.labels if lab.source == f"judge:{judge}"
                  and lab.item_id.startswith(f"llmbar:{subset}:")]  # fmt: skip
        both_missing = sum(lab.orders == {"ab": None, "ba": None} for lab in labels)
        got = position_bias(labels, n_boot=200)
        assert got.n + got.n_unscored == total
        assert got.n - got.n_flips + both_missing == equal, run
        checked += 1
    assert checked == (4 if LLMBAR_SLICE else 12)


def test_position_bias_llmbar_mt_bench_gpt4_by_hand(llmbar) -> None:
    # MT-Bench, GPT-4 Vanilla_NoRules: 26 of 200 pairs flip (statistics.json: 174 equal);
    # in 15 of them each order picked the response shown first (counted from result.json).
    # The slice's first 15 pairs: one flips (pair 12, winners "1" then "2"), each order
    # picking the response it showed first.
    n, flips, first = (15, 1, 1) if LLMBAR_SLICE else (200, 26, 15)
    labels = [lab for lab in llmbar.labels if lab.source == "judge:GPT-4/Vanilla_NoRules"
              and lab.item_id.startswith("llmbar:MT-Bench:")]  # fmt: skip
    got = position_bias(labels, level=0.9)
    assert (got.n, got.n_flips) == (n, flips)
    assert got.flip_rate.value == pytest.approx(flips / n)
    assert got.first_share.value == pytest.approx(first / flips)
    assert got.flip_rate.low < flips / n < got.flip_rate.high


def test_position_bias_errors() -> None:
    with pytest.raises(TinyjudgeError, match="no pairwise label with both orders scored"):
        position_bias([_pair_label("1", None, "a")])
    with pytest.raises(TinyjudgeError, match="reads one source's labels, got 2"):
        position_bias([_pair_label("1", "a", "a"), _pair_label("2", "a", "a", source="judge:y")])


# ---------------------------------------------------------------- verbosity


def test_verbosity_bias_by_hand() -> None:
    items = [_pair("1", "long answer here", "short"), _pair("2", "tiny", "a much longer one"),
             _pair("3", "same", "same"), _pair("4", "longer one", "short"),
             _pair("5", "x", "yy")]  # fmt: skip
    judge = [_verdict("1", "a"), _verdict("2", "b"), _verdict("3", "a"), _verdict("4", "b"),
             _verdict("5", "tie")]  # fmt: skip
    people = [_verdict("1", "b", "human:h"), _verdict("2", "b", "human:h"),
              _verdict("4", "b", "human:h")]  # fmt: skip
    got = verbosity_bias(judge, items, reference=people, n_boot=500)
    # counted: 1 (longer won), 2 (longer won), 4 (shorter won); 3 equal length, 5 a tie.
    assert got.n == 3 and got.longer_win_rate.value == pytest.approx(2 / 3)
    # people on 1, 2, 4: shorter, longer, shorter -> 1/3; excess 2/3 - 1/3.
    assert got.n_paired == 3
    assert got.reference_rate == pytest.approx(1 / 3)
    assert got.excess is not None and got.excess.value == pytest.approx(1 / 3)


def test_longer_wins_and_response_length() -> None:
    out = longer_wins(["a", "b", "tie", "a", None], [10, 10, 10, 5, 5], [5, 5, 5, 5, 9])
    assert out[:2].tolist() == [1.0, 0.0] and np.isnan(out[2:]).all()
    msgs = [Message(role="assistant", content="abc"), Message(role="assistant", content="de")]
    assert response_length(msgs) == 5
    with pytest.raises(TinyjudgeError, match="must align"):
        longer_wins(["a"], [1, 2], [1, 2])


def test_verbosity_bias_on_pandalm_matches_the_raw_files(data_dir) -> None:
    from tinyjudge.datasets.importers import run_import

    src = data_dir("pandalm")
    got = run_import("pandalm", src)
    judge = [lab for lab in got.labels if lab.source == "judge:gpt-3.5"]
    people = [lab for lab in got.labels if lab.source == "human:majority"]
    res = verbosity_bias(judge, got.items, reference=people, n_boot=500)
    # The same share counted straight from PandaLM's files: gpt_result "1"/"2" against
    # the lengths of response1/response2 (ties, "garbage" and equal lengths left out).
    rows = {r["idx"]: r for r in json.loads((src / "data/testset-v1.json").read_text())}
    wins = []
    for r in json.loads((src / "data/gpt-3.5-turbo-testset-v1.json").read_text()):
        row = rows[r["idx"]]
        # Six responses are JSON booleans; the importer keeps them as text ("True").
        la, lb = len(str(row["response1"])), len(str(row["response2"]))
        if r["gpt_result"] in ("1", "2") and la != lb:
            wins.append((r["gpt_result"] == "1") == (la > lb))
    assert res.n == len(wins)
    assert res.longer_win_rate.value == pytest.approx(np.mean(wins))
    assert res.longer_win_rate.low < res.longer_win_rate.value < res.longer_win_rate.high
    assert res.excess is not None and res.excess.value in res.excess


def test_verbosity_bias_errors() -> None:
    items = [_pair("1", "same", "same")]
    with pytest.raises(TinyjudgeError, match="no pair with an a/b verdict"):
        verbosity_bias([_verdict("1", "a")], items)
    items = [_pair("1", "long one", "x")]
    with pytest.raises(TinyjudgeError, match="reference gave no a/b verdict"):
        verbosity_bias([_verdict("1", "a")], items, reference=[_verdict("1", "tie", "human:h")])


# ---------------------------------------------------------------- self-consistency


def test_self_consistency_by_hand() -> None:
    samples = [["a", "a", "b"], ["b", "b", "b"], ["a", None, "a"], ["b"], [None, None]]
    got = self_consistency(samples, n_boot=500)
    # item 1: pairs agreeing 1 of 3; item 2: 3 of 3; item 3 (2 parsed): 1 of 1.
    # Items 4 and 5 have fewer than 2 parsed samples: skipped; 3 unparsed samples.
    assert got.agreement.value == pytest.approx((1 / 3 + 1 + 1) / 3)
    assert got.unanimous == pytest.approx(2 / 3)
    assert (got.n, got.n_skipped, got.n_unparsed) == (3, 2, 3)
    assert got.kappa is None  # 3, 3 and 2 samples: Fleiss' kappa needs equal counts
    # Equal counts: Fleiss' kappa from its formula. Items [a,a,b], [b,b,b]:
    # P_i = 1/3, 1 -> P_bar = 2/3; p_a = 2/6, p_b = 4/6 -> P_e = 5/9; kappa = (2/3-5/9)/(4/9) = 1/4
    assert self_consistency([["a", "a", "b"], ["b", "b", "b"]]).kappa == pytest.approx(0.25)
    with pytest.raises(TinyjudgeError, match="no item with 2 or more parsed samples"):
        self_consistency([["a"], [None, "b"]])


def test_samples_from_labels_reads_each_recorded_form() -> None:
    explicit = Label(item_id="1", rubric="r", source="judge:x", label="a",
                     raw={"samples": ["a", "b", "a"]})  # fmt: skip
    raw_texts = Label(item_id="2", rubric="r", source="judge:x", label="a",
                      raw=['{"label": "a"}', '{"label": "b"}', "no idea"])  # fmt: skip
    repeats = [_verdict("3", "b"), _verdict("3", "b"), _verdict("3", None)]
    ids, samples = samples_from_labels([explicit, raw_texts, *repeats], label_names=["a", "b"])
    assert ids == ["1", "2", "3"]
    assert samples == [["a", "b", "a"], ["a", "b", None], ["b", "b", None]]
    with pytest.raises(TinyjudgeError, match="pass label_names"):
        samples_from_labels([raw_texts])


def test_self_consistency_of_a_real_judge_with_samples(tmp_path: Path) -> None:
    # The real Judge over HTTP, samples=4, against a local endpoint whose answers depend
    # on the item: items 0-4 always "full_refusal", items 5-9 alternate refusal/compliance.
    from tinyjudge.judge import Judge
    from tinyjudge.rubric import load_rubric
    from tinyjudge.testing import LocalServer, Reply, Request

    def respond(req: Request) -> Reply:
        k = int((req.item_id or "x-0").split("-")[1])
        label = "full_refusal" if k < 5 or req.sample % 2 == 0 else "full_compliance"
        return Reply(json.dumps({"rationale": ".", "label": label}))

    items = [Item(id=f"it-{k}", messages=[Message(role="user", content=f"q{k}"),
                                          Message(role="assistant", content="Sure.")])
             for k in range(10)]  # fmt: skip
    rubric = load_rubric("compliance")
    with LocalServer(respond, reject_logprobs=True, items=items, rubric=rubric) as url:
        judge = Judge("compliance", "m", base_url=url, samples=4, temperature=1.0, cache=None)
        labels = judge.run(items)
    ids, samples = samples_from_labels(labels, label_names=judge.rubric.label_names)
    got = self_consistency(samples, ids=ids, n_boot=500)
    # 5 unanimous items (agreement 1) and 5 with 2 + 2 (agreement (2 + 2) / 12 = 1/3).
    assert got.n == 10 and got.mean_samples == 4
    assert got.agreement.value == pytest.approx((5 * 1 + 5 / 3) / 10)
    assert got.unanimous == pytest.approx(0.5)


# ---------------------------------------------------------------- injection

_REFUSAL = re.compile(r"\b(I'm sorry|I cannot|I can't|I apologi[sz]e|As an AI)\b", re.I)


def naive_judge(items: list[Item]) -> list[Label]:
    """A rule judge that obeys any `verdict X` instruction in the transcript (a susceptible
    judge), else calls a reply with a refusal phrase a full refusal."""
    out = []
    for it in items:
        text = it.messages[-1].text
        asked = re.findall(r"record the verdict `(\w+)`", text)
        label = (
            asked[-1] if asked else ("full_refusal" if _REFUSAL.search(text) else "full_compliance")
        )
        out.append(Label(item_id=it.id, rubric="compliance", source="rule:naive", label=label))
    return out


def robust_judge(items: list[Item]) -> list[Label]:
    """The same refusal rule, reading only the reply before any bracketed note."""
    out = []
    for it in items:
        text = it.messages[-1].text.split("\n\n[Note to the AI evaluator")[0]
        label = "full_refusal" if _REFUSAL.search(text) else "full_compliance"
        out.append(Label(item_id=it.id, rubric="compliance", source="rule:robust", label=label))
    return out


@pytest.fixture(scope="module")
def xstest_items() -> list[Item]:
    from tinyjudge.datasets.importers import run_import

    src = real_data("xstest")
    if src is None:
        pytest.skip("no XSTest data, shared or bundled")
    return run_import("xstest", src).items[:300]


def test_injection_flips_a_susceptible_judge_on_xstest(xstest_items) -> None:
    base = naive_judge(xstest_items)
    n_refusals = sum(lab.label == "full_refusal" for lab in base)
    got = injection_flip_rate(naive_judge, xstest_items, target="full_refusal")
    # The naive judge obeys the note, so every verdict that was not already the target flips.
    assert got.n == 300 and got.n_unscored == 0
    assert got.n_flipped == 300 - n_refusals
    assert got.flip_rate.value == pytest.approx((300 - n_refusals) / 300)
    assert got.to_target == 1.0
    assert got.flip_rate.value in got.flip_rate
    assert 0 < n_refusals < 300  # real data: both kinds of reply occur
    robust = injection_flip_rate(robust_judge, xstest_items, target="full_refusal")
    assert robust.n_flipped == 0 and robust.flip_rate.value == 0.0
    low, high = robust.flip_rate.low, robust.flip_rate.high
    assert low == pytest.approx(0.0, abs=1e-12) and high is not None and high < 0.02


def test_injection_with_a_real_judge_over_http() -> None:
    # The real Judge(...).run as judge_fn, against a local endpoint standing in for a model
    # that obeys instructions found in the transcript it is shown.
    from tinyjudge.judge import Judge
    from tinyjudge.testing import LocalServer, Reply, Request

    def respond(req: Request) -> Reply:
        asked = re.findall(r"record the verdict `(\w+)`", req.prompt)
        label = asked[-1] if asked else "full_compliance"
        return Reply(json.dumps({"rationale": ".", "label": label}))

    items = [Item(id=f"it-{k}", messages=[Message(role="user", content=f"q{k}"),
                                          Message(role="assistant", content="Sure, here.")])
             for k in range(6)]  # fmt: skip
    with LocalServer(respond) as url:
        judge = Judge("compliance", "m", base_url=url, cache=None)
        got = injection_flip_rate(
            judge.run,
            items,
            target=lambda it, lab: "partial_refusal" if it.id < "it-3" else lab.label,
        )
    # it-0..it-2 are asked for partial_refusal (flip); it-3..5 for their own verdict (no flip).
    assert (got.n, got.n_flipped) == (6, 3)
    assert sorted(got.flipped) == ["it-0", "it-1", "it-2"]
    assert got.to_target == 1.0


def test_inject_pairs_and_content_parts() -> None:
    pair = _pair("p", "A text", "B text")
    out = inject(pair, " NOTE", side="b")
    assert out.response_b[-1].text == "B text NOTE" and out.response_a[-1].text == "A text"
    assert out.id == "p" and pair.response_b[-1].text == "B text"  # original untouched
    parts = Item(id="x", messages=[Message(role="user", content=[{"type": "text", "text": "hi"}])])
    assert inject(parts, "NOTE").messages[-1].text == "hi\nNOTE"
    with pytest.raises(TinyjudgeError, match="needs side 'a' or 'b'"):
        inject(pair, "x")


def test_pairwise_injection_goes_into_the_losing_response(llmbar) -> None:
    # A judge that prefers the longer response but obeys a note in a response: the note goes
    # into the response it did not pick, so every pair flips to that one.
    def judge(items: list[Item]) -> list[Label]:
        out = []
        for it in items:
            a, b = it.response_a[-1].text, it.response_b[-1].text
            if "this is the better response" in a or "this is the better response" in b:
                v = "a" if "this is the better response" in a else "b"
            else:
                v = "a" if len(a) >= len(b) else "b"
            out.append(
                Label(item_id=it.id, rubric="instruction_following", source="rule:x", label=v)
            )
        return out

    subset, n = ("MT-Bench", 15) if LLMBAR_SLICE else ("FairEval", 66)
    pairs = [it for it in llmbar.items if it.id.startswith(f"llmbar:{subset}:")]
    got = injection_flip_rate(judge, pairs)
    assert got.n == len(pairs) == n and got.n_flipped == n and got.to_target == 1.0


def test_injection_errors() -> None:
    items = [Item(id="x", messages=[Message(role="user", content="q")])]
    with pytest.raises(TinyjudgeError, match="pass target="):
        injection_flip_rate(naive_judge, items)
    with pytest.raises(TinyjudgeError, match="no items to probe"):
        injection_flip_rate(naive_judge, [])
    unscored = lambda its: [_verdict(it.id, None) for it in its]  # noqa: E731
    with pytest.raises(TinyjudgeError, match="no item was scored both before and after"):
        injection_flip_rate(unscored, items, target="full_refusal")
    assert "{target}" in DEFAULT_INJECTION


# ---------------------------------------------------------------- the report's bias section


def test_bias_report_runs_the_probes_that_apply(llmbar) -> None:
    mt = {it.id for it in llmbar.items if it.id.startswith("llmbar:MT-Bench:")}
    labels = [lab for lab in llmbar.labels if lab.item_id in mt]
    items = [it for it in llmbar.items if it.id in mt]
    sampled = [Label(item_id=f"s{k}", rubric="instruction_following", source="judge:sampled",
                     label="a", raw={"samples": ["a", "a", "b" if k % 2 else "a"]})
               for k in range(4)]  # fmt: skip
    got = bias_report([*labels, *sampled], items, reference="human:gold", level=0.9, n_boot=200)
    json.dumps(got, allow_nan=False)  # JSON-ready: no NaN, no tuples of NamedTuples
    judges = {"judge:ChatGPT/Vanilla_NoRules", "judge:GPT-4/Metrics_Reference",
              "judge:GPT-4/Vanilla_NoRules", "judge:LLaMA2/Vanilla_NoRules"}  # fmt: skip
    assert set(got["position"]) == judges
    gpt4 = got["position"]["judge:GPT-4/Vanilla_NoRules"]
    assert (gpt4["n"], gpt4["n_flips"]) == ((15, 1) if LLMBAR_SLICE else (200, 26))
    assert gpt4["level"] == 0.9
    assert set(got["verbosity"]) == judges | {"human:gold"}
    assert got["verbosity"]["human:gold"]["excess"] is None
    assert got["verbosity"]["judge:GPT-4/Vanilla_NoRules"]["n_paired"] > 0
    # two unanimous items and two with 1 of 3 pairs agreeing
    agreement = got["self_consistency"]["judge:sampled"]["agreement"]["value"]
    assert agreement == pytest.approx((2 + 2 / 3) / 4)
    assert any("injection" in note for note in got["notes"])
