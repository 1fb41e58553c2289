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
