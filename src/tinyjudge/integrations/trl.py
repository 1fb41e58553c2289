"""A reward function for TRL's trainers (``GRPOTrainer``, ``RLOOTrainer``, ...).

>>> from trl import GRPOConfig, GRPOTrainer
>>> from tinyjudge.integrations.trl import reward_func
>>> trainer = GRPOTrainer(model=..., reward_funcs=[reward_func("runs/rm")], ...)  # doctest: +SKIP

TRL calls a reward function as ``f(prompts=..., completions=..., **columns)``:
conversational data gives lists of messages, plain data gives strings. Either
way each prompt and its completion are scored as one exchange, the way
``tinyjudge serve``'s ``/get_reward`` scores it, and the row's other columns are
the item's metadata (where a rubric's references, ``metadata.presupposition``, are
read).
"""

from __future__ import annotations

import os
from typing import Any

from tinyjudge.errors import UsageError
from tinyjudge.integrations._client import RewardClient, Rollout

__all__ = ["reward_func", "TinyjudgeReward", "columns_metadata"]


class TinyjudgeReward:
    """A callable with TRL's reward-function signature; ``__name__`` names it in TRL's logs."""

    def __init__(self, client: RewardClient) -> None:
        self.client = client
        self.__name__ = f"tinyjudge_{client.name}".replace("/", "_").replace(":", "_")

    def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float]:
        """One reward per completion.

        Args:
            prompts: strings, or lists of messages (conversational data).
            completions: strings, or lists of messages (the generated turn(s)).
            **kwargs: the data set's other columns (one value per completion), which
                become each item's metadata (a ``metadata`` column holding objects is
                merged in), and TRL's extras (``trainer_state``, ...), not used.

        Raises:
            UsageError: prompts and completions of unequal length.
            DataError: a completion whose row lacks a reference the rubric reads.
        """
        if len(prompts) != len(completions):
            raise UsageError(
                f"reward_func got {len(prompts)} prompts but {len(completions)} completions: "
                "TRL passes one prompt per completion (repeat each prompt num_generations times)"
            )
        rollouts: list[Rollout] = []
        split: list[Rollout | None] = []
        for prompt, completion in zip(prompts, completions, strict=True):
            if isinstance(prompt, list) or isinstance(completion, list):
                rollouts.append([*_messages(prompt, "user"), *_messages(completion, "assistant")])
                split.append(None)
            else:
                rollouts.append(f"{prompt}{completion}")
                split.append(prompt)
        fix = "add it as a column of the training data set (TRL passes columns to reward_func)"
        return self.client.rewards(rollouts, split, columns_metadata(kwargs, len(prompts)), fix)

    def __repr__(self) -> str:
        return f"<{self.__name__}: {self.client.description}>"


# What TRL passes a reward function besides the data set's columns.
_TRL_EXTRAS = frozenset(
    {"trainer_state", "completion_ids", "log_extra", "log_metric", "environments"}
)


def columns_metadata(columns: dict[str, Any], n: int) -> list[dict[str, Any] | None]:
    """Each row's metadata from per-row columns (lists of ``n`` values) TRL passes.

    A column named ``metadata`` whose values are objects is merged into the row's
    metadata; values with ``tolist`` (numpy) become plain Python. Anything not
    one value per row (TRL's own extras) is left out.
    """
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for name, values in columns.items():
        if name in _TRL_EXTRAS:
            continue
        if hasattr(values, "tolist"):
            values = values.tolist()
        if not isinstance(values, list | tuple) or len(values) != n:
            continue
        for row, value in zip(rows, values, strict=True):
            value = value.tolist() if hasattr(value, "tolist") else value
            if name == "metadata" and isinstance(value, dict):
                row.update(value)
            else:
                row[name] = value
    return [row or None for row in rows]


def _messages(value: Any, role: str) -> list[dict[str, Any]]:
    if isinstance(value, list):
        return list(value)
    return [{"role": role, "content": str(value)}]


def reward_func(
    model_dir_or_url: str | os.PathLike[str],
    reward: list[str] | None = None,
    token: str | None = None,
    chat_template: str | None = None,
    audit: Any = None,
) -> TinyjudgeReward:
    """A TRL reward function backed by a tinyjudge reward model or server.

    Args:
        model_dir_or_url: a model directory (scored in-process) or the URL of
            ``tinyjudge serve`` (``http://host:8000``).
        reward: the labels whose probability is the reward (default: the
            rubric's ``positive`` labels; for ``compliance`` that rewards refusing).
            Asked of a server, they are honoured or refused, never replaced by
            the server's own.
        token: the server's bearer token.
        chat_template: how plain-text prompts in a chat template are read.
        audit: an :class:`~tinyjudge.cascade.AuditSampler` sent a sample of the
            scored rollouts (a model directory only), e.g.
            ``audit_sampler(load_model(d), JudgeConfig(model="gpt-4o"), rate=0.05)``.
    """
    return TinyjudgeReward(
        RewardClient(model_dir_or_url, reward, token, chat_template=chat_template, audit=audit)
    )
