"""Turn of flip per dialogue, checked against SYCON-Bench's own published per-row values."""

from __future__ import annotations

import math
import re
from functools import partial

import pytest
from support import is_slice, make_item, make_label

from tinyjudge.audit.flips import compare_flips, dialogue_flips, turns_held
from tinyjudge.datasets.importers.sycon import import_sycon
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item


@pytest.mark.parametrize(
    ("seq", "held"),
    [
        (["caves", "holds"], 0),
        (["holds", "holds", "caves"], 2),
        (["holds"] * 5, 5),
        (["holds", None, "caves"], None),
        (["caves", None], 0),
    ],
    ids=["first-turn", "third-turn", "never", "unknown-before-flip", "unknown-after-flip"],
)
def test_turns_held(seq: list[str | None], held: int | None) -> None:
    assert turns_held(seq) == held


def test_gpt4o_flips_match_sycon_results_files(data_dir) -> None:
    sycon = data_dir("sycon")
    questions = 10 if is_slice(sycon) else 200  # the slice: the first 10 questions
    result = import_sycon(sycon)
    flips = dialogue_flips(result.items, result.labels, "judge:gpt-4o")
    assert len(flips) == 4 * questions
    root = sycon / "false-presuppositions-setting" / "results"
    for model_dir in sorted(root.iterdir()):
        text = (model_dir / "prompt0_results.txt").read_text(encoding="utf-8")
        published = {
            int(m.group(1)): int(m.group(2))
            for m in re.finditer(r"Row (\d+): Turn of Flip: (\d+)", text)
        }
        assert len(published) == questions
        ours = {q: flips[f"sycon:{model_dir.name}:q{q}"] for q in published}
        assert ours == published, model_dir.name


def _item(d: str, turn: int) -> Item:
    return make_item(item_id=f"{d}:t{turn}", metadata={"dialogue_id": d, "turn": turn})


_lab = partial(make_label, rubric="pushback_under_pressure")  # item, source, value or None


def test_compare_flips_hand_checked() -> None:
    items = [_item(d, t) for d in ("d1", "d2", "d3") for t in (1, 2, 3)]
    a = {"d1": ["holds", "caves", "caves"], "d2": ["holds"] * 3, "d3": ["caves"] * 3}
    b = {"d1": ["holds", "caves", "caves"], "d2": ["holds", "holds", "caves"], "d3": [None] * 3}
    labels = [
        _lab(f"{d}:t{t}", src, seq[t - 1])
        for src, seqs in (("judge:a", a), ("rm:b", b))
        for d, seq in seqs.items()
        for t in (1, 2, 3)
    ]
    fa = dialogue_flips(items, labels, "judge:a")
    fb = dialogue_flips(items, labels, "rm:b")
    assert fa == {"d1": 1, "d2": 3, "d3": 0}
    assert fb == {"d1": 1, "d2": 2, "d3": None}
    cmp = compare_flips(fa, fb)
    assert (cmp.n, cmp.n_unknown) == (2, 1)
    assert cmp.exact == 0.5 and cmp.mean_abs_diff == 0.5
    assert (cmp.mean_a, cmp.mean_b) == (2.0, 1.5)
    empty = compare_flips({"d3": 0}, {"d3": None})
    assert empty.n == 0 and math.isnan(empty.exact) and empty.as_dict()["exact"] is None


def test_dialogue_flips_needs_dialogue_and_turn() -> None:
    bare = make_item()
    with pytest.raises(TinyjudgeError, match="item 'x' has no metadata.dialogue_id"):
        dialogue_flips([bare], [], "judge:a")
    with pytest.raises(TinyjudgeError, match="'d1:t1' and 'd1:t1' are both turn 1"):
        dialogue_flips([_item("d1", 1), _item("d1", 1)], [], "judge:a")
