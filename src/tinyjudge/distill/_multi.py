"""Several rubrics on one shared encoder: one classification head per rubric.

Training alternates batches between rubrics, so one forward pass of the shared
encoder serves them all at scoring time. The result is split into one
:class:`EncoderRM` per rubric, each a plain Hugging Face model directory when
saved (the shared encoder weights are copied into each).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item
from tinyjudge.rubric import Rubric, load_rubric

from ._base import class_balance
from ._encoder import EncoderRM, _pad, encode_views, soft_ce

__all__ = ["fit_multi_rubric"]


def fit_multi_rubric(
    tasks: dict[str, tuple[Sequence[Item], Sequence[str] | np.ndarray]],
    rubrics: dict[str, Rubric | str] | None = None,
    **params: Any,
) -> dict[str, EncoderRM]:
    """Fine-tune one encoder with one head per rubric; return a model per rubric.

    Args:
        tasks: rubric id -> (items, labels or soft targets) for that rubric.
        rubrics: rubric id -> Rubric or path, when not a built-in rubric name.
        **params: :class:`EncoderRM` options (``base``, ``max_length``, ``epochs``, ...).

    Raises:
        TinyjudgeError: fewer than two rubrics, or a pairwise rubric (pairs use
            their own scalar head; train them with :class:`EncoderRM`).
    """
    import torch

    if len(tasks) < 2:
        raise TinyjudgeError(f"fit_multi_rubric needs at least 2 rubrics, got {sorted(tasks)}")
    models = {rid: EncoderRM(load_rubric((rubrics or {}).get(rid, rid)), **params) for rid in tasks}
    for rid, m in models.items():
        if m.pairwise:
            raise TinyjudgeError(f"rubric {rid!r} is pairwise; train pairs with EncoderRM")
    first = next(iter(models.values()))
    torch.manual_seed(first.seed)
    data = {}
    for rid, (items, y) in tasks.items():
        items = list(items)
        Y = models[rid]._targets(items, y)
        enc = encode_views(_tokenizer(first), models[rid].views_of(items), first.max_length)
        data[rid] = (enc, torch.tensor(Y), torch.tensor(class_balance(Y)), Y, items)
    # The shared body is the first rubric's sequence classifier; the others add heads.
    first._fit_setup(torch)
    shared = first.model_
    heads = torch.nn.ModuleDict(
        {
            rid: shared.classifier
            if m is first
            else torch.nn.Linear(shared.config.hidden_size, len(m.rubric.label_names))
            for rid, m in models.items()
        }
    )
    params_all = list(shared.parameters()) + [
        p for rid, h in heads.items() if models[rid] is not first for p in h.parameters()
    ]
    opt = torch.optim.AdamW(params_all, lr=first.lr, weight_decay=0.01)
    rng = np.random.default_rng(first.seed)
    pad = _tokenizer(first).pad_token_id or 0
    shared.train()
    for _ in range(first.epochs):
        batches = [
            (rid, order[s : s + first.batch_size])
            for rid, d in data.items()
            for order in [rng.permutation(len(d[4]))]
            for s in range(0, len(order), first.batch_size)
        ]
        for k in rng.permutation(len(batches)):
            rid, idx = batches[k]
            enc, T, W, _, _ = data[rid]
            rows = [enc.ids[i] for i in idx]
            pooled = shared.base_model(
                input_ids=_pad(rows, torch, pad),
                token_type_ids=_pad([enc.types[i] for i in idx], torch),
                attention_mask=_pad([[1] * len(r) for r in rows], torch),
            ).pooler_output
            loss = soft_ce(heads[rid](shared.dropout(pooled)), T[idx], W[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    shared.eval()
    out: dict[str, EncoderRM] = {}
    for rid, m in models.items():
        names = m.rubric.label_names
        body = shared if m is first else copy.deepcopy(shared)
        if m is not first:
            body.classifier = heads[rid]
            body.num_labels = len(names)
            body.config.num_labels = len(names)
            body.config.id2label = dict(enumerate(names))
            body.config.label2id = {n: i for i, n in enumerate(names)}
        m.model_, m.tokenizer_ = body, _tokenizer(first)
        m.classes_ = list(names)
        enc, _, _, Y, items = data[rid]
        m.tokens_dropped_ = enc.dropped
        from ._data import data_hash

        m.card_ = {
            "data_hash": data_hash(items, Y),
            "n_train": len(items),
            "shared_encoder_with": sorted(r for r in models if r != rid),
            "tokens_dropped_at_max_length": int(enc.dropped),
            "steps_per_epoch": sum(math.ceil(len(d[4]) / first.batch_size) for d in data.values()),
        }
        out[rid] = m
    return out


def _tokenizer(model: EncoderRM) -> Any:
    if getattr(model, "tokenizer_", None) is None:
        from transformers import AutoTokenizer

        from ._embed import resolve_encoder

        model.tokenizer_ = AutoTokenizer.from_pretrained(resolve_encoder(model.base))
    return model.tokenizer_
