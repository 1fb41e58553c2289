"""The user's-own-data verbs as users run them: ``import chat``, ``import labels``, ``schema``,
``--version``, and ``serve``/``label`` without their extra."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from openai.types.chat import ChatCompletionMessage
from support import tinyjudge_command

from tinyjudge.datasets.jsonl import read_items, read_labels

from .test_cli import _one_error_line, run


def _rollouts(path: Path, n: int = 4, dup: bool = False) -> Path:
    rows = []
    for k in range(n):
        reply = ChatCompletionMessage(role="assistant", content=f"Sure, step {k}: run kill.")
        rows.append(
            {
                "conversation_id": "c0" if dup and k == n - 1 else f"c{k}",
                "checkpoint": f"ckpt-{k % 2}",
                "messages": [
                    {"role": "user", "content": f"How do I stop job {k}?"},
                    reply.model_dump(),
                ],
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_import_chat_writes_items_and_says_what_it_did(tmp_path: Path) -> None:
    src = _rollouts(tmp_path / "rollouts.jsonl")
    done = run("import", "chat", src, "--out", tmp_path / "mine", "--id-field", "conversation_id")
    assert done.returncode == 0, done.stderr
    items = read_items(tmp_path / "mine" / "items.jsonl")
    assert [it.id for it in items] == ["c0", "c1", "c2", "c3"]
    assert items[1].metadata == {"checkpoint": "ckpt-1"}
    assert "4 items" in done.stdout and "metadata: checkpoint" in done.stdout


def test_import_chat_without_ids_says_so(tmp_path: Path) -> None:
    src = tmp_path / "r.jsonl"
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."}]
    src.write_text(json.dumps({"messages": turns}) + "\n")
    done = run("import", "chat", src, "--out", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    assert "ids: 1 made from the content" in done.stdout


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda p: _rollouts(p, dup=True), r'r\.jsonl:4: duplicate id "c0", first at .*r\.jsonl:1'),
        (
            lambda p: (p.write_text('{"conversation_id": "x", "text": "no messages"}\n'), p)[1],
            r"r\.jsonl:1: no messages: expected a column",
        ),
    ],
    ids=["duplicate-id", "no-messages"],
)
def test_import_chat_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, make, match) -> None:
    src = make(tmp_path / "r.jsonl")
    done = run("import", "chat", src, "--out", tmp_path / "o", "--id-field", "conversation_id")
    assert re.search(match, _one_error_line(done))
    assert not (tmp_path / "o" / "items.jsonl").exists()


def test_import_labels_from_a_csv(tmp_path: Path) -> None:
    src = _rollouts(tmp_path / "rollouts.jsonl")
    run("import", "chat", src, "--out", tmp_path / "mine", "--id-field", "conversation_id")
    sheet = tmp_path / "ratings.csv"
    sheet.write_text(
        "conversation_id,rater,verdict\n"
        "c0,ann,full compliance\nc0,bob,full compliance\nc0,cyd,full refusal\n"
        "c1,ann,full refusal\nc1,bob,full compliance\nzz,ann,full refusal\n"
    )
    out = tmp_path / "mine" / "human.jsonl"
    done = run(
        "import", "labels", sheet, "--rubric", "compliance", "--out", out,
        "--item-field", "conversation_id", "--label-field", "verdict", "--rater-field", "rater",
        "--items", tmp_path / "mine" / "items.jsonl",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    final = {
        lab.item_id: lab
        for lab in read_labels(out, rubric="compliance")
        if lab.source == "human:final"
    }
    assert final["c0"].label == "full_compliance" and final["c1"].status == "unscored"
    assert "1 ties left unscored" in done.stdout
    assert "1 item ids match no item" in done.stderr and "zz" in done.stderr


def test_import_labels_outside_the_rubric(tmp_path: Path) -> None:
    sheet = tmp_path / "s.csv"
    sheet.write_text("id,label\na,maybe\n")
    done = run(
        "import", "labels", sheet, "--rubric", "compliance", "--out", tmp_path / "l.jsonl",
        "--item-field", "id", "--label-field", "label",
    )  # fmt: skip
    line = _one_error_line(done)
    assert "s.csv:2: label: label \"maybe\" is not one of ['full_compliance'" in line
    assert not (tmp_path / "l.jsonl").exists()


def test_schema_and_version() -> None:
    schema = run("schema", "items")
    assert schema.returncode == 0 and json.loads(schema.stdout)["title"] == "Item"
    assert "unknown schema 'x'" in _one_error_line(run("schema", "x"))
    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("tinyjudge 0.")


@pytest.mark.parametrize(
    ("argv", "verb"),
    [
        (["serve", "MODEL"], "tinyjudge serve"),
        (
            ["label", "ITEMS", "--rubric", "compliance", "--labels", "L", "--as", "me"],
            "tinyjudge label",
        ),
    ],
    ids=["serve", "label"],
)
def test_verbs_without_their_extra(tmp_path: Path, argv: list[str], verb: str) -> None:
    # fastapi absent, as on a base install: `import fastapi` fails as it would there
    items = _rollouts(tmp_path / "items.jsonl")
    argv = [
        str(items) if a == "ITEMS" else str(tmp_path / "labels.jsonl") if a == "L" else a
        for a in argv
    ]
    argv = [str(tmp_path / "rm") if a == "MODEL" else a for a in argv]
    code = (
        "import sys; sys.modules['fastapi'] = None\n"
        "from tinyjudge.cli import main\n"
        f"sys.argv = ['tinyjudge', *{argv!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    line = _one_error_line(done)
    assert line.endswith(
        f'{verb} needs the "serve" extra (fastapi is not installed): pip install "tinyjudge[serve]"'
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["items.jsonl"]  # nothing created


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tinyjudge.datasets.importers import run_import
    from tinyjudge.demo import bundled_sample
    from tinyjudge.distill import LinearRM

    imported = run_import("xstest", Path(bundled_sample()))
    teacher = {lab.item_id: lab.label for lab in imported.labels if lab.source == "judge:gpt-4"}
    train = [it for it in imported.items if teacher.get(it.id)]
    out = tmp_path_factory.mktemp("rm") / "rm"
    LinearRM("compliance").fit(train, [teacher[it.id] for it in train]).save(out)
    return out


@pytest.mark.parametrize(
    "spelled", ["full_compliance", "Full compliance"], ids=["label-name", "natural-case"]
)
def test_serve_states_its_reward(model_dir: Path, spelled: str) -> None:
    import socket
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = ["serve", model_dir, "--port", str(port), "--reward", spelled]
    proc = subprocess.Popen(
        [*tinyjudge_command(), *map(str, argv)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json()
                break
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
                time.sleep(0.2)
    finally:
        proc.terminate()
        stdout, _ = proc.communicate(timeout=30)
    assert health["reward"] == {"labels": ["full_compliance"], "rubric": "compliance"}
    assert "reward: P(full_compliance) under rubric compliance, in [0, 1]" in stdout


def test_serve_reward_label_not_in_rubric(model_dir: Path) -> None:
    line = _one_error_line(run("serve", model_dir, "--reward", "helpful"))
    assert "['helpful'] not among the labels of rubric compliance" in line


def test_a_custom_rubric_travels_with_its_labels(tmp_path: Path) -> None:
    import yaml

    from tinyjudge.rubric import load_rubric

    spec = load_rubric("compliance").model_dump(mode="json") | {"id": "my_refusal"}
    yaml_path = tmp_path / "my_refusal.yaml"
    yaml_path.write_text(yaml.safe_dump(spec))
    rub = load_rubric(yaml_path)
    sheet = tmp_path / "ratings.csv"
    verdicts = ["full refusal", "full compliance"] * 6
    sheet.write_text("id,ann,bob\n" + "".join(f"i{k},{v},{v}\n" for k, v in enumerate(verdicts)))
    out = tmp_path / "labels" / "human.jsonl"
    done = run(
        "import", "labels", sheet, "--rubric", yaml_path, "--out", out,
        "--item-field", "id", "--label-field", "ann,bob",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    copy = out.parent / f"rubric.{rub.hash}.yaml"
    assert copy.is_file() and all(lab.rubric_hash == rub.hash for lab in read_labels(out))
    yaml_path.unlink()  # the rubric's YAML moved away: the labels' folder still has it
    args = ("estimate", out, "--cheap", "human:ann", "--human", "human:final")
    done = run(*args)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())  # the title names the rate and the rubric it is of
    assert "rate of full_refusal or partial_refusal (%, rubric my_refusal)" in said
    copy.write_text(copy.read_text().replace(spec["title"], "another title"))
    line = _one_error_line(run(*args))
    assert f"rubric.{rub.hash}.yaml: the rubric's hash is" in line and "restore it" in line
