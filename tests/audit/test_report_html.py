"""The audit page from the Jinja2 templates: the same content as before, every text escaped."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tinyjudge.audit import AuditReport
from tinyjudge.audit._report_html import render_html

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "audit_html"


class _Events(HTMLParser):
    """Elements, attributes and text in order; image data and layout whitespace left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[tuple[Any, ...]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attrs = [(k, "data:image/png" if k == "src" else v) for k, v in attrs]
        self.events.append(("start", tag, tuple(sorted(attrs))))

    def handle_endtag(self, tag: str) -> None:
        self.events.append(("end", tag))

    def handle_data(self, data: str) -> None:
        text = re.sub(r"\s+", " ", data).strip()
        if text:
            self.events.append(("text", text))


def _events(page: str) -> list[tuple[Any, ...]]:
    parser = _Events()
    parser.feed(page)
    return parser.events


@pytest.fixture
def page() -> str:
    data = json.loads((GOLDEN / "report.json").read_text(encoding="utf-8"))
    figures = {f"reliability:{s}": b"\x89PNG fake " + s.encode() for s in data["calibration"]}
    report = AuditReport.from_dict(data, figures)
    assert report.to_json() == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return render_html(report)


def test_the_page_says_what_the_f_string_page_said(page: str) -> None:
    golden = _events((GOLDEN / "page.html").read_text(encoding="utf-8"))
    got = _events(page)
    assert len(golden) > 6000  # every section is there to compare
    assert got == golden


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [("rm:<b>x</b>&'\"", "rm:&lt;b&gt;x&lt;/b&gt;&amp;&#39;&#34;"),
     ("judge:<i>p</i>", "judge:&lt;i&gt;p&lt;/i&gt;"),
     ("a <note> & more", "a &lt;note&gt; &amp; more")],
    ids=["source-name", "bias-source", "note"],
)  # fmt: skip
def test_hostile_text_is_escaped(page: str, raw: str, escaped: str) -> None:
    assert raw not in page
    assert escaped in page


def test_a_row_saved_in_the_older_interval_form_reads_as_the_same_row() -> None:
    from tinyjudge.audit import PairRow

    data = json.loads((GOLDEN / "report.json").read_text(encoding="utf-8"))
    row = data["pairs"][0]
    old = {k: v for k, v in row.items() if k not in ("accuracy", "kappa", "alpha")}
    for k in ("accuracy", "kappa", "alpha"):  # before: "kappa": 0.86, "kappa_ci": [0.81, 0.92]
        old |= {k: row[k]["value"], f"{k}_ci": [row[k]["low"], row[k]["high"]]}
    assert PairRow.from_dict(old) == PairRow.from_dict(row)
    assert PairRow.from_dict(old).to_dict() == row


def test_an_exploit_json_in_the_older_interval_form_is_shown_with_its_bounds() -> None:
    from tinyjudge.audit import with_exploit

    data = json.loads((GOLDEN / "report.json").read_text(encoding="utf-8"))
    old = {
        "model": {"source": "rm:x", "tier": "linear"}, "rubric": "compliance",
        "target": "full_compliance", "n_items": 4, "n_elsewhere": 2, "summary": {},
        "edits": [{"name": "bold", "family": "format", "n": 2, "flip_to_target": 0.5,
                   "flip_ci": [0.25, 0.75], "mean_shift": 0.1, "shift_ci": [None, None]}],
        "search": {"best": [{"phrase": "p", "flip_to_target": 0.0, "flip_ci": [0.0, 0.125]}]},
    }  # fmt: skip
    got = with_exploit(AuditReport.from_dict(data), old).exploit
    assert got is not None and got["edits"] == [
        {"name": "bold", "family": "format", "n": 2,
         "flip_to_target": {"value": 0.5, "low": 0.25, "high": 0.75},
         "mean_shift": {"value": 0.1, "low": None, "high": None}},
    ]  # fmt: skip
    assert got["search"]["best"][0]["flip_to_target"] == {"value": 0.0, "low": 0.0, "high": 0.125}
    report = with_exploit(AuditReport.from_dict(data), got)
    assert report.exploit == got  # the one form reads back as it is
    assert '0.500 <span class="ci">[0.250, 0.750]</span>' in render_html(report)
