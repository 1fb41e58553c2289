"""An audit report prints as its rows against the reference, never as a raw dataclass."""

from __future__ import annotations

from support import XSTEST_SAMPLE

from tinyjudge.audit import audit
from tinyjudge.datasets.importers import run_import


def test_a_report_of_every_source_and_slice_prints_in_under_2000_characters() -> None:
    xs = run_import("xstest", XSTEST_SAMPLE)
    report = audit(xs.labels, xs.items, reference="human:final", n_boot=50,
                   slice_by=["metadata.answering_model"])  # fmt: skip
    text = repr(report)
    assert len(text) < 2000 and len(repr(report.to_dict())) > 5 * len(text)
    others = [s for s in report.meta["sources"] if s != "human:final"]
    assert len(others) >= 3
    for source in others:  # a line per source against the reference, with its kappa
        kappa = report.pair(source, "human:final").kappa
        assert f"{source}: n " in text and kappa.shown() in text
    assert "slices by metadata.answering_model" in text
    page = report._repr_html_()
    assert page.count("<tr>") == 1 + len(report.pairs)
