"""``JudgeConfig``: the judge's options, the rules on which conflict, the local defaults, and
the ``judge`` command's flags derived from its fields."""

from __future__ import annotations

from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import pytest
from judge_helpers import run_cli, single

from tinyjudge.cli import in_flags
from tinyjudge.commands._config_flags import flag_of
from tinyjudge.commands.judge import LIBRARY_ONLY
from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.demo import bundled_sample
from tinyjudge.errors import UsageError
from tinyjudge.judge import Judge, JudgeConfig, PanelJudgment, run_judge
from tinyjudge.judge._config import ENDPOINT_DEFAULTS, LOCAL_DEFAULTS


@pytest.mark.parametrize(
    ("options", "param", "shown"),
    [
        ({"local": True, "base_url": "http://127.0.0.1:9/v1"}, "local",
         "--local starts its own server: give no --base-url or --replay"),
        ({"local": True, "replay": Path("l.jsonl")}, "local",
         "--local starts its own server: give no --base-url or --replay"),
        ({"model": "m", "gguf": Path("x.gguf")}, "gguf", "--gguf and --threads go with --local"),
        ({"model": "m", "threads": 2}, "threads", "--gguf and --threads go with --local"),
        ({"replay": Path("l.jsonl"), "base_url": "http://h/v1"}, "replay",
         "give either --replay or --base-url, not both"),
        ({"panel": Path("p.yaml"), "model": "m"}, "panel",
         "--panel names each member's model and endpoint: give no --model, --base-url, "
         "--replay or --local"),
        ({"panel": Path("p.yaml"), "local": True}, "panel", "--panel names each member's"),
        ({"samples": 0}, "samples", "--samples must be >= 1, got 0"),
        ({"timeout": 0.0}, "timeout", "--timeout must be > 0"),
        ({"panel_vote": "loudest"}, "panel_vote", "--panel-vote must be one of 'majority'"),
    ],
    ids=["local-and-base-url", "local-and-replay", "gguf-alone", "threads-alone",
         "replay-and-base-url", "panel-and-model", "panel-and-local", "samples-0", "timeout-0",
         "unknown-vote"],
)  # fmt: skip
def test_a_conflict_or_a_bad_value_names_the_field(
    options: dict[str, Any], param: str, shown: str
) -> None:
    with pytest.raises(UsageError) as e:
        JudgeConfig(**options)
    assert e.value.param == param
    assert "--" not in str(e.value)  # the library names fields; the CLI spells them
    assert in_flags(e.value).startswith(shown)


def test_a_config_without_a_model_is_made_but_not_run() -> None:
    config = JudgeConfig()  # a dry run needs no model
    with pytest.raises(UsageError, match="^model is required") as e:
        config.check_runnable()
    assert e.value.param == "model"
    assert in_flags(e.value).startswith("--model is required (or --replay LABELS.jsonl")


def test_fields_left_none_take_the_endpoints_or_the_local_defaults() -> None:
    endpoint = JudgeConfig(model="m", concurrency=3).judge_options()
    assert endpoint["concurrency"] == 3  # given wins
    assert {k: endpoint[k] for k in ENDPOINT_DEFAULTS if k != "concurrency"} == {
        k: v for k, v in ENDPOINT_DEFAULTS.items() if k != "concurrency"
    }
    local = JudgeConfig(local=True, max_tokens=64).judge_options()
    assert local["max_tokens"] == 64 and local["label_first"] is True
    assert local["timeout"] == LOCAL_DEFAULTS["timeout"] == 900.0


def test_a_judge_takes_a_config_and_keywords_over_it() -> None:
    config = JudgeConfig(model="m", samples=3, temperature=0.7, price_in=1.0)
    judge = Judge("compliance", base_url="http://127.0.0.1:9/v1", config=config, samples=2)
    assert (judge.model, judge.samples, judge.temperature) == ("m", 2, 0.7)
    assert judge.prices == {"input": 1.0, "output": 0.0}
    assert (judge.concurrency, judge.max_tokens, judge.label_first) == (8, 1024, False)
    with pytest.raises(UsageError, match="unknown option 'sampels'") as e:
        Judge("compliance", "m", base_url="http://127.0.0.1:9/v1", sampels=2)
    assert e.value.param == "sampels"
    with pytest.raises(UsageError, match="run_judge starts a local model"):
        Judge("compliance", "m", config=JudgeConfig(local=True))


@pytest.fixture(scope="module")
def xstest() -> Any:
    return run_import("xstest", bundled_sample())


def test_run_judge_replays_recorded_labels(xstest, tmp_path: Path) -> None:
    items = xstest.items[:6]
    recorded = tmp_path / "labels.jsonl"
    write_jsonl(recorded, xstest.labels)
    config = JudgeConfig(replay=recorded, concurrency=2)
    judgment = run_judge(items, "compliance", config, cache=tmp_path / "c.sqlite")
    assert not isinstance(judgment, PanelJudgment)
    assert judgment.source == "judge:replay-gpt-4" and len(judgment) == 6
    want = {lab.item_id: lab.label for lab in xstest.labels if lab.source == "judge:gpt-4"}
    assert {lab.item_id: lab.label for lab in judgment.labels} == {
        it.id: want[it.id] for it in items
    }
    with pytest.raises(UsageError, match="^model is required"):
        run_judge(items, "compliance")


def _argv(config: JudgeConfig) -> list[str]:
    """The flags that give ``config``: one per field that is not at its default."""
    argv: list[str] = []
    for f in fields(config):
        value = getattr(config, f.name)
        if f.name in LIBRARY_ONLY or (f.default is not MISSING and value == f.default):
            continue
        if isinstance(value, bool):
            argv.append(flag_of(f.name) if value else "--no-" + flag_of(f.name)[2:])
        else:
            argv += [flag_of(f.name), str(value)]
    return argv


@pytest.mark.parametrize(
    "config",
    [
        JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1", samples=3, temperature=0.5,
                    concurrency=2, max_retries=0, timeout=5.0, max_reply_mb=2.0, max_tokens=64,
                    response_format="json_object", price_in=1.5, price_out=2.0,
                    api_key_env="MY_KEY"),
        JudgeConfig(local=True, gguf=Path("m.gguf"), threads=2, n_ctx=2048, model="tiny"),
        JudgeConfig(replay=Path("l.jsonl"), replay_source="judge:claude"),
        JudgeConfig(panel=Path("p.yaml"), panel_vote="mean", panel_source="judge:jury"),
    ],
    ids=["endpoint", "local", "replay", "panel"],
)  # fmt: skip
def test_the_flags_give_back_the_config(config, monkeypatch, capsys, tmp_path: Path) -> None:
    import tinyjudge.judge

    items = tmp_path / "items.jsonl"
    write_jsonl(items, [single(0)])
    seen: list[JudgeConfig] = []

    def caught(items: Any, rubric: Any, config: JudgeConfig, **_: Any) -> Any:
        seen.append(config)  # the config the command made from its flags; no run
        raise UsageError("stop here")

    monkeypatch.setattr(tinyjudge.judge, "run_judge", caught)
    monkeypatch.setattr(tinyjudge.judge, "load_panel", lambda path: [])
    args = ["judge", items, "--rubric", "compliance", "--out", tmp_path / "o.jsonl", *_argv(config)]
    rc, _, err = run_cli(monkeypatch, capsys, *args)
    assert rc == 2 and "stop here" in err
    assert seen == [config]


def test_every_field_but_the_library_only_ones_is_a_judge_flag() -> None:
    import typer

    from tinyjudge.cli import app

    judge = typer.main.get_command(app).commands["judge"]  # type: ignore[attr-defined]
    flags = {o for p in judge.params for o in p.opts}
    names = [f.name for f in fields(JudgeConfig)]
    assert {flag_of(n) for n in names if n not in LIBRARY_ONLY} <= flags
    assert not {flag_of(n) for n in LIBRARY_ONLY} & flags
