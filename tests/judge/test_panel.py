"""A panel of judges: three real local endpoints, each member's labels kept, their majority."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_helpers import run_cli, single, verdict

from tinyjudge.datasets.jsonl import read_labels, write_jsonl
from tinyjudge.errors import DataError, UsageError
from tinyjudge.judge._panel import Panel, PanelMember, load_panel, panel_labels
from tinyjudge.records import Label
from tinyjudge.rubric import load_rubric
from tinyjudge.testing import Reply, Request

FC, FR, PR = "full_compliance", "full_refusal", "partial_refusal"
# What each member says of items it-0 .. it-3: it-3 is a three-way tie.
SAYS = {
    "m1": [FC, FR, FC, PR],
    "m2": [FC, FR, FR, FC],
    "m3": [FR, FR, FC, FR],
}


def _responder(says: list[str]):
    def respond(req: Request) -> Reply:
        assert req.item_id is not None
        return Reply(verdict(says[int(req.item_id.split("-")[1])]))

    return respond


@pytest.fixture
def three(serve, tmp_path: Path) -> tuple[dict, Path, Path]:
    servers = {m: serve(_responder(says)) for m, says in SAYS.items()}
    panel = tmp_path / "panel.yaml"
    panel.write_text(
        "".join(
            f"- {{model: {m}, base_url: '{srv.base_url}', api_key_env: NO_SUCH_KEY_SET}}\n"
            for m, srv in servers.items()
        )
    )
    items = tmp_path / "items.jsonl"
    write_jsonl(items, [single(i) for i in range(4)])
    return servers, panel, items


def test_a_panel_of_three_endpoints_keeps_each_member_and_their_majority(
    three, tmp_path, monkeypatch, capsys
) -> None:
    servers, panel, items = three
    out = tmp_path / "labels.jsonl"
    args = ("judge", items, "--rubric", "compliance", "--panel", panel, "--out", out,
            "--summary", tmp_path / "s.json", "--no-progress")  # fmt: skip
    rc, stdout, err = run_cli(monkeypatch, capsys, *args)
    assert rc == 0, err
    labels = read_labels(out)
    for m, says in SAYS.items():
        mine = [lab for lab in labels if lab.source == f"judge:{m}"]
        assert [lab.label for lab in mine] == says
        assert servers[m].calls == 4
    panel_labs = {lab.item_id: lab for lab in labels if lab.source == "judge:panel"}
    assert [panel_labs[f"it-{i}"].label for i in range(3)] == [FC, FR, FC]
    assert panel_labs["it-0"].probs == pytest.approx({FC: 2 / 3, FR: 1 / 3, PR: 0.0})
    tie = panel_labs["it-3"]
    assert tie.status == "unscored" and tie.label is None
    assert tie.reason is not None and tie.reason.startswith("tie between members")
    assert "partial_refusal (judge:m1)" in tie.reason
    assert tie.raw == {"panel": {"judge:m1": PR, "judge:m2": FC, "judge:m3": FR}}
    # Over the three items the panel scored (the tie is left out): m1 always agrees, m2
    # misses it-2, m3 it-0.
    assert "judge:m1: agrees with the panel on 100.0% of 3 items" in stdout
    assert "judge:m2: agrees with the panel on 66.7% of 3 items" in stdout
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["agreement_with_panel"]["judge:m3"] == {"agreement": 2 / 3, "n": 3}
    assert set(summary["members"]) == {"judge:m1", "judge:m2", "judge:m3"}

    # A second run resumes every member from the one cache: no call is made again.
    rc, _, _ = run_cli(monkeypatch, capsys, *args)
    assert rc == 0 and [srv.calls for srv in servers.values()] == [4, 4, 4]
    again = read_labels(out)
    assert [(x.source, x.item_id, x.label, x.probs) for x in again] == [
        (x.source, x.item_id, x.label, x.probs) for x in labels
    ]
    assert all(x.usage and x.usage["cached"] for x in again if x.source != "judge:panel")


def test_the_mean_vote_averages_probabilities_first(make_label) -> None:
    rubric = load_rubric("compliance")

    def lab(source: str, probs: dict[str, float]) -> Label:
        top = max(probs, key=lambda k: probs[k])
        return make_label("x", source, top, rubric="compliance", probs=probs)

    members = {
        "judge:a": [lab("judge:a", {FC: 0.55, FR: 0.45, PR: 0.0})],
        "judge:b": [lab("judge:b", {FC: 0.55, FR: 0.45, PR: 0.0})],
        "judge:c": [lab("judge:c", {FC: 0.0, FR: 1.0, PR: 0.0})],
    }
    (majority,) = panel_labels(members, rubric, vote="majority")
    (mean,) = panel_labels(members, rubric, vote="mean")
    assert majority.label == FC and mean.label == FR
    assert mean.probs == pytest.approx({FC: 1.1 / 3, FR: 1.9 / 3, PR: 0.0})
    assert mean.source == "judge:panel"


def test_a_member_that_did_not_score_is_left_out_of_the_vote() -> None:
    rubric = load_rubric("compliance")
    a = Label(item_id="x", rubric="compliance", source="judge:a", label=FR, probs={FR: 1.0})
    b = Label(item_id="x", rubric="compliance", source="judge:b", label=FR, probs={FR: 1.0})
    c = Label(
        item_id="x", rubric="compliance", source="judge:c", status="unscored", reason="refused"
    )
    (got,) = panel_labels({"judge:a": [a], "judge:b": [b], "judge:c": [c]}, rubric)
    assert got.label == FR and got.rationale is not None and got.rationale.startswith("2 of 2")
    (none,) = panel_labels({"judge:c": [c], "judge:d": [c.model_copy()]}, rubric)
    assert none.status == "unscored" and none.reason == "no member of the panel scored the item"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("- {model: a, base_url: 'http://x'}\n", "at least 2 members"),
        ("- {model: a, api_key: sk-123}\n- {model: b}\n", "member 1: a key is never written"),
        ("- {model: a}\n- {model: a}\n", r"members share a model \['a'\]"),
        ("- {model: a}\n- {model: b, url: x}\n", "member 2: field url: unknown field"),
        ("- {model: a}\n- {model: b, api_key_env: 'not a name'}\n", "member 2: field api_key_env"),
        ("- {model: a}\n- just-a-name\n", "member 2: expected a mapping"),
        ("[unclosed\n", "not valid YAML"),
    ],
    ids=["one-member", "key-in-file", "same-model", "unknown-field", "bad-env", "scalar", "yaml"],
)
def test_a_bad_panel_file_is_one_line_naming_it(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "panel.yaml"
    path.write_text(text)
    with pytest.raises(DataError, match=match) as e:
        load_panel(path)
    assert str(e.value).startswith(str(path)) and "\n" not in str(e.value)


def test_a_member_without_key_or_endpoint_is_refused(monkeypatch) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_SET", raising=False)
    members = [PanelMember(model="a", api_key_env="NO_SUCH_KEY_SET"), PanelMember(model="b")]
    with pytest.raises(UsageError, match=r"'a' has no base_url and no key in \$NO_SUCH_KEY_SET"):
        Panel(load_rubric("compliance"), members)


def test_panel_excludes_model_and_base_url(three, tmp_path, monkeypatch, capsys) -> None:
    _, panel, items = three
    rc, _, err = run_cli(
        monkeypatch, capsys, "judge", items, "--rubric", "compliance", "--panel", panel,
        "--model", "m", "--out", tmp_path / "l.jsonl",
    )  # fmt: skip
    assert rc == 2 and "--panel names each member's model and endpoint" in err


def test_a_panel_mixes_a_replay_with_endpoints_on_the_command_line(
    three, tmp_path, monkeypatch, capsys
) -> None:
    servers, _, items = three
    recorded = [Label(item_id=f"it-{i}", rubric="compliance", source="judge:gpt-4", label=FR)
                for i in range(4)]  # fmt: skip
    write_jsonl(tmp_path / "rec.jsonl", recorded)
    panel = tmp_path / "mixed.yaml"
    panel.write_text(
        f"- {{model: gpt-4, replay: '{tmp_path / 'rec.jsonl'}'}}\n"
        + "".join(f"- {{model: {m}, base_url: '{servers[m].base_url}'}}\n" for m in ("m1", "m2"))
    )
    out = tmp_path / "labels.jsonl"
    rc, _, err = run_cli(monkeypatch, capsys, "judge", items, "--rubric", "compliance",
                         "--panel", panel, "--out", out, "--no-progress")  # fmt: skip
    assert rc == 0, err
    labels = read_labels(out)
    assert [lab.label for lab in labels if lab.source == "judge:gpt-4"] == [FR] * 4
    panel_labs = [lab for lab in labels if lab.source == "judge:panel"]
    # gpt-4 says FR throughout; with m1 [FC, FR, FC, PR] and m2 [FC, FR, FR, FC]
    assert [lab.label for lab in panel_labs[:3]] == [FC, FR, FR]
    assert panel_labs[3].status == "unscored"  # FR, PR, FC: a three-way tie


def test_a_local_member_is_started_as_the_local_judge_is(
    three, tmp_path, monkeypatch, capsys
) -> None:
    servers, _, items = three
    panel = tmp_path / "local.yaml"
    panel.write_text(
        f"- {{model: m1, base_url: '{servers['m1'].base_url}'}}\n"
        f"- {{model: mine, local: true, gguf: '{tmp_path / 'no.gguf'}'}}\n"
    )
    out = tmp_path / "labels.jsonl"
    rc, _, err = run_cli(monkeypatch, capsys, "judge", items, "--rubric", "compliance",
                         "--panel", panel, "--out", out, "--no-progress")  # fmt: skip
    # the member goes where --local goes: its model file is looked for, and missing, before
    # any member is asked anything
    assert rc == 2 and "no.gguf: no such file" in err and len(err.strip().splitlines()) == 1
    assert servers["m1"].calls == 0 and not out.exists()
