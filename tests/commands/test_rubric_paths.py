"""The commands layer: a rubric named by a YAML path works wherever a rubric is named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tinyjudge.commands._io import resolve_rubric, resolve_rubric_filter
from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.errors import TinyjudgeError


@pytest.fixture
def xs(xstest_sample: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    got = run_import("xstest", xstest_sample)
    write_jsonl(tmp_path / "items.jsonl", got.items)
    write_jsonl(tmp_path / "labels.jsonl", got.labels)
    # a copy outside the rubric folders: only its path names it
    yaml_path = tmp_path / "my_rubrics" / "mine.yaml"
    yaml_path.parent.mkdir()
    shutil.copy(Path(__file__).resolve().parents[2] / "rubrics" / "compliance.yaml", yaml_path)
    return tmp_path / "items.jsonl", tmp_path / "labels.jsonl", yaml_path


def test_resolve_rubric_reads_a_name_and_a_path_alike(xs) -> None:
    by_path = resolve_rubric(xs[2])
    assert by_path == resolve_rubric("compliance")
    assert resolve_rubric_filter(str(xs[2])) == ("compliance", by_path)
    # an id no rubric file carries still selects the labels written under it
    assert resolve_rubric_filter("my_own_rubric") == ("my_own_rubric", None)
    with pytest.raises(TinyjudgeError, match="nope.yaml: no such rubric file"):
        resolve_rubric_filter("nope.yaml")


@pytest.mark.parametrize("verb", ["estimate", "audit"], ids=["estimate", "audit"])
def test_a_yaml_path_gives_the_same_figures_as_the_name(xs, tmp_path: Path, cli, verb) -> None:
    items, labels, yaml_path = xs
    if verb == "estimate":
        args = ["--cheap", "judge:gpt-4", "--human", "human:final", "--by",
                "metadata.answering_model"]  # fmt: skip
    else:
        args = ["--reference", "human:final", "--n-boot", "50"]
    figures = {}
    for name, rubric in [("name", "compliance"), ("path", yaml_path)]:
        out = tmp_path / f"{verb}-{name}.json"
        done = cli(verb, labels, "--items", items, "--rubric", rubric, "--json", out, *args)
        assert done.returncode == 0, done.stderr
        figures[name] = json.loads(out.read_text())
    if verb == "audit":
        for got in figures.values():
            got["meta"].pop("created", None)
    assert figures["path"] == figures["name"]


def test_a_custom_rubric_by_path_keeps_the_rates_section(xs, tmp_path: Path, cli) -> None:
    # The same labels under a rubric id no rubric folder knows: only its YAML path names it.
    import yaml

    from tinyjudge.datasets.jsonl import read_labels

    items, labels, yaml_path = xs
    spec = yaml.safe_load(yaml_path.read_text(encoding="utf-8"))
    spec["id"] = "my_compliance"
    custom = tmp_path / "my_compliance.yaml"
    custom.write_text(yaml.safe_dump(spec), encoding="utf-8")
    relabelled = tmp_path / "relabelled.jsonl"
    write_jsonl(relabelled, [lab.model_copy(update={"rubric": "my_compliance"})
                             for lab in read_labels(labels)])  # fmt: skip
    got = {}
    for name, rubric in [("path", custom), ("id", "my_compliance")]:
        out = tmp_path / f"audit-{name}.json"
        done = cli("audit", relabelled, "--items", items, "--reference", "human:final",
                   "--rubric", rubric, "--n-boot", "30", "--json", out)  # fmt: skip
        assert done.returncode == 0, done.stderr
        got[name] = json.loads(out.read_text())["estimates"]
    # by path the rubric travels as an object: its positive labels define the rates
    assert set(got["path"]["sources"]) == {"judge:gpt-4", "classifier:string-match"}
    assert got["path"]["notes"] == []
    # by a bare id it can only be looked up again, which fails for a custom rubric
    assert got["id"]["sources"] == {}
    assert all("unknown rubric 'my_compliance'" in n for n in got["id"]["notes"])
