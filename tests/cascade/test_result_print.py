"""A cascade's result prints as a summary (its stages and counts), never its labels."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cascade_split import Split

from tinyjudge._progress import reporting
from tinyjudge.cascade import cascade
from tinyjudge.judge import Judge
from tinyjudge.testing import replay_server


def test_the_result_prints_its_stages_in_under_2000_characters(split: Split) -> None:
    res = cascade(split.model, split.items, split.calibration, reference="judge:gpt-4",
                  target=0.9)  # fmt: skip
    text = repr(res)
    assert len(res.labels) == res.n_items >= 100 and len(text) < 2000
    assert text.startswith(f"<CascadeResult: {res.n_items} items")
    assert f"escalated {res.escalated}" in text and res.stages[0].decided_by in text
    assert not any(lab.item_id in text for lab in res.labels)  # no label is listed
    page = res._repr_html_()
    assert page.count("<tr>") == 1 + len(res.stages) and len(page) < 4000


def test_the_judge_calls_on_escalated_items_are_reported(split: Split, tmp_path: Path) -> None:
    heard: list[tuple[str, int | None, int]] = []

    def reporter(what: str, total: int | None):
        @contextmanager
        def bar() -> Iterator[Callable[[int], None]]:
            steps = [0]
            yield lambda k: steps.__setitem__(0, steps[0] + k)
            heard.append((what, total, steps[0]))

        return bar()

    gpt4 = [lab for lab in split.labels if lab.source == "judge:gpt-4"]
    report = [it for it in split.items if it.id in split.report_ids]
    with replay_server(gpt4, "judge:gpt-4", items=report, rubric="compliance") as srv:
        judge = Judge("compliance", "replay-gpt-4", base_url=srv.base_url,
                      cache=tmp_path / "judge.sqlite")  # fmt: skip
        with reporting(reporter):
            res = cascade(split.model, split.items, split.calibration,
                          reference="judge:gpt-4", target=0.9, judge=judge)  # fmt: skip
    assert res.escalated > 0
    said = f"judging {res.escalated} escalated items"
    assert (said, res.escalated, res.escalated) in heard
