"""The public-set importers (IN3, LLMBar, PandaLM) on the real data (the shared sets, else the
bundled slices in tests/fixtures/data) and on bad copies.

Expected counts are computed here from the raw files with ``json``, independently
of the importers. LLMBar's and PandaLM's own published figures, which are of the whole
sets, are reproduced from the imported labels where the whole sets are present.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support import is_slice, real_data

from tinyjudge.audit.agreement import accuracy, cohen_kappa
from tinyjudge.datasets.importers import IMPORTERS, run_import
from tinyjudge.datasets.importers.in3 import import_in3
from tinyjudge.datasets.importers.llmbar import import_llmbar
from tinyjudge.datasets.importers.pandalm import import_pandalm
from tinyjudge.datasets.jsonl import read_items, read_labels, write_jsonl
from tinyjudge.errors import DataError
from tinyjudge.records import Label
from tinyjudge.rubric import load_rubric

# Parametrizing over the judge runs happens at collection, before fixtures exist, so the
# set is located with the helper behind tests/conftest.py's `data_dir`.
_LLMBAR = real_data("llmbar")
_LLMBAR_RUNS = sorted(
    str(p.parent.relative_to(_LLMBAR))
    for p in (_LLMBAR.rglob("evaluators/*/*/result.json") if _LLMBAR else ())
)


def _by_source(labels: list[Label]) -> dict[str, dict[str, Label]]:
    out: dict[str, dict[str, Label]] = {}
    for lab in labels:
        out.setdefault(lab.source, {})[lab.item_id] = lab
    return out


def _values(labels: list[Label], source: str) -> Counter:
    """Label value per label of ``source``; unscored ones count under ``None``."""
    return Counter(lab.label for lab in labels if lab.source == source)


def _write_array(path: Path, rows: list[Any]) -> None:
    """A JSON array with element ``i`` on line ``i + 2``, so tests can name lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "rubric"),
    [
        ("in3", "clarification"),
        ("llmbar", "instruction_following"),
        ("pandalm", "instruction_following"),
    ],
    ids=["in3", "llmbar", "pandalm"],
)
def test_import_stamps_rubric_and_round_trips(
    name: str, rubric: str, data_dir, tmp_path: Path
) -> None:
    assert IMPORTERS[name][1] == rubric
    spec = load_rubric(rubric)
    result = run_import(name, data_dir(name))
    assert not result.bad
    assert len({i.id for i in result.items}) == len(result.items)
    ids = {i.id for i in result.items}
    allowed = {lab.name for lab in spec.labels}
    for lab in result.labels:
        assert lab.item_id in ids
        assert lab.rubric == rubric and lab.rubric_hash == spec.hash
        assert lab.status == "unscored" or lab.label in allowed
    write_jsonl(tmp_path / "items.jsonl", result.items)
    write_jsonl(tmp_path / "labels.jsonl", result.labels)
    assert read_items(tmp_path / "items.jsonl") == result.items
    assert read_labels(tmp_path / "labels.jsonl") == result.labels


# --- IN3 ---------------------------------------------------------------------


def _in3_rows(root: Path) -> list[tuple[str, int, dict]]:
    out = []
    for path in sorted((root / "data" / "IN3").glob("*.jsonl")):
        for line, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if text.strip():
                out.append((path.stem, line, json.loads(text)))
    return out


def test_in3_matches_the_raw_files(data_dir) -> None:
    root = data_dir("in3")
    rows = _in3_rows(root)
    result = import_in3(root)
    assert len(result.items) == len(rows) == (40 if is_slice(root) else 1261)
    assert result.sources() == {"human:in3": len(rows)}
    vague = Counter(r["vague"] for _, _, r in rows)
    assert _values(result.labels, "human:in3") == {
        "ask_first": vague[True],
        "proceed": vague[False],
    }
    labels = _by_source(result.labels)["human:in3"]
    for item, (split, line, row) in zip(result.items, rows, strict=True):
        assert item.id == f"in3:{split}:{line}"
        assert item.messages[0].role == "user" and item.messages[0].content == row["task"]
        assert item.metadata["category"] == row["category"]
        assert item.metadata["missing_details"] == row["missing_details"]
        assert labels[item.id].label == ("ask_first" if row["vague"] else "proceed")
        assert labels[item.id].rationale == row["thought"]


def test_in3_reads_a_bare_split_folder(data_dir, tmp_path: Path) -> None:
    lines = (data_dir("in3") / "data/IN3/train.jsonl").read_text(encoding="utf-8").splitlines()
    (tmp_path / "test.jsonl").write_text("\n".join(lines[:7]) + "\n", encoding="utf-8")
    result = import_in3(tmp_path)
    assert [i.id for i in result.items] == [f"in3:test:{n}" for n in range(1, 8)]


def _in3_copy(in3: Path, tmp_path: Path, bad: dict[int, str]) -> Path:
    """Six real IN3 lines in tmp_path's data/IN3/train.jsonl, with lines replaced by ``bad``."""
    src = (in3 / "data/IN3/train.jsonl").read_text(encoding="utf-8").splitlines()
    lines = src[:6]
    for line, text in bad.items():
        lines[line - 1] = text
    path = tmp_path / "data" / "IN3" / "train.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def _drop(line: str, key: str) -> str:
    row = json.loads(line)
    del row[key]
    return json.dumps(row)


def _set(line: str, key: str, value: Any) -> str:
    row = json.loads(line)
    row[key] = value
    return json.dumps(row)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda s: _drop(s, "vague"), r'train\.jsonl:3: missing field "vague"'),
        (lambda s: s[:-5], r"train\.jsonl:3: malformed JSON"),
        (
            lambda s: _set(s, "vague", "maybe"),
            r"train\.jsonl:3: \"vague\" must be true or false, got 'maybe'",
        ),
        (lambda s: _set(s, "task", ""), r'train\.jsonl:3: "task" must be a non-empty string'),
        (lambda s: "[1, 2]", r"train\.jsonl:3: expected an object, got list"),
    ],
    ids=["missing-field", "malformed-json", "unknown-value", "empty-task", "not-an-object"],
)
def test_in3_bad_line_raises_with_file_and_line(
    edit: Any, match: str, data_dir, tmp_path: Path
) -> None:
    in3 = data_dir("in3")
    line3 = (in3 / "data/IN3/train.jsonl").read_text(encoding="utf-8").splitlines()[2]
    src = _in3_copy(in3, tmp_path, {3: edit(line3)})
    with pytest.raises(DataError, match=match):
        import_in3(src)


def test_in3_skip_bad_keeps_the_good_lines(data_dir, tmp_path: Path) -> None:
    in3 = data_dir("in3")
    lines = (in3 / "data/IN3/train.jsonl").read_text(encoding="utf-8").splitlines()
    src = _in3_copy(in3, tmp_path, {2: "{not json", 5: _set(lines[4], "vague", 1)})
    result = import_in3(src, skip_bad=True)
    assert [i.id for i in result.items] == [f"in3:train:{n}" for n in (1, 3, 4, 6)]
    assert len(result.labels) == 4
    assert [(e.line, e.path.endswith("train.jsonl")) for e in result.bad] == [(2, True), (5, True)]


def test_in3_without_files_says_what_it_looked_for(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no data/IN3/\*\.jsonl"):
        import_in3(tmp_path)


# --- LLMBar ------------------------------------------------------------------


def _llmbar_subsets(root: Path) -> list[tuple[str, Path]]:
    """(subset name as in item ids, folder) for each dataset.json, computed independently."""
    out = []
    for p in sorted((root / "Dataset").rglob("dataset.json")):
        parts = p.parent.relative_to(root / "Dataset").parts
        out.append(("/".join(parts[1:]), p.parent))
    return out


def test_llmbar_matches_the_raw_files(data_dir) -> None:
    root = data_dir("llmbar")
    result = import_llmbar(root)
    assert not result.bad
    expected_sources: Counter = Counter()
    expected_values: dict[str, Counter] = {}
    n_items = 0
    gold_values: Counter = Counter()
    for _, folder in _llmbar_subsets(root):
        data = json.loads((folder / "dataset.json").read_text(encoding="utf-8"))
        n_items += len(data)
        gold_values.update("a" if r["label"] == 1 else "b" for r in data)
        for res_path in sorted(folder.glob("evaluators/*/*/result.json")):
            source = f"judge:{res_path.parent.parent.name}/{res_path.parent.name}"
            rows = json.loads(res_path.read_text(encoding="utf-8"))
            expected_sources[source] += len(rows)
            counts = expected_values.setdefault(source, Counter())
            for r in rows:
                w_ab = r["results"][-1]["swap = False"]["winner"]
                w_ba = r["results"][-1]["swap = True"]["winner"]
                if w_ab is None or w_ba is None:
                    counts[None] += 1
                else:
                    counts[{"1": "a", "2": "b"}[w_ab] if w_ab == w_ba else "tie"] += 1
    assert n_items == len(result.items) == (15 if is_slice(root) else 781)
    assert result.sources() == {"human:gold": n_items, **expected_sources}
    assert _values(result.labels, "human:gold") == gold_values
    for source, counts in expected_values.items():
        assert _values(result.labels, source) == counts, source
    # Every subset in Processed and CaseStudy is there, under a readable id.
    subsets = Counter(i.metadata["subset"] for i in result.items)
    assert subsets == {
        s: len(json.loads((f / "dataset.json").read_text(encoding="utf-8")))
        for s, f in _llmbar_subsets(root)
    }
    mt = json.loads((root / "Dataset/Processed/MT-Bench/dataset.json").read_text(encoding="utf-8"))
    item = next(i for i in result.items if i.id == "llmbar:MT-Bench:12")
    assert item.context is not None and item.response_a and item.response_b
    assert item.context[0].content == mt[12]["input"]
    assert item.response_a[0].content == mt[12]["output_1"]
    assert item.response_b[0].content == mt[12]["output_2"]


def test_llmbar_orders_are_in_original_positions(data_dir) -> None:
    """A swapped run shows output_2 as "Output (a)"; LLMBar stores its winner as "2"."""
    root = data_dir("llmbar")
    by = _by_source(import_llmbar(root).labels)
    seen = Counter()
    for subset, folder in _llmbar_subsets(root):
        for res_path in sorted(folder.glob("evaluators/*/*/result.json")):
            source = f"judge:{res_path.parent.parent.name}/{res_path.parent.name}"
            rows = json.loads(res_path.read_text(encoding="utf-8"))
            for index, r in enumerate(rows):
                lab = by[source][f"llmbar:{subset}:{index}"]
                assert lab.orders is not None
                for order, key in (("ab", "swap = False"), ("ba", "swap = True")):
                    said = r["results"][-1][key]["completion"][0].strip()
                    if said in ("Output (a)", "Output (b)"):
                        first_shown = "a" if order == "ab" else "b"
                        other = "b" if first_shown == "a" else "a"
                        picked = first_shown if said == "Output (a)" else other
                        assert lab.orders[order] == picked, (source, index, order)
                        seen[order] += 1
                if lab.status == "ok":
                    assert lab.consistent == (lab.orders["ab"] == lab.orders["ba"])
                    assert lab.label == (lab.orders["ab"] if lab.consistent else "tie")
                else:
                    assert None in lab.orders.values() and lab.label is None
    least = 40 if is_slice(root) else 100  # the slice: 15 pairs x 4 judge runs
    assert seen["ab"] > least and seen["ba"] > least


def _published(value: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+) / (\d+) = [0-9.]+%", value)
    assert m, value
    return int(m.group(1)), int(m.group(2))


def _raw_llmbar_run(run: Path) -> dict[str, Any]:
    """evaluate.py's counts for one judge run, straight from its result.json."""
    rows = json.loads((run / "result.json").read_text(encoding="utf-8"))
    gold = [str(r["label"]) for r in rows]
    said = {
        key: [r["results"][-1][f"swap = {key}"]["winner"] for r in rows] for key in (False, True)
    }
    right = {key: [w == g for w, g in zip(said[key], gold, strict=True)] for key in said}
    return {
        "n": len(rows),
        "correct_False": sum(right[False]),
        "correct_True": sum(right[True]),
        "correct_both": sum(a and b for a, b in zip(right[False], right[True], strict=True)),
        "equal": sum(a == b for a, b in zip(said[False], said[True], strict=True)),
        "ones": {key: ["1" if w == "1" else "0" for w in said[key]] for key in said},
        "gold": ["1" if g == "1" else "2" for g in gold],
    }


@pytest.mark.parametrize("run", _LLMBAR_RUNS, ids=_LLMBAR_RUNS)
def test_llmbar_reproduces_published_statistics(run: str, data_dir) -> None:
    """LLMBar's evaluate.py: correct_False/True = accuracy of the swap=False/True
    verdict against gold over all rows (an unparsed verdict counts as wrong);
    correct_average = (correct_False + correct_True) / 2 / n; correct_both = both
    orders right; equal = both orders give the same winner (None == None included);
    the kappas are reproduced too, with evaluate.py's own encoding. The figures from the
    imported labels equal those counted from result.json with ``json``; where the release's
    statistics.json is there (the whole set, not the bundled slice), they equal it too."""
    root = data_dir("llmbar")
    path = root / run / "statistics.json"
    subset = "/".join((root / run).parents[2].relative_to(root / "Dataset").parts[1:])
    source = f"judge:{(root / run).parent.name}/{(root / run).name}"
    by = _by_source(import_llmbar(root).labels)
    ids = sorted(
        (i for i in by[source] if i.startswith(f"llmbar:{subset}:")),
        key=lambda i: int(i.rsplit(":", 1)[1]),
    )
    judged = [by[source][i] for i in ids]
    gold = [by["human:gold"][i].label for i in ids]
    # accuracy() refuses missing values; LLMBar scores an unparsed verdict as wrong.
    ab = [lab.orders["ab"] or "unparsed" for lab in judged]  # type: ignore[index]
    ba = [lab.orders["ba"] or "unparsed" for lab in judged]  # type: ignore[index]
    agreed = [lab.label or "unscored" for lab in judged]
    n = len(ids)
    acc_ab, acc_ba = accuracy(ab, gold), accuracy(ba, gold)
    c_ab, c_ba = round(acc_ab * n), round(acc_ba * n)
    # evaluate.py's kappas encode a verdict as 1 if it is "1" else 0, but keep gold
    # as 1/2, so kappa_False/True measure agreement on "output_1 wins" only.
    k_ab = ["1" if v == "a" else "0" for v in ab]
    k_ba = ["1" if v == "a" else "0" for v in ba]
    k_gold = ["1" if v == "a" else "2" for v in gold]
    raw = _raw_llmbar_run(root / run)
    assert (raw["n"], raw["correct_False"], raw["correct_True"]) == (n, c_ab, c_ba)
    assert raw["correct_both"] == round(accuracy(agreed, gold) * n)
    assert raw["equal"] == round(accuracy(ab, ba) * n)
    assert (raw["ones"][False], raw["ones"][True], raw["gold"]) == (k_ab, k_ba, k_gold)
    if is_slice(root):
        assert not path.exists()  # the slice ships no statistics: they are of all rows
        return
    published = json.loads(path.read_text(encoding="utf-8"))
    assert _published(published["correct_False"]) == (c_ab, n)
    assert _published(published["correct_True"]) == (c_ba, n)
    assert _published(published["correct_both"]) == (raw["correct_both"], n)
    assert _published(published["equal"]) == (raw["equal"], n)
    # Printed as evaluate.py prints it, from the counts: exact to the last digit.
    assert published["correct_False"] == f"{c_ab} / {n} = {c_ab / n * 100}%"
    assert published["correct_average"] == f"{(c_ab + c_ba) / 2 / n * 100}%"
    assert (acc_ab + acc_ba) / 2 * 100 == pytest.approx(
        float(published["correct_average"].rstrip("%")), abs=1e-9
    )
    assert cohen_kappa(k_ab, k_gold) == pytest.approx(published["kappa_False"], abs=1e-12)
    assert cohen_kappa(k_ba, k_gold) == pytest.approx(published["kappa_True"], abs=1e-12)
    assert cohen_kappa(k_ab, k_ba) == pytest.approx(published["kappa_agreement"], abs=1e-12)


def test_llmbar_runs_found() -> None:
    # 4 judge runs on MT-Bench in the bundled slice; 4 on each of 3 subsets in the whole set.
    assert len(_LLMBAR_RUNS) == (4 if _LLMBAR and is_slice(_LLMBAR) else 12)


def _llmbar_copy(llmbar: Path, tmp_path: Path, n: int = 4) -> tuple[Path, list, list]:
    """The first ``n`` MT-Bench rows and their GPT-4 results in a fresh LLMBar layout."""
    real = llmbar / "Dataset/Processed/MT-Bench"
    data = json.loads((real / "dataset.json").read_text(encoding="utf-8"))[:n]
    res = json.loads(
        (real / "evaluators/GPT-4/Vanilla_NoRules/result.json").read_text(encoding="utf-8")
    )[:n]
    return tmp_path / "Dataset" / "LLMBar" / "Tiny", data, res


def _write_llmbar(folder: Path, data: list, res: list) -> None:
    _write_array(folder / "dataset.json", data)
    _write_array(folder / "evaluators/GPT-4/Vanilla_NoRules/result.json", res)


def test_llmbar_reads_a_copy_anywhere(data_dir, tmp_path: Path) -> None:
    folder, data, res = _llmbar_copy(data_dir("llmbar"), tmp_path)
    _write_llmbar(folder, data, res)
    result = import_llmbar(tmp_path)
    assert [i.id for i in result.items] == [f"llmbar:Tiny:{k}" for k in range(4)]
    assert result.sources() == {"human:gold": 4, "judge:GPT-4/Vanilla_NoRules": 4}
    assert result.items[0].metadata == {"group": "LLMBar", "subset": "Tiny", "index": 0}


def test_llmbar_nested_subsets_and_rating_runs(data_dir, tmp_path: Path) -> None:
    """The full release nests subsets (LLMBar/Adversarial/Neighbor), and its Rating
    runs store winners without a completion; both import."""
    _, data, res = _llmbar_copy(data_dir("llmbar"), tmp_path)
    folder = tmp_path / "Dataset" / "LLMBar" / "Adversarial" / "Neighbor"
    _write_array(folder / "dataset.json", data)
    rating = [
        {
            **{k: r[k] for k in ("input", "output_1", "output_2", "label")},
            "results": [
                {
                    "score_1": ["7", "stop"],
                    "score_2": ["3", "stop"],
                    "swap = False": {"winner": "1"},
                    "swap = True": {"winner": "2"},
                }
            ],
        }
        for r in data
    ]
    _write_array(folder / "evaluators/GPT-4/Rating/result.json", rating)
    result = import_llmbar(tmp_path)
    assert [i.id for i in result.items] == [f"llmbar:Adversarial/Neighbor:{k}" for k in range(4)]
    judged = [lab for lab in result.labels if lab.source == "judge:GPT-4/Rating"]
    assert len(judged) == 4
    assert all(lab.label == "tie" and lab.consistent is False for lab in judged)
    assert all(lab.raw == {"ab": None, "ba": None} for lab in judged)


@pytest.mark.parametrize(
    ("where", "edit", "match"),
    [
        ("dataset", lambda r: r.update(label=3), r'dataset\.json:4: "label" must be 1 or 2'),
        ("dataset", lambda r: r.pop("output_2"), r'dataset\.json:4: missing field "output_2"'),
        (
            "result",
            lambda r: r["results"][-1]["swap = True"].update(winner="3"),
            r'result\.json:4: "swap = True" winner must be "1", "2" or null, got \'3\'',
        ),
        (
            "result",
            lambda r: r["results"][-1].pop("swap = False"),
            r'result\.json:4: missing field "swap = False"',
        ),
        (
            "result",
            lambda r: r.update(input="something else"),
            r'result\.json:4: "input" differs from dataset\.json row 2',
        ),
    ],
    ids=["unknown-gold", "missing-output", "unknown-winner", "missing-order", "misaligned"],
)
def test_llmbar_bad_row_raises_with_file_and_line(
    where: str, edit: Any, match: str, data_dir, tmp_path: Path
) -> None:
    folder, data, res = _llmbar_copy(data_dir("llmbar"), tmp_path)
    edit((data if where == "dataset" else res)[2])
    _write_llmbar(folder, data, res)
    with pytest.raises(DataError, match=match):
        import_llmbar(tmp_path)


def test_llmbar_malformed_or_short_result_file(data_dir, tmp_path: Path) -> None:
    folder, data, res = _llmbar_copy(data_dir("llmbar"), tmp_path)
    _write_llmbar(folder, data, res[:3])
    with pytest.raises(DataError, match=r"result\.json: 3 rows but dataset\.json has 4"):
        import_llmbar(tmp_path)
    path = folder / "evaluators/GPT-4/Vanilla_NoRules/result.json"
    path.write_text(path.read_text(encoding="utf-8")[:-4], encoding="utf-8")
    with pytest.raises(DataError, match=r"result\.json:\d+: malformed JSON"):
        import_llmbar(tmp_path)


def test_llmbar_skip_bad_drops_the_row_and_its_judge_labels(data_dir, tmp_path: Path) -> None:
    folder, data, res = _llmbar_copy(data_dir("llmbar"), tmp_path)
    data[1]["label"] = "first"
    res[3]["results"][-1]["swap = False"]["winner"] = 7
    _write_llmbar(folder, data, res)
    other = tmp_path / "Dataset" / "LLMBar" / "Broken"
    other.mkdir(parents=True)
    (other / "dataset.json").write_text("[{", encoding="utf-8")
    result = import_llmbar(tmp_path, skip_bad=True)
    assert [i.id for i in result.items] == ["llmbar:Tiny:0", "llmbar:Tiny:2", "llmbar:Tiny:3"]
    assert result.sources() == {"human:gold": 3, "judge:GPT-4/Vanilla_NoRules": 2}
    assert [(Path(e.path).name, e.line) for e in result.bad] == [
        ("dataset.json", 1),
        ("dataset.json", 3),
        ("result.json", 5),
    ]


# --- PandaLM -----------------------------------------------------------------


def _pandalm_raw(root: Path) -> tuple[list, list, list]:
    d = root / "data"
    return tuple(  # type: ignore[return-value]
        json.loads((d / f).read_text(encoding="utf-8"))
        for f in ("testset-v1.json", "gpt-3.5-turbo-testset-v1.json", "pandalm-7b-testset-v1.json")
    )


def test_pandalm_matches_the_raw_files(data_dir) -> None:
    root = data_dir("pandalm")
    test, gpt, panda = _pandalm_raw(root)
    result = import_pandalm(root)
    n = len(test)
    assert len(result.items) == n == (33 if is_slice(root) else 999)
    assert result.sources() == {
        "human:annotator1": n,
        "human:annotator2": n,
        "human:annotator3": n,
        "human:majority": n,
        "judge:gpt-3.5": len(gpt),
        "judge:pandalm-7b": len(panda),
    }
    name = {1: "a", 2: "b", 0: "tie", "1": "a", "2": "b", "Tie": "tie", "garbage": None}
    for k in (1, 2, 3):
        counts = Counter(name[r[f"annotator{k}"]] for r in test)
        assert _values(result.labels, f"human:annotator{k}") == counts
    majority = Counter()
    for r in test:
        value, votes = Counter(r[f"annotator{k}"] for k in (1, 2, 3)).most_common(1)[0]
        majority[name[value] if votes >= 2 else None] += 1
    assert _values(result.labels, "human:majority") == majority
    assert _values(result.labels, "judge:gpt-3.5") == Counter(name[r["gpt_result"]] for r in gpt)
    assert _values(result.labels, "judge:pandalm-7b") == Counter(
        name[r["pandalm_result"]] for r in panda
    )
    by = _by_source(result.labels)
    garbage = [
        by["judge:gpt-3.5"][f"pandalm:{r['idx']}"] for r in gpt if r["gpt_result"] == "garbage"
    ]
    assert garbage and all(g.status == "unscored" and g.raw == "garbage" for g in garbage)
    item = next(i for i in result.items if i.id == f"pandalm:{test[0]['idx']}")
    assert item.response_a and item.response_a[0].content == test[0]["response1"]
    assert item.metadata["cmp_key"] == test[0]["cmp_key"]
    # The release stores a few one-word answers as JSON booleans; they come in as text.
    booleans = [r for r in test if isinstance(r["response1"], bool)]
    assert booleans
    odd = next(i for i in result.items if i.id == f"pandalm:{booleans[0]['idx']}")
    assert odd.response_a and odd.response_a[0].content == str(booleans[0]["response1"])
    assert odd.metadata["converted_to_text"] == ["response1"]


@pytest.mark.parametrize(
    ("source", "key", "published"),
    [("judge:gpt-3.5", "gpt_result", 0.7107), ("judge:pandalm-7b", "pandalm_result", 0.6677)],
    ids=["gpt-3.5", "pandalm-7b"],
)
def test_pandalm_reproduces_published_accuracy(
    source: str, key: str, published: float, data_dir
) -> None:
    """PandaLM's data/compute_metrics.py scores judges against the annotators' majority
    and counts GPT-3.5's "garbage" as a tie. The accuracy from the imported labels equals
    the one counted from the raw files with ``json``; on the whole set its printed
    accuracies (4 places) follow."""
    root = data_dir("pandalm")
    result = import_pandalm(root)
    by = _by_source(result.labels)
    ids = [i.id for i in result.items]
    judge = [by[source][i].label or "tie" for i in ids]
    human = [by["human:majority"][i].label for i in ids]
    test, gpt, panda = _pandalm_raw(root)
    verdict = {r["idx"]: r[key] for r in (gpt if key == "gpt_result" else panda)}
    hits = 0
    for r in test:
        value, votes = Counter(r[f"annotator{k}"] for k in (1, 2, 3)).most_common(1)[0]
        said = verdict[r["idx"]]
        # GPT-3.5 says "1", "2", "Tie" or "garbage"; PandaLM-7B 1, 2 or 0 (a tie).
        said = {"1": 1, "2": 2, 1: 1, 2: 2}.get(said, 0)
        hits += votes >= 2 and said == value
    assert accuracy(judge, human) == pytest.approx(hits / len(test), abs=1e-12)
    if not is_slice(root):
        assert round(accuracy(judge, human), 4) == published


def _pandalm_copy(pandalm: Path, tmp_path: Path, n: int = 4) -> tuple[list, list, list]:
    test, gpt, panda = _pandalm_raw(pandalm)
    return test[:n], gpt[:n], panda[:n]


def _write_pandalm(tmp_path: Path, test: list, gpt: list, panda: list | None) -> None:
    _write_array(tmp_path / "data" / "testset-v1.json", test)
    _write_array(tmp_path / "data" / "gpt-3.5-turbo-testset-v1.json", gpt)
    if panda is not None:
        _write_array(tmp_path / "data" / "pandalm-7b-testset-v1.json", panda)


def test_pandalm_without_a_judge_file(data_dir, tmp_path: Path) -> None:
    test, gpt, _ = _pandalm_copy(data_dir("pandalm"), tmp_path)
    _write_pandalm(tmp_path, test, gpt, None)
    result = import_pandalm(tmp_path)
    assert "judge:pandalm-7b" not in result.sources()
    assert result.sources()["judge:gpt-3.5"] == 4


@pytest.mark.parametrize(
    ("where", "edit", "match"),
    [
        (
            "test",
            lambda r: r.update(annotator2=5),
            r'testset-v1\.json:4: "annotator2" must be 1, 2 or 0 \(tie\), got 5',
        ),
        ("test", lambda r: r.pop("response2"), r'testset-v1\.json:4: missing field "response2"'),
        ("test", lambda r: r.update(idx="two"), r'testset-v1\.json:4: "idx" must be an integer'),
        (
            "gpt",
            lambda r: r.update(idx=12345),
            r"gpt-3\.5-turbo-testset-v1\.json:4: idx 12345 is not in testset-v1\.json",
        ),
        (
            "gpt",
            lambda r: r.pop("gpt_result"),
            r'gpt-3\.5-turbo-testset-v1\.json:4: missing field "gpt_result"',
        ),
    ],
    ids=[
        "unknown-annotator-value",
        "missing-response",
        "bad-idx",
        "unjoined-idx",
        "missing-verdict",
    ],
)
def test_pandalm_bad_row_raises_with_file_and_line(
    where: str, edit: Any, match: str, data_dir, tmp_path: Path
) -> None:
    test, gpt, panda = _pandalm_copy(data_dir("pandalm"), tmp_path)
    edit((test if where == "test" else gpt)[2])
    _write_pandalm(tmp_path, test, gpt, panda)
    with pytest.raises(DataError, match=match):
        import_pandalm(tmp_path)


def test_pandalm_malformed_json_and_missing_test_set(data_dir, tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"testset-v1\.json: missing"):
        import_pandalm(tmp_path)
    test, gpt, panda = _pandalm_copy(data_dir("pandalm"), tmp_path)
    _write_pandalm(tmp_path, test, gpt, panda)
    path = tmp_path / "data" / "testset-v1.json"
    path.write_text(
        path.read_text(encoding="utf-8").replace('"idx": 1,', '"idx": 1', 1), encoding="utf-8"
    )
    with pytest.raises(DataError, match=r"testset-v1\.json:3: malformed JSON"):
        import_pandalm(tmp_path)


def test_pandalm_unknown_judge_verdict_is_unscored_not_an_error(data_dir, tmp_path: Path) -> None:
    test, gpt, panda = _pandalm_copy(data_dir("pandalm"), tmp_path)
    gpt[1]["gpt_result"] = "Response 1 is better"
    _write_pandalm(tmp_path, test, gpt, panda)
    lab = _by_source(import_pandalm(tmp_path).labels)["judge:gpt-3.5"][f"pandalm:{gpt[1]['idx']}"]
    assert lab.status == "unscored" and lab.label is None
    assert lab.raw == "Response 1 is better" and "not a verdict" in (lab.reason or "")


def test_pandalm_skip_bad_drops_the_row_and_its_judge_labels(data_dir, tmp_path: Path) -> None:
    test, gpt, panda = _pandalm_copy(data_dir("pandalm"), tmp_path)
    test[1]["annotator3"] = None
    gpt[3]["idx"] = 777
    _write_pandalm(tmp_path, test, gpt, panda)
    result = import_pandalm(tmp_path, skip_bad=True)
    kept = [r["idx"] for k, r in enumerate(test) if k != 1]
    assert [i.id for i in result.items] == [f"pandalm:{k}" for k in kept]
    assert result.sources()["judge:gpt-3.5"] == 2  # idx 1 dropped with its row, 777 unknown
    assert result.sources()["judge:pandalm-7b"] == 3
    assert [(Path(e.path).name, e.line) for e in result.bad] == [
        ("testset-v1.json", 3),
        ("gpt-3.5-turbo-testset-v1.json", 5),
    ]
