"""Hostile rubric files are refused in one line, before they can take the machine's memory:
YAML aliases that expand past a node count (an alias bomb), and files past a size limit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tinyjudge.errors import RubricError
from tinyjudge.rubric import MAX_RUBRIC_BYTES, MAX_RUBRIC_NODES, load_rubric

HEAD = """id: bomb
version: "1"
title: an alias bomb
behavior: whether it explodes
labels:
  - {name: yes_, description: it does}
  - {name: no_, description: it does not}
"""


def _levels(make: str, first: str, n: int = 9) -> str:
    names = "abcdefghijklmnop"
    lines = [f"      {names[0]}: &{names[0]} {first}"]
    for i in range(1, n):
        prev = names[i - 1]
        lines.append(f"      {names[i]}: &{names[i]} " + make.format(ref=f"*{prev}"))
    return "\n".join(lines) + "\n"


# 9 levels of 9 aliases each: about 3.5 KB that expands to 9**9 (387 million) strings.
ALIAS_BOMB = (
    HEAD
    + "reward_model:\n  params:\n    linear:\n"
    + _levels("[" + ", ".join(["{ref}"] * 9) + "]", "[" + ", ".join(['"lol"'] * 9) + "]")
)
# The same through merge keys, which PyYAML flattens while it builds the document.
MERGE_BOMB = (
    HEAD
    + "reward_model:\n  params:\n    linear:\n"
    + _levels("{{<<: [" + ", ".join(["{ref}"] * 10) + "]}}", "{x: 1}", n=8)
)
# Aliases used as a person would (one shared list of criteria) stay allowed.
SHARED = HEAD.replace(
    "  - {name: yes_, description: it does}\n  - {name: no_, description: it does not}\n",
    "  - name: yes_\n    description: it does\n    criteria: &shared [clear, on topic]\n"
    "  - name: no_\n    description: it does not\n    criteria: *shared\n",
)


def test_the_bomb_is_small() -> None:
    assert len(ALIAS_BOMB) < 4000


@pytest.mark.parametrize("text", [ALIAS_BOMB, MERGE_BOMB], ids=["aliases", "merge_keys"])
def test_an_alias_bomb_is_refused_in_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    with pytest.raises(RubricError, match=rf"bomb\.yaml: .* more than {MAX_RUBRIC_NODES:,}"):
        load_rubric(path)


def test_aliases_within_the_bound_are_read(tmp_path: Path) -> None:
    path = tmp_path / "shared.yaml"
    path.write_text(SHARED)
    rubric = load_rubric(path)
    assert [lab.criteria for lab in rubric.labels] == [["clear", "on topic"]] * 2


def test_a_rubric_file_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(HEAD + "examples:\n" + "  # padding\n" * (MAX_RUBRIC_BYTES // 12 + 10))
    with pytest.raises(RubricError, match=r"big\.yaml: a rubric file may hold at most"):
        load_rubric(path)
    fits = tmp_path / "fits.yaml"
    fits.write_text(HEAD + "# padding\n" * ((MAX_RUBRIC_BYTES - len(HEAD)) // 10 - 1))
    assert load_rubric(fits).id == "bomb"


# The command line under a 1.5 GB address-space bound: the bomb must be refused, not
# grow until the bound (a MemoryError, a traceback) or the machine's memory.
_BOUNDED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1536 * 2**20, 1536 * 2**20))
sys.argv = ["tinyjudge", *sys.argv[1:]]
from tinyjudge.cli import main
main()
"""


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry_run", "judge"])
@pytest.mark.parametrize("text", [ALIAS_BOMB, MERGE_BOMB], ids=["aliases", "merge_keys"])
def test_judge_refuses_the_bomb_under_a_memory_bound(
    tmp_path: Path, dry_run: bool, text: str
) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(text)
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "1", "messages": [{"role": "user", "content": "hi"}]}\n')
    args = ["judge", str(items), "--rubric", str(bomb), "--out", str(tmp_path / "l.jsonl")]
    args += ["--dry-run"] if dry_run else ["--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    done = subprocess.run(
        [sys.executable, "-c", _BOUNDED, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr[-2000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and "bomb.yaml" in line and "YAML nodes" in line
