"""Calls to an OpenAI-compatible endpoint: retries with backoff, and the response_format fallback.

Retries (429 honouring Retry-After, 5xx, timeouts, dropped connections,
bodies that are not a chat completion) are done here rather than by the
``openai`` client, so that they are counted and so that Retry-After is obeyed.
A server that rejects a ``response_format`` (HTTP 400) moves the whole judge
one step down the chain json_schema -> json_object -> plain text -> plain
text without logprobs; the step reached is shared by all later calls.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import openai

__all__ = ["CallResult", "CallFailed", "FatalCallError", "Caller", "MODES"]

# (response_format type, ask for logprobs)
MODES: list[tuple[str, bool]] = [
    ("json_schema", True),
    ("json_object", True),
    ("text", True),
    ("text", False),
]
_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
_FATAL_STATUS = {401, 403, 404}
_MAX_RETRY_AFTER = 120.0


@dataclass
class CallResult:
    """The choices of one completion (text and logprob tokens of each) and token usage."""

    texts: list[str | None]
    logprobs: list[list[Any] | None]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0


@dataclass
class CallFailed:
    """A call that failed after all retries (or could not be retried); the reason says why."""

    reason: str
    retries: int = 0


class FatalCallError(Exception):
    """An error no item can get past (bad key, unknown model, no such route): stop the run."""


def _retry_after(err: openai.APIStatusError) -> float | None:
    value = err.response.headers.get("retry-after") if err.response is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` (an API key) blanked out."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "[redacted]")
    return text


@dataclass
class Caller:
    """Sends chat requests through one ``AsyncOpenAI`` client with the judge's policy.

    Attributes:
        mode: index into :data:`MODES` reached so far by the fallback chain.
        calls, retries, fallbacks: counters for the run summary.
    """

    make_client: Callable[[], openai.AsyncOpenAI]
    model: str
    max_retries: int = 4
    backoff: float = 0.5
    max_backoff: float = 30.0
    top_logprobs: int = 20
    secret: str | None = field(default=None, repr=False)
    mode: int = 0
    calls: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    fallbacks: list[str] = field(default_factory=list)
    _client: openai.AsyncOpenAI | None = None

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The HTTP client, made on first use (a fully cached run never needs one)."""
        if self._client is None:
            self._client = self.make_client()
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _format(self, mode: int, schema: dict[str, Any]) -> dict[str, Any]:
        kind, logprobs = MODES[mode]
        kw: dict[str, Any] = {}
        if kind == "json_schema":
            kw["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": schema, "strict": True},
            }
        elif kind == "json_object":
            # llama.cpp reads "schema" here; other servers ignore it.
            kw["response_format"] = {"type": "json_object", "schema": schema}
        if logprobs:
            kw["logprobs"] = True
            kw["top_logprobs"] = self.top_logprobs
        return kw

    def _delay(self, attempt: int) -> float:
        # Full jitter: spreads clients that failed together.
        return random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))

    async def complete(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        *,
        n: int = 1,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> CallResult | CallFailed:
        """One completion with ``n`` choices, retried as the policy says.

        Raises:
            FatalCallError: authentication failed, or the model or route does not exist.
        """
        attempt = 0
        # A 400 may reject the format (then a plainer mode works) or the request itself
        # (too long, say: every mode fails). So this call walks down the modes on its
        # own, and the run adopts a plainer mode only once one has succeeded.
        tried = self.mode
        rejected: dict[int, str] = {}
        while True:
            mode = max(tried, self.mode)
            kw = self._format(mode, schema)
            if n > 1:
                kw["n"] = n
            if max_tokens:
                kw["max_tokens"] = max_tokens
            self.calls += 1
            wait: float | None = None
            try:
                # The client's low-level post (its documented way to reach any route):
                # the typed create() spends milliseconds per call walking nested params,
                # which would make the client the bottleneck at high concurrency.
                body = {"model": self.model, "messages": messages, "temperature": temperature}
                data = await self.client.post(
                    "/chat/completions",
                    cast_to=object,
                    body={**body, **kw},
                    options={"headers": headers or {}},
                )
                texts, lps, tokens_in, tokens_out = _read_completion(data)
                self.tokens_in += tokens_in
                self.tokens_out += tokens_out
                if mode > self.mode:  # the plainer mode works where the others were refused
                    for m in range(self.mode, mode):
                        if m in rejected:
                            kind, logprobs = MODES[m]
                            self.fallbacks.append(
                                f"{kind}{'+logprobs' if logprobs else ''} rejected: "
                                f"{rejected[m][:200]}"
                            )
                    self.mode = mode
                return CallResult(texts, lps, tokens_in, tokens_out, retries=attempt)
            except openai.BadRequestError as e:
                rejected.setdefault(mode, redact(_message(e), self.secret))
                if mode + 1 < len(MODES):
                    tried = mode + 1
                    continue
                # refused in every mode: the request, not the format, is the problem
                return CallFailed(f"HTTP 400: {rejected[min(rejected)][:300]}", attempt)
            except openai.APIStatusError as e:
                status = e.status_code
                reason = f"HTTP {status}: {redact(_message(e), self.secret)[:300]}"
                if status in _FATAL_STATUS:
                    raise FatalCallError(reason) from None
                if status not in _RETRY_STATUS and status < 500:
                    return CallFailed(reason, attempt)
                if status == 429:
                    wait = _retry_after(e)
            except openai.APITimeoutError:
                reason = "timed out"
            except openai.APIConnectionError as e:
                reason = f"connection failed: {redact(str(e.__cause__ or e), self.secret)[:200]}"
            except (openai.APIResponseValidationError, _Malformed, ValueError) as e:
                reason = f"malformed response: {redact(str(e), self.secret)[:200]}"
            if attempt >= self.max_retries:
                return CallFailed(f"{reason} (after {attempt} retries)", attempt)
            delay = min(wait, _MAX_RETRY_AFTER) if wait is not None else self._delay(attempt)
            attempt += 1
            self.retries += 1
            await asyncio.sleep(delay)


class _Malformed(Exception):
    pass


def _read_completion(data: Any) -> tuple[list[str | None], list[list[Any] | None], int, int]:
    """Texts, logprob tokens and token usage of a chat.completion body."""
    if not isinstance(data, dict):
        raise _Malformed(f"the body is not a JSON object: {str(data)[:80]!r}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _Malformed("a response without choices")
    texts: list[str | None] = []
    lps: list[list[Any] | None] = []
    for c in choices:
        msg = c.get("message") if isinstance(c, dict) else None
        if not isinstance(msg, dict):
            raise _Malformed("a choice without a message")
        content = msg.get("content")
        texts.append(content if isinstance(content, str) else None)
        lp = c.get("logprobs")
        tokens = lp.get("content") if isinstance(lp, dict) else None
        lps.append(tokens if isinstance(tokens, list) and tokens else None)
    usage = data["usage"] if isinstance(data.get("usage"), dict) else {}
    tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return texts, lps, int(tokens_in or 0), int(tokens_out or 0)


def _message(e: openai.APIStatusError) -> str:
    body = e.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(e.message)
