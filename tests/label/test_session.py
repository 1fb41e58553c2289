"""Opening a labelling session: every user mistake is refused at start, with the fix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.errors import TinyjudgeError
from tinyjudge.label import check_token, open_session
from tinyjudge.records import Item, Message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reviewer": "eve smith"}, "reviewer name 'eve smith' is not allowed"),
        ({"reviewer": "human:x"}, "reviewer name 'human:x' is not allowed"),
        (
            {"reviewer": "annotator_1"},
            "already holds 500 labels from human:annotator_1.*; choose another reviewer name$",
        ),
        ({"select": "best"}, "^select 'best' is not one of"),
        ({"cheap": "rm:nothing"}, "^cheap 'rm:nothing' has no scored label"),
        ({"budget": 0}, "^budget must be at least 1, got 0"),
        ({"rubric": "nope"}, "unknown rubric 'nope'"),
    ],
    ids=[
        "space-in-name",
        "colon-in-name",
        "foreign-human-source",
        "unknown-select",
        "unknown-cheap",
        "zero-budget",
        "unknown-rubric",
    ],
)
def test_bad_options_are_refused(xstest_data, kwargs, message):
    args = {"rubric": "compliance", "reviewer": "frank", **kwargs}
    with pytest.raises(TinyjudgeError, match=message.replace("(", r"\(").replace("[", r"\[")):
        open_session(xstest_data.items, labels=xstest_data.labels, **args)


def test_items_the_rubric_cannot_label_are_refused(tmp_path: Path):
    pair = Item(
        id="p1",
        context=[Message(role="user", content="q")],
        response_a=[Message(role="assistant", content="a")],
        response_b=[Message(role="assistant", content="b")],
    )
    write_jsonl(tmp_path / "pairs.jsonl", [pair])
    with pytest.raises(TinyjudgeError, match="item 'p1' is a pairwise item but rubric"):
        open_session(tmp_path / "pairs.jsonl", "compliance", tmp_path / "l.jsonl", "x")
    one = Item(id="a", messages=[Message(role="user", content="q")])
    write_jsonl(tmp_path / "dupes.jsonl", [one, one])
    with pytest.raises(TinyjudgeError, match="item id 'a' appears twice"):
        open_session(tmp_path / "dupes.jsonl", "compliance", tmp_path / "l.jsonl", "x")
    step = tmp_path / "step.yaml"
    step.write_text("id: first_mistake\nversion: '1'\ntitle: t\nbehavior: b\ntype: step\n")
    write_jsonl(tmp_path / "one.jsonl", [one])
    with pytest.raises(TinyjudgeError, match="'first_mistake' is a step rubric"):
        open_session(tmp_path / "one.jsonl", step, tmp_path / "l.jsonl", "x")


def test_default_order_is_active_on_the_first_judge(xstest_data):
    s = open_session(xstest_data.items, "compliance", xstest_data.labels, "zed")
    assert (s.selector.mode, s.cheap_source) == ("active", "judge:gpt-4")
    assert s.selector.cheap is not None and set(s.selector.cheap) == {0.0, 1.0}
    # the machine labels are kept for the reveal; other people's are not even loaded
    assert {lab.source for lab in s.labels} == {"judge:gpt-4", "classifier:string-match"}
    s.store.close()


def test_teach_learns_the_judge_s_confusion_from_people_in_the_file(xstest_data):
    from support import make_label

    from tinyjudge.datasets.jsonl import read_items, read_labels
    from tinyjudge.label.select import teach_values
    from tinyjudge.rubric import load_rubric

    rubric = load_rubric("compliance")
    names = rubric.label_names
    probs = dict(zip(names, (0.5, 0.3, 0.2), strict=True))  # one doubt everywhere
    ids = [it.id for it in read_items(xstest_data.items)]
    rm = [make_label(i, "rm:flat", names[0], rubric="compliance", probs=probs) for i in ids]
    write_jsonl(xstest_data.labels, [*read_labels(xstest_data.labels), *rm])
    s = open_session(xstest_data.items, "compliance", xstest_data.labels, "zed", "teach")
    assert (s.selector.mode, s.cheap_source) == ("teach", "rm:flat")
    assert s.selector.teach is not None
    # people's labels in the file (three human sources) change the order
    everything = read_labels(xstest_data.labels)
    machine = [lab for lab in everything if not lab.source.startswith("human:")]
    np.testing.assert_allclose(s.selector.teach, teach_values(everything, rubric, ids)[2])
    alone = teach_values(machine, rubric, ids)[2]  # 1 - p(judge's label): 0.5, 0.7 or 0.8
    assert set(alone.round(9)) == {0.5, 0.7, 0.8}
    assert not np.allclose(s.selector.teach, alone)
    s.store.close()


@pytest.mark.parametrize("method", ["stack", "weighted", None])
def test_teach_reads_from_score_s_record_whether_the_model_read_the_judge(xstest_data, method):
    from support import make_label

    from tinyjudge._people_items import LearnedFrom, write_sidecar
    from tinyjudge.datasets.jsonl import read_items, read_labels
    from tinyjudge.label.select import teach_values
    from tinyjudge.rubric import load_rubric

    rubric = load_rubric("compliance")
    names = rubric.label_names
    probs = dict(zip(names, (0.5, 0.3, 0.2), strict=True))
    ids = [it.id for it in read_items(xstest_data.items)]
    rm = [make_label(i, "rm:flat", names[0], rubric="compliance", probs=probs) for i in ids]
    everything = [*read_labels(xstest_data.labels), *rm]
    write_jsonl(xstest_data.labels, everything)
    # what `score` writes beside the labels: the card's people method (auto's choice)
    write_sidecar(xstest_data.labels, LearnedFrom("rm:flat", "rm-dir", people_method=method))
    s = open_session(xstest_data.items, "compliance", xstest_data.labels, "zed", "teach")
    machine = [lab for lab in everything if not lab.source.startswith("human:")]
    alone = teach_values(machine, rubric, ids)[2]  # 1 - p(judge's label)
    confused = teach_values(everything, rubric, ids)[2]  # with people's three sources
    assert not np.allclose(alone, confused)
    if method == "stack":  # its head read the judge's logits: the confusion would count it twice
        np.testing.assert_allclose(s.selector.teach, alone)
        assert s.note is not None and "rm:flat's head read the judge's outputs" in s.note
        assert s.progress()["note"] == s.note
    else:
        np.testing.assert_allclose(s.selector.teach, confused)
        assert s.note is None and s.progress()["note"] is None
    s.store.close()


@pytest.mark.parametrize(
    ("host", "token", "message"),
    [
        ("0.0.0.0", None, r"^host 0\.0\.0\.0 lets other machines reach .*: pass token"),
        ("192.168.1.5", None, r"^host 192\.168\.1\.5 lets other machines reach"),
        ("127.0.0.1", "short", "^token must be at least 16 characters"),
    ],
    ids=["any-address", "lan-address", "short-token"],
)
def test_token_rules(host, token, message):
    with pytest.raises(TinyjudgeError, match=message):
        check_token(host, token)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("127.0.0.2", True), ("0.0.0.0", False), ("example.org", False), ("10.0.0.1", False)],
    ids=["v4", "name", "v6", "v6-bracketed", "v4-other", "any", "dns-name", "lan"],
)  # fmt: skip
def test_no_token_is_needed_on_loopback_only(host, loopback):
    if loopback:
        check_token(host, None)  # no token needed on this machine only
