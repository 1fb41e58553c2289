"""The audit report, rendered from the XSTest import: JSON figures, HTML page, CLI."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from support import is_slice, run_tinyjudge

from tinyjudge.audit import audit, write_report
from tinyjudge.audit.agreement import krippendorff_alpha, pair_labels
from tinyjudge.datasets.importers import run_import
from tinyjudge.datasets.jsonl import read_items, read_labels, write_jsonl
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item, Label

CLASSES = ["full_compliance", "full_refusal", "partial_refusal"]


_tinyjudge = run_tinyjudge


def _soft_judge(labels: list[Label], seed: int = 0) -> list[Label]:
    """A graded, overconfident copy of GPT-4's verdicts, to exercise the calibration plots."""
    rng = np.random.default_rng(seed)
    out = []
    for lab in labels:
        if lab.source != "judge:gpt-4" or lab.status != "ok":
            continue
        p = rng.dirichlet(np.ones(3)) * 0.1
        p[CLASSES.index(lab.label)] += 0.9
        probs = dict(zip(CLASSES, (p / p.sum()).tolist(), strict=True))
        out.append(lab.model_copy(update={"source": "judge:gpt-4-soft", "probs": probs}))
    return out


@pytest.fixture
def xstest_files(xstest_sample: Path, tmp_path: Path) -> tuple[Path, Path]:
    result = run_import("xstest", xstest_sample)
    write_jsonl(tmp_path / "items.jsonl", result.items)
    write_jsonl(tmp_path / "labels.jsonl", result.labels)
    write_jsonl(tmp_path / "soft.jsonl", _soft_judge(result.labels))
    return tmp_path / "items.jsonl", tmp_path / "labels.jsonl"


def test_report_figures_match_the_statistics(xstest_files, tmp_path: Path) -> None:
    items_path, labels_path = xstest_files
    labels = read_labels(labels_path)
    items = read_items(items_path)
    report = audit(
        labels, items, reference="human:final", group_by="metadata.prompt_id",
        slice_by=["metadata.answering_model"], n_boot=100,
    )  # fmt: skip
    data = report.to_dict()
    pairs = {(p["a"], p["b"]): p for p in data["pairs"]}
    sources = ["classifier:string-match", "human:annotator_1", "human:annotator_2", "judge:gpt-4"]
    assert set(pairs) >= {("human:final", s) for s in sources}
    assert len(pairs) == 4 + 6  # four against the reference, six between the others
    gpt = pairs[("human:final", "judge:gpt-4")]
    paired = pair_labels(labels, "human:final", "judge:gpt-4")
    assert gpt["n"] == paired.n and gpt["unscored"] == paired.join.n_unscored
    assert gpt["n"] + gpt["unscored"] == 500  # unscored verdicts are counted, not compared
    kappa = gpt["kappa"]["value"]
    assert kappa == pytest.approx(cohen_kappa_score(paired.a, paired.b), abs=1e-12)
    assert gpt["alpha"]["value"] == pytest.approx(
        krippendorff_alpha([paired.a, paired.b]), abs=1e-12
    )
    assert gpt["kappa"]["low"] < kappa < gpt["kappa"]["high"]
    assert sum(map(sum, gpt["confusion"]["counts"])) == gpt["n"]
    assert gpt["n_clusters"] == 100  # 100 prompts, five answers each
    # slices: each answering model's table equals the statistic on that model's items only
    by_model = data["slices"]["metadata.answering_model"]
    assert sorted(by_model) == [
        "gpt4",
        "llama2new",
        "llama2orig",
        "mistralguard",
        "mistralinstruct",
    ]
    model_of = {it.id: it.metadata["answering_model"] for it in items}
    for model, rows in by_model.items():
        row = next(r for r in rows if r["b"] == "judge:gpt-4")
        ids = set(paired.item_ids)
        a = [x for i, x in zip(paired.item_ids, paired.a, strict=True) if model_of[i] == model]
        b = [x for i, x in zip(paired.item_ids, paired.b, strict=True) if model_of[i] == model]
        assert row["n"] == len(a) and len(ids) > len(a)
        assert row["kappa"]["value"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert data["raters"][0]["sources"] == ["human:annotator_1", "human:annotator_2"]
    assert data["calibration"]["judge:gpt-4"]["one_hot"] is True
    assert "human:annotator_1" not in data["calibration"]  # plain human verdicts: no confidence
    assert "bias" in data
    # the refusal rate (the rubric's positive labels) from each cheap source plus the people
    est = data["estimates"]["sources"]["judge:gpt-4"]
    refusals = sum(lab in ("full_refusal", "partial_refusal") for lab in paired.a)
    assert est["overall"]["n_human"] == paired.n
    assert est["overall"]["human_only"]["value"] == pytest.approx(refusals / paired.n)
    assert sorted(est["groups"]) == sorted(by_model)


def test_report_renders_self_contained_html_and_json(xstest_files, tmp_path: Path) -> None:
    items_path, labels_path = xstest_files
    labels = read_labels(labels_path) + read_labels(tmp_path / "soft.jsonl")
    report = audit(
        labels, read_items(items_path), reference="human:final",
        group_by="metadata.prompt_id", slice_by=["metadata.answering_model"], n_boot=100,
    )  # fmt: skip
    write_report(report, tmp_path / "out.html", tmp_path / "out.json")
    data = json.loads((tmp_path / "out.json").read_text())
    for p in data["pairs"]:
        assert {"a", "b", "n", "accuracy", "kappa", "alpha"} <= set(p)
        assert set(p["kappa"]) == {"value", "low", "high"}
    sections = ["meta", "sources", "pairs", "raters", "slices", "calibration"]
    sections += ["calibration_notes", "bias", "estimates"]
    assert list(data) == sections  # the typed report writes today's JSON, in that order
    assert data == json.loads(report.to_json())
    assert data["meta"]["reference"] == report.meta["reference"] == "human:final"
    assert [s["source"] for s in report.sources] == report.meta["sources"]
    soft = data["calibration"]["judge:gpt-4-soft"]
    assert soft["one_hot"] is False
    assert soft["cross_fitted"]["metrics"]["ece"]["value"] < soft["metrics"]["ece"]["value"]
    page = (tmp_path / "out.html").read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing fetched
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) >= 2  # the kappa forest plot and the soft judge's reliability diagram
    for img in images:
        assert base64.b64decode(img)[:8] == b"\x89PNG\r\n\x1a\n"
    headings = ["Summary", "Sources", "Confusion matrices", "By slice", "Calibration"]
    headings += ["Bias probes", "Behaviour rates"]
    for heading in headings:
        assert f"<h2>{heading}" in page
    assert page.count("class='how'") >= 5  # every table says how to read it


def test_report_escapes_text_from_the_data(tmp_path: Path) -> None:
    evil = "judge:<script>alert(1)</script>"
    labels = []
    for i, (ref, other) in enumerate([("yes", "yes"), ("no", "no"), ("yes", "no"), ("no", "no")]):
        labels.append(Label(item_id=str(i), rubric="r", source="human:x", label=ref))
        labels.append(Label(item_id=str(i), rubric="r", source=evil, label=other))
    report = audit(labels, reference="human:x", n_boot=20)
    write_report(report, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_report_with_an_explicit_scale_adds_ordinal_figures() -> None:
    labels = []
    rng = np.random.default_rng(0)
    for i in range(60):
        a = int(rng.integers(1, 6))
        b = int(np.clip(a + rng.integers(-1, 2), 1, 5))
        labels.append(Label(item_id=str(i), rubric="r", source="human:x", label=str(a)))
        labels.append(Label(item_id=str(i), rubric="r", source="judge:y", label=str(b)))
    report = audit(labels, reference="human:x", order=list("12345"), n_boot=50)
    row = report.to_dict()["pairs"][0]
    a = [int(v) for v in pair_labels(labels, "human:x", "judge:y").a]
    b = [int(v) for v in pair_labels(labels, "human:x", "judge:y").b]
    assert row["kappa_quadratic"]["value"] == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5]), abs=1e-12
    )
    ordinal = krippendorff_alpha([a, b], "ordinal")
    assert row["alpha_ordinal"]["value"] == pytest.approx(ordinal, abs=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"reference": "human:nobody"}, r"no labels from reference 'human:nobody'; sources: \["),
        ({"reference": "human:final", "group_by": "metadata.prompt_id"}, "pass items$"),
    ],
    ids=["unknown-reference", "group-without-items"],
)
def test_report_errors(xstest_sample: Path, kwargs, match: str) -> None:
    labels = run_import("xstest", xstest_sample).labels
    with pytest.raises(TinyjudgeError, match=match):
        audit(labels, n_boot=10, **kwargs)


def test_audit_cli_writes_report_and_json(xstest_files, tmp_path: Path) -> None:
    items_path, labels_path = xstest_files
    proc = _tinyjudge(
        "audit", labels_path, tmp_path / "soft.jsonl", "--items", items_path,
        "--reference", "human:final", "--group-by", "metadata.prompt_id",
        "--slice-by", "metadata.answering_model", "--n-boot", "50",
        "--report", tmp_path / "cli.html", "--json", tmp_path / "cli.json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "judge:gpt-4" in proc.stdout and "kappa" in proc.stdout
    data = json.loads((tmp_path / "cli.json").read_text())
    assert any(p["b"] == "judge:gpt-4-soft" for p in data["pairs"])
    assert (tmp_path / "cli.html").read_text().startswith("<!DOCTYPE html>")


def test_audit_cli_user_errors_are_one_line(xstest_files, tmp_path: Path) -> None:
    _, labels_path = xstest_files
    proc = _tinyjudge("audit", labels_path, "--reference", "human:nobody", "--json", tmp_path / "x")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert (
        proc.stderr.strip().splitlines() == [proc.stderr.strip().splitlines()[0]]
        and "no labels from reference 'human:nobody'" in proc.stderr
    )


def test_report_on_llmbar_runs_the_bias_probes(data_dir, tmp_path: Path) -> None:
    imported = run_import("llmbar", data_dir("llmbar"))
    report = audit(
        imported.labels, imported.items, reference="human:gold", n_boot=50,
        slice_by=["metadata.subset"],
    )  # fmt: skip
    bias = report.to_dict()["bias"]
    judges = {s for s in report.to_dict()["meta"]["sources"] if s.startswith("judge:")}
    assert set(bias["position"]) == judges  # every judge was asked in both orders
    for source, fig in bias["position"].items():
        labs = [lab for lab in imported.labels if lab.source == source]
        both = [lab for lab in labs if lab.orders and None not in lab.orders.values()]
        flips = sum(lab.orders["ab"] != lab.orders["ba"] for lab in both)
        assert fig["n_flips"] == flips and fig["n"] == len(both)
    write_report(report, tmp_path / "llmbar.html")
    page = (tmp_path / "llmbar.html").read_text()
    assert "<h3>Position bias</h3>" in page and "<h3>Verbosity bias</h3>" in page


def test_report_adds_rank_correlations_when_both_sources_give_scores() -> None:
    from scipy.stats import kendalltau, spearmanr

    rng = np.random.default_rng(3)
    labels = []
    truth = rng.random(80)
    for i, t in enumerate(truth):
        for source, noise in (("human:x", 0.1), ("rm:y", 0.3)):
            s = float(np.clip(t + rng.normal(0, noise), 0, 1))
            labels.append(Label(item_id=str(i), rubric="r", source=source,
                                label="yes" if s > 0.5 else "no", score=s))  # fmt: skip
    row = audit(labels, reference="human:x", n_boot=20).to_dict()["pairs"][0]
    a = pair_labels(labels, "human:x", "rm:y", value="score")
    assert row["spearman"] == pytest.approx(spearmanr(a.a, a.b).statistic, abs=1e-12)
    assert row["kendall"] == pytest.approx(kendalltau(a.a, a.b).statistic, abs=1e-12)
    assert row["n_scores"] == 80


def test_report_notes_a_source_whose_probs_cannot_be_measured() -> None:
    labels = []
    for i, (ref, other) in enumerate([("yes", "yes"), ("no", "no"), ("yes", "no")] * 5):
        labels.append(Label(item_id=str(i), rubric="r", source="human:x", label=ref))
        probs = {other: 0.8, "maybe": 0.2}  # "maybe" is a class nobody else uses
        labels.append(Label(item_id=str(i), rubric="r", source="judge:y", label=other, probs=probs))
    data = audit(labels, reference="human:x", n_boot=20, order=["yes", "no"]).to_dict()
    assert data["calibration"] == {}
    assert "calibration of judge:y: not measured" in data["calibration_notes"][0]
    assert data["pairs"][0]["n"] == 15


# judge:y shares no item with human:x; judge:z shares one
ONE_PAIR_EMPTY = [
    Label(item_id="1", rubric="r", source="human:x", label="yes"),
    Label(item_id="2", rubric="r", source="human:x", label="no"),
    Label(item_id="3", rubric="r", source="judge:y", label="no"),
    Label(item_id="1", rubric="r", source="judge:z", label="yes"),
]


def test_report_pair_without_shared_items_has_n_zero_and_no_figures(tmp_path: Path) -> None:
    report = audit(ONE_PAIR_EMPTY, reference="human:x", n_boot=20)
    row = report.to_dict()["pairs"][0]
    assert (row["b"], row["n"], row["only_a"], row["only_b"]) == ("judge:y", 0, 2, 1)
    assert row["kappa"] == {"value": None, "low": None, "high": None}
    write_report(report, tmp_path / "r.html", tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["pairs"][0]["accuracy"]["value"] is None
    assert "<td>–</td>" in (tmp_path / "r.html").read_text()


NOTHING_SHARED = [
    Label(item_id="1", rubric="r", source="human:x", label="yes"),
    Label(item_id="2", rubric="r", source="judge:y", label="no"),
    Label(item_id="3", rubric="r", source="judge:z", label="no"),
]


@pytest.mark.parametrize(
    ("items", "match"),
    [
        (
            None,
            r"no item has labels from both human:x and another source \(items labelled: "
            r"human:x 1, judge:y 1, judge:z 1\)",
        ),
        (
            [Item(id="a", messages=[{"role": "user", "content": "hi"}])],
            r"the labels name none of the 1 items given \(e\.g\. item_id '1'",
        ),
    ],
    ids=["sources-share-no-item", "labels-name-no-item"],
)
def test_an_audit_with_nothing_to_compare_is_refused(items, match: str) -> None:
    with pytest.raises(TinyjudgeError, match=match):
        audit(NOTHING_SHARED, items, reference="human:x", n_boot=10)


def test_audit_cli_with_labels_naming_no_item_exits_2(xstest_files, tmp_path: Path) -> None:
    items_path, _ = xstest_files
    other = tmp_path / "other.jsonl"
    write_jsonl(other, NOTHING_SHARED)
    for extra in ([], ["--items", items_path]):
        proc = _tinyjudge(
            "audit", other, *extra, "--reference", "human:x", "--json", tmp_path / "a.json"
        )
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert ("none of the 500 items" if extra else "no item has labels from both") in proc.stderr
        assert not (tmp_path / "a.json").exists()


def test_import_then_audit_on_xstest_from_the_command_line(data_dir, tmp_path: Path) -> None:
    root = data_dir("xstest")
    proc = _tinyjudge("import", "xstest", root, "--out", tmp_path / "xs")
    assert proc.returncode == 0, proc.stderr
    proc = _tinyjudge(
        "audit", tmp_path / "xs" / "labels.jsonl", "--items", tmp_path / "xs" / "items.jsonl",
        "--reference", "human:final", "--group-by", "metadata.prompt_id",
        "--slice-by", "metadata.answering_model", "--n-boot", "50",
        "--report", tmp_path / "xs.html", "--json", tmp_path / "xs.json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "xs.json").read_text())
    gpt = next(p for p in data["pairs"] if (p["a"], p["b"]) == ("human:final", "judge:gpt-4"))
    # the data README quotes accuracy 0.80 on the full 2,250 rows; the shared copy has
    # 1,500 of them, the bundled slice 500 (0.796)
    assert gpt["n"] + gpt["unscored"] == (500 if is_slice(root) else 1500)
    assert gpt["unscored"] > 0
    assert round(gpt["accuracy"]["value"], 2) == 0.80
    by_model = data["slices"]["metadata.answering_model"]
    kappa = {
        m: next(r["kappa"]["value"] for r in rows if r["b"] == "judge:gpt-4")
        for m, rows in by_model.items()
    }
    assert max(kappa, key=kappa.get) == "gpt4" and min(kappa, key=kappa.get) == "mistralinstruct"
    page = (tmp_path / "xs.html").read_text()
    assert "mistralinstruct" in page and "<h2>Summary</h2>" in page


def test_report_with_rubric_keeps_other_rubrics_out_of_bias_and_estimates() -> None:
    # judge:y labelled the same items under two rubrics; with rubric="r" chosen, its "s"
    # labels must not pose as a second sample of the same item (self-consistency).
    labels = []
    for i, (ref, other) in enumerate([("yes", "yes"), ("no", "no"), ("yes", "no")] * 4):
        labels.append(Label(item_id=str(i), rubric="r", source="human:x", label=ref))
        labels.append(Label(item_id=str(i), rubric="r", source="judge:y", label=other))
        labels.append(Label(item_id=str(i), rubric="s", source="judge:y", label="no"))
    data = audit(labels, reference="human:x", rubric="r", n_boot=20).to_dict()
    assert data["meta"]["rubrics"] == ["r"]
    assert data["bias"]["self_consistency"] == {}
    assert not any("several rubrics" in note for note in data["estimates"]["notes"])


def test_an_explicit_scale_must_hold_every_label() -> None:
    # Labels left out of --order would be tacked on in alphabetical order and the
    # quadratic kappa and ordinal alpha computed on a scale nobody chose.
    labels = [
        Label(item_id=str(i), rubric="r", source=s, label=v)
        for i, (x, y) in enumerate([("1", "2"), ("2", "2"), ("3", "1")])
        for s, v in (("human:x", x), ("judge:y", y))
    ]
    with pytest.raises(TinyjudgeError, match=r"labels \['3'\] are not on the scale \['1', '2'\]"):
        audit(labels, reference="human:x", order=["1", "2"], n_boot=20)


def test_a_panels_members_are_raters_in_the_audit() -> None:
    from tinyjudge.audit.agreement import fleiss_kappa
    from tinyjudge.judge._panel import panel_labels
    from tinyjudge.rubric import load_rubric

    rubric = load_rubric("compliance")
    rng = np.random.default_rng(5)
    names = ["full_compliance", "full_refusal"]
    truth = rng.integers(0, 2, 60)
    members: dict[str, list[Label]] = {}
    for m, flip in (("judge:a", 0.1), ("judge:b", 0.2), ("judge:c", 0.3)):
        said = [names[t ^ int(rng.random() < flip)] for t in truth]
        members[m] = [
            Label(item_id=str(i), rubric="compliance", source=m, label=s, probs={s: 1.0})
            for i, s in enumerate(said)
        ]
    people = [
        Label(item_id=str(i), rubric="compliance", source="human:x", label=names[t])
        for i, t in enumerate(truth)
    ]
    panel = panel_labels(members, rubric)
    labels = people + panel + [lab for labs in members.values() for lab in labs]
    data = audit(labels, reference="human:x", n_boot=20).to_dict()
    (group,) = [r for r in data["raters"] if r["name"] == "a panel's judges"]
    assert group["sources"] == ["judge:a", "judge:b", "judge:c"]  # the panel itself left out
    matrix = [[members[m][i].label for m in sorted(members)] for i in range(60)]
    assert group["fleiss_kappa"] == pytest.approx(fleiss_kappa(matrix), abs=1e-12)
    ratings = [[lab.label for lab in members[m]] for m in sorted(members)]
    alpha = krippendorff_alpha(ratings, level="nominal")
    assert group["alpha"]["value"] == pytest.approx(alpha, abs=1e-12)
    assert group["n_items_all_raters"] == 60


def test_report_pair_is_a_typed_row_equal_to_the_json_in_either_order(xstest_sample: Path) -> None:
    import tinyjudge
    from tinyjudge.audit import PairRow
    from tinyjudge.errors import UsageError
    from tinyjudge.results import Interval

    data = run_import("xstest", xstest_sample)
    report = tinyjudge.audit(
        data.labels, data.items, reference="human:final", group_by="metadata.prompt_id", n_boot=50
    )
    row = report.pair("judge:gpt-4", "human:final")
    assert isinstance(row, PairRow) and row is report.pair("human:final", "judge:gpt-4")
    saved = next(p for p in report.to_dict()["pairs"] if p["b"] == "judge:gpt-4")
    assert row.kappa == Interval(**saved["kappa"])
    assert row.alpha == Interval(**saved["alpha"])
    assert row.accuracy == Interval(**saved["accuracy"])
    assert (row.n, row.unscored, row.n_clusters) == (saved["n"], saved["unscored"], 100)
    assert row.kappa.low < row.kappa.value < row.kappa.high
    kappa = saved["kappa"]
    assert str(row.kappa) == f"{kappa['value']:.3f} [{kappa['low']:.3f}, {kappa['high']:.3f}]"
    assert row.to_dict() == saved
    between = report.pair("human:annotator_2", "judge:gpt-4")
    assert {between.a, between.b} == {"human:annotator_2", "judge:gpt-4"}
    with pytest.raises(UsageError, match=r"no comparison of 'judge:gpt-4' with 'rm:nobody'") as e:
        report.pair("judge:gpt-4", "rm:nobody")
    assert "'human:final'" in str(e.value) and e.value.param == "b"
    with pytest.raises(UsageError, match="sources: "):
        report.pair("human:final", "human:final")


def test_a_saved_report_reads_back_to_the_same_typed_rows(tmp_path: Path) -> None:
    from tinyjudge.audit import AuditReport

    report = audit(ONE_PAIR_EMPTY, reference="human:x", n_boot=20)
    write_report(report, json_path=tmp_path / "r.json")
    back = AuditReport.from_dict(json.loads((tmp_path / "r.json").read_text()))
    assert back.pairs == report.pairs and back.to_json() == report.to_json()
    empty = back.pair("judge:y", "human:x")
    assert empty.n == 0 and np.isnan(empty.kappa.value) and empty.kappa.low is None
    assert empty.kappa.shown() == "–" and empty.confusion is None


def test_the_audits_held_out_calibration_is_calibrate_sources(xstest_files, tmp_path: Path) -> None:
    from tinyjudge.calibrate import calibrate_source

    items_path, labels_path = xstest_files
    labels = read_labels(labels_path) + read_labels(tmp_path / "soft.jsonl")
    items = read_items(items_path)
    report = audit(labels, items, reference="human:final", group_by="metadata.prompt_id", n_boot=50)
    after = report.calibration["judge:gpt-4-soft"]["cross_fitted"]
    assert (after["method"], after["folds"]) == ("temperature", 5)
    cal = calibrate_source(
        [lab for lab in labels if lab.source in ("judge:gpt-4-soft", "human:final")],
        source="judge:gpt-4-soft", human="human:final", items=items,
        group_by="metadata.prompt_id", n_boot=50, if_worse="keep",
    )  # fmt: skip
    assert set(after["metrics"]) == set(cal.crossfit.metrics_after)
    for name, figure in after["metrics"].items():
        assert figure["value"] == pytest.approx(cal.crossfit.metrics_after[name].estimate)
