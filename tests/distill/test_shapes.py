"""Inference batches padded to bucketed shapes: the shapes, and scores that do not move."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tinyjudge.distill import TrainingSet
from tinyjudge.distill._shapes import bucket_width, padded_batch


def test_shapes_are_rounded_up_and_rows_kept() -> None:
    rows = [[101, 7, 8, 102], [101, 9, 102], [101] + [5] * 40 + [102]]
    types = [[0, 0, 1, 1], [0, 0, 1], [0] * 42]
    b = padded_batch(rows, pad=0, types=types)
    assert b["input_ids"].shape == (4, 48)  # 42 tokens -> 48, 3 rows -> 4
    for i, r in enumerate(rows):
        assert b["input_ids"][i, : len(r)].tolist() == r
        assert b["input_ids"][i, len(r) :].tolist() == [0] * (48 - len(r))
        assert b["attention_mask"][i].sum() == len(r)
        assert b["token_type_ids"][i, : len(r)].tolist() == types[i]
    # Filler rows repeat the first one (a fully masked row could give NaNs).
    for i in range(len(rows), 4):
        np.testing.assert_array_equal(b["input_ids"][i], b["input_ids"][0])
        np.testing.assert_array_equal(b["attention_mask"][i], b["attention_mask"][0])
    assert "token_type_ids" not in padded_batch(rows, pad=0)


def test_rounding_stops_at_the_position_limit_and_never_cuts_a_row() -> None:
    assert padded_batch([[1] * 500], pad=0, max_width=512)["input_ids"].shape == (1, 512)
    assert padded_batch([[1] * 510], pad=0, max_width=512)["input_ids"].shape == (1, 512)
    assert padded_batch([[1] * 60], pad=0, max_width=512)["input_ids"].shape == (1, 64)
    assert padded_batch([[1] * 600], pad=0, max_width=512)["input_ids"].shape == (1, 600)


@pytest.mark.parametrize(
    ("n", "rows"), [(1, 1), (2, 2), (3, 4), (5, 8), (8, 8), (9, 16), (17, 24), (32, 32), (33, 40)]
)
def test_row_counts_are_bucketed(n: int, rows: int) -> None:
    assert padded_batch([[1, 2]] * n, pad=0)["input_ids"].shape == (rows, 8)


def test_widths_cost_under_a_quarter_and_stay_few() -> None:
    widths = {bucket_width(n) for n in range(1, 513)}
    assert all(n <= bucket_width(n) < n * 1.25 + 8 for n in range(1, 513))
    assert [bucket_width(n) for n in (1, 8, 9, 42, 64, 65, 100, 129, 256, 300)] == [
        8,
        8,
        16,
        48,
        64,
        80,
        112,
        160,
        256,
        320,
    ]
    assert len(widths) == 20  # 8 up to 64, then 4 per doubling


def test_padding_does_not_change_encoder_scores(tiny_bert: Path, small: TrainingSet) -> None:
    """Items scored one per forward pass (few pads) and all together (many) agree in fp32."""
    from tinyjudge.distill import make_model

    model = make_model(
        "encoder", "compliance", base=str(tiny_bert), epochs=1, max_length=64, precision="fp32"
    ).fit(small.items[:40], small.y_hard[:40])
    items = small.items[40:53]
    together = model.predict_proba(items)
    alone = np.vstack([model.predict_proba([it]) for it in items])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    assert not np.allclose(together, together[0])  # a real model: scores differ by item


def test_padding_does_not_change_embeddings(tiny_bert: Path, small: TrainingSet, tmp_path) -> None:
    from tinyjudge.distill._embed import FrozenEncoder

    texts = [it.messages[-1].text for it in small.items[:13]]
    together = FrozenEncoder(str(tiny_bert), 64, bf16=False, cache_dir=tmp_path / "a").embed(texts)
    one = FrozenEncoder(str(tiny_bert), 64, bf16=False, cache_dir=tmp_path / "b")
    alone = np.vstack([one.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
