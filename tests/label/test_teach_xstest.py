"""``--select teach`` on real data: does it ask people where they overturn the judge?

The bundled XSTest sample: GPT-4's labels on every reply, people's (``human:final``) on the
replies of 20 prompts drawn at random (100 labels), a reward model distilled from both
(``distill --human human:final --human-method weighted``, the linear tier), and the page's
order over the other 400 replies. The figure is the AUC of that order at finding the replies
whose people's label differs from GPT-4's (about one in five), over five fixed draws.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from support import make_label

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import LinearRM
from tinyjudge.distill._people import fit_with_people, people_targets
from tinyjudge.label.select import Selector, cheap_scores, teach_values
from tinyjudge.rubric import load_rubric

JUDGE, HUMAN = "judge:gpt-4", "human:final"
DRAWS, PROMPTS = 5, 20


def _aucs(data, draw: int) -> dict[str, float]:
    rubric = load_rubric("compliance")
    items, names = data.items, rubric.label_names
    prompts = sorted({it.metadata["prompt_id"] for it in items})
    asked = set(np.random.default_rng(draw).permutation(prompts)[:PROMPTS])
    labelled = {it.id for it in items if it.metadata["prompt_id"] in asked}
    judge = [lab for lab in data.labels if lab.source == JUDGE]
    people = [lab for lab in data.labels if lab.source == HUMAN and lab.item_id in labelled]
    pt = people_targets(items, judge + people, JUDGE, HUMAN, rubric, "weighted")
    model = fit_with_people(LinearRM(rubric), pt)
    pool = [it for it in items if it.id not in labelled]
    ids = [it.id for it in pool]
    P = model.predict_proba(pool)
    rm = [
        make_label(
            i,
            "rm:both",
            names[int(p.argmax())],
            rubric=rubric.id,
            probs=dict(zip(names, p, strict=True)),
        )
        for i, p in zip(ids, P, strict=True)
    ]
    said = {lab.item_id: lab.label for lab in judge}
    truth = {lab.item_id: lab.label for lab in data.labels if lab.source == HUMAN}
    overturned = np.array([truth[i] != said[i] for i in ids])
    # before: the model's doubt of the judge's label (what teach was; what it is before
    # anyone has labelled); now: with the judge's confusion against the 100 people's labels
    before = teach_values(judge + rm, rubric, ids)[2]
    np.testing.assert_allclose(
        before, 1 - P[np.arange(len(ids)), [names.index(said[i]) for i in ids]]
    )
    now = teach_values(judge + rm + people, rubric, ids)[2]
    # the default order (active, stratified on the judge's score): earlier is higher
    sel = Selector(ids, "active", cheap_scores(judge, rubric, ids)[1])
    done: list[str] = []
    while (nxt := sel.next_item(set(done))) is not None:
        done.append(nxt[0])
    position = {i: k for k, i in enumerate(done)}
    return {
        "active": roc_auc_score(overturned, [-position[i] for i in ids]),
        "teach before": roc_auc_score(overturned, before),
        "teach": roc_auc_score(overturned, now),
    }


@pytest.mark.slow  # five fits and five active drains: about 15 s on 2 loaded cores
def test_teach_finds_where_people_overturn_the_judge(xstest_sample: Path) -> None:
    data = run_import("xstest", xstest_sample)
    runs = [_aucs(data, draw) for draw in range(DRAWS)]
    mean = {way: float(np.mean([r[way] for r in runs])) for way in runs[0]}
    print({way: round(v, 3) for way, v in mean.items()}, [round(r["teach"], 3) for r in runs])
    assert mean["teach"] > mean["teach before"] > mean["active"] + 0.2


def test_teach_follows_the_card_of_a_model_fitted_on_people(
    xstest_sample: Path, tmp_path: Path
) -> None:
    """A real model (``weighted``, 20 prompts of people's labels) scored into the labels file:
    its card's method, copied beside the file as ``score`` does, keeps the confusion order;
    the same record saying ``stack`` (what ``auto`` may choose) gives the doubt alone."""
    import json

    from tinyjudge._people_items import learned_from_model_dir, write_sidecar
    from tinyjudge.datasets.jsonl import write_jsonl
    from tinyjudge.label import open_session

    data = run_import("xstest", xstest_sample)
    rubric = load_rubric("compliance")
    prompts = sorted({it.metadata["prompt_id"] for it in data.items})
    asked = set(np.random.default_rng(0).permutation(prompts)[:PROMPTS])
    labelled = {it.id for it in data.items if it.metadata["prompt_id"] in asked}
    judge = [lab for lab in data.labels if lab.source == JUDGE]
    people = [lab for lab in data.labels if lab.source == HUMAN and lab.item_id in labelled]
    pt = people_targets(data.items, judge + people, JUDGE, HUMAN, rubric, "weighted")
    model = fit_with_people(LinearRM(rubric), pt)
    model.save(tmp_path / "rm")
    labels = tmp_path / "labels.jsonl"
    rm = model.score_items(data.items)
    write_jsonl(labels, [*judge, *people, *rm])
    write_jsonl(tmp_path / "items.jsonl", data.items)
    ids = [it.id for it in data.items]
    doubt = teach_values(judge + rm, rubric, ids)[2]
    confused = teach_values(judge + rm + people, rubric, ids)[2]
    orders = {}
    for method in ("weighted", "stack"):
        learned = learned_from_model_dir(tmp_path / "rm", calibrated=False)
        if method == "stack":  # the card as auto writes it when it stacks the judge's logits
            meta = json.loads((tmp_path / "rm" / "tinyjudge.json").read_text())
            meta["card"] |= {"human_method": "auto", "combination": {"chosen": "stack"}}
            (tmp_path / "rm" / "tinyjudge.json").write_text(json.dumps(meta))
            learned = learned_from_model_dir(tmp_path / "rm", calibrated=False)
        assert learned.people_method == method
        write_sidecar(labels, learned)
        s = open_session(tmp_path / "items.jsonl", rubric, labels, f"r{method}", "teach")
        orders[method], note = s.selector.teach, s.note
        s.store.close()
        assert (note is not None) == (method == "stack")
    np.testing.assert_allclose(orders["weighted"], confused)
    np.testing.assert_allclose(orders["stack"], doubt)
    assert not np.allclose(doubt, confused)
