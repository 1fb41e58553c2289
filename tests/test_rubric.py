"""Rubrics: every built-in one loads, hashes are stable, and bad files say where they are bad."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import make_label

from tinyjudge.errors import RubricError, TinyjudgeError
from tinyjudge.rubric import (
    Rubric,
    list_rubrics,
    load_rubric,
    load_rubric_copy,
    save_rubric_copy,
    stored_rubric,
)

RUBRICS = sorted((Path(__file__).resolve().parents[1] / "rubrics").glob("*.yaml"))

MINIMAL = {
    "id": "tiny",
    "version": "1",
    "title": "Tiny",
    "behavior": "Does the reply say yes?",
    "labels": [
        {"name": "yes", "description": "It says yes.", "criteria": ["An explicit yes."]},
        {"name": "no", "description": "It does not."},
    ],
    "positive": ["yes"],
    "examples": [{"trajectory": "user: ok?\nassistant: yes", "label": "yes", "rationale": "y"}],
}


def _write(tmp_path: Path, data: object, name: str = "tiny.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("path", RUBRICS, ids=[p.stem for p in RUBRICS])
def test_builtin_rubric_loads(path: Path) -> None:
    rubric = load_rubric(path)
    assert rubric.id == path.stem, "a built-in rubric's id is its file name"
    assert load_rubric(path.stem).hash == rubric.hash
    assert len(rubric.hash) == 16
    assert rubric.examples, "every built-in rubric carries worked examples"
    assert set(rubric.positive) <= set(rubric.label_names)
    text = rubric.render()
    assert rubric.behavior.strip().splitlines()[0] in text
    for name in rubric.label_names:
        assert f"`{name}`" in text


@pytest.mark.parametrize(
    ("name", "labels"),
    [
        ("compliance", ["full_compliance", "full_refusal", "partial_refusal"]),
        ("clarification", ["ask_first", "proceed"]),
        ("instruction_following", ["a", "b", "tie"]),
        ("agent_pushback", ["pushes_back", "asks", "complies"]),
        ("reward_hacking", ["git_history", "network", "test_tampering", "none"]),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_builtin_label_sets(name: str, labels: list[str]) -> None:
    """Importers and other engineers' code rely on these exact label names."""
    rubric = load_rubric(name)
    assert rubric.label_names == labels
    assert name in list_rubrics()


def test_rubric_types_and_windows() -> None:
    assert load_rubric("instruction_following").type == "pairwise"
    hacking = load_rubric("reward_hacking")
    assert hacking.hint and hacking.step and hacking.window.strategy == "around_step"
    assert load_rubric("agent_pushback").hint


def test_hash_is_stable_under_formatting_and_changes_with_a_word(tmp_path: Path) -> None:
    data = yaml.safe_load(RUBRICS[0].read_text(encoding="utf-8"))
    original = load_rubric(RUBRICS[0]).hash
    # Same content, different YAML layout and key order: same hash.
    reordered = dict(reversed(list(data.items())))
    relaid = tmp_path / "relaid.yaml"
    relaid.write_text(yaml.safe_dump(reordered, default_flow_style=True, width=4096))
    assert load_rubric(relaid).hash == original
    # One word of one criterion changed: a different hash.
    words = data["labels"][0]["criteria"][0].split(" ")
    words[1] = "never" if words[1] != "never" else "always"
    data["labels"][0]["criteria"][0] = " ".join(words)
    changed = _write(tmp_path, data, "changed.yaml")
    assert load_rubric(changed).hash != original


def test_hash_changes_with_an_example(tmp_path: Path) -> None:
    base = load_rubric(_write(tmp_path, MINIMAL)).hash
    data = {**MINIMAL, "examples": [{**MINIMAL["examples"][0], "rationale": "because"}]}
    assert load_rubric(_write(tmp_path, data, "b.yaml")).hash != base


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda d: d.pop("behavior"), r"tiny\.yaml: field behavior: missing"),
        (lambda d: d.update(colour="red"), r"tiny\.yaml: field colour: unknown field \(allowed"),
        (
            lambda d: d["labels"][0].update(weight=2),
            r"tiny\.yaml: field labels\.0\.weight: unknown field",
        ),
        (lambda d: d["labels"][1].pop("description"), r"field labels\.1\.description: missing"),
        (
            lambda d: d["labels"].append({"name": "yes", "description": "again"}),
            r"tiny\.yaml: field labels: label names are not unique: \['yes'\]",
        ),
        (
            lambda d: d["examples"][0].update(label="maybe"),
            r"tiny\.yaml: field examples\.0\.label: 'maybe' is not one of \['yes', 'no'\]",
        ),
        (
            lambda d: d.update(positive=["perhaps"]),
            r"field positive: 'perhaps' is not one of",
        ),
        (lambda d: d.update(labels=d["labels"][:1]), r"field labels: .*at least 2 labels"),
        (lambda d: d["labels"][0].update(name="Yes!"), r"field labels\.0\.name: String should"),
        (lambda d: d.update(type="ranking"), r"field type: Input should be"),
        (lambda d: d.update(version=1.1), r"field version: .*got the number 1\.1, so quote it"),
        (
            lambda d: d["labels"][0]["criteria"].__setitem__(0, {"Note": "a colon"}),
            r"field labels\.0\.criteria\.0: .*quote the text",
        ),
    ],
    ids=[
        "missing-field",
        "unknown-top-field",
        "unknown-nested-field",
        "missing-nested-field",
        "duplicate-label",
        "example-unknown-label",
        "positive-unknown-label",
        "one-label",
        "bad-label-name",
        "unknown-type",
        "unquoted-version",
        "unquoted-colon",
    ],
)
def test_invalid_rubric_names_file_and_field(tmp_path: Path, mutate, match: str) -> None:
    data = yaml.safe_load(yaml.safe_dump(MINIMAL))
    mutate(data)
    path = _write(tmp_path, data)
    with pytest.raises(RubricError, match=match):
        load_rubric(path)


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("id: broken\nversion: '1'\ntitle: [unclosed\nbehavior: x\n")
    with pytest.raises(RubricError, match=r"broken\.yaml:4: not valid YAML"):
        load_rubric(path)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b'id: x\ntitle: "caf\xe9"\n', r"r\.yaml: not UTF-8 text \(byte 18\)"),
        (b"a: " + b"[" * 100_000, r"r\.yaml: not valid YAML \(nested too deep\)"),
    ],
    ids=["latin-1", "nested-100000-deep"],
)
def test_an_unreadable_rubric_file_is_one_line(tmp_path: Path, body: bytes, match: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_bytes(body)
    with pytest.raises(RubricError, match=match) as info:
        load_rubric(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "match"),
    [("- a\n- b\n", "must be a YAML mapping"), ("", "must be a YAML mapping")],
    ids=["list", "empty"],
)
def test_rubric_must_be_a_mapping(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(RubricError, match=match):
        load_rubric(path)


def test_unknown_rubric_lists_the_builtins(tmp_path: Path) -> None:
    with pytest.raises(RubricError, match=r"unknown rubric 'nope'; built-in rubrics are .*"):
        load_rubric("nope")
    with pytest.raises(RubricError, match=r"missing\.yaml: no such rubric file"):
        load_rubric(tmp_path / "missing.yaml")


def test_rubric_dirs_env_overrides_builtin(tmp_path: Path, monkeypatch) -> None:
    _write(tmp_path, {**MINIMAL, "id": "compliance"}, "compliance.yaml")
    monkeypatch.setenv("TINYJUDGE_RUBRICS", str(tmp_path))
    assert load_rubric("compliance").label_names == ["yes", "no"]


def test_score_is_mass_on_positive_labels() -> None:
    rubric = load_rubric("compliance")
    probs = {"full_compliance": 0.5, "full_refusal": 0.3, "partial_refusal": 0.2}
    assert rubric.score(probs) == pytest.approx(0.5)
    assert Rubric.model_validate({**MINIMAL, "positive": []}).score(probs) is None


@pytest.mark.parametrize(
    ("rubric", "fields", "problem"),
    [
        ("compliance", {"label": "full_refusal"}, None),
        ("compliance", {"status": "unscored", "raw": "maybe", "reason": "r"}, None),
        ("compliance", {"score": 0.4}, None),
        (
            "compliance",
            {"label": "maybe"},
            "label \"maybe\" is not one of ['full_compliance', 'full_refusal', "
            "'partial_refusal'] of rubric compliance",
        ),
        (
            "compliance",
            {"label": "full_refusal", "probs": {"full_refusal": 0.6, "refusal": 0.4}},
            '"probs" key "refusal" is not one of',
        ),
        ("instruction_following", {"label": "tie", "orders": {"ab": "a", "ba": "b"}}, None),
        ("instruction_following", {"label": "a", "orders": {"ab": "a", "ba": None}}, None),
        (
            "instruction_following",
            {"label": "a", "orders": {"ab": "a", "ba": "output (b)"}},
            '"orders.ba" verdict "output (b)" is not one of',
        ),
        (
            "instruction_following",
            {"label": "a", "orders": {"forward": "a"}},
            "\"orders\" key \"forward\" is not one of ['ab', 'ba']",
        ),
        ("instruction_following", {"label": "1"}, "label \"1\" is not one of ['a', 'b', "),
        (
            "compliance",
            {"rubric": "clarification", "label": "proceed"},
            'label of rubric "clarification", not of rubric compliance',
        ),
    ],
    ids=[
        "ok",
        "unscored",
        "score-only",
        "unknown-label",
        "unknown-probs-key",
        "pairwise-orders",
        "pairwise-unparsed-order",
        "pairwise-bad-verdict",
        "pairwise-bad-order-key",
        "pairwise-unknown-label",
        "other-rubric",
    ],
)
def test_label_problem(rubric: str, fields: dict, problem: str | None) -> None:
    found = load_rubric(rubric).label_problem(make_label(**{"rubric": rubric, **fields}))
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem)


def test_label_problem_step_rubric() -> None:
    step = Rubric.model_validate(
        {"id": "where", "version": "1", "title": "t", "behavior": "b", "type": "step"}
    )
    assert step.label_problem(make_label(rubric="where", label="WebSurfer", step=3)) is None
    assert step.label_problem(make_label(rubric="where", label="WebSurfer")) == (
        'label "WebSurfer" names no "step", which rubric where needs'
    )


def test_a_folder_named_like_a_rubric_does_not_hide_it(tmp_path: Path, monkeypatch) -> None:
    # `tinyjudge import xstest ... --out compliance` then `--rubric compliance` in the
    # same folder: the name still means the built-in rubric, not the output folder.
    (tmp_path / "compliance").mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_rubric("compliance").id == "compliance"


@pytest.mark.parametrize("name", list_rubrics())
def test_a_stored_copy_is_the_rubric(name: str, tmp_path: Path) -> None:
    rubric = load_rubric(name)
    path = save_rubric_copy(rubric, tmp_path)
    assert path.name == f"rubric.{rubric.hash}.yaml"
    assert load_rubric_copy(path) == rubric and stored_rubric(tmp_path, rubric.hash) == rubric
    assert save_rubric_copy(rubric, tmp_path) == path  # the same copy again: left as it is
    assert stored_rubric(tmp_path, "0" * 16) is None


def test_an_edited_copy_is_refused_in_one_line(tmp_path: Path) -> None:
    rubric = load_rubric("compliance")
    path = save_rubric_copy(rubric, tmp_path)
    path.write_text(path.read_text().replace("title: ", "title: Edited ", 1))
    with pytest.raises(RubricError, match=rf"{path.name}: the rubric's hash is .*restore it$"):
        stored_rubric(tmp_path, rubric.hash)


def test_a_bad_rubric_file_is_a_rubric_error_that_old_handlers_still_catch(tmp_path: Path) -> None:
    # RubricError, so a caller can tell a rubric fault from bad data; still a
    # TinyjudgeError (and a ValueError), so every existing ``except`` catches it.
    path = tmp_path / "bad.yaml"
    path.write_text("id: bad\nversion: 1\ntype: nominal\nlabels: []\n", encoding="utf-8")
    with pytest.raises(RubricError, match=r"bad\.yaml: ") as info:
        load_rubric(path)
    assert isinstance(info.value, TinyjudgeError) and isinstance(info.value, ValueError)
    assert "\n" not in str(info.value)
