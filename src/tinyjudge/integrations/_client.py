"""One way to get rewards for rollouts: a model directory in-process, or a reward server's URL."""

from __future__ import annotations

import os
from typing import Any

from tinyjudge.errors import EndpointError, ModelDirError, UsageError
from tinyjudge.serve._rollouts import (
    Rollout,
    describe_reward,
    reward_labels_for,
    reward_of,
    rollout_to_item,
)

__all__ = ["RewardClient", "Rollout"]


class RewardClient:
    """Rewards for rollouts from a model directory or from ``tinyjudge serve`` at a URL.

    Args:
        model_dir_or_url: a reward-model directory (loaded once, calibrated when
            it holds a calibrator), or the server's base URL or its
            ``/get_reward`` URL (``http://...``).
        reward: the labels whose summed probability is the reward (default:
            the rubric's ``positive`` labels). For a URL, the server's own
            ``--reward`` decides.
        token: the server's bearer token, if it has one.
        timeout: seconds per HTTP request.
        chat_template: how text rollouts are read (see ``tinyjudge serve --chat-template``).
        audit: a :class:`~tinyjudge.cascade.AuditSampler` that gets every scored batch
            (in-process only: a server audits itself with ``--audit-model``).
    """

    def __init__(
        self,
        model_dir_or_url: str | os.PathLike[str],
        reward: list[str] | None = None,
        token: str | None = None,
        timeout: float = 120.0,
        chat_template: str | None = None,
        audit: Any = None,
    ) -> None:
        where = str(model_dir_or_url)
        self.audit = audit
        self.chat_template = chat_template
        self.timeout = timeout
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        if where.startswith(("http://", "https://")):
            try:  # said now, not at the first batch of a training run
                import httpx  # noqa: F401
            except ImportError:
                raise UsageError(
                    f'a reward server URL ({where}) needs httpx: pip install "tinyjudge[rl]"'
                ) from None
            if audit is not None:
                raise UsageError(
                    "audit samples what this process scores; a reward server audits itself "
                    "(serve with an audit judge)",
                    "audit",
                )
            base = where.rstrip("/").removesuffix("/get_reward")
            self.url: str | None = base + "/get_reward"
            self.model = None
            self.reward_labels = reward
            self.name = base.split("://", 1)[1]
            self.description = f"reward from the server at {base}"
        else:
            from tinyjudge.distill import load_model

            if not os.path.isdir(where):
                raise ModelDirError(f"{where}: no such model directory (or give an http:// URL)")
            self.url = None
            self.model = load_model(where)
            self.reward_labels = reward_labels_for(self.model, reward)
            self.name = self.model.name
            self.description = describe_reward(self.model, self.reward_labels)

    def rewards(
        self, rollouts: list[Rollout], prompts: list[Rollout | None] | None = None
    ) -> list[float]:
        """One reward per rollout; prompts split plain text.

        A rollout is chat-template text, a list of messages in any shape the
        reader knows (OpenAI, Anthropic blocks, Responses items, LangChain
        dicts), or a transcript object (an Anthropic request, a Responses
        ``input`` + ``output``), read as ``tinyjudge serve`` reads it.
        """
        if not rollouts:
            return []
        prompts = prompts if prompts is not None else [None] * len(rollouts)
        if self.url is not None:
            return self._remote(rollouts, prompts)
        items = [
            rollout_to_item(r, p, i, self.chat_template)
            for i, (r, p) in enumerate(zip(rollouts, prompts, strict=True))
        ]
        assert self.model is not None
        labels = self.model.score_items(items)
        if self.audit is not None:
            self.audit.offer(items, labels)  # draws and queues; never waits for the judge
        return [reward_of(lab, self.reward_labels) for lab in labels]

    def _remote(self, rollouts: list[Rollout], prompts: list[Rollout | None]) -> list[float]:
        import httpx

        assert self.url is not None
        body = {
            "query": rollouts,
            "prompts": prompts if any(p is not None for p in prompts) else None,
        }
        try:
            r = httpx.post(self.url, json=body, headers=self.headers, timeout=self.timeout)
        except httpx.HTTPError as e:
            raise EndpointError(f"reward server {self.url}: {type(e).__name__}: {e}") from None
        if r.status_code != 200:
            raise EndpointError(
                f"reward server {self.url} answered {r.status_code}: {r.text[:300]}"
            )
        return [float(x) for x in r.json()["rewards"]]
