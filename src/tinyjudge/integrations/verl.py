"""verl's custom reward function, backed by a tinyjudge reward model or server.

In verl's config::

    custom_reward_function:
      path: /path/to/site-packages/tinyjudge/integrations/verl.py
      name: compute_score
      reward_kwargs:
        model: runs/rm            # or http://host:8000 (tinyjudge serve)

(or set ``TINYJUDGE_REWARD_MODEL``). verl passes only the response text; the
prompt is read from ``extra_info`` when the data set put it there (``messages``,
``prompt`` or ``question``), so the exchange is scored as a whole; ``extra_info``
is the item's metadata, where a rubric's references are read.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from tinyjudge.errors import UsageError
from tinyjudge.integrations._client import RewardClient, Rollout

__all__ = ["compute_score", "compute_score_batch"]

ENV = "TINYJUDGE_REWARD_MODEL"


@functools.lru_cache(maxsize=4)
def _client(model: str, reward: tuple[str, ...] | None) -> RewardClient:
    return RewardClient(model, list(reward) if reward else None)


def _resolve(model: str | None, reward: str | list[str] | None) -> RewardClient:
    model = model or os.environ.get(ENV)
    if not model:
        raise UsageError(
            f"tinyjudge compute_score needs a model: reward_kwargs.model or ${ENV} "
            "(a model directory or a tinyjudge serve URL)"
        )
    labels = reward.split(",") if isinstance(reward, str) else reward
    return _client(model, tuple(labels) if labels else None)


def _rollout(
    solution_str: str, extra_info: dict[str, Any] | None
) -> tuple[Rollout, Rollout | None]:
    info = extra_info or {}
    prompt = info.get("messages", info.get("prompt", info.get("question")))
    # verl keeps non-tensor columns as numpy arrays
    if prompt is not None and hasattr(prompt, "tolist"):
        prompt = prompt.tolist()
    if isinstance(prompt, list):
        return [*prompt, {"role": "assistant", "content": solution_str}], None
    if isinstance(prompt, str):
        return [
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": solution_str},
        ], None
    return solution_str, None


def _metadata(extra_info: dict[str, Any] | None) -> dict[str, Any] | None:
    """verl's ``extra_info`` as the item's metadata (numpy values as plain Python); a
    ``metadata`` object inside it is merged in."""
    if not extra_info:
        return None
    out: dict[str, Any] = {}
    for key, value in extra_info.items():
        value = value.tolist() if hasattr(value, "tolist") else value
        if key == "metadata" and isinstance(value, dict):
            out.update(value)
        else:
            out[key] = value
    return out


_FIX = "put it in the row's extra_info (verl passes extra_info to compute_score)"


def compute_score(
    data_source: str | None,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: dict[str, Any] | None = None,
    model: str | None = None,
    reward: str | list[str] | None = None,
    **kwargs: Any,
) -> float:
    """The reward of one response, with verl's custom-reward signature.

    Args:
        data_source: verl's data-source tag (not used).
        solution_str: the decoded response.
        ground_truth: verl's reference answer (not used: the reward model judges).
        extra_info: the row's extra info; its ``messages``/``prompt``/``question``
            is the exchange's prompt, and all of it is the item's metadata (where
            a rubric's references are read).
        model: a model directory or server URL (else ``$TINYJUDGE_REWARD_MODEL``).
        reward: labels whose probability is the reward (``"a,b"`` or a list).
        **kwargs: anything else verl passes; not used.
    """
    rollout, prompt = _rollout(solution_str, extra_info)
    return _resolve(model, reward).rewards([rollout], [prompt], [_metadata(extra_info)], _FIX)[0]


def compute_score_batch(
    data_sources: list[Any],
    solution_strs: list[str],
    ground_truths: list[Any],
    extra_infos: list[dict[str, Any] | None],
    model: str | None = None,
    reward: str | list[str] | None = None,
    **kwargs: Any,
) -> list[float]:
    """Many responses at once, for verl's ``BatchRewardManager`` (one forward pass or request)."""
    pairs = [_rollout(s, e) for s, e in zip(solution_strs, extra_infos, strict=True)]
    meta = [_metadata(e) for e in extra_infos]
    return _resolve(model, reward).rewards([r for r, _ in pairs], [p for _, p in pairs], meta, _FIX)
