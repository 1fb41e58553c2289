"""The Judge: a rubric and a model, run over items with bounded concurrency, cache and resume."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from rich.console import Console

from tinyjudge.errors import EndpointError, UsageError
from tinyjudge.records import Item, Label
from tinyjudge.rubric import Rubric, load_rubric

from ._checks import check_items, check_options
from ._client import Caller, FatalCallError, Mode, ResponseFormat
from ._config import JudgeConfig
from ._endpoint import bounded_http_client, client_url, shown_url
from ._one_item import judge_item
from ._prompt import PROMPT_VERSION, references_digest
from ._store import Store, cache_key
from ._summary import Judgment, Summary
from ._verdicts import blind_label, make_label, swap_result

__all__ = ["Judge", "Judgment", "Summary", "EndpointFailing", "EndpointRefused"]


class EndpointFailing(EndpointError):
    """The endpoint failed item after item (down, or failing every call): the run stopped."""


class EndpointRefused(EndpointError):
    """The endpoint refused the requests (a 4xx: a key, model or request it will not take).

    The fix is the caller's (another key, model name or URL), so the CLI exits 2 as
    for any bad input, not 1 as for an endpoint that stopped working.
    """

    exit_code = 2


class Judge:
    """An LLM judge: a rubric and a model behind any OpenAI-compatible endpoint.

    Example:
        >>> judge = Judge("compliance", model="gpt-4o-mini",  # doctest: +SKIP
        ...               cache="runs/judge.sqlite")  # needs OPENAI_API_KEY or a base_url
        >>> judgment = judge.run(items)  # doctest: +SKIP
        >>> print("\\n".join(judgment.summary.lines()))  # doctest: +SKIP

    Its call options are a :class:`JudgeConfig` (``config=``), or its fields as
    keywords over it (``Judge("compliance", "m", samples=3)``); a field the config
    leaves None takes the endpoint's default (:data:`ENDPOINT_DEFAULTS`).

    Args:
        rubric: a :class:`Rubric`, a built-in rubric name or a YAML path.
        model: the model name sent to the endpoint (default: the config's ``model``);
            labels get source ``judge:<model>``.
        base_url: the endpoint (``.../v1``); None means ``OPENAI_BASE_URL``, else
            OpenAI's. A ``user:password@``
            in it is neither sent (the API key is the only authorisation) nor printed
            (``base_url`` shows it as ``user:***@``).
        api_key: the key; None reads ``OPENAI_API_KEY`` (a local endpoint may need none).
            It is only ever given to the HTTP client: never stored, logged or reported.
        samples: completions per item; with more than one, ``probs`` is their mean
            distribution and the label the majority (self-consistency).
        temperature: sampling temperature (raise it for ``samples`` > 1).
        concurrency: items in flight at once.
        max_retries: retries per call for 429, 5xx, timeouts, dropped connections
            and malformed bodies; after them the item is unscored and the run goes on.
        timeout: seconds one call may take, first byte to last: an endpoint that
            trickles its reply is cut there, and the call counts as timed out
            (retried, then the item is unscored).
        max_reply_mb: the most a reply's body may hold (MB, decoded), read as it
            streams: a larger one is cut there and its item unscored with the reason.
        cache: a SQLite file of finished judgments (see the store); None: no cache.
        prices: USD per million tokens, ``{"input": x, "output": y}``, for the cost.
        max_tokens: the completion limit sent with each call.
        top_logprobs: alternatives asked per token for the label distribution.
        response_format: ``"auto"`` starts at ``json_schema`` and steps down
            (json_object, plain text; logprobs dropped where refused) when the
            server refuses; the step reached is kept for the judge's later runs
            and reported in the summary. A format name fixes that format.
        stop_after: stop the run (raising :class:`EndpointFailing`) when this many
            items in a row fail after all retries, or when every item that needed
            a call failed: an endpoint that is down, or failing every call, must not
            yield a file of unscored items and a success. 0 never stops.
        label_first: ask for the label before a one-sentence rationale, so that
            a short ``max_tokens`` suffices (small local models).
        config: the options above as one :class:`JudgeConfig`; keywords go over it.

    Raises:
        UsageError: an option out of range or unknown (naming it), or a config that
            starts a local model, a replay or a panel (:func:`run_judge` runs those).
    """

    # the call options, each set from the config (its None fields by the endpoint's defaults)
    samples: int
    temperature: float
    concurrency: int
    max_retries: int
    timeout: float
    max_tokens: int
    top_logprobs: int
    backoff: float
    response_format: ResponseFormat
    stop_after: int
    label_first: bool
    max_reply_mb: float

    def __init__(
        self,
        rubric: Rubric | str | os.PathLike[str],
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        cache: str | os.PathLike[str] | None = None,
        prices: dict[str, float] | None = None,
        config: JudgeConfig | None = None,
        **options: Any,
    ) -> None:
        config = JudgeConfig.from_options(config, **options)
        if config.local or config.replay is not None or config.panel is not None:
            raise UsageError(
                "a Judge calls one endpoint; run_judge starts a local model, a replay or a panel",
                param="config",
            )
        model = model or config.model or ""
        base_url = base_url or config.base_url
        prices = config.prices if prices is None else prices
        self.rubric = load_rubric(rubric)
        # Hashed once: the rubric is fixed for the judge's life, and hashing is not free.
        self.rubric_hash = self.rubric.hash
        self._rendered = self.rubric.render()
        check_options(self.rubric, model, prices=prices)
        self.config = config
        self.model = model
        # The openai client reads OPENAI_BASE_URL itself; read here, its credentials
        # are stripped and hidden like those of a URL given.
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.base_url = shown_url(base_url)
        self._endpoint = client_url(base_url)
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key and base_url is None:
            raise UsageError(
                "no API key: set OPENAI_API_KEY or pass api_key "
                "(or give base_url for a local server)",
                param="api_key",
            )
        self._key = key or "EMPTY"  # local servers (vLLM, llama.cpp) accept any key
        self.cache = cache
        self.prices = prices
        for name, value in config.judge_options().items():
            setattr(self, name, value)  # samples, timeout, ...: see the class's annotations
        # The step of the fallback chain this endpoint accepted; kept across runs.
        self.mode = Mode("json_schema" if self.response_format == "auto" else self.response_format)
        self.summary = Summary()

    def __repr__(self) -> str:  # the key stays out of reprs, logs and notebooks
        return f"Judge(rubric={self.rubric.id!r}, model={self.model!r}, base_url={self.base_url!r})"

    @property
    def source(self) -> str:
        """The ``source`` of this judge's labels: ``judge:<model>``."""
        return f"judge:{self.model}"

    @property
    def params(self) -> dict[str, Any]:
        """The sampling parameters that go into every cache key."""
        return {
            "samples": self.samples,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "prompt": PROMPT_VERSION + ("-label-first" if self.label_first else ""),
        }

    def key(self, item: Item, order: str = "ab") -> str:
        """The cache key of ``item`` in presentation ``order``."""
        content = item.content_hash() + references_digest(item, self.rubric)
        return cache_key(self.rubric_hash, content, self.model, self.params, order)

    def run(
        self,
        items: Iterable[Item],
        on_progress: Callable[[int, int], None] | None = None,
        *,
        progress: bool | Console = False,
    ) -> Judgment:
        """Judge every item; one Label each, in input order (see :meth:`arun`).

        Works in scripts and in notebooks (where an event loop is already running).

        Args:
            items: the items.
            on_progress: called with (done, total) after each item.
            progress: show a rich progress bar (on this console, if one is given).
        """
        items = list(items)
        if progress is not False:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            console = progress if isinstance(progress, Console) else None
            with Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=console,
                transient=True,
            ) as bar:
                task = bar.add_task(f"judging with {self.model}", total=len(items))

                def tick(done: int, total: int) -> None:
                    bar.update(task, completed=done)
                    if on_progress is not None:
                        on_progress(done, total)

                return self.run(items, tick)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(items, on_progress))
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["judgment"] = asyncio.run(self.arun(items, on_progress))
            except BaseException as e:  # re-raised in the caller's thread
                box["error"] = e

        t = threading.Thread(target=target)
        t.start()
        t.join()
        if "error" in box:
            raise box["error"]
        judgment: Judgment = box["judgment"]
        return judgment

    async def arun(
        self, items: Iterable[Item], on_progress: Callable[[int, int], None] | None = None
    ) -> Judgment:
        """Judge every item with at most ``concurrency`` in flight; the async core of :meth:`run`.

        Each finished judgment is committed to the cache before the next is
        started on that worker. Items whose calls failed after all retries come
        back unscored (and are not cached, so the next run retries them).

        Raises:
            TinyjudgeError: an item does not fit the rubric, or the endpoint
                refuses every call (bad key, unknown model); finished work is kept.
        """
        import openai

        items = list(items)
        check_items(items, self.rubric)
        start = time.perf_counter()
        summary = self.summary = Summary(items=len(items))
        store = Store(self.cache) if self.cache is not None else None
        orders = [["ab", "ba"] if it.is_pairwise else ["ab"] for it in items]
        keys = [[self.key(it, o) for o in os_] for it, os_ in zip(items, orders, strict=True)]
        cached = store.get_many([k for ks in keys for k in ks]) if store else {}
        # An item lacking a required reference is unscored here, before any call.
        blinds = [blind_label(it, self.rubric, self.source, self.rubric_hash) for it in items]
        blind = {i: lab for i, lab in enumerate(blinds) if lab is not None}
        caller = Caller(
            lambda: openai.AsyncOpenAI(
                api_key=self._key,
                base_url=self._endpoint,
                max_retries=0,
                timeout=self.timeout,
                http_client=bounded_http_client(int(self.max_reply_mb * 2**20), self.timeout),
            ),
            self.model,
            max_retries=self.max_retries,
            backoff=self.backoff,
            top_logprobs=self.top_logprobs,
            secret=self._key,
            mode=self.mode,
            fixed_format=None if self.response_format == "auto" else self.response_format,
            deadline=self.timeout,
        )
        labels: list[Label | None] = [None] * len(items)
        next_index = iter(range(len(items)))
        done = 0
        # Items that need the endpoint, and how many failed in a row (for stop_after).
        to_call = sum(
            1 for i, ks in enumerate(keys) if i not in blind and any(k not in cached for k in ks)
        )
        # A run whose cached items came from this endpoint is not "failing every call".
        failing: dict[str, Any] = {"in_a_row": 0, "answered": len(items) - to_call, "last": ""}

        async def judge_one(i: int) -> Label:
            if i in blind:
                return blind[i]
            item = items[i]
            results: dict[str, dict[str, Any]] = {}
            all_cached = True
            for order, key in zip(orders[i], keys[i], strict=True):
                hit = cached.get(key)
                if hit is not None:
                    summary.cache_hits += 1
                    results[order] = hit
                    continue
                all_cached = False
                result = await self._judge(caller, item, order)
                if order == "ba":
                    result = swap_result(result)
                if store is not None and not result.get("transient"):
                    store.put(key, item.id, order, self.rubric_hash, self.model, result)
                results[order] = result
            label = make_label(
                item, self.rubric, self.source, results, all_cached, self.rubric_hash
            )
            failed = [r for r in results.values() if r.get("transient")]
            if failed:
                summary.failed += 1
                failing["in_a_row"] += 1
                failing["last"] = failed[0]["reason"]
                self._maybe_stop(failing, to_call)
            elif not all_cached:
                failing["in_a_row"] = 0
                failing["answered"] += 1
            return label

        async def worker() -> None:
            nonlocal done
            for i in next_index:
                labels[i] = await judge_one(i)
                done += 1
                if on_progress is not None:
                    on_progress(done, len(items))

        tasks = [
            asyncio.ensure_future(worker()) for _ in range(min(self.concurrency, len(items)) or 1)
        ]
        try:
            finished, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for t in pending:
                t.cancel()
            for t in finished:
                if t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
        except FatalCallError as e:
            where = f"; finished judgments are kept in {self.cache}" if self.cache else ""
            raise EndpointRefused(f"the endpoint refused the judge: {e}{where}") from None
        finally:
            for t in tasks:
                t.cancel()
            await caller.close()
            if store is not None:
                store.close()
            self.mode = caller.mode
            for counter, n in caller.usage.items():
                setattr(summary, counter, n)
            summary.fallbacks = list(caller.fallbacks)
            summary.response_format = str(caller.mode)
            summary.seconds = time.perf_counter() - start
        out = [lab for lab in labels if lab is not None]
        for lab in out:
            if lab.status == "ok":
                summary.ok += 1
            else:
                summary.unscored += 1
            if lab.status == "ok" and (lab.reason or "").startswith("ambiguous:"):
                summary.ambiguous += 1
            if lab.orders is not None and all(v is not None for v in lab.orders.values()):
                summary.pairs += 1
                summary.flips += lab.consistent is False
        if self.prices is not None:
            summary.cost = (
                summary.tokens_in * self.prices.get("input", 0.0)
                + summary.tokens_out * self.prices.get("output", 0.0)
            ) / 1e6
        return Judgment(out, self.source, self.rubric.id, self.rubric_hash, summary)

    def _maybe_stop(self, failing: dict[str, Any], to_call: int) -> None:
        """Raise :class:`EndpointFailing` when the failures say the endpoint is not working."""
        if not self.stop_after:
            return
        n = failing["in_a_row"]
        if n >= self.stop_after or (not failing["answered"] and n >= to_call):
            where = f"; finished judgments are kept in {self.cache}" if self.cache else ""
            url = self.base_url or "https://api.openai.com/v1"
            raise EndpointFailing(
                f"stopped: {n} item{'s' * (n != 1)} in a row failed at {url} "
                f"(last: {failing['last']}){where}; check the endpoint and re-run"
            )

    async def _judge(self, caller: Caller, item: Item, order: str) -> dict[str, Any]:
        """One judgment of one item in one order (see :func:`judge_item`)."""
        return await judge_item(
            caller,
            item,
            order,
            self.rubric,
            rubric_hash=self.rubric_hash,
            rendered=self._rendered,
            label_first=self.label_first,
            samples=self.samples,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
