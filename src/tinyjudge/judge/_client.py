"""Calls to an OpenAI-compatible endpoint: retries with backoff, and the response_format fallback.

Retries (429 honouring Retry-After, 5xx, timeouts, dropped connections,
bodies that are not a chat completion) are done here rather than by the
``openai`` client, so that they are counted and so that Retry-After is obeyed.

Servers refuse what they do not support in different ways: OpenAI and vLLM
answer 400, FastAPI-based servers 422, llama-cpp-python's server 500 with a
validation error naming ``response_format``. A 400 or 422, or a 500 whose body
names ``response_format``/``json_schema``/``json_object``/``logprobs``, moves
the call one step down the chain json_schema -> json_object -> plain text
(dropping logprobs first when the body names them, last otherwise); once a
plainer step has worked, every later call of the run starts there.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import openai

from ._endpoint import Redirected, ReplyTooLarge

__all__ = [
    "CallResult",
    "CallFailed",
    "FatalCallError",
    "Caller",
    "Mode",
    "FORMATS",
    "RESPONSE_FORMATS",
    "ResponseFormat",
    "rejection",
]

# The response_format chain, richest first.
FORMATS: tuple[str, ...] = ("json_schema", "json_object", "text")
# What --response-format takes: "auto" walks the chain, the others fix the format.
RESPONSE_FORMATS: tuple[str, ...] = ("auto", *FORMATS)
ResponseFormat = Literal["auto", "json_schema", "json_object", "text"]
_FORMAT_WORDS = ("response_format", "json_schema", "json schema", "json_object", "grammar")
# What a run counts of its calls; the Summary has a field of each name.
USAGE = ("calls", "retries", "tokens_in", "tokens_out")
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


@dataclass(frozen=True)
class Mode:
    """A step of the fallback chain: the ``response_format`` type and whether logprobs are asked."""

    format: str = "json_schema"
    logprobs: bool = True

    def __str__(self) -> str:
        return self.format + ("+logprobs" if self.logprobs else "")

    def merge(self, other: Mode) -> Mode:
        """The plainer of two modes in each respect (calls in flight may each have learned one)."""
        fmt = FORMATS[max(FORMATS.index(self.format), FORMATS.index(other.format))]
        return Mode(fmt, self.logprobs and other.logprobs)


def rejection(status: int, message: str) -> str | None:
    """Whether an error answer refuses what was asked rather than failing, and what it refuses.

    Returns:
        ``"logprobs"`` or ``"format"`` when the message names them, ``"request"``
        for any other 400 or 422 (which may still be the format: servers word
        these freely), or None when the answer is not a refusal (a 500 that does
        not name the format or logprobs is a server fault, to be retried).
    """
    low = message.lower()
    named = "logprobs" if "logprob" in low else None
    if named is None and any(w in low for w in _FORMAT_WORDS):
        named = "format"
    if status in (400, 422):
        return named or "request"
    if status == 500:
        return named
    return None


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
        mode: the step of the fallback chain reached so far (shared by all calls).
        fixed_format: only this ``response_format`` is tried (``--response-format``);
            None walks the whole chain.
        deadline: seconds one call may take, first byte to last (None: no limit);
            an endpoint that trickles its reply is cut there, like any timeout.
        usage: the run's counters (:data:`USAGE`: calls, retries, tokens in and out),
            copied into its summary under the same names.
        fallbacks: the steps of the fallback chain taken, for the summary.
    """

    make_client: Callable[[], openai.AsyncOpenAI]
    model: str
    max_retries: int = 4
    backoff: float = 0.5
    max_backoff: float = 30.0
    top_logprobs: int = 20
    secret: str | None = field(default=None, repr=False)
    mode: Mode = field(default_factory=Mode)
    fixed_format: str | None = None
    deadline: float | None = None
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE, 0))
    fallbacks: list[str] = field(default_factory=list)
    _client: openai.AsyncOpenAI | None = None

    def __post_init__(self) -> None:
        if self.fixed_format is not None:
            self.mode = Mode(self.fixed_format, self.mode.logprobs)

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

    def _format(self, mode: Mode, schema: dict[str, Any]) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if mode.format == "json_schema":
            kw["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": schema, "strict": True},
            }
        elif mode.format == "json_object":
            # llama.cpp reads "schema" here; other servers ignore it.
            kw["response_format"] = {"type": "json_object", "schema": schema}
        if mode.logprobs:
            kw["logprobs"] = True
            kw["top_logprobs"] = self.top_logprobs
        return kw

    def _plainer(self, mode: Mode, refused: str) -> Mode | None:
        """The next step down from ``mode`` after a refusal of kind ``refused``, or None."""
        if refused == "logprobs" and mode.logprobs:
            return Mode(mode.format, False)
        at = FORMATS.index(mode.format)
        if self.fixed_format is None and at + 1 < len(FORMATS):
            return Mode(FORMATS[at + 1], mode.logprobs)
        return Mode(mode.format, False) if mode.logprobs else None

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
        # A refusal may be of the format (then a plainer mode works) or of the request
        # itself (too long, say: every mode fails). So this call walks down the modes on
        # its own, and the run adopts a plainer mode only once one has succeeded.
        tried = self.mode
        rejected: list[tuple[Mode, str]] = []
        while True:
            mode = tried.merge(self.mode)
            kw = self._format(mode, schema)
            if n > 1:
                kw["n"] = n
            if max_tokens:
                kw["max_tokens"] = max_tokens
            self.usage["calls"] += 1
            wait: float | None = None
            try:
                # The client's low-level post (its documented way to reach any route):
                # the typed create() spends milliseconds per call walking nested params,
                # which would make the client the bottleneck at high concurrency.
                body = {"model": self.model, "messages": messages, "temperature": temperature}
                data = await asyncio.wait_for(
                    self.client.post(
                        "/chat/completions",
                        cast_to=object,
                        body={**body, **kw},
                        options={"headers": headers or {}},
                    ),
                    self.deadline,
                )
                texts, lps, tokens_in, tokens_out = _read_completion(data)
                self.usage["tokens_in"] += tokens_in
                self.usage["tokens_out"] += tokens_out
                adopted = self.mode.merge(mode)
                if adopted != self.mode:
                    # A plainer mode works where richer ones were refused; note the
                    # refusals the run did not know of yet (other calls may have).
                    for m, why in rejected:
                        if m.merge(self.mode) == m:
                            self.fallbacks.append(f"{m} rejected: {why[:200]}")
                    self.mode = adopted
                return CallResult(texts, lps, tokens_in, tokens_out, retries=attempt)
            except openai.APIStatusError as e:
                status = e.status_code
                message = redact(_message(e), self.secret)
                reason = f"HTTP {status}: {message[:300]}"
                if status in _FATAL_STATUS:
                    raise FatalCallError(reason) from None
                refused = rejection(status, f"{message} {redact(str(e.body), self.secret)}")
                if refused is not None:
                    rejected.append((mode, f"HTTP {status}: {message}"))
                    plainer = self._plainer(mode, refused)
                    if plainer is not None:
                        tried = plainer
                        continue
                    # refused in every mode: the request, not the format, is the problem
                    return CallFailed(f"{rejected[0][1][:300]}", attempt)
                if status not in _RETRY_STATUS and status < 500:
                    return CallFailed(reason, attempt)
                if status == 429:
                    wait = _retry_after(e)
            except (openai.APITimeoutError, asyncio.TimeoutError):
                reason = "timed out"
            except ReplyTooLarge as e:  # the same body again would cost the same: not retried
                return CallFailed(str(e), attempt)
            except Redirected as e:  # the endpoint, not this item: stop the run
                raise FatalCallError(str(e)) from None
            except openai.APIConnectionError as e:
                if isinstance(e.__cause__, Redirected):
                    raise FatalCallError(str(e.__cause__)) from None
                reason = f"connection failed: {redact(str(e.__cause__ or e), self.secret)[:200]}"
            except (openai.APIResponseValidationError, _Malformed, ValueError) as e:
                reason = f"malformed response: {redact(str(e), self.secret)[:200]}"
            except RecursionError:  # a body nested too deep to decode
                reason = "malformed response: JSON nested too deep to read"
            if attempt >= self.max_retries:
                return CallFailed(f"{reason} (after {attempt} retries)", attempt)
            delay = min(wait, _MAX_RETRY_AFTER) if wait is not None else self._delay(attempt)
            attempt += 1
            self.usage["retries"] += 1
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
    return texts, lps, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))


def _count(value: Any) -> int:
    """A token count from a usage field; anything but a sane number (``1e999``, ``"x"``) is 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not (value == value and 0 <= value < 1e15):  # NaN, inf
        return 0
    return int(value) if 0 <= value < 10**15 else 0


def _message(e: openai.APIStatusError) -> str:
    body = e.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(e.message)
