"""The reward server's FastAPI app: /score, /get_reward, /health, /metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, ConfigDict, Field

from tinyjudge._memory import trimming
from tinyjudge.records import Item, Label, Message

from ._batcher import MicroBatcher
from ._guard import Guard
from ._metrics import Metrics

__all__ = ["create_app", "Scorer", "query_to_item"]


class Scorer(Protocol):
    """What the server needs of a reward model (any distilled tier qualifies)."""

    name: str

    def score_items(self, items: list[Item]) -> list[Label]: ...


class ScoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[Item] = Field(min_length=1)


class RewardRequest(BaseModel):
    """OpenRLHF's remote reward-model request: full texts, optionally their prompts."""

    model_config = ConfigDict(extra="ignore")
    query: list[str] = Field(min_length=1)
    prompts: list[str] | None = None


# the routes below; the metrics count any other path as "other"
PATHS = frozenset({"/score", "/get_reward", "/health", "/metrics"})


def query_to_item(query: str, prompt: str | None, index: int) -> Item:
    """Turn an RL rollout's text into an item: the prompt as user turn when it is known."""
    if prompt and query.startswith(prompt):
        messages = [
            Message(role="user", content=prompt),
            Message(role="assistant", content=query[len(prompt) :]),
        ]
    else:
        messages = [Message(role="assistant", content=query)]
    return Item(id=f"query:{index}", messages=messages)


def _describe(err: RequestValidationError) -> str:
    parts = []
    for e in err.errors()[:3]:
        loc = ".".join(str(x) for x in e["loc"] if x != "body") or "body"
        if e["type"] == "json_invalid":
            parts.append(f"malformed JSON: {e.get('ctx', {}).get('error', e['msg'])}")
        elif e["type"] == "missing":
            parts.append(f'missing field "{loc}"')
        elif e["type"] == "extra_forbidden":
            parts.append(f'unknown field "{loc}"')
        else:
            parts.append(f'field "{loc}": {e["msg"]}')
    return "; ".join(parts)


def create_app(
    model: Scorer,
    token: str | None = None,
    max_batch: int = 64,
    max_wait_ms: float = 5.0,
    max_body_bytes: int = 8 << 20,
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
    """
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
        return JSONResponse({"detail": _describe(exc)}, status_code=422)

    async def scored(items: list[Item]) -> list[Label] | JSONResponse:
        try:
            return await batcher.submit(items)
        except Exception as e:  # one bad batch answers 500 and the server goes on
            return JSONResponse({"detail": f"scoring failed: {type(e).__name__}: {e}"}, 500)

    @app.post("/score")
    async def score(req: ScoreRequest) -> Any:
        labels = await scored(req.items)
        if isinstance(labels, JSONResponse):
            return labels
        return {"labels": [lab.model_dump(mode="json", exclude_none=True) for lab in labels]}

    @app.post("/get_reward")
    async def get_reward(req: RewardRequest) -> Any:
        if req.prompts is not None and len(req.prompts) != len(req.query):
            msg = f'"prompts" has {len(req.prompts)} entries but "query" has {len(req.query)}'
            return JSONResponse({"detail": msg}, status_code=422)
        prompts: list[str | None] = [*req.prompts] if req.prompts else [None] * len(req.query)
        items = [
            query_to_item(q, p, i) for i, (q, p) in enumerate(zip(req.query, prompts, strict=True))
        ]
        labels = await scored(items)
        if isinstance(labels, JSONResponse):
            return labels
        return {"rewards": [_reward(lab) for lab in labels]}

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": model.name}

    @app.get("/metrics")
    async def prom() -> PlainTextResponse:
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4")

    return app


def _reward(label: Label) -> float:
    """The scalar reward of a label: its score, else the probability of its label."""
    if label.score is not None:
        return float(label.score)
    if label.probs and label.label is not None:
        return float(label.probs[label.label])
    return float("nan")
