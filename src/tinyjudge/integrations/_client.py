"""One way to get rewards for rollouts: a model directory in-process, or a reward server's URL."""

from __future__ import annotations

import os
import re
from typing import Any

from tinyjudge.errors import EndpointError, ModelDirError, UsageError
from tinyjudge.serve import (
    Rollout,
    describe_reward,
    refuse_blind,
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
            the rubric's ``positive`` labels; for a URL, the server's own
            ``--reward``). Asked of a URL, they are summed from the probability of
            each label the server returns; a label it does not have is an error
            naming both, never the server's default in silence.
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
            self.reward_labels = list(reward) if reward else None
            self.name = base.split("://", 1)[1]
            asked = " + ".join(f"P({name})" for name in reward) if reward else "its own reward"
            self.description = f"reward from the server at {base}: {asked}"
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
        self,
        rollouts: list[Rollout],
        prompts: list[Rollout | None] | None = None,
        metadata: list[dict[str, Any] | None] | None = None,
        fix: str = "give each rollout its metadata",
    ) -> list[float]:
        """One reward per rollout; prompts split plain text.

        A rollout is chat-template text, a list of messages in any shape the
        reader knows (OpenAI, Anthropic blocks, Responses items, LangChain
        dicts), or a transcript object (an Anthropic request, a Responses
        ``input`` + ``output``), read as ``tinyjudge serve`` reads it.
        ``metadata`` (one object per rollout) is each item's metadata, where the
        rubric's references are read.

        Raises:
            DataError: a rollout lacks a reference the model reads (``fix`` says how
                the caller passes it).
            EndpointError: the server refused the rollouts or could not be reached.
        """
        if not rollouts:
            return []
        prompts = prompts if prompts is not None else [None] * len(rollouts)
        metadata = metadata if metadata is not None else [None] * len(rollouts)
        for name, given in (("prompts", prompts), ("metadata", metadata)):
            if len(given) != len(rollouts):
                raise UsageError(
                    f"{len(rollouts)} rollouts but {len(given)} {name}: give one per rollout"
                )
        if self.url is not None:
            return self._remote(rollouts, prompts, metadata)
        items = [
            rollout_to_item(r, p, i, self.chat_template, m)
            for i, (r, p, m) in enumerate(zip(rollouts, prompts, metadata, strict=True))
        ]
        assert self.model is not None
        refuse_blind(self.model, items, fix)
        labels = self.model.score_items(items)
        if self.audit is not None:
            self.audit.offer(items, labels)  # draws and queues; never waits for the judge
        return [reward_of(lab, self.reward_labels) for lab in labels]

    def _remote(
        self,
        rollouts: list[Rollout],
        prompts: list[Rollout | None],
        metadata: list[dict[str, Any] | None],
    ) -> list[float]:
        import httpx

        assert self.url is not None
        body: dict[str, Any] = {
            "query": rollouts,
            "prompts": prompts if any(p is not None for p in prompts) else None,
        }
        if any(m for m in metadata):
            body["metadata"] = metadata
        try:
            r = httpx.post(self.url, json=body, headers=self.headers, timeout=self.timeout)
        except httpx.HTTPError as e:
            raise EndpointError(f"reward server {self.url}: {type(e).__name__}: {e}") from None
        if r.status_code != 200:
            raise EndpointError(
                f"reward server {self.url} answered {r.status_code}: {r.text[:300]}"
            )
        answer = r.json()
        if not self.reward_labels:
            return [float(x) for x in answer["rewards"]]
        return asked_reward(answer, self.reward_labels, self.url)


def _key(label: str) -> str:
    return re.sub(r"[\s\-]+", "_", label.strip().lower())


def asked_reward(answer: dict[str, Any], labels: list[str], url: str) -> list[float]:
    """The asked labels' summed probability, from the per-label ones a server returns.

    Raises:
        EndpointError: a label the server has no probability for, naming the asked
            labels and those it serves.
    """
    probs = {
        name.removeprefix("prob_"): values
        for name, values in (answer.get("extra_logs") or {}).items()
        if name.startswith("prob_")
    }
    by_key = {_key(name): name for name in probs}
    unknown = [lab for lab in labels if lab not in probs and _key(lab) not in by_key]
    if unknown:
        raise EndpointError(
            f"reward labels {labels} asked of {url}, whose model has labels "
            f"{sorted(probs) or 'none it reports'}: {unknown} not among them; ask for its "
            "labels, or leave reward unset for the server's own"
        )
    names = [lab if lab in probs else by_key[_key(lab)] for lab in labels]
    n = len(answer["rewards"])
    return [float(sum(probs[name][i] for name in names)) for i in range(n)]
