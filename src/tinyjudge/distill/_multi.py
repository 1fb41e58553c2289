"""Several rubrics on one shared body: one classification head per rubric.

Each rubric gets its own sequence classifier (so its own head, of its own
width), and all of them hold the same body module: one trainer
(:func:`tinyjudge.distill.hf.train`) interleaves their batches at random. The
result is one :class:`TransformerRM` per rubric, each a plain Hugging Face
model directory when saved (the shared body's weights are written into each).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tinyjudge.errors import UsageError
from tinyjudge.records import Item
from tinyjudge.rubric import Rubric, load_rubric

from ._data import data_hash
from ._transformer import TransformerRM
from .hf import Task, train

__all__ = ["fit_multi_rubric"]


def _heads(models: dict[str, Any]) -> Any:
    """One module over every rubric's classifier: ``forward(rubric, **inputs)``."""
    import torch

    class Heads(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # Keyed by position: a rubric id may hold characters a module name cannot.
            self.by_rubric = torch.nn.ModuleList(models.values())
            self.index = {rid: k for k, rid in enumerate(models)}

        def forward(self, rubric: str, **inputs: Any) -> Any:
            return self.by_rubric[self.index[rubric]](**inputs)

    return Heads()


def _routed(rid: str, loss: Any) -> Any:
    """``loss`` of one rubric's classifier, run through the module over all of them."""

    def rubric_loss(module: Any, idx: np.ndarray, device: Any) -> Any:
        return loss(lambda **inputs: module(rid, **inputs), idx, device)

    return rubric_loss


def fit_multi_rubric(
    tasks: dict[str, tuple[Sequence[Item], Sequence[str] | np.ndarray]],
    rubrics: dict[str, Rubric | str] | None = None,
    **params: Any,
) -> dict[str, TransformerRM]:
    """Fine-tune one body with one head per rubric; return a model per rubric.

    Args:
        tasks: rubric id -> (items, labels or soft targets) for that rubric.
        rubrics: rubric id -> Rubric or path, when not a built-in rubric name.
        **params: :class:`TransformerConfig` options (``base``, ``max_length``, ``epochs``, ...).

    Raises:
        TinyjudgeError: fewer than two rubrics, or a pairwise rubric (pairs use
            their own scalar head; train them with :class:`TransformerRM`).
    """
    if len(tasks) < 2:
        raise UsageError(
            f"fit_multi_rubric needs at least 2 rubrics, got {sorted(tasks)}", param="tasks"
        )
    models = {
        rid: TransformerRM(load_rubric((rubrics or {}).get(rid, rid)), **params) for rid in tasks
    }
    for rid, m in models.items():
        if m.pairwise:
            raise UsageError(
                f"rubric {rid!r} is pairwise; train pairs with TransformerRM", param="rubrics"
            )
    import torch

    first = next(iter(models.values()))
    torch.manual_seed(first.config.seed)
    for m in models.values():
        m.setup_model()
    # Every classifier holds the first one's body: base_model_prefix names it (``bert``,
    # ``model``) in every Hugging Face architecture.
    prefix = first.model_.base_model_prefix
    for m in models.values():
        setattr(m.model_, prefix, getattr(first.model_, prefix))
        m.tokenizer_, m.codec_ = first.tokenizer_, first.codec_
    train_tasks, targets = [], {}
    for rid, (items, y) in tasks.items():
        m = models[rid]
        items = list(items)
        m.classes_ = list(m.rubric.label_names)
        Y = m._targets(items, y)
        enc, loss = m.class_task(items, Y, np.ones(len(items)))
        m.tokens_dropped_ = enc.dropped
        targets[rid] = (items, Y)

        train_tasks.append(Task(len(items), _routed(rid, loss)))
    heads = _heads({rid: m.model_ for rid, m in models.items()})
    report = train(heads, train_tasks, first.train_plan())
    for rid, m in models.items():
        items, Y = targets[rid]
        m.train_report_ = report
        m.card_ = {
            "data_hash": data_hash(items, Y),
            "n_train": len(items),
            "shared_encoder_with": sorted(r for r in models if r != rid),
            "tokens_dropped_at_max_length": int(m.tokens_dropped_),
            "max_length": m.config.max_length,
            **report.card(),
        }
    return dict(models)
