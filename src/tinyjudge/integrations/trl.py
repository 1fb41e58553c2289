"""A reward function for TRL's trainers (``GRPOTrainer``, ``RLOOTrainer``, ...).

>>> from trl import GRPOConfig, GRPOTrainer
>>> from tinyjudge.integrations.trl import reward_func
>>> trainer = GRPOTrainer(model=..., reward_funcs=[reward_func("runs/rm")], ...)  # doctest: +SKIP

TRL calls a reward function as ``f(prompts=..., completions=..., **columns)``:
conversational data gives lists of messages, plain data gives strings. Either
way each prompt and its completion are scored as one exchange, the way
``tinyjudge serve``'s ``/get_reward`` scores it.
"""

from __future__ import annotations

import os
from typing import Any

from tinyjudge.integrations._client import RewardClient, Rollout

__all__ = ["reward_func", "TinyjudgeReward"]


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
            **kwargs: other dataset columns and TRL's extras; not used.
        """
        rollouts: list[Rollout] = []
        split: list[Rollout | None] = []
        for prompt, completion in zip(prompts, completions, strict=True):
            if isinstance(prompt, list) or isinstance(completion, list):
                rollouts.append([*_messages(prompt, "user"), *_messages(completion, "assistant")])
                split.append(None)
            else:
                rollouts.append(f"{prompt}{completion}")
                split.append(prompt)
        return self.client.rewards(rollouts, split)

    def __repr__(self) -> str:
        return f"<{self.__name__}: {self.client.description}>"


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
        token: the server's bearer token.
        chat_template: how plain-text prompts in a chat template are read.
        audit: an :class:`~tinyjudge.cascade.AuditSampler` sent a sample of the
            scored rollouts (a model directory only), e.g.
            ``audit_sampler(load_model(d), "gpt-4o", rate=0.05)``.
    """
    return TinyjudgeReward(
        RewardClient(model_dir_or_url, reward, token, chat_template=chat_template, audit=audit)
    )
