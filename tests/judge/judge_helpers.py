"""Helpers shared by the judge tests (imported by name: conftest puts this folder on sys.path)."""

from __future__ import annotations

import json
import sys

import pytest

from tinyjudge.cli import main
from tinyjudge.records import Item, Message

LABELS = ["full_compliance", "full_refusal", "partial_refusal"]


def verdict(label: str, rationale: str = "because", **extra: object) -> str:
    return json.dumps({"rationale": rationale, "label": label, **extra})


def single(i: int, text: str = "Sure, here is how.") -> Item:
    return Item(
        id=f"it-{i}",
        messages=[
            Message(role="user", content=f"question number {i}"),
            Message(role="assistant", content=text),
        ],
    )


def pair(i: int) -> Item:
    return Item(
        id=f"pair-{i}",
        context=[Message(role="user", content=f"write haiku {i}")],
        response_a=[Message(role="assistant", content=f"first answer {i}")],
        response_b=[Message(role="assistant", content=f"second answer {i}")],
    )


def run_cli(monkeypatch, capsys, *args: object) -> tuple[int, str, str]:
    """``tinyjudge ARGS...`` in this process: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["tinyjudge", *map(str, args)])
    with pytest.raises(SystemExit) as e:
        main()
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie counts as gone; Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
