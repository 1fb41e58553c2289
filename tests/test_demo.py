"""The demo's loop on the bundled sample (linear tier, to stay fast) and its cache on re-run."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from tinyjudge.demo import SPLITS, run_demo, split_of


def test_split_is_stable_and_roughly_proportional() -> None:
    keys = [f"v2-{i}" for i in range(3000)]
    splits = [split_of(k) for k in keys]
    assert splits == [split_of(k) for k in keys]
    for name, share in SPLITS:
        assert abs(splits.count(name) / len(keys) - share) < 0.03


def test_demo_runs_the_loop_and_reuses_the_cache(tmp_path: Path) -> None:
    console = Console(file=open(tmp_path / "log.txt", "w"), width=120)
    first = run_demo(None, tmp_path / "demo", console=console, tier="linear")
    assert first["items"] == 500
    assert first["judge"]["calls"] == 500 and first["judge"]["unscored"] == 0
    report = json.loads((tmp_path / "demo" / "report.json").read_text())
    assert (tmp_path / "demo" / "report.html").stat().st_size > 10_000
    sources = {p["a"] for p in report["pairs"]} | {p["b"] for p in report["pairs"]}
    # the scores are the calibrated model's when calibrate applied one (it applies none
    # that would make held-out NLL or ECE worse)
    calibrated = (tmp_path / "demo" / "rm" / "calibration.json").exists()
    rm_source = "rm:compliance-linear" + ("+cal" if calibrated else "")
    assert {"judge:gpt-4", rm_source, "human:final"} <= sources
    evaluation = first["splits"]["evaluation"]
    for pair in first["agreement"]:
        assert pair["n"] == evaluation  # every figure is on the held-out prompts only
        kappa = pair["kappa"]
        assert kappa["low"] <= kappa["value"] <= kappa["high"]
    rates = first["rates"]
    assert set(rates["groups"]) == {
        "gpt4",
        "llama2new",
        "llama2orig",
        "mistralguard",
        "mistralinstruct",
    }
    assert 0.3 < rates["overall"]["rate"]["value"] < 0.7
    assert (tmp_path / "demo" / "rm" / "calibration.json").exists()

    second = run_demo(None, tmp_path / "demo", console=console, tier="linear")
    assert second["judge"]["calls"] == 0 and second["judge"]["cache_hits"] == 500
    assert second["agreement"] == first["agreement"]


def test_limit_takes_items_from_every_split() -> None:
    from tinyjudge.datasets.importers import run_import
    from tinyjudge.demo import bundled_sample, limit_items

    items = run_import("xstest", bundled_sample()).items
    split = {it.id: split_of(str(it.get("metadata.prompt_id"))) for it in items}
    kept = limit_items(items, split, 30)
    assert len(kept) == 30 and {split[it.id] for it in kept} == {n for n, _ in SPLITS}
    assert kept == [it for it in items if it in kept]  # input order kept
    assert limit_items(items, split, None) == items


def test_demo_on_a_limited_sample(tmp_path: Path) -> None:
    console = Console(file=open(tmp_path / "log.txt", "w"), width=120)
    summary = run_demo(None, tmp_path / "demo", console=console, tier="linear", limit=60)
    assert summary["items"] == 60 and summary["judge"]["calls"] == 60
    assert sum(summary["splits"].values()) == 60
    console.file.close()
    # so few items hold out few: the demo says so in its own words, not as a Python warning
    log = (tmp_path / "log.txt").read_text()
    assert "warning: validation holds" in log and "raise limit" in log
    assert "--limit" not in log  # the library names its parameter; the CLI spells it


def test_the_demo_command_hands_its_options_over_and_the_flag_derivation(
    monkeypatch, tmp_path
) -> None:
    # the demo's advice names run_demo's own parameters (``raise limit``); the command
    # hands over the one derivation every CLI error goes through, not a table
    import inspect

    import tinyjudge.demo
    from tinyjudge.commands import flag_of
    from tinyjudge.commands._io import out
    from tinyjudge.commands.demo import command

    seen: dict = {}
    monkeypatch.setattr(tinyjudge.demo, "run_demo", lambda *a, **kw: seen.update(kw))
    command(data=None, out_dir=tmp_path, tier="linear", judge="replay", limit=60)
    assert seen == {
        "console": out, "tier": "linear", "judge": "replay", "limit": 60, "name_of": flag_of,
    }  # fmt: skip
    assert seen["name_of"]("group_by") == "--group-by"
    assert "spelling" not in inspect.signature(run_demo).parameters


def test_demo_refuses_an_unknown_judge(tmp_path: Path) -> None:
    import pytest

    from tinyjudge.errors import TinyjudgeError

    with pytest.raises(TinyjudgeError, match=r"judge 'gpt' is not one of \['replay', 'local'\]"):
        run_demo(None, tmp_path, judge="gpt")
