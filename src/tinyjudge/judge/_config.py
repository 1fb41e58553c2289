"""The judge stage's options: one :class:`JudgeConfig`, checked when made.

A config says how a judge reaches its model (an endpoint, a replay of recorded
labels, a local llama.cpp model or a panel of judges) and how it calls it
(samples, temperature, concurrency, retries, limits). Making one refuses numbers
out of range and options that do not go together (``local`` with ``base_url``,
``panel`` with ``model``), naming the field in :class:`~tinyjudge.errors.UsageError`,
so the library and the command line (whose flags are its fields) refuse alike.

>>> JudgeConfig(model="m", samples=3).samples
3
>>> JudgeConfig(local=True, base_url="http://127.0.0.1:9/v1")
Traceback (most recent call last):
...
tinyjudge.errors.UsageError: local starts its own server: give no base_url or replay
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tinyjudge.config import Config, option
from tinyjudge.errors import UsageError

from ._checks import NUMBERS, check_numbers
from ._client import ResponseFormat

__all__ = ["JudgeConfig", "PanelVote", "ENDPOINT_DEFAULTS", "LOCAL_DEFAULTS"]

PanelVote = Literal["majority", "mean"]

# The options that depend on the kind of endpoint, where a config leaves them None.
ENDPOINT_DEFAULTS: dict[str, Any] = {
    "label_first": False,
    "max_tokens": 1024,
    "concurrency": 8,
    "timeout": 60.0,
    "max_retries": 4,
}
# A small model on a CPU: one request at a time (the server runs them one by one
# anyway), the label first so a short completion holds it, and patient timeouts.
LOCAL_DEFAULTS: dict[str, Any] = {
    "label_first": True,
    "max_tokens": 20,
    "concurrency": 1,
    "timeout": 900.0,
    "max_retries": 1,
}
# the fields a Judge takes as its own options (the rest say where its model is)
CALL_FIELDS = (
    "samples",
    "temperature",
    "max_reply_mb",
    "response_format",
    "top_logprobs",
    "backoff",
    "stop_after",
    *ENDPOINT_DEFAULTS,
)


@dataclass
class JudgeConfig(Config):
    """How a judge reaches its model and how it calls it.

    The fields left None (``concurrency``, ``max_retries``, ``timeout``,
    ``max_tokens``, ``label_first``) take the endpoint's defaults
    (:data:`ENDPOINT_DEFAULTS`), or the local judge's under ``local``
    (:data:`LOCAL_DEFAULTS`): see :meth:`judge_options`.

    Raises:
        UsageError: a number out of range, or options that do not go together,
            naming the field (``param``) and the others it conflicts with (``also``).
    """

    model: str | None = option(None, "model name at the endpoint")
    base_url: str | None = option(None, "OpenAI-compatible URL (.../v1)")
    samples: int = option(1, "completions per item (self-consistency)")
    temperature: float = option(0.0, "sampling temperature (raise it for samples > 1)")
    concurrency: int | None = option(None, "items in flight at once (default 8; local: 1)")
    max_retries: int | None = option(None, "retries per call (default 4; local: 1)")
    timeout: float | None = option(
        None, "seconds one call may take, first byte to last (default 60; local: 900)"
    )
    max_reply_mb: float = option(16.0, "the most a reply may hold; a larger one is cut, unscored")
    max_tokens: int | None = option(None, "completion limit (default 1024; local: 20, label first)")
    response_format: ResponseFormat = option(
        "auto", "auto (step down when refused), json_schema, json_object, text"
    )
    top_logprobs: int = option(20, "alternatives asked per token for the label distribution")
    backoff: float = option(0.5, "seconds before the first retry (doubling after)")
    stop_after: int = option(8, "stop when this many items in a row fail (0: never)")
    label_first: bool | None = option(
        None, "ask for the label before the rationale (a short max_tokens suffices)"
    )
    price_in: float | None = option(None, "USD per 1M input tokens")
    price_out: float | None = option(None, "USD per 1M output tokens")
    api_key_env: str = option("OPENAI_API_KEY", "env var of the key")
    local: bool = option(False, "start a llama.cpp server with a local model and judge with it")
    gguf: Path | None = option(
        None, "local only: a GGUF model (default: the packaged Qwen2.5-1.5B)"
    )
    threads: int | None = option(None, "local only: CPU threads")
    n_ctx: int = option(4096, "local only: context window in tokens")
    replay: Path | None = option(None, "answer from recorded labels (no key)")
    replay_source: str = option("judge:gpt-4", "replay only: the source replayed")
    panel: Path | None = option(
        None,
        "a panel of judges (YAML list of {model, base_url, api_key_env}, or local or replay)",
    )
    panel_vote: PanelVote = option(
        "majority", "panel only: majority (of labels) or mean (of probs)"
    )
    panel_source: str = option("judge:panel", "panel only: the source of the panel's labels")

    def __post_init__(self) -> None:
        # each number's range, its open ends and its unit (one message for both faces)
        check_numbers(**{name: getattr(self, name) for name in NUMBERS})
        super().__post_init__()
        self._check_where()

    def _check_where(self) -> None:
        """Refuse the ways to reach a model that exclude each other."""
        if self.panel is not None and (
            self.model or self.base_url or self.replay is not None or self.local
        ):
            raise UsageError(
                "panel names each member's model and endpoint: give no model, base_url, "
                "replay or local",
                param="panel",
                also=("model", "base_url", "replay", "local"),
            )
        if self.local and (self.replay is not None or self.base_url):
            raise UsageError(
                "local starts its own server: give no base_url or replay",
                param="local",
                also=("base_url", "replay"),
            )
        if not self.local and (self.gguf is not None or self.threads is not None):
            raise UsageError(
                "gguf and threads go with local",
                param="gguf" if self.gguf is not None else "threads",
                also=("gguf", "threads", "local"),
            )
        if self.replay is not None and self.base_url:
            raise UsageError(
                "give either replay or base_url, not both", param="replay", also=("base_url",)
            )

    def check_runnable(self) -> None:
        """Refuse a config that names no model to judge with (a dry run needs none).

        Raises:
            UsageError: no ``model``, ``replay``, ``local`` or ``panel``.
        """
        if not (self.model or self.replay is not None or self.local or self.panel is not None):
            raise UsageError(
                "model is required (or replay LABELS.jsonl to answer from recorded labels, "
                "or local to judge on this machine)",
                param="model",
                also=("replay", "local"),
            )

    @property
    def prices(self) -> dict[str, float] | None:
        """``{"input": x, "output": y}`` in USD per 1M tokens; None when neither is set."""
        if self.price_in is None and self.price_out is None:
            return None
        return {"input": self.price_in or 0.0, "output": self.price_out or 0.0}

    def judge_options(self) -> dict[str, Any]:
        """The options a :class:`~tinyjudge.judge.Judge` calls with, every one set.

        A field left None takes :data:`LOCAL_DEFAULTS` under ``local``, else
        :data:`ENDPOINT_DEFAULTS`.
        """
        defaults = LOCAL_DEFAULTS if self.local else ENDPOINT_DEFAULTS
        options = {name: getattr(self, name) for name in CALL_FIELDS}
        return {k: defaults[k] if v is None and k in defaults else v for k, v in options.items()}
