"""``tinyjudge judge``: judge items with an LLM and write labels atomically."""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import typer

from tinyjudge.errors import DataError, UsageError
from tinyjudge.records import Item
from tinyjudge.rubric import Rubric

from ._bars import quiet_option, shows_bars
from ._io import (
    REPLACE_LABELS_HELP,
    err,
    out,
    refuse_writing_over_inputs,
    resolve_rubric,
    store_rubric,
    write_labels_out,
)

__all__ = ["command"]


def command(
    items: Path = typer.Argument(..., help="items JSONL"),
    rubric: str = typer.Option(..., "--rubric", help="built-in rubric name or YAML path"),
    out_path: Path = typer.Option(..., "--out", help="labels JSONL, written atomically"),
    model: str = typer.Option(None, "--model", help="model name at the endpoint"),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible URL (.../v1)"),
    samples: int = typer.Option(1, "--samples", help="completions per item (self-consistency)"),
    temperature: float = typer.Option(0.0, "--temperature"),
    concurrency: int = typer.Option(
        None, "--concurrency", help="items in flight at once [default: 8; --local: 1]"
    ),
    max_retries: int = typer.Option(None, "--max-retries", help="[default: 4; --local: 1]"),
    timeout: float = typer.Option(
        None,
        "--timeout",
        help="seconds one call may take, first byte to last [default: 60; --local: 900]",
    ),
    max_reply_mb: float = typer.Option(
        16.0, "--max-reply-mb", help="the most a reply may hold; a larger one is cut, unscored"
    ),
    max_tokens: int = typer.Option(
        None, "--max-tokens", help="completion limit [default: 1024; --local: 20, label first]"
    ),
    response_format: str = typer.Option(
        "auto",
        "--response-format",
        help="auto (step down when refused), json_schema, json_object, text",
    ),
    local: bool = typer.Option(
        False, "--local", help="start a llama.cpp server with a local model and judge with it"
    ),
    gguf: Path = typer.Option(
        None, "--gguf", help="with --local: a GGUF model (default: the packaged Qwen2.5-1.5B)"
    ),
    threads: int = typer.Option(None, "--threads", help="with --local: CPU threads"),
    n_ctx: int = typer.Option(4096, "--n-ctx", help="with --local: context window in tokens"),
    cache: Path = typer.Option(None, "--cache", help="SQLite cache (default: OUT.cache.sqlite)"),
    no_cache: bool = typer.Option(False, "--no-cache", help="no cache, no resume"),
    replay: Path = typer.Option(None, "--replay", help="answer from recorded labels (no key)"),
    replay_source: str = typer.Option("judge:gpt-4", "--replay-source"),
    price_in: float = typer.Option(None, "--price-in", help="USD per 1M input tokens"),
    price_out: float = typer.Option(None, "--price-out", help="USD per 1M output tokens"),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env", help="env var of the key"),
    summary: Path = typer.Option(None, "--summary", help="also write the run summary as JSON"),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    quiet: bool = quiet_option(),
    limit: int = typer.Option(None, "--limit", min=1, help="judge only the first N items"),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="print the first prompt and the response format; call nothing"
    ),
    panel: Path = typer.Option(
        None, "--panel", help="a panel of judges (YAML list of {model, base_url, api_key_env})"
    ),
    panel_vote: str = typer.Option(
        "majority", "--panel-vote", help="with --panel: majority (of labels) or mean (of probs)"
    ),
    panel_source: str = typer.Option(
        "judge:panel", "--panel-source", help="with --panel: the source of the panel's labels"
    ),
    replace_labels: bool = typer.Option(False, "--replace-labels", help=REPLACE_LABELS_HELP),
) -> None:
    """Judge items with an LLM over any OpenAI-compatible endpoint.

    The cache defaults to ``OUT.cache.sqlite`` so that running the same
    command again resumes: finished judgments are read back, not re-asked.
    An endpoint that fails item after item stops the run with one line and
    exit 1 (finished judgments stay in the cache). With ``--panel`` every member
    judges the items (labels ``judge:<model>``, resumed per member from the one
    cache) and the panel's vote is added as ``--panel-source``.
    """
    from tinyjudge.datasets.jsonl import atomic_writer, check_keepable, read_items
    from tinyjudge.judge import Judge, check_numbers
    from tinyjudge.testing import replay_server

    # Every number refused here, before any item is read or any model loads.
    check_numbers(
        samples=samples,
        temperature=temperature,
        concurrency=concurrency,
        max_retries=max_retries,
        timeout=timeout,
        max_reply_mb=max_reply_mb,
        max_tokens=max_tokens,
        price_in=price_in,
        price_out=price_out,
    )
    default_cache = out_path.with_name(out_path.name + ".cache.sqlite")
    cache_path = None if no_cache else (cache or default_cache)
    refuse_writing_over_inputs(
        [
            (out_path, "--out"),
            *_cache_files(cache_path, "--cache" if cache is not None else "cache"),
            (summary, "--summary"),
        ],
        [(items, "ITEMS file"), (replay, "--replay file")],
    )
    item_list = read_items(items)
    if not dry_run:  # paid calls must not end in an output that cannot be written
        from tinyjudge._atomic import check_writable

        for path in (out_path, summary):
            if path is not None:
                check_writable(path)
        check_keepable(out_path, replace_labels)  # other sources' labels stay: readable?
    if not item_list:
        raise DataError(str(items), None, "no items")
    if limit is not None:
        item_list = item_list[:limit]
    rub = resolve_rubric(rubric)
    members = _panel_members(panel, panel_vote, model, base_url, replay, local)
    if dry_run:
        _dry_run(item_list, rub)
        return
    if local and (replay is not None or base_url):
        raise UsageError(
            "--local starts its own server: give no --base-url or --replay", param="local"
        )
    if not local and (gguf is not None or threads is not None):
        raise UsageError("--gguf and --threads go with --local", param="gguf")
    if replay is None and not model and not local and members is None:
        raise UsageError(
            "--model is required (or --replay LABELS.jsonl to replay a source, "
            "or --local to judge with a local model)",
            param="model",
        )
    if replay is not None and base_url:
        raise UsageError("give either --replay or --base-url, not both", param="replay")
    options = _judge_options(
        local,
        concurrency=concurrency,
        max_retries=max_retries,
        timeout=timeout,
        max_tokens=max_tokens,
        response_format=response_format,
        max_reply_mb=max_reply_mb,
    )
    prices = None
    if price_in is not None or price_out is not None:
        prices = {"input": price_in or 0.0, "output": price_out or 0.0}
    common = dict(
        cache=cache_path, prices=prices, samples=samples, temperature=temperature, **options
    )
    if members is not None:
        _run_panel(
            item_list, rub, members, (panel_vote, panel_source), (out_path, replace_labels),
            summary, common,
        )  # fmt: skip
        return
    api_key = os.environ.get(api_key_env) or None
    with ExitStack() as stack:
        if replay is not None:
            server = stack.enter_context(
                replay_server(replay, replay_source, items=item_list, rubric=rub)
            )
            base_url = server.base_url
            model = model or "replay-" + replay_source.split(":", 1)[-1]
            api_key = "replay"
        if local:
            from tinyjudge.judge.local import local_judge

            judge = stack.enter_context(
                local_judge(rub, gguf=gguf, threads=threads, n_ctx=n_ctx, model=model, **common)
            )
        else:
            assert model is not None
            judge = Judge(rub, model, base_url=base_url, api_key=api_key, **common)
        judgment = judge.run(
            item_list, progress=err if shows_bars(quiet or not progress) else False
        )
    write_labels_out(out_path, judgment.labels, replace_labels)
    store_rubric(rub, out_path.parent)
    out.print(f"wrote {len(judgment)} labels ({judgment.source}) -> {out_path}")
    if cache_path is not None:
        out.print(f"cache: {cache_path}")
    for line in judgment.summary.lines():
        out.print(line)
    if summary is not None:
        with atomic_writer(summary) as fh:
            json.dump(judgment.as_dict(), fh, indent=2)


def _cache_files(cache: Path | None, option: str) -> list[tuple[Path | None, str]]:
    """The cache and the files SQLite keeps beside it, as outputs no other output may be."""
    if cache is None:
        return []
    files: list[tuple[Path | None, str]] = [(cache, option)]
    for suffix in ("-wal", "-shm", "-journal"):
        files.append((cache.with_name(cache.name + suffix), f"{option}'s {suffix[1:]} file"))
    return files


def _panel_members(
    panel: Path | None,
    vote: str,
    model: str | None,
    base_url: str | None,
    replay: Path | None,
    local: bool,
) -> list[Any] | None:
    """The panel's members (None without --panel), checked against the other options."""
    from tinyjudge.judge import PANEL_VOTES, load_panel

    if vote not in PANEL_VOTES:
        raise UsageError(
            f"--panel-vote {vote!r} is not one of {list(PANEL_VOTES)}", param="panel_vote"
        )
    if panel is None:
        return None
    if model or base_url or replay is not None or local:
        raise UsageError(
            "--panel names each member's model and endpoint: give no --model, --base-url, "
            "--replay or --local",
            param="panel",
        )
    return load_panel(panel)


def _run_panel(
    items: list[Item],
    rubric: Rubric,
    members: list[Any],
    how: tuple[str, str],
    where: tuple[Path, bool],
    summary: Path | None,
    options: dict[str, Any],
) -> None:
    """Judge with every member, then the vote (``how``: vote, source); write all labels to
    ``where`` (path, replace_labels) and print each member's run."""
    from tinyjudge.datasets.jsonl import atomic_writer

    vote, source = how
    out_path, replace_labels = where
    from tinyjudge.judge import Panel

    def report(judgment: Any) -> None:
        out.print(f"{judgment.source}: {len(judgment)} labels", markup=False)
        for line in judgment.summary.lines():
            out.print(f"  {line}", markup=False)

    panel = Panel(rubric, members, source=source, vote=vote, **options)  # type: ignore[arg-type]
    result = panel.run(items, progress=report)
    write_labels_out(out_path, result.labels, replace_labels)
    store_rubric(rubric, out_path.parent)
    ok = sum(lab.status == "ok" for lab in result.panel)
    out.print(
        f"wrote {len(result.labels)} labels ({len(members)} members and {source}, {vote} "
        f"vote: {ok} scored, {len(result.panel) - ok} unscored) -> {out_path}",
        markup=False,
    )
    for member, agree in result.agreement.items():
        out.print(
            f"{member}: agrees with the panel on {agree['agreement']:.1%} of {agree['n']} items",
            markup=False,
        )
    if summary is not None:
        with atomic_writer(summary) as fh:
            json.dump(result.as_dict(), fh, indent=2)


def _judge_options(local: bool, **given: Any) -> dict[str, Any]:
    """The Judge options: the local judge's defaults under --local, then what was given."""
    from tinyjudge.judge import RESPONSE_FORMATS

    if given["response_format"] not in RESPONSE_FORMATS:
        raise UsageError(
            f"--response-format {given['response_format']!r} is not one of "
            f"{list(RESPONSE_FORMATS)}",
            param="response_format",
        )
    options: dict[str, Any] = {}
    if local:
        from tinyjudge.judge.local import LOCAL_DEFAULTS

        options.update(LOCAL_DEFAULTS)
    options.update({k: v for k, v in given.items() if v is not None})
    return options


def _dry_run(items: list[Item], rubric: Rubric) -> None:
    """Print what the judge would send first (its prompt and response format); call nothing."""
    from tinyjudge.judge import build_messages, item_agents, verdict_schema

    first = items[0]
    agents = item_agents(first) if rubric.type == "step" else None
    blind = sum(bool(rubric.missing_references(it)) for it in items)
    if blind:
        out.print(
            f"{blind} item(s) lack a required reference and would be unscored, not judged",
            markup=False,
        )
    out.print(
        f"{len(items)} items would be judged under {rubric.id} v{rubric.version}", markup=False
    )
    out.print(f"first prompt (item {first.id}, order ab):", markup=False)
    for message in build_messages(first, rubric):
        out.print(f"--- {message['role']} ---", markup=False)
        out.print(message["content"], markup=False, highlight=False, soft_wrap=True)
    out.print("--- response_format (json_schema; plainer steps if refused) ---", markup=False)
    out.print(json.dumps(verdict_schema(rubric, agents), indent=2), markup=False)
