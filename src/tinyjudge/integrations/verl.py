"""verl's custom reward function, backed by a tinyjudge reward model or server.

In verl's config::

    custom_reward_function:
      path: /path/to/site-packages/tinyjudge/integrations/verl.py
      name: compute_score
      reward_kwargs:
        model: runs/rm            # or http://host:8000 (tinyjudge serve)

(or set ``TINYJUDGE_REWARD_MODEL``). verl passes only the response text; the
prompt is read from ``extra_info`` when the data set put it there (``messages``,
``prompt`` or ``question``), so the exchange is scored as a whole.
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
            is the exchange's prompt.
        model: a model directory or server URL (else ``$TINYJUDGE_REWARD_MODEL``).
        reward: labels whose probability is the reward (``"a,b"`` or a list).
        **kwargs: anything else verl passes; not used.
    """
    rollout, prompt = _rollout(solution_str, extra_info)
    return _resolve(model, reward).rewards([rollout], [prompt])[0]


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
    return _resolve(model, reward).rewards([r for r, _ in pairs], [p for _, p in pairs])
