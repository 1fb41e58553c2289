"""The cascade on real XSTest data: the model keeps what it earned, the judge gets only the rest."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from cascade_split import Split

import tinyjudge
from tinyjudge.cascade import CascadeConfig, CascadeResult, cascade, one_per_group
from tinyjudge.cascade._bound import clopper_pearson_lower
from tinyjudge.cli import main
from tinyjudge.commands.cascade import UNMET
from tinyjudge.datasets.jsonl import read_labels, write_jsonl
from tinyjudge.errors import UsageError
from tinyjudge.judge import Judge, JudgeConfig
from tinyjudge.records import Label
from tinyjudge.testing import replay_server


def _cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: object):
    monkeypatch.setattr(sys, "argv", ["tinyjudge", *map(str, args)])
    with pytest.raises(SystemExit) as e:
        main()
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def _kept_and_escalated(result: CascadeResult) -> tuple[set[str], set[str]]:
    kept = {lab.item_id for lab in result.labels if (lab.decided_by or "").startswith("rm:")}
    return kept, {lab.item_id for lab in result.labels} - kept


def test_the_judge_is_called_exactly_for_the_escalated_items(split: Split, tmp_path: Path) -> None:
    gpt4 = [lab for lab in split.labels if lab.source == "judge:gpt-4"]
    report = [it for it in split.items if it.id in split.report_ids]
    cache = tmp_path / "judge.sqlite"
    with replay_server(gpt4, "judge:gpt-4", items=report, rubric="compliance") as srv:
        judge = Judge("compliance", "replay-gpt-4", base_url=srv.base_url, cache=cache)
        res = cascade(split.model, split.items, split.calibration, reference="judge:gpt-4",
                      target=0.9, judge=judge)  # fmt: skip
        calls = dict(srv.calls_by_item)
    kept, escalated = _kept_and_escalated(res)
    assert kept and escalated  # the data leave both kinds, so the test can tell them apart
    assert set(calls) == escalated and set(calls.values()) == {1}
    assert res.judge_calls == len(escalated) == res.escalated == res.judge_items
    assert {lab.item_id for lab in res.labels} == split.report_ids  # calibration held out
    recorded = {lab.item_id: lab for lab in gpt4}
    for lab in res.labels:
        assert lab.source == "cascade:compliance-linear>replay-gpt-4"
        if lab.item_id in escalated:
            assert lab.decided_by == "judge:replay-gpt-4"
            assert (lab.status, lab.label) == (
                recorded[lab.item_id].status,
                recorded[lab.item_id].label,
            )
        else:
            assert lab.decided_by == "rm:compliance-linear" and lab.probs is not None
    threshold = res.stages[0].threshold
    assert threshold is not None
    P = split.model.predict_proba(split.items)
    conf = {it.id: p.max() for it, p in zip(split.items, P, strict=True)}
    assert all(conf[i] >= threshold for i in kept) and all(conf[i] < threshold for i in escalated)
    # the same run again: every verdict from the cache, no call
    with replay_server(gpt4, "judge:gpt-4", items=report, rubric="compliance") as srv:
        judge = Judge("compliance", "replay-gpt-4", base_url=srv.base_url, cache=cache)
        again = cascade(split.model, split.items, split.calibration, reference="judge:gpt-4",
                        target=0.9, judge=judge)  # fmt: skip
        assert srv.calls == 0
    assert again.judge_calls == 0 and again.judge["cache_hits"] == len(escalated)
    assert [lab.label for lab in again.labels] == [lab.label for lab in res.labels]


def test_a_panel_of_replays_is_the_cascade_judge_through_its_config(
    split: Split, tmp_path: Path
) -> None:
    # any kind of judge a JudgeConfig names works where the cascade asks for one: here a
    # panel whose members are replays, each opened for the items by open_judge
    gpt4 = [lab for lab in split.labels if lab.source == "judge:gpt-4"]
    write_jsonl(tmp_path / "gpt4.jsonl", gpt4)
    panel = tmp_path / "panel.yaml"
    panel.write_text("".join(
        f"- {{model: {m}, replay: '{tmp_path / 'gpt4.jsonl'}'}}\n" for m in ("a", "b")
    ))  # fmt: skip
    res = cascade(split.model, split.items, split.calibration, reference="judge:gpt-4",
                  target=0.9, judge=JudgeConfig(panel=panel))  # fmt: skip
    kept, escalated = _kept_and_escalated(res)
    assert kept and escalated and res.judge_items == len(escalated)
    recorded = {lab.item_id: lab for lab in gpt4}
    for lab in res.labels:
        assert lab.source == "cascade:compliance-linear>panel"
        if lab.item_id in escalated:
            assert lab.decided_by == "judge:panel"
            assert lab.label == recorded[lab.item_id].label


def test_the_guarantee_figures_come_from_the_calibration_items(split: Split) -> None:
    res = cascade(split.model, split.items, split.calibration, reference="judge:gpt-4", target=0.9)
    stage = res.stages[0]
    chosen = stage.choice.chosen
    assert res.guaranteed and chosen is not None and stage.lower_bound is not None
    assert stage.calibration_n == len(split.cal_ids) == res.n_calibration
    assert stage.lower_bound >= 0.9 and chosen.agreement >= stage.lower_bound
    low, high = stage.calibration_agreement.low, stage.calibration_agreement.high
    assert low is not None and high is not None and low <= chosen.agreement <= high
    # without a judge, what the model passes on is left to people, unscored, never guessed
    kept, escalated = _kept_and_escalated(res)
    for lab in res.labels:
        if lab.item_id in escalated:
            assert (lab.status, lab.reason, lab.label) == ("unscored", "escalated", None)
    assert res.source == "cascade:compliance-linear>people"
    assert res.abstained == len(escalated) and res.judge_calls == 0
    assert res.judge_items_per_1000 == pytest.approx(1000 * len(escalated) / len(res.labels))
    assert stage.share_kept == pytest.approx(len(kept) / len(res.labels))


def test_when_no_threshold_can_guarantee_every_item_is_escalated(split: Split) -> None:
    res = cascade(split.model, split.items, split.calibration, reference="judge:gpt-4",
                  target=0.999)  # fmt: skip
    assert not res.guaranteed and res.stages[0].threshold is None
    assert res.note.startswith("target 0.999 not met: 200 calibration items cannot reach it")
    assert res.note.endswith("every item is escalated; label more calibration items, or lower "
                             "target or raise delta")  # fmt: skip
    assert "\n" not in res.note and "nan" not in "\n".join(res.lines())
    assert res.escalated == res.n_items and all(lab.status == "unscored" for lab in res.labels)
    assert res.to_dict()["guaranteed"] is False


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"reference": "human:nobody"},
            UsageError,
            r"no calibration labels from source 'human:nobody' under this rubric; sources present",
        ),
        (
            {"reference": "judge:gpt-4", "rubric": "compliance"},
            UsageError,
            r"rubric needs a judge; pass judge too",
        ),
        (
            {"reference": "judge:gpt-4", "target": 1.0},
            UsageError,
            r"target must be a finite number in \[0.5, 0.999\], got 1.0",
        ),
        (
            {"reference": "judge:gpt-4", "delta": float("nan")},
            UsageError,
            r"delta must be .* got nan",
        ),
        ({"reference": "judge:gpt-4", "tagret": 0.9}, UsageError, r"unknown option 'tagret'"),
    ],
    ids=["no-reference", "rubric-without-judge", "target-1", "nan-delta", "typo"],
)
def test_bad_options_are_refused_in_one_line(split: Split, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        cascade(split.model, split.items, split.calibration, **kwargs)


def test_no_calibration_item_among_the_items_is_refused(split: Split) -> None:
    report = [it for it in split.items if it.id in split.report_ids]
    with pytest.raises(UsageError, match=r"none of the items has an ok label from 'judge:gpt-4'"):
        cascade(split.model, report, split.calibration, reference="judge:gpt-4")


def test_the_top_level_name_and_the_config(split: Split) -> None:
    config = CascadeConfig(target=0.9, delta=0.05)
    res = tinyjudge.cascade(split.model, split.items, split.calibration,
                            reference="judge:gpt-4", config=config)  # fmt: skip
    assert isinstance(res, CascadeResult) and res.delta == 0.05
    assert res.stages[0].choice.delta == 0.05


def test_a_second_stage_thresholds_the_judge_against_people(
    half_split: Split, tmp_path: Path
) -> None:
    split = half_split
    # a judge whose recorded distribution is sure where it agrees with people, unsure elsewhere
    people = {lab.item_id: lab for lab in split.labels if lab.source == "human:final"}
    labels = ["full_compliance", "full_refusal", "partial_refusal"]
    recorded = []
    for lab in split.labels:
        if lab.source != "judge:gpt-4" or lab.status != "ok":
            continue
        sure = 0.98 if lab.label == people[lab.item_id].label else 0.6
        probs = {c: sure if c == lab.label else (1 - sure) / 2 for c in labels}
        recorded.append(lab.model_copy(update={"probs": probs, "source": "judge:sure"}))
    calibration = split.calibration + [people[i] for i in split.cal_ids]
    with replay_server(recorded, "judge:sure", items=split.items, rubric="compliance") as srv:
        judge = Judge("compliance", "replay-sure", base_url=srv.base_url)
        # the items without their prompt key, so the stages test them as independent items
        # (by prompt, the bundled sample leaves the second stage too few groups)
        items = [it.model_copy(update={"metadata": {}}) for it in split.items]
        res = cascade(split.model, items, calibration, reference="judge:gpt-4",
                      target=0.9, judge=judge, stage="human:final")  # fmt: skip
        calls = set(srv.calls_by_item)
    first, second = res.stages
    assert res.group_by is None and first.choice.bound == second.choice.bound == "item"
    assert "item level" in res.grouping
    assert second.decided_by == "judge:replay-sure" and second.reference == "human:final"
    assert first.choice.delta == second.choice.delta == 0.05  # delta shared by the two stages
    kept, escalated = _kept_and_escalated(res)
    # the judge saw the escalated items and the people-labelled calibration items that the
    # first stage would escalate, never an item the model kept
    assert escalated <= calls and not (kept & calls) and calls - escalated <= split.cal_ids
    assert res.calibration_judge_items == len(calls - escalated)
    by_judge = [lab for lab in res.labels if lab.decided_by == "judge:replay-sure"]
    left = [lab for lab in res.labels if lab.status == "unscored"]
    assert second.guaranteed and by_judge and second.kept == len(by_judge)
    assert {lab.reason for lab in left} <= {"abstained"} and len(left) == res.abstained
    assert second.threshold is not None
    assert all(max((lab.probs or {}).values()) >= second.threshold for lab in by_judge)


def _written(split: Split, tmp_path: Path) -> tuple[Path, Path, Path]:
    """The split as the command reads it: the model directory, the items, the calibration."""
    model_dir = split.model.save(tmp_path / "rm")
    items, calib = tmp_path / "items.jsonl", tmp_path / "calibration.jsonl"
    write_jsonl(items, split.items)
    write_jsonl(calib, split.calibration)
    return model_dir, items, calib


def test_cli_writes_labels_and_figures_that_audit_and_estimate_read(
    split: Split, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    model_dir, items, calib = _written(split, tmp_path)
    out = tmp_path / "cascade"
    args = ["cascade", model_dir, items, "--calibration", calib, "--reference", "judge:gpt-4"]
    rc, stdout, err = _cli(monkeypatch, capsys, *args, "--target", "0.9", "--out", out)
    assert rc == 0, err
    assert "rm:compliance-linear: threshold" in stdout
    figures = json.loads((out / "cascade.json").read_text())
    labels = read_labels(out / "labels.jsonl")
    assert figures["guaranteed"] is True and figures["target"] == 0.9 and figures["delta"] == 0.1
    assert figures["calibration_n"] == len(split.cal_ids) and figures["threshold"] > 0
    assert figures["judge_only_items_per_1000"] == 1000.0
    assert figures["judge_items_per_1000"] == pytest.approx(
        1000 * sum(lab.status == "unscored" for lab in labels) / len(labels)
    )
    assert {lab.item_id for lab in labels} == split.report_ids
    # audit and estimate take the cascade's labels as any other source
    people = tmp_path / "people.jsonl"
    write_jsonl(people, [lab for lab in split.labels if lab.source == "human:final"])
    rc, stdout, err = _cli(monkeypatch, capsys, "audit", out / "labels.jsonl", people,
                           "--reference", "human:final", "--json", tmp_path / "a.json")  # fmt: skip
    assert rc == 0, err
    assert "cascade:compliance-linear>people" in (tmp_path / "a.json").read_text()
    rc, stdout, err = _cli(monkeypatch, capsys, "estimate", out / "labels.jsonl", people,
                           "--items", items, "--cheap", "cascade:compliance-linear>people",
                           "--human", "human:final")  # fmt: skip
    assert rc == 0, err
    shown = " ".join(stdout.split())
    assert "(%, rubric compliance): cascade:compliance-linear>people + human:final" in shown
    # a bad flag value is refused before any work, named as its flag
    rc, _, err = _cli(monkeypatch, capsys, *args, "--target", "2", "--out", tmp_path / "x")
    assert rc == 2 and "--target" in err and not (tmp_path / "x").exists()


def test_label_records_keep_decided_by_and_refuse_unknown_fields() -> None:
    lab = Label(item_id="a", rubric="r", source="cascade:m>j", label="x", decided_by="rm:m")
    assert Label.model_validate_json(lab.model_dump_json()).decided_by == "rm:m"
    with pytest.raises(ValueError, match="decided"):
        Label(item_id="a", rubric="r", source="s", label="x", decidedby="rm:m")  # type: ignore[call-arg]


def test_cli_with_a_judge_caches_in_the_out_folder_and_resumes(
    split: Split, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    model_dir, items, calib = _written(split, tmp_path)
    gpt4 = [lab for lab in split.labels if lab.source == "judge:gpt-4"]
    report = [it for it in split.items if it.id in split.report_ids]
    out = tmp_path / "cascade"
    for run in (1, 2):
        with replay_server(gpt4, "judge:gpt-4", items=report, rubric="compliance") as srv:
            rc, stdout, err = _cli(monkeypatch, capsys, "cascade", model_dir, items,
                                   "--calibration", calib, "--reference", "judge:gpt-4",
                                   "--target", "0.9", "--judge-model", "replay-gpt-4",
                                   "--judge-base-url", srv.base_url, "--out", out)  # fmt: skip
            calls = srv.calls
        assert rc == 0, err
        figures = json.loads((out / "cascade.json").read_text())
        assert figures["judge_calls"] == calls == (figures["escalated"] if run == 1 else 0)
    assert (out / "judge.cache.sqlite").is_file() and figures["judge"]["cache_hits"] > 0
    labels = read_labels(out / "labels.jsonl")
    assert {lab.decided_by for lab in labels} == {"rm:compliance-linear", "judge:replay-gpt-4"}


def test_the_guarantee_is_tested_over_the_prompts_the_importer_wrote(split: Split) -> None:
    res = cascade(split.model, split.items, split.calibration, reference="judge:gpt-4", target=0.9)
    stage = res.stages[0]
    assert res.group_by == "metadata.prompt_id" and stage.choice.bound == "cluster"
    assert stage.choice.n_groups == 40 and all(s.groups <= 40 for s in stage.choice.steps)
    assert res.grouping == (
        "guarantee unit: the group (found key metadata.prompt_id); cluster "
        "bound (Korn-Graubard) over the 40 groups of metadata.prompt_id"
    )
    assert res.grouping in res.lines() and res.to_dict()["bound"] == "cluster"
    chosen = stage.choice.chosen
    assert chosen is not None and chosen.n_eff < chosen.n  # the prompts' answers count less


def test_the_exact_bound_reads_one_random_answer_per_prompt(half_split: Split) -> None:
    split = half_split
    res = cascade(split.model, split.items, split.calibration, reference="judge:gpt-4",
                  target=0.85, bound="exact", seed=0)  # fmt: skip
    choice = res.stages[0].choice
    assert res.guaranteed and choice.bound == "exact" and "exact bound" in res.grouping
    assert choice.n_calibration == 125 and choice.n_used == choice.n_groups == 25
    # the test it ran is the binomial one on the answers one_per_group picks
    items = {it.id: it for it in split.items}
    cal = [lab.item_id for lab in split.calibration]
    picked = [cal[i] for i in one_per_group([items[i].metadata["prompt_id"] for i in cal], 0)]
    P = split.model.predict_proba([items[i] for i in picked])
    said = split.model.labels_for([items[i] for i in picked], P)
    ref = {lab.item_id: lab.label for lab in split.calibration}
    hits = [lab.label == ref[i] for lab, i in zip(said, picked, strict=True)]
    chosen = choice.chosen
    assert chosen is not None
    kept = P.max(axis=1) >= chosen.threshold
    assert chosen.n == int(kept.sum()) and chosen.agree == sum(np.array(hits)[kept])
    assert chosen.lower == clopper_pearson_lower(chosen.agree, chosen.n, 0.1) >= 0.85


def test_group_by_overrides_and_too_few_groups_is_one_line(split: Split) -> None:
    res = cascade(split.model, split.items, split.calibration, reference="judge:gpt-4",
                  target=0.9, group_by="metadata.answering_model")  # fmt: skip
    assert res.group_by == "metadata.answering_model" and "given key" in res.grouping
    assert not res.guaranteed and res.stages[0].choice.too_few_groups
    assert res.note == (
        "target 0.9 not met: the calibration items come from 5 groups, too few for the cluster "
        "bound: every item is escalated; label items of at least 30 groups of "
        "metadata.answering_model, or use the exact bound (bound exact: one item per group)"
    )
    with pytest.raises(UsageError, match="has no 'metadata.dialogue_id'; group_by needs a key"):
        cascade(split.model, split.items, split.calibration, reference="judge:gpt-4",
                group_by="metadata.dialogue_id")  # fmt: skip


def test_items_without_a_group_key_keep_the_item_bound_and_say_so(split: Split) -> None:
    items = [it.model_copy(update={"metadata": {}}) for it in split.items]
    res = cascade(split.model, items, split.calibration, reference="judge:gpt-4", target=0.9)
    assert res.group_by is None and res.stages[0].choice.bound == "item"
    assert res.grouping.startswith("no prompt, question or dialogue key on the calibration items")


def test_cli_an_unmet_target_is_one_line_and_exit_status_3(
    split: Split, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    model_dir, items, calib = _written(split, tmp_path)
    out = tmp_path / "cascade"
    rc, stdout, err = _cli(monkeypatch, capsys, "cascade", model_dir, items, "--calibration",
                           calib, "--reference", "judge:gpt-4", "--target", "0.9", "--group-by",
                           "metadata.answering_model", "--out", out)  # fmt: skip
    assert rc == UNMET == 3, err
    shown = " ".join(stdout.split())
    assert "target 0.9 not met: the calibration items come from 5 groups" in shown
    assert "nan" not in stdout and "rm:compliance-linear: no threshold; kept 0/100" in shown
    text = (out / "cascade.json").read_text()
    figures = json.loads(text)
    assert figures["guaranteed"] is False and figures["calibration_agreement"] is None
    assert figures["group_by"] == "metadata.answering_model" and "NaN" not in text
    stage = figures["stages"][0]
    assert (stage["bound"], stage["n_groups"], stage["too_few_groups"]) == ("cluster", 5, True)
    rc, stdout, err = _cli(monkeypatch, capsys, "cascade", model_dir, items, "--calibration",
                           calib, "--reference", "judge:gpt-4", "--target", "0.85", "--bound",
                           "exact", "--seed", "1", "--out", out)  # fmt: skip
    assert rc == 0, err
    assert "exact bound on one random item of each of the 40 groups" in " ".join(stdout.split())


def test_an_unmet_target_names_the_first_test_that_failed(split: Split) -> None:
    res = cascade(split.model, split.items, split.calibration, reference="judge:gpt-4",
                  target=0.97)  # fmt: skip
    first = res.stages[0].choice.steps[0]
    assert not res.guaranteed and not first.passed and first.agree < first.n
    assert res.note == (
        f"target 0.97 not met vs judge:gpt-4: its most confident {first.n} calibration items "
        f"agree {first.agree}/{first.n}, lower bound {first.lower:.3f} < 0.97: every item is "
        "escalated; lower target, raise delta, or label more calibration items"
    )
    assert "nan" not in "\n".join(res.lines())
