"""Scale-out on Ray Data: score (or judge) items across a cluster's CPUs.

Each actor loads one copy of the model once and scores batches with
``map_batches``; rows travel as JSON strings so any item shape fits one schema.
Install with the ``ray`` extra. On a real cluster, start Ray on every node
(``ray start --head`` on one, ``ray start --address HEAD:6379`` on the others),
make the model directory readable at the same path on every node (shared disk
or object store mount), and pass ``address="auto"`` or the head's address.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tinyjudge._memory import trimming
from tinyjudge.errors import UsageError
from tinyjudge.records import Item, Label

if TYPE_CHECKING:
    import ray.data

__all__ = [
    "score_dataset",
    "score_items_on_ray",
    "score_file_on_ray",
    "judge_dataset",
    "items_to_ray",
    "labels_from_ray",
    "init_ray",
]


def init_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Connect to a Ray cluster (``address``) or start a local one (None or ``"local"``)."""
    try:
        import ray
    except ImportError:
        raise UsageError(
            "Ray is not installed; pip install 'tinyjudge[ray]' (or 'ray[data]')"
        ) from None

    if ray.is_initialized():
        return
    if address and address != "local":
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)


def items_to_ray(items: Sequence[Item]) -> ray.data.Dataset:
    """A Ray Dataset with one ``item`` column of JSON strings."""
    import ray.data

    rows = [
        {"index": i, "item": it.model_dump_json(exclude_none=True)} for i, it in enumerate(items)
    ]
    return ray.data.from_items(rows)


def labels_from_ray(ds: ray.data.Dataset) -> list[Label]:
    """Collect the ``label`` column written by :func:`score_dataset`, in input order.

    Blocks can finish out of order on a cluster, so rows are put back in order
    by the ``index`` column that :func:`items_to_ray` adds.
    """
    rows = sorted(ds.iter_rows(), key=lambda row: int(row["index"]))
    return [Label.model_validate_json(row["label"]) for row in rows]


class _ScoreActor:
    """One model per actor, loaded once; scores a batch of JSON items."""

    def __init__(self, model_dir: str, calibrated: bool = True) -> None:
        from tinyjudge.distill import load_model

        self.model = load_model(model_dir, calibrated=calibrated)
        self.score = trimming(self.model.score_items)  # a long-lived actor: keep memory level

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        items = [Item.model_validate(json.loads(s)) for s in batch["item"]]
        labels = self.score(items)
        out = [lab.model_dump_json(exclude_none=True) for lab in labels]
        return {
            "index": np.asarray(batch["index"]),
            "item_id": np.array([it.id for it in items]),
            "label": np.array(out, dtype=object),
        }


def score_dataset(
    ds: ray.data.Dataset,
    model_dir: str | os.PathLike[str],
    actors: int = 2,
    batch_size: int = 64,
    calibrated: bool = True,
) -> ray.data.Dataset:
    """Score a Ray Dataset of items (columns ``index`` and ``item``, JSON) with an actor pool.

    Args:
        ds: rows with an ``item`` column, e.g. from :func:`items_to_ray`.
        model_dir: a model directory from ``tinyjudge distill``, readable by every node.
        actors: actors in the pool (one model copy each).
        batch_size: items per ``map_batches`` call.
        calibrated: apply the directory's calibrator, if any.

    Returns:
        A lazy dataset with ``index``, ``item_id`` and ``label`` (JSON) columns.
    """
    import ray.data

    return ds.map_batches(
        _ScoreActor,
        fn_constructor_kwargs={
            "model_dir": str(Path(model_dir).resolve()),
            "calibrated": calibrated,
        },
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=1,
    )


def score_items_on_ray(
    items: Sequence[Item],
    model_dir: str | os.PathLike[str],
    address: str | None = None,
    actors: int = 2,
    batch_size: int = 64,
) -> list[Label]:
    """Score items on Ray (a local cluster unless ``address`` is given), in order."""
    init_ray(address)
    return labels_from_ray(score_dataset(items_to_ray(items), model_dir, actors, batch_size))


def score_file_on_ray(
    items_path: str | os.PathLike[str],
    model_dir: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    address: str | None = None,
    actors: int = 2,
    batch_size: int = 64,
    calibrated: bool = True,
    replace_labels: bool = False,
) -> int:
    """Score an items file on Ray into a labels file (written atomically); returns the count.

    Other sources' labels already in ``out_path`` are kept unless ``replace_labels``
    (:func:`~tinyjudge.datasets.write_labels`).
    """
    from tinyjudge.datasets.jsonl import read_items, write_labels
    from tinyjudge.distill import check_model_dir

    # a bad directory fails here, in one line, not inside an actor
    check_model_dir(model_dir, calibrated=calibrated)
    init_ray(address)
    items = read_items(items_path)
    ds = score_dataset(items_to_ray(items), model_dir, actors, batch_size, calibrated)
    return write_labels(out_path, labels_from_ray(ds), replace_labels).written


class _JudgeActor:
    """One judge (HTTP client, optional per-node cache) per actor."""

    def __init__(self, judge_kwargs: dict[str, Any]) -> None:
        from tinyjudge.judge import JudgeConfig, open_judge

        options = dict(judge_kwargs)
        rubric, cache = options.pop("rubric"), options.pop("cache", None)
        # an endpoint's judge holds nothing open; the stack keeps any other kind's server
        self._open = ExitStack()
        self.judge = self._open.enter_context(
            open_judge(JudgeConfig(**options), rubric, cache=cache)
        )

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        items = [Item.model_validate(json.loads(s)) for s in batch["item"]]
        labels = self.judge.run(items)
        return {
            "index": np.asarray(batch["index"]),
            "item_id": np.array([it.id for it in items]),
            "label": np.array([lab.model_dump_json(exclude_none=True) for lab in labels], object),
        }


def judge_dataset(
    ds: ray.data.Dataset, actors: int = 2, batch_size: int = 32, **judge_kwargs: Any
) -> ray.data.Dataset:
    """Judge a Ray Dataset of items with an actor pool; each actor runs its own ``Judge``.

    ``judge_kwargs`` are ``rubric``, ``cache`` and :class:`tinyjudge.judge.JudgeConfig`'s
    fields (``model``, ``base_url``, ``concurrency`` per actor, ...), opened on each
    actor with :func:`~tinyjudge.judge.open_judge`. Give ``cache`` a path
    on each node's local disk: SQLite must not be shared over a network filesystem.
    The API key is read from the environment on each node, never shipped with the task.
    """
    import ray.data

    if "api_key" in judge_kwargs:
        raise UsageError(
            "don't pass api_key to judge_dataset (it would travel with the task); "
            "set OPENAI_API_KEY on every node instead"
        )
    return ds.map_batches(
        _JudgeActor,
        fn_constructor_kwargs={"judge_kwargs": judge_kwargs},
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=0.5,
    )
