"""Cluster-robust PPI: intervals as wide as dependent items (the turns of a dialogue) allow."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support import real_data, run_tinyjudge

from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.distill import LinearRM
from tinyjudge.errors import UsageError
from tinyjudge.estimate import clustered_se, estimate_rate, estimate_rates, ppi_mean
from tinyjudge.results import Interval

HELD_OUT = ("claude", "Llama-3.3-70B-Instruct")


def test_copies_of_a_cluster_count_once() -> None:
    """Each cluster's item repeated m times: the clustered error is exactly the iid error
    of the G cluster values (var / G), where the iid error of the copies shrinks by sqrt(m)."""
    rng = np.random.default_rng(0)
    values = rng.binomial(1, 0.3, size=40).astype(float)
    m = 5
    y = np.repeat(values, m)
    keys = np.repeat(np.arange(40), m)
    se, g = clustered_se(y, np.full(y.size, 0.5), keys, lam=0.0)
    assert g == 40
    assert se == pytest.approx(np.sqrt(values.var(ddof=1) / 40), rel=1e-12)
    iid = estimate_rate(np.full(y.size, 0.5), y)
    assert iid.human_only.se == pytest.approx(se / np.sqrt(m), rel=0.05)


def test_one_item_per_cluster_is_the_iid_error() -> None:
    rng = np.random.default_rng(1)
    f = rng.uniform(size=600)
    y = np.where(rng.uniform(size=600) < 0.2, (rng.uniform(size=600) < f).astype(float), np.nan)
    has = ~np.isnan(y)
    iid = ppi_mean(y[has], f[has], f[~has])
    se, g = clustered_se(y, f, np.arange(600), iid.lam)
    assert g == 600
    assert se == pytest.approx(iid.se, rel=0.02)  # the small-sample factors apart


def test_clusters_with_the_stratified_design_are_refused() -> None:
    with pytest.raises(UsageError, match="clusters with the stratified design"):
        estimate_rate([0.2, 0.8, 0.4, 0.6], [1, 0, np.nan, np.nan], method="stratified",
                      clusters=["a", "a", "b", "b"])  # fmt: skip
    with pytest.raises(UsageError, match="human labels in at least 2 clusters"):
        estimate_rate([0.2, 0.8, 0.4, 0.6], [1, 0, np.nan, np.nan], clusters=["a", "a", "b", "b"])


@pytest.fixture(scope="module")
def sycon_run(tmp_path_factory: pytest.TempPathFactory):
    """SYCON items, GPT-4o's labels (the "human" here), and a linear model's labels on two
    answering models it never saw."""
    src = real_data("sycon")
    if src is None:
        pytest.skip("no SYCON data")
    got = run_import("sycon", src)
    teacher = {lab.item_id: lab.label for lab in got.labels if lab.status == "ok"}
    train = [it for it in got.items if it.metadata["answering_model"] not in HELD_OUT]
    model = LinearRM("pushback_under_pressure").fit(train, [teacher[it.id] for it in train])
    test = [it for it in got.items if it.metadata["answering_model"] in HELD_OUT]
    rm = model.score_items(test)
    judge = [lab for lab in got.labels if lab.item_id in {it.id for it in test}]
    return test, [*rm, *judge], model.source


def test_clustered_intervals_widen_on_dialogues(sycon_run) -> None:
    items, labels, cheap = sycon_run
    kw = dict(cheap=cheap, human="judge:gpt-4o", by="metadata.answering_model",
              compare=HELD_OUT, human_fraction=0.3, seed=0)  # fmt: skip
    iid = estimate_rates(labels, items, **kw)
    clustered = estimate_rates(labels, items, cluster="metadata.dialogue_id", **kw)
    # the same estimate, a wider interval
    assert clustered.overall.rate.value == iid.overall.rate.value
    n_dialogues = len({it.metadata["dialogue_id"] for it in items})
    assert clustered.overall.n_clusters == n_dialogues
    assert clustered.overall.rate.width > 1.3 * iid.overall.rate.width
    # both differences are normal intervals, est +- z * se: their widths compare the se's
    d_iid, d_cl = iid.comparison.difference, clustered.comparison.difference
    assert d_cl.width > 1.3 * d_iid.width
    assert clustered.to_dict()["cluster"] == "metadata.dialogue_id"


def test_estimate_command_clusters_and_names_the_rate(sycon_run, tmp_path: Path) -> None:
    items, labels, cheap = sycon_run
    write_jsonl(tmp_path / "items.jsonl", items)
    write_jsonl(tmp_path / "labels.jsonl", labels)
    args = ["estimate", tmp_path / "labels.jsonl", "--cheap", cheap, "--human", "judge:gpt-4o",
            "--human-fraction", "0.3"]  # fmt: skip
    done = run_tinyjudge(*args, "--items", tmp_path / "items.jsonl", "--cluster",
                         "metadata.dialogue_id", "--json", tmp_path / "est.json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "rate of holds" in text and "clustered by metadata.dialogue_id (400 clusters)" in text
    assert json.loads((tmp_path / "est.json").read_text())["overall"]["n_clusters"] == 400
    no_items = run_tinyjudge(*args, "--cluster", "metadata.dialogue_id")
    assert no_items.returncode != 0
    assert "clustering by 'metadata.dialogue_id' needs the items: pass --items" in no_items.stderr


def test_audit_estimates_cluster_by_its_group_by(sycon_run) -> None:
    from tinyjudge.audit import audit

    items, labels, cheap = sycon_run
    kw = dict(reference="judge:gpt-4o", n_boot=20, seed=0)
    plain = audit(labels, items, **kw).estimates["sources"][cheap]["overall"]
    grouped = audit(labels, items, group_by="metadata.dialogue_id", **kw)
    clustered = grouped.estimates["sources"][cheap]["overall"]
    assert grouped.estimates["cluster"] == "metadata.dialogue_id"
    assert clustered["n_clusters"] == 400 and plain["n_clusters"] == 0
    assert Interval(**clustered["rate"]).width > Interval(**plain["rate"]).width
