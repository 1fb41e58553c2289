"""``tinyjudge judge``: judge items with an LLM and write labels atomically.

The judge's options are :class:`~tinyjudge.judge.JudgeConfig`'s fields, one flag
each (``max_reply_mb`` -> ``--max-reply-mb``); which of them conflict, and the local
judge's defaults, are the config's. This verb reads and writes the files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from tinyjudge.errors import DataError
from tinyjudge.judge import JudgeConfig
from tinyjudge.records import Item
from tinyjudge.rubric import Rubric

from ._bars import bar_console, quiet_option
from ._config_flags import config_flags
from ._io import (
    REPLACE_LABELS_HELP,
    out,
    refuse_writing_over_inputs,
    resolve_rubric,
    write_labels_out,
)

__all__ = ["command"]

# library options with no flag: a command-line run keeps their defaults
LIBRARY_ONLY = ("top_logprobs", "backoff", "stop_after", "label_first")


@config_flags(JudgeConfig, skip=LIBRARY_ONLY)
def command(
    items: Path = typer.Argument(..., help="items JSONL"),
    rubric: str = typer.Option(..., "--rubric", help="built-in rubric name or YAML path"),
    out_path: Path = typer.Option(..., "--out", help="labels JSONL, written atomically"),
    cache: Path = typer.Option(None, "--cache", help="SQLite cache (default: OUT.cache.sqlite)"),
    no_cache: bool = typer.Option(False, "--no-cache", help="no cache, no resume"),
    summary: Path = typer.Option(None, "--summary", help="also write the run summary as JSON"),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
    quiet: bool = quiet_option(),
    limit: int = typer.Option(None, "--limit", min=1, help="judge only the first N items"),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="print the first prompt and the response format; call nothing"
    ),
    replace_labels: bool = typer.Option(False, "--replace-labels", help=REPLACE_LABELS_HELP),
    *,
    config: JudgeConfig,
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
    from tinyjudge.judge import PanelJudgment, run_judge

    default_cache = out_path.with_name(out_path.name + ".cache.sqlite")
    cache_path = None if no_cache else (cache or default_cache)
    refuse_writing_over_inputs(
        [
            (out_path, "--out"),
            *_cache_files(cache_path, "--cache" if cache is not None else "cache"),
            (summary, "--summary"),
        ],
        [(items, "ITEMS file"), (config.replay, "--replay file")],
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
    if config.panel is not None:
        from tinyjudge.judge import load_panel

        load_panel(config.panel)  # a bad panel file is refused before a dry run too
    if dry_run:
        _dry_run(item_list, rub)
        return
    result = run_judge(
        item_list, rub, config, cache=cache_path, on_member=_print_member,
        progress=bar_console(quiet or not progress),
    )  # fmt: skip
    write_labels_out(out_path, result.labels, replace_labels, rub)
    if isinstance(result, PanelJudgment):
        _print_panel(result, config, out_path)
    else:
        out.print(f"wrote {len(result)} labels ({result.source}) -> {out_path}")
        if cache_path is not None:
            out.print(f"cache: {cache_path}")
        for line in result.summary.lines():
            out.print(line)
    if summary is not None:
        with atomic_writer(summary) as fh:
            json.dump(result.as_dict(), fh, indent=2)


def _cache_files(cache: Path | None, option: str) -> list[tuple[Path | None, str]]:
    """The cache and the files SQLite keeps beside it, as outputs no other output may be."""
    if cache is None:
        return []
    files: list[tuple[Path | None, str]] = [(cache, option)]
    for suffix in ("-wal", "-shm", "-journal"):
        files.append((cache.with_name(cache.name + suffix), f"{option}'s {suffix[1:]} file"))
    return files


def _print_member(judgment: Any) -> None:
    """A panel member's run, as it finishes."""
    out.print(f"{judgment.source}: {len(judgment)} labels", markup=False)
    for line in judgment.summary.lines():
        out.print(f"  {line}", markup=False)


def _print_panel(result: Any, config: JudgeConfig, out_path: Path) -> None:
    """The panel's vote: how many items it scored, and how often each member agrees."""
    ok = sum(lab.status == "ok" for lab in result.panel)
    out.print(
        f"wrote {len(result.labels)} labels ({len(result.members)} members and "
        f"{config.panel_source}, {config.panel_vote} vote: {ok} scored, "
        f"{len(result.panel) - ok} unscored) -> {out_path}",
        markup=False,
    )
    for member, agree in result.agreement.items():
        out.print(
            f"{member}: agrees with the panel on {agree['agreement']:.1%} of {agree['n']} items",
            markup=False,
        )


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
