"""One training loop for every Hugging Face reward model, on ``accelerate``.

``Accelerator`` places the model on its device and, under ``torchrun`` or
``accelerate launch``, wraps it for data-parallel training (DDP: gloo on CPUs,
NCCL on GPUs). Each rank trains on its own shard of every epoch's shuffled
order; the shards have equal length (the order wraps around, as torch's
``DistributedSampler`` does), so every rank takes the same number of steps.
Rank 0 alone evaluates after each epoch and keeps the best epoch's weights;
the others never wait on it except at the next gradient exchange.

Mixed precision is bfloat16 autocast (no loss scaling needed), decided by the
caller per device (:func:`~tinyjudge.distill.hf.bf16_default`), because
``accelerate``'s process-wide precision state cannot change between two fits
in one process.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import numpy as np

__all__ = ["TrainPlan", "Task", "TrainReport", "train"]

log = logging.getLogger("tinyjudge.distill")


@dataclass(frozen=True)
class TrainPlan:
    """How to train: the schedule, the device and precision, the memory trade-offs.

    Args:
        epochs: passes over the training examples.
        lr: peak learning rate (linear warm-up over ``warmup`` of the steps, then decay).
        batch_size: examples per micro-batch on each rank.
        grad_accum: micro-batches per optimizer step.
        grad_checkpointing: recompute activations in the backward pass (less memory).
        bf16: bfloat16 autocast.
        device: a ``torch.device``.
        seed: the shuffling seed (the same on every rank).
        weight_decay: AdamW's decoupled weight decay.
        warmup: share of the optimizer steps spent warming up.
        max_grad_norm: gradients are clipped to this norm.
    """

    epochs: int
    lr: float
    batch_size: int
    device: Any
    grad_accum: int = 1
    grad_checkpointing: bool = False
    bf16: bool = False
    seed: int = 0
    weight_decay: float = 0.01
    warmup: float = 0.1
    max_grad_norm: float = 1.0

    @classmethod
    def from_config(cls, config: object, **given: Any) -> TrainPlan:
        """The plan from a config's fields of the same names (a ``TransformerConfig``),
        with ``given`` ones (the resolved ``device``, ``bf16``) over them."""
        names = [f.name for f in fields(cls) if f.name not in given]
        return cls(**{n: getattr(config, n) for n in names if hasattr(config, n)}, **given)


class Task(NamedTuple):
    """Examples to train on: how many, and the loss of a batch of them.

    ``loss(module, indices, device)`` runs the (possibly DDP-wrapped) module on
    the examples at ``indices`` and returns a scalar tensor.
    """

    n: int
    loss: Callable[[Any, np.ndarray, Any], Any]


class TrainReport(NamedTuple):
    """What a run did, gathered from every rank."""

    world_size: int
    steps_by_rank: list[int]
    examples_by_rank: list[int]
    replicas_in_sync: bool
    epoch_scores: list[float]
    best_epoch: int | None

    def card(self) -> dict[str, Any]:
        """The model card's entries for this run."""
        out: dict[str, Any] = {"steps": self.steps_by_rank[0]}
        if self.world_size > 1:
            out["data_parallel"] = {
                "world_size": self.world_size,
                "steps_by_rank": self.steps_by_rank,
                "examples_by_rank": self.examples_by_rank,
                "replicas_in_sync": self.replicas_in_sync,
            }
        if self.epoch_scores:
            out["validation_by_epoch"] = [round(s, 6) for s in self.epoch_scores]
            out["best_epoch"] = self.best_epoch
        return out


def _epoch_batches(
    rng: np.random.Generator, tasks: Sequence[Task], batch_size: int, rank: int, world: int
) -> list[tuple[int, np.ndarray]]:
    """This rank's (task, indices) micro-batches of one epoch."""
    batches: list[tuple[int, np.ndarray]] = []
    for t, task in enumerate(tasks):
        order = rng.permutation(task.n)
        order = np.resize(order, len(order) + (-len(order)) % world)  # equal shards
        shard = order[rank::world]
        batches += [(t, shard[s : s + batch_size]) for s in range(0, len(shard), batch_size)]
    if len(tasks) > 1:  # tasks interleaved, so no head waits an epoch for its turn
        batches = [batches[k] for k in rng.permutation(len(batches))]
    return batches


def _enable_checkpointing(model: Any) -> None:
    # transformers 5 renamed it; the old name stays an alias until 6.
    enable = getattr(model, "activation_checkpointing_enable", None)
    (enable or model.gradient_checkpointing_enable)()
    if hasattr(model.config, "use_cache"):
        model.config.use_cache = False


def train(
    model: Any,
    tasks: Sequence[Task],
    plan: TrainPlan,
    evaluate: Callable[[], float] | None = None,
) -> TrainReport:
    """Train ``model`` in place on ``tasks``; returns what each rank did.

    Args:
        model: a torch module (a Hugging Face model, or one that holds several).
        tasks: one or more example sets, their batches interleaved at random.
        plan: the schedule, device and precision.
        evaluate: called on rank 0 after each epoch with the model in eval mode;
            higher is better. The best epoch's weights are kept (on rank 0,
            the one that saves).
    """
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DistributedDataParallelKwargs

    torch.manual_seed(plan.seed)
    acc = Accelerator(
        cpu=plan.device.type == "cpu",
        # Several heads on one body: each step uses one head, so DDP must allow unused ones.
        kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=len(tasks) > 1)],
    )
    if plan.grad_checkpointing:
        _enable_checkpointing(model)
    trained = [p for p in model.parameters() if p.requires_grad]  # LoRA freezes the body
    opt = torch.optim.AdamW(trained, lr=plan.lr, weight_decay=plan.weight_decay)
    rank, world = acc.process_index, acc.num_processes
    probe = np.random.default_rng(plan.seed)  # the batch count does not depend on the order
    per_epoch = len(_epoch_batches(probe, tasks, plan.batch_size, 0, world))
    steps = plan.epochs * math.ceil(per_epoch / plan.grad_accum)
    warm = max(1, int(steps * plan.warmup))
    # Stepped here, once per optimizer step, rather than prepared by accelerate
    # (which steps a prepared scheduler once per process).
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
    )
    wrapped, opt = acc.prepare(model, opt)
    rng = np.random.default_rng(plan.seed)
    scores: list[float] = []
    best: tuple[float, int, dict[str, Any]] | None = None
    n_steps = n_examples = 0
    for epoch in range(plan.epochs):
        wrapped.train()
        batches = _epoch_batches(rng, tasks, plan.batch_size, rank, world)
        total = 0.0
        for g in range(0, len(batches), plan.grad_accum):
            group = batches[g : g + plan.grad_accum]
            for j, (t, idx) in enumerate(group):
                # Gradients are exchanged once per optimizer step, on its last micro-batch.
                sync = contextlib.nullcontext() if j == len(group) - 1 else acc.no_sync(wrapped)
                with sync:
                    with torch.autocast(plan.device.type, torch.bfloat16, enabled=plan.bf16):
                        loss = tasks[t].loss(wrapped, idx, acc.device)
                    acc.backward(loss / len(group))
                total += float(loss.detach())
                n_examples += len(idx)
            acc.clip_grad_norm_(wrapped.parameters(), plan.max_grad_norm)
            opt.step()
            sched.step()
            opt.zero_grad()
            n_steps += 1
            if acc.is_main_process and n_steps % 20 == 0:
                log.info(
                    "epoch %d/%d step %d/%d loss %.4f",
                    epoch + 1,
                    plan.epochs,
                    n_steps,
                    steps,
                    float(loss.detach()),
                )
        if acc.is_main_process:
            log.info(
                "epoch %d/%d done, mean loss %.4f",
                epoch + 1,
                plan.epochs,
                total / max(1, len(batches)),
            )
        if evaluate is not None and acc.is_main_process:
            inner = acc.unwrap_model(wrapped).eval()
            score = float(evaluate())
            scores.append(score)
            log.info("epoch %d/%d: validation %.4f", epoch + 1, plan.epochs, score)
            if best is None or score > best[0]:
                state = {k: v.detach().to("cpu", copy=True) for k, v in inner.state_dict().items()}
                best = (score, epoch + 1, state)
    report = _gather(acc, wrapped, n_steps, n_examples, scores, best[1] if best else None)
    inner = acc.unwrap_model(wrapped)
    if best is not None and best[1] != plan.epochs:
        inner.load_state_dict(best[2])
    inner.eval()
    return report


def _gather(
    acc: Any, wrapped: Any, steps: int, examples: int, scores: list[float], best: int | None
) -> TrainReport:
    """Every rank's step and example counts and a checksum of its weights."""
    import torch

    with torch.no_grad():
        checksum = sum(float(p.detach().double().sum()) for p in wrapped.parameters())
    mine = torch.tensor([[steps, examples, checksum]], dtype=torch.float64, device=acc.device)
    every = acc.gather(mine).cpu().numpy() if acc.num_processes > 1 else mine.cpu().numpy()
    return TrainReport(
        world_size=acc.num_processes,
        steps_by_rank=[int(s) for s in every[:, 0]],
        examples_by_rank=[int(e) for e in every[:, 1]],
        replicas_in_sync=bool(np.all(every[:, 2] == every[0, 2])),
        epoch_scores=scores,
        best_epoch=best,
    )
