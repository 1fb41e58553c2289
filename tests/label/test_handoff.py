"""From the labelling page straight into ``tinyjudge audit`` and ``tinyjudge calibrate``:
50 XSTest items labelled over HTTP, then both verbs read the labels file as it is."""

from __future__ import annotations

import json
import subprocess

import pytest
from support import run_tinyjudge

from tinyjudge.datasets.jsonl import read_labels
from tinyjudge.rubric import load_rubric, load_rubric_copy


def _tinyjudge(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    return run_tinyjudge(*args, cwd=cwd, timeout=600)


@pytest.mark.slow
def test_fifty_labels_feed_audit_and_calibrate_with_no_conversion(start_server, xstest_data):
    final = {
        lab.item_id: lab.label
        for lab in read_labels(xstest_data.labels)
        if lab.source == "human:final" and lab.status == "ok"
    }
    server = start_server(xstest_data, "rev", "--budget", "50")
    rubric = load_rubric("compliance")  # the label verb stores it beside the labels
    assert load_rubric_copy(xstest_data.labels.parent / f"rubric.{rubric.hash}.yaml") == rubric
    with server.client() as c:
        # A careful reviewer who gives the published final label where there is one.
        while (item_id := c.get("/api/current").json()["item_id"]) is not None:
            r = c.post(
                "/api/answer",
                json={"item_id": item_id, "label": final.get(item_id, "full_compliance")},
            )
            assert r.status_code == 200, r.text
        progress = c.get("/api/progress").json()
    assert progress["labelled"] == 50 and progress["select"] == "active"
    panel = {a["source"]: a for a in progress["agreement"]}

    folder = xstest_data.labels.parent
    audit = _tinyjudge(
        "audit", "labels.jsonl", "--reference", "human:rev", "--rubric", "compliance",
        "--json", "audit.json", "--n-boot", "20", cwd=folder,
    )  # fmt: skip
    assert audit.returncode == 0, audit.stderr
    pairs = {
        p["b"]: p
        for p in json.loads((folder / "audit.json").read_text())["pairs"]
        if p["a"] == "human:rev"
    }
    # The page's live figures are the audit's figures.
    for source in ("judge:gpt-4", "classifier:string-match"):
        assert pairs[source]["n"] == panel[source]["n"] == 50
        assert pairs[source]["accuracy"]["value"] == pytest.approx(panel[source]["agreement"])
        assert pairs[source]["kappa"]["value"] == pytest.approx(panel[source]["kappa"])
    assert pairs["human:final"]["accuracy"]["value"] == 1.0

    calib = _tinyjudge(
        "calibrate", "labels.jsonl", "--source", "judge:gpt-4", "--human", "human:rev",
        "--method", "platt", "--out", "calib", "--n-boot", "20", cwd=folder,
    )  # fmt: skip
    assert calib.returncode == 0, calib.stderr
    assert "50 items" in calib.stdout
