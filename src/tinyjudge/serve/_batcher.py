"""Dynamic micro-batching: concurrent requests share one model forward pass."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["MicroBatcher"]

In = TypeVar("In")
Out = TypeVar("Out")


class MicroBatcher(Generic[In, Out]):
    """Gathers inputs from concurrent callers into batches for ``fn``.

    A batch closes when it holds ``max_batch`` inputs or ``max_wait_ms`` has
    passed since its first input arrived. ``fn`` runs in a worker thread so the
    event loop keeps accepting requests while the model computes. One caller's
    failure (an exception from ``fn``) is delivered to every caller of that
    batch and never stops the batcher.

    Args:
        fn: scores a list of inputs, returning one output per input, in order.
        max_batch: the most inputs in one call of ``fn``; 1 turns batching off.
        max_wait_ms: how long a batch may wait for more inputs.
        on_batch: called with each batch's size (for metrics).
    """

    def __init__(
        self,
        fn: Callable[[list[In]], Sequence[Out]],
        max_batch: int = 64,
        max_wait_ms: float = 5.0,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.fn = fn
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000.0
        self.on_batch = on_batch
        self._queue: asyncio.Queue[tuple[list[In], asyncio.Future[list[Out]]]] | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._queue = asyncio.Queue()
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def submit(self, inputs: list[In]) -> list[Out]:
        """Score ``inputs`` (one request's worth) as part of some batch."""
        if self._queue is None:
            raise RuntimeError("MicroBatcher.start() was not called")
        if not inputs:
            return []
        fut: asyncio.Future[list[Out]] = asyncio.get_running_loop().create_future()
        await self._queue.put((inputs, fut))
        return await fut

    async def _loop(self) -> None:
        assert self._queue is not None
        while True:
            first = await self._queue.get()
            pending = [first]
            size = len(first[0])
            deadline = time.monotonic() + self.max_wait
            while size < self.max_batch:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    break
                try:
                    nxt = await asyncio.wait_for(self._queue.get(), timeout)
                except asyncio.TimeoutError:
                    break
                pending.append(nxt)
                size += len(nxt[0])
            await self._run(pending)

    async def _run(self, pending: list[tuple[list[In], asyncio.Future[list[Out]]]]) -> None:
        flat = [x for inputs, _ in pending for x in inputs]
        try:
            outputs = await asyncio.to_thread(self.fn, flat)
            if len(outputs) != len(flat):
                raise RuntimeError(f"model returned {len(outputs)} outputs for {len(flat)} inputs")
        except Exception as e:  # delivered to the callers, never kills the loop
            for _, fut in pending:
                if not fut.done():
                    fut.set_exception(e)
            return
        if self.on_batch:
            self.on_batch(len(flat))
        start = 0
        for inputs, fut in pending:
            if not fut.done():
                fut.set_result(list(outputs[start : start + len(inputs)]))
            start += len(inputs)
