"""`estimate`'s table on an 80-column terminal: the column names wrap, every figure stays whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import XSTEST_SAMPLE, run_tinyjudge


@pytest.mark.parametrize("columns", ["80", "100"], ids=["80-columns", "100-columns"])
def test_every_number_is_whole_at_the_terminal_width(tmp_path: Path, columns: str) -> None:
    done = run_tinyjudge("import", "xstest", XSTEST_SAMPLE, "--out", tmp_path / "xs")
    assert done.returncode == 0, done.stderr
    figures = tmp_path / "rates.json"
    shown = run_tinyjudge(
        "estimate", tmp_path / "xs" / "labels.jsonl", "--items", tmp_path / "xs" / "items.jsonl",
        "--cheap", "judge:gpt-4", "--human", "human:final", "--rubric", "compliance",
        "--by", "metadata.answering_model", "--human-fraction", "0.2",
        "--cluster", "metadata.prompt_id", "--json", figures,
        env={"COLUMNS": columns},
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "…" not in shown.stdout
    assert all(len(line) <= int(columns) for line in shown.stdout.splitlines())
    data = json.loads(figures.read_text())
    lines = shown.stdout.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.strip().startswith("─"))
    end = next(i for i in range(rule + 1, len(lines)) if not lines[i].strip())
    body = lines[rule + 1 : end]
    rows = {line.split()[0]: line.split() for line in body}
    assert set(rows) == {*data["groups"], "all"}
    for group, r in [*data["groups"].items(), ("all", data["overall"])]:
        low, high = r["rate"]["low"], r["rate"]["high"]
        h_low, h_high = r["human_only"]["low"], r["human_only"]["high"]
        assert rows[group][1:] == [
            f"{100 * r['rate']['value']:.1f}", f"{100 * low:.1f}-{100 * high:.1f}",
            f"{100 * h_low:.1f}-{100 * h_high:.1f}", str(r["n_human"]), str(r["n_items"]),
            f"{r['lambda']:.2f}", f"{r['gain']:.1f}x",
        ]  # fmt: skip
