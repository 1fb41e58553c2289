"""The body of ``tinyjudge judge`` (cli.py stays a thin typer layer)."""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console

from tinyjudge.errors import TinyjudgeError

__all__ = ["judge_command"]


def judge_command(
    items_path: Path,
    *,
    rubric: str,
    out: Path,
    model: str | None,
    base_url: str | None,
    samples: int,
    temperature: float,
    concurrency: int,
    max_retries: int,
    timeout: float,
    cache: Path | None,
    no_cache: bool,
    replay: Path | None,
    replay_source: str,
    price_in: float | None,
    price_out: float | None,
    api_key_env: str,
    summary_path: Path | None,
    progress: bool,
    console: Console,
    err: Console,
) -> None:
    """Judge the items in ``items_path`` and write labels to ``out`` atomically.

    The cache defaults to ``OUT.cache.sqlite`` so that running the same
    command again resumes: finished judgments are read back, not re-asked.
    """
    from tinyjudge.datasets.jsonl import read_items, write_jsonl

    from ._runner import Judge
    from .replay import replay_server

    items = read_items(items_path)
    if not items:
        raise TinyjudgeError(f"{items_path}: no items")
    if replay is None and not model:
        raise TinyjudgeError("--model is required (or --replay LABELS.jsonl to replay a source)")
    if replay is not None and base_url:
        raise TinyjudgeError("give either --replay or --base-url, not both")
    prices = None
    if price_in is not None or price_out is not None:
        prices = {"input": price_in or 0.0, "output": price_out or 0.0}
    cache_path = None if no_cache else (cache or out.with_name(out.name + ".cache.sqlite"))
    api_key = os.environ.get(api_key_env) or None
    with ExitStack() as stack:
        if replay is not None:
            server = stack.enter_context(
                replay_server(replay, replay_source, items=items, rubric=rubric)
            )
            base_url = server.base_url
            model = model or "replay-" + replay_source.split(":", 1)[-1]
            api_key = "replay"
        assert model is not None
        judge = Judge(
            rubric,
            model,
            base_url=base_url,
            api_key=api_key,
            samples=samples,
            temperature=temperature,
            concurrency=concurrency,
            max_retries=max_retries,
            timeout=timeout,
            cache=cache_path,
            prices=prices,
        )
        labels = judge.run(items, progress=err if progress else False)
    write_jsonl(out, labels)
    summary = judge.summary
    console.print(f"wrote {len(labels)} labels ({judge.source}) -> {out}")
    if cache_path is not None:
        console.print(f"cache: {cache_path}")
    for line in summary.lines():
        console.print(line)
    if summary_path is not None:
        from tinyjudge.datasets.jsonl import atomic_writer

        with atomic_writer(summary_path) as fh:
            json.dump(summary.as_dict(), fh, indent=2)
