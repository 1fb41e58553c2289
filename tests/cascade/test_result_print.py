"""A cascade's result prints as a summary (its stages and counts), never its labels."""

from __future__ import annotations

from cascade_split import Split

from tinyjudge.cascade import cascade


def test_the_result_prints_its_stages_in_under_2000_characters(split: Split) -> None:
    res = cascade(split.model, split.items, split.calibration, reference="judge:gpt-4",
                  target=0.9)  # fmt: skip
    text = repr(res)
    assert len(res.labels) == res.n_items > 100 and len(text) < 2000
    assert text.startswith(f"<CascadeResult: {res.n_items} items")
    assert f"escalated {res.escalated}" in text and res.stages[0].decided_by in text
    assert not any(lab.item_id in text for lab in res.labels)  # no label is listed
    page = res._repr_html_()
    assert page.count("<tr>") == 1 + len(res.stages) and len(page) < 4000
