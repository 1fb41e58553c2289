"""One seam for every kind of judge: ``open_judge(config, rubric)`` gives an endpoint's, a
replay's or a panel's judge behind one :class:`JudgeLike` (a panel's members opened the same
way, so a member may be a replay or a local model); a config nested in a stage's config gives
the stage its flags under a prefix."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from judge_helpers import single, verdict

from tinyjudge.cascade import AuditSamplerConfig, CascadeConfig
from tinyjudge.commands import cascade as cascade_cmd
from tinyjudge.commands import exploit as exploit_cmd
from tinyjudge.commands import serve as serve_cmd
from tinyjudge.commands._config_flags import config_flags
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.errors import DataError, UsageError
from tinyjudge.exploit import ExploitConfig
from tinyjudge.judge import (
    Judge,
    JudgeConfig,
    JudgeLike,
    Panel,
    PanelJudge,
    PanelMember,
    load_panel,
    open_judge,
)
from tinyjudge.records import Label
from tinyjudge.rubric import load_rubric
from tinyjudge.testing import Reply


def _says(label: str):
    return lambda _req: Reply(verdict(label))


def test_an_endpoint_opens_as_a_judge(serve) -> None:
    srv = serve(_says("full_refusal"))
    config = JudgeConfig(model="m", base_url=srv.base_url, timeout=5, max_retries=0)
    with open_judge(config, "compliance") as judge:
        assert isinstance(judge, Judge) and isinstance(judge, JudgeLike)
        assert (judge.timeout, judge.max_retries) == (5, 0)
        got = judge.run([single(0), single(1)])
    assert [lab.label for lab in got] == ["full_refusal"] * 2
    assert got.source == "judge:m"


def test_a_replay_opens_for_the_items_it_is_given(tmp_path: Path) -> None:
    items = [single(i) for i in range(3)]
    recorded = [Label(item_id=it.id, rubric="compliance", source="judge:gpt-4",
                      label="full_compliance") for it in items]  # fmt: skip
    write_jsonl(tmp_path / "rec.jsonl", recorded)
    config = JudgeConfig(replay=tmp_path / "rec.jsonl")
    with open_judge(config, "compliance", items=items) as judge:
        got = judge.run(items)
    assert [lab.label for lab in got] == ["full_compliance"] * 3
    with pytest.raises(UsageError, match=r"a replay answers for the items it is given"):
        with open_judge(config, "compliance"):
            pass


def test_a_panel_opens_as_one_judge_of_its_vote(serve, tmp_path: Path) -> None:
    urls = [serve(_says(label)).base_url for label in ("full_refusal", "full_refusal",
                                                        "full_compliance")]  # fmt: skip
    panel = tmp_path / "panel.yaml"
    panel.write_text("".join(f"- {{model: m{i}, base_url: '{u}'}}\n" for i, u in enumerate(urls)))
    with open_judge(JudgeConfig(panel=panel), "compliance") as judge:
        assert isinstance(judge, PanelJudge) and isinstance(judge, JudgeLike)
        got = judge.run([single(0), single(1)])
    assert got.source == "judge:panel" and [lab.label for lab in got] == ["full_refusal"] * 2
    assert got.summary.calls == 6 and got.summary.items == 2


def test_no_model_is_refused_before_anything_opens() -> None:
    with pytest.raises(UsageError, match=r"model is required"):
        with open_judge(JudgeConfig(), "compliance"):
            pass


@pytest.mark.parametrize(
    ("command", "prefix"),
    [(cascade_cmd.command, "judge"), (exploit_cmd.command, "judge"), (serve_cmd.command, "audit")],
    ids=["cascade", "exploit", "serve"],
)
def test_every_command_that_judges_takes_the_judge_flags_under_its_prefix(
    command, prefix: str
) -> None:
    params = inspect.signature(command).parameters
    for field in ("model", "base_url", "timeout", "max_retries", "replay", "local", "panel"):
        assert f"{prefix}_{field}" in params, field
    assert list(params[f"{prefix}_timeout"].default.param_decls) == [f"--{prefix}-timeout"]


def test_the_audits_own_flags_are_derived_beside_its_judges() -> None:
    params = inspect.signature(serve_cmd.command).parameters
    assert list(params["audit_rate"].default.param_decls) == ["--audit-rate"]
    assert list(params["audit_budget"].default.param_decls) == ["--audit-budget"]
    assert "audit_judge" not in params  # the judge's fields stand under the same prefix


def test_the_audit_flags_build_one_audit_config_with_its_judge() -> None:
    seen: dict = {}

    @config_flags(AuditSamplerConfig, prefix="audit", into="audit")
    def command(*, audit: AuditSamplerConfig | None) -> None:
        seen["audit"] = audit

    flags = {name: None for name in inspect.signature(command).parameters}
    command(**flags)
    assert seen["audit"] is None  # no --audit-* flag: no audit
    command(**{**flags, "audit_model": "m", "audit_timeout": 3.0, "audit_rate": 0.5})
    assert seen["audit"] == AuditSamplerConfig(judge=JudgeConfig(model="m", timeout=3.0), rate=0.5)
    with pytest.raises(UsageError, match=r"audit_rate must be a finite number in \[0, 1\]"):
        command(**{**flags, "audit_model": "m", "audit_rate": 1.5})
    with pytest.raises(UsageError, match=r"audit_local starts its own server") as e:
        command(**{**flags, "audit_local": True, "audit_base_url": "http://x/v1"})
    assert e.value.param == "audit_local"


def test_the_nested_config_is_one_judge_config() -> None:
    config = CascadeConfig(judge=JudgeConfig(model="m", timeout=2.0))
    assert config.judge is not None and config.judge.timeout == 2.0
    assert ExploitConfig().judge is None


def test_a_panel_member_may_be_a_replay_opened_like_any_judge(serve, tmp_path: Path) -> None:
    items = [single(i) for i in range(3)]
    recorded = [Label(item_id=it.id, rubric="compliance", source="judge:gpt-4",
                      label="full_compliance") for it in items]  # fmt: skip
    write_jsonl(tmp_path / "rec.jsonl", recorded)
    urls = [serve(_says(label)).base_url for label in ("full_compliance", "full_refusal")]
    panel = tmp_path / "panel.yaml"
    panel.write_text(
        f"- {{model: gpt-4, replay: '{tmp_path / 'rec.jsonl'}'}}\n"
        + "".join(f"- {{model: m{i}, base_url: '{u}'}}\n" for i, u in enumerate(urls))
    )
    config = JudgeConfig(panel=panel, timeout=5)
    with open_judge(config, "compliance", items=items) as judge:
        assert isinstance(judge, PanelJudge)
        members = judge.panel.judges
        assert [m.source for m in members] == ["judge:gpt-4", "judge:m0", "judge:m1"]
        assert all(isinstance(m, Judge) and m.timeout == 5 for m in members)
        got = judge.run_panel(items)
    assert [lab.label for lab in got.members["judge:gpt-4"].labels] == ["full_compliance"] * 3
    assert [lab.label for lab in got.panel] == ["full_compliance"] * 3  # 2 of 3 members
    # a replay member answers for the items it is given: without them, refused as a replay is
    with pytest.raises(UsageError, match=r"a replay answers for the items it is given"):
        with open_judge(config, "compliance"):
            pass


def test_a_member_is_a_judge_config_under_the_panels_options(tmp_path: Path) -> None:
    panel = JudgeConfig(panel=tmp_path / "p.yaml", samples=3, temperature=0.7, timeout=9)
    local = PanelMember(model="qwen", local=True, threads=2).judge_config(panel)
    assert (local.local, local.threads, local.panel, local.model) == (True, 2, None, "qwen")
    assert (local.samples, local.temperature, local.timeout) == (3, 0.7, 9)
    assert local.judge_options()["concurrency"] == 1  # the local defaults where none is given
    endpoint = PanelMember(model="m", base_url="http://127.0.0.1:9/v1").judge_config(panel)
    assert endpoint.judge_options()["concurrency"] == 8 and not endpoint.local


@pytest.mark.parametrize(
    ("member", "match"),
    [
        ("{model: b, local: true, base_url: 'http://x/v1'}", "member 2: local starts its own"),
        ("{model: b, replay: r.jsonl, base_url: 'http://x/v1'}", "member 2: give either replay"),
        ("{model: b, gguf: m.gguf}", "member 2: gguf and threads go with local"),
    ],
    ids=["local-and-url", "replay-and-url", "gguf-alone"],
)
def test_a_member_whose_fields_conflict_is_refused_naming_it(
    tmp_path: Path, member: str, match: str
) -> None:
    path = tmp_path / "panel.yaml"
    path.write_text(f"- {{model: a, base_url: 'http://x/v1'}}\n- {member}\n")
    with pytest.raises(DataError, match=match) as e:
        load_panel(path)
    assert str(e.value).startswith(str(path))


def test_a_panel_made_by_hand_opens_no_local_member() -> None:
    members = [PanelMember(model="a", base_url="http://x/v1"), PanelMember(model="b", local=True)]
    with pytest.raises(UsageError, match=r"'b' is a local model or a replay: open the panel"):
        Panel(load_rubric("compliance"), members)
