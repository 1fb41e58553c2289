"""Rewards from a tinyjudge model inside RL frameworks' own loops.

- :func:`tinyjudge.integrations.trl.reward_func`: a reward function for TRL's
  ``GRPOTrainer`` (and other trainers taking ``prompts, completions, **kwargs``).
- :func:`tinyjudge.integrations.verl.compute_score`: verl's custom reward function.

Both give the reward the server's ``/get_reward`` gives for the same rollout,
from a model directory loaded in-process or from a running ``tinyjudge serve``.
"""

from tinyjudge._faces import lazy_names
from tinyjudge.integrations._client import RewardClient as RewardClient

_, __dir__ = lazy_names(__name__)
