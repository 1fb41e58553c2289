"""The reward server's FastAPI app: /score, /get_reward, /health, /metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tinyjudge._http import describe_request_error
from tinyjudge._memory import trimming
from tinyjudge.datasets.jsonl import lone_surrogate
from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item, Label, Unread

from ._batcher import MicroBatcher
from ._guard import Guard
from ._metrics import Metrics
from ._rollouts import Rollout, Scorer, read_item, read_rollout, reward_labels_for, reward_of
from ._templates import check_template

__all__ = ["create_app"]

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
    """

    model_config = ConfigDict(extra="ignore")
    query: list[Rollout] = Field(min_length=1)
    prompts: list[Rollout | None] | None = None

    @model_validator(mode="before")
    @classmethod
    def _unicode(cls, data: Any) -> Any:
        return _unicode_text(data)


# the routes below; the metrics count any other path as "other"
PATHS = frozenset({"/score", "/get_reward", "/health", "/metrics"})


def create_app(
    model: Scorer,
    token: str | None = None,
    max_batch: int = 64,
    max_wait_ms: float = 5.0,
    max_body_bytes: int = 8 << 20,
    reward: list[str] | None = None,
    chat_template: str | None = None,
    max_items: int = 2048,
) -> FastAPI:
    """Build the reward server around a loaded reward model.

    Args:
        model: a reward model, e.g. ``tinyjudge.distill.load_model(dir)``
            (calibrated when its directory holds a calibrator).
        token: when set, every endpoint but ``/health`` needs
            ``Authorization: Bearer <token>``.
        max_batch: the most items gathered into one forward pass (1 = off).
        max_wait_ms: how long a forward pass waits to gather more items.
        max_body_bytes: larger request bodies are refused with 413.
        reward: the labels whose summed probability ``/get_reward`` returns
            (default: the rubric's ``positive`` labels).
        chat_template: how ``/get_reward`` reads text rollouts: a name of
            ``CHAT_TEMPLATES`` or a ``{role}``/``{content}`` pattern
            (default: the built-in templates, recognised by their markers).
        max_items: the most items (or rollouts) one request may carry; more are
            refused with 413 naming the limit, so one client cannot hold the model.

    Raises:
        TinyjudgeError: a ``reward`` label the rubric lacks, or a bad template.
    """
    reward_labels = reward_labels_for(model, reward)
    if chat_template is not None:
        check_template(chat_template)
    if max_items < 1:
        raise TinyjudgeError(f"max_items must be at least 1, got {max_items}")
    rubric = getattr(model, "rubric", None)
    metrics = Metrics()
    batcher: MicroBatcher[Item, Label] = MicroBatcher(
        trimming(model.score_items),
        max_batch=max_batch,
        max_wait_ms=max_wait_ms,
        on_batch=metrics.observe_batch,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(title=f"tinyjudge reward server ({model.name})", lifespan=lifespan)
    app.state.metrics = metrics
    app.add_middleware(
        Guard, metrics=metrics, token=token, max_body_bytes=max_body_bytes, paths=PATHS
    )

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": describe_request_error(exc)}, status_code=422)

    async def scored(items: list[Item]) -> list[Label] | JSONResponse:
        try:
            return await batcher.submit(items)
        except Exception as e:  # one bad batch answers 500 and the server goes on
            return JSONResponse({"detail": f"scoring failed: {type(e).__name__}: {e}"}, 500)

    def too_many(n: int, what: str) -> JSONResponse | None:
        if n <= max_items:
            return None
        detail = f"{n} {what} in one request; the limit is {max_items} (--max-items): split it"
        return JSONResponse({"detail": detail}, status_code=413)

    @app.post("/score")
    async def score(req: ScoreRequest) -> Any:
        if refused := too_many(len(req.items), "items"):
            return refused
        metrics.observe_unread(req.unread)
        labels = await scored(req.items)
        if isinstance(labels, JSONResponse):
            return labels
        answer: dict[str, Any] = {
            "labels": [lab.model_dump(mode="json", exclude_none=True) for lab in labels]
        }
        if req.unread:  # what no reader knew is said, never passed over in silence
            answer["unread"] = req.unread
        return answer

    @app.post("/get_reward")
    async def get_reward(req: RewardRequest) -> Any:
        if refused := too_many(len(req.query), "rollouts"):
            return refused
        if req.prompts is not None and len(req.prompts) != len(req.query):
            msg = f'"prompts" has {len(req.prompts)} entries but "query" has {len(req.query)}'
            return JSONResponse({"detail": msg}, status_code=422)
        prompts = [*req.prompts] if req.prompts else [None] * len(req.query)
        read: list[tuple[Item, Unread]] = []
        for i, (q, p) in enumerate(zip(req.query, prompts, strict=True)):
            try:
                read.append(read_rollout(q, p, i, chat_template))
            except ValidationError as e:
                return JSONResponse({"detail": describe_request_error(e)}, status_code=422)
            except ValueError as e:
                return JSONResponse({"detail": f"query.{i}: {e}"}, status_code=422)
        labels = await scored([item for item, _ in read])
        if isinstance(labels, JSONResponse):
            return labels
        rewards = [reward_of(lab, reward_labels) for lab in labels]
        names = rubric.label_names if rubric is not None else []
        logs = {f"prob_{n}": [(lab.probs or {}).get(n, 0.0) for lab in labels] for n in names}
        # what no reader knew, per rollout: numbers, as RL loops log extra_logs
        for name in sorted({name for _, unread in read for name in unread}):
            logs[f"unread {name}"] = [float(unread.get(name, 0)) for _, unread in read]
        metrics.observe_unread(sum((unread for _, unread in read), Unread()))
        # OpenRLHF's own server answers "scores" too, which clients with score_key="scores" read
        return {"rewards": rewards, "scores": rewards, "extra_logs": logs}

    @app.get("/health")
    async def health() -> dict[str, Any]:
        what = {"labels": reward_labels, "rubric": rubric.id if rubric is not None else None}
        return {"status": "ok", "model": model.name, "reward": what}

    @app.get("/metrics")
    async def prom() -> PlainTextResponse:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    return app
