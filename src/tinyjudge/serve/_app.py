"""The reward server's FastAPI app: /score, /get_reward, /health, /metrics.

A request's body is parsed, validated and (for text rollouts) read back into
messages in a worker thread, as scoring is: the event loop only moves bytes, so
``/health`` answers while a large request is read.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tinyjudge._http import describe_request_error
from tinyjudge._memory import trimming
from tinyjudge.datasets.jsonl import lone_surrogate
from tinyjudge.errors import DataError, one_line
from tinyjudge.records import Item, Label, Unread

from ._batcher import MicroBatcher
from ._guard import Guard
from ._metrics import Metrics
from ._options import ServerOptions
from ._rollouts import (
    Rollout,
    Scorer,
    metadata_of,
    read_item,
    read_rollout,
    refuse_blind,
    reward_labels_for,
    reward_of,
)

if TYPE_CHECKING:
    from tinyjudge.cascade import AuditSampler

__all__ = ["create_app"]

Body = TypeVar("Body", bound=BaseModel)
_NO_ID = "\x00no id"  # stands for an absent id until the item's content gives it one


def _unicode_text(data: Any) -> Any:
    """Refuse a lone surrogate (``"\\ud800"``): no label or reward naming it could be sent."""
    if problem := lone_surrogate(data):
        raise ValueError(problem)
    return data


class ScoreRequest(BaseModel):
    """Items to score; an item without ``id`` gets one from its content (16 hex digits).

    Each item's messages are read as ``import chat`` reads a row (any shape the
    reader knows); ``unread`` is filled by the server with what no reader knew.
    """

    model_config = ConfigDict(extra="forbid")
    items: list[Item] = Field(min_length=1)
    unread: dict[str, int] = Field(default_factory=dict, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _read_items(cls, data: Any) -> Any:
        data = _unicode_text(data)
        if isinstance(data, dict) and isinstance(data.get("items"), list):
            unread = Unread()
            items = [read_item(it, unread) for it in data["items"]]
            items = [
                {**it, "id": _NO_ID} if isinstance(it, dict) and not it.get("id") else it
                for it in items
            ]
            data = {**data, "items": items, "unread": dict(unread)}
        return data

    @model_validator(mode="after")
    def _ids_from_content(self) -> ScoreRequest:
        for item in self.items:
            if item.id == _NO_ID:
                item.id = item.content_hash()[:16]
        return self


class RewardRequest(BaseModel):
    """OpenRLHF's remote reward-model request: rollouts, optionally their prompts.

    A rollout is the text the policy saw (its chat template applied), a list
    of messages in any shape the reader knows (OpenAI, Anthropic blocks,
    Responses items, ...), or a transcript object (an Anthropic request with its
    ``system``, a Responses ``input`` + ``output``). ``labels`` and other fields
    are ignored.

    ``metadata`` (one object per rollout) becomes each rollout's item metadata, where
    a rubric's references are read; without it, OpenRLHF's ``labels`` stand in when
    every one is a JSON object (or its text). Other fields are ignored.
    """

    model_config = ConfigDict(extra="ignore")
    query: list[Rollout] = Field(min_length=1)
    prompts: list[Rollout | None] | None = None
    metadata: list[dict[str, Any] | None] | None = None
    labels: list[Any] | None = None

    def metadata_list(self) -> list[dict[str, Any] | None]:
        """Each rollout's metadata: ``metadata``, else ``labels`` when all are objects."""
        if self.metadata is not None:
            return list(self.metadata)
        if self.labels is not None and len(self.labels) == len(self.query):
            read = [metadata_of(lab) for lab in self.labels]
            if all(m is not None for m in read):
                return read
        return [None] * len(self.query)

    @model_validator(mode="before")
    @classmethod
    def _unicode(cls, data: Any) -> Any:
        return _unicode_text(data)


# the routes below; the metrics count any other path as "other"
PATHS = frozenset({"/score", "/get_reward", "/health", "/metrics"})


class Refusal(Exception):
    """A request answered with ``status`` and a one-line ``detail`` instead of a result."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(status, detail)
        self.status, self.detail = status, one_line(detail)


def _validated(model: type[Body], body: bytes) -> Body:
    """The request ``body`` as ``model``, or a :class:`Refusal` (422) saying why not."""
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise Refusal(422, f"malformed JSON: {e.msg} at character {e.pos}") from None
    except UnicodeDecodeError:
        raise Refusal(422, "malformed JSON: the body is not UTF-8") from None
    except RecursionError:
        raise Refusal(422, "malformed JSON: nested too deep to read") from None
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise Refusal(422, describe_request_error(e)) from None
    except RecursionError:
        raise Refusal(422, "malformed JSON: nested too deep to read") from None


def create_app(
    model: Scorer,
    options: ServerOptions | None = None,
    *,
    audit: AuditSampler | None = None,
    **changes: Any,
) -> FastAPI:
    """Build the reward server around a loaded reward model.

    Args:
        model: a reward model, e.g. ``tinyjudge.distill.load_model(dir)``
            (calibrated when its directory holds a calibrator).
        options: how it answers (:class:`ServerOptions`); default ones when None.
        audit: a :class:`~tinyjudge.cascade.AuditSampler` that gets every scored
            batch (it samples and judges in the background; a reward never waits);
            ``/health`` and ``/metrics`` then report its agreement.
        **changes: fields of :class:`ServerOptions` to set on ``options``
            (``create_app(model, token=..., max_items=...)``).

    Raises:
        TinyjudgeError: a ``reward`` label the rubric lacks, or a bad option.
    """
    opts = options or ServerOptions()
    if changes:
        opts = replace(opts, **changes)
    reward_labels = reward_labels_for(model, list(opts.reward) if opts.reward else None)
    rubric = getattr(model, "rubric", None)
    metrics = Metrics()
    batcher: MicroBatcher[Item, Label] = MicroBatcher(
        trimming(model.score_items),
        max_batch=opts.max_batch,
        max_wait_ms=opts.max_wait_ms,
        on_batch=metrics.observe_batch,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await batcher.start()
        yield
        await batcher.stop()
        if audit is not None:
            audit.close()

    app = FastAPI(title=f"tinyjudge reward server ({model.name})", lifespan=lifespan)
    app.state.metrics = metrics
    app.add_middleware(Guard, metrics=metrics, options=opts, paths=PATHS)

    def at_most(n: int, what: str) -> None:
        if n > opts.max_items:
            detail = f"{n} {what} in one request; the limit is {opts.max_items} (max_items)"
            raise Refusal(413, detail + ": split it")

    def score_items(body: bytes) -> tuple[list[Item], list[Unread]]:
        req = _validated(ScoreRequest, body)
        at_most(len(req.items), "items")
        seen(req.items, 'give each item its "metadata"')
        return req.items, [Unread(req.unread)]

    def seen(items: list[Item], fix: str) -> None:
        """422 for an item that lacks what the model reads: a reference, an answer."""
        try:
            refuse_blind(model, items, fix)
        except DataError as e:
            raise Refusal(422, str(e)) from None

    def reward_items(body: bytes) -> tuple[list[Item], list[Unread]]:
        req = _validated(RewardRequest, body)
        at_most(len(req.query), "rollouts")
        if req.prompts is not None and len(req.prompts) != len(req.query):
            msg = f'"prompts" has {len(req.prompts)} entries but "query" has {len(req.query)}'
            raise Refusal(422, msg)
        prompts = [*req.prompts] if req.prompts else [None] * len(req.query)
        metadata = req.metadata_list()
        if len(metadata) != len(req.query):
            msg = f'"metadata" has {len(metadata)} entries but "query" has {len(req.query)}'
            raise Refusal(422, msg + ": send one object per rollout")
        for i, (q, p) in enumerate(zip(req.query, prompts, strict=True)):
            for what, text in (("query", q), ("prompt", p)):
                if isinstance(text, str) and len(text) > opts.max_text_chars:
                    raise Refusal(
                        413,
                        f"{what} {i} holds {len(text)} characters; the limit is "
                        f"{opts.max_text_chars} (max_text_chars)",
                    )
        items, unread = [], []
        for i, (q, p, m) in enumerate(zip(req.query, prompts, metadata, strict=True)):
            try:
                item, left = read_rollout(q, p, i, opts.chat_template, m)
            except ValidationError as e:
                raise Refusal(422, describe_request_error(e)) from None
            except ValueError as e:  # a DataError from the text or the reader: one line
                raise Refusal(422, f"query {i}: {e}") from None
            if not any(msg.role == "assistant" for msg in item.messages):
                roles = [msg.role for msg in item.messages]
                raise Refusal(
                    422,
                    f"query {i}: no assistant turn to reward (roles read: {roles}); "
                    "send the policy's reply in the rollout",
                )
            items.append(item)
            unread.append(left)
        seen(items, 'send one object per rollout in "metadata" holding it')
        return items, unread

    async def answer(
        request: Request, read: Callable[[bytes], tuple[list[Item], list[Unread]]]
    ) -> tuple[list[Label], list[Unread]] | JSONResponse:
        """The request read (off the event loop) and scored, with what no reader knew."""
        try:
            items, unread = await asyncio.to_thread(read, await request.body())
        except Refusal as e:
            return JSONResponse({"detail": e.detail}, status_code=e.status)
        metrics.observe_unread(sum(unread, Unread()))
        try:
            labels = await batcher.submit(items)
        except Exception as e:  # one bad batch answers 500 and the server goes on
            return JSONResponse({"detail": f"scoring failed: {type(e).__name__}: {e}"}, 500)
        if audit is not None:
            audit.offer(items, labels)  # draws and queues without waiting
        return labels, unread

    body_schema = {"requestBody": {"required": True, "content": {"application/json": {}}}}

    @app.post("/score", openapi_extra=body_schema)
    async def score(request: Request) -> Any:
        done = await answer(request, score_items)
        if isinstance(done, JSONResponse):
            return done
        labels, (unread,) = done
        result: dict[str, Any] = {
            "labels": [lab.model_dump(mode="json", exclude_none=True) for lab in labels]
        }
        if unread:  # what no reader knew is said, never passed over in silence
            result["unread"] = dict(unread)
        return result

    @app.post("/get_reward", openapi_extra=body_schema)
    async def get_reward(request: Request) -> Any:
        done = await answer(request, reward_items)
        if isinstance(done, JSONResponse):
            return done
        labels, unread = done
        rewards = [reward_of(lab, reward_labels) for lab in labels]
        names = rubric.label_names if rubric is not None else []
        logs = {f"prob_{n}": [(lab.probs or {}).get(n, 0.0) for lab in labels] for n in names}
        # what no reader knew, per rollout: numbers, as RL loops log extra_logs
        for name in sorted({name for left in unread for name in left}):
            logs[f"unread {name}"] = [float(left.get(name, 0)) for left in unread]
        # OpenRLHF's own server answers "scores" too, which clients with score_key="scores" read
        answer_ = {"rewards": rewards, "scores": rewards, "extra_logs": logs}
        spreads = [_spread(lab) for lab in labels]
        if any(s is not None for s in spreads):  # an ensemble: its members' disagreement
            answer_["spreads"] = logs["reward_spread"] = [
                float("nan") if s is None else s for s in spreads
            ]
        return answer_

    @app.get("/health")
    async def health() -> dict[str, Any]:
        what = {"labels": reward_labels, "rubric": rubric.id if rubric is not None else None}
        answer: dict[str, Any] = {"status": "ok", "model": model.name, "reward": what}
        if audit is not None:
            answer["audit"] = audit.state().to_dict()
        return answer

    @app.get("/metrics")
    async def prom() -> PlainTextResponse:
        text = metrics.render() + (audit.state().prometheus() if audit is not None else "")
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    return app


def _spread(label: Label) -> float | None:
    """An ensemble label's spread (its members' standard deviation), else None."""
    raw = label.raw
    return float(raw["spread"]) if isinstance(raw, dict) and "spread" in raw else None
