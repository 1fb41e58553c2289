"""SYCON-Bench (Hong et al., 2025), false-presupposition setting: push-back under pressure.

200 questions carrying a false premise, each followed by four scripted user
push-backs (``data/push_back.csv``), answered over five assistant turns by each
model (``output/<model>/prompt0.csv``). GPT-4o judged every answer
(``results/<model>/prompt0_result_all.csv``: 1 = still corrects the premise,
0 = has accepted it).

One item per assistant turn k: the dialogue up to and including answer k
(question, answer 1, push-back 1, ..., answer k), so a per-turn label judges
answer k in the context that produced it.
"""

from __future__ import annotations

from pathlib import Path

from tinyjudge.errors import DataError
from tinyjudge.records import Item, Label, Message

from ._common import Imported, SkipBad, read_csv_rows, require_file

__all__ = ["import_sycon", "SYCON_LABELS", "SYCON_TURNS"]

SYCON_LABELS = ("holds", "caves")
SYCON_TURNS = 5
_SOURCE = "judge:gpt-4o"
_RUBRIC = "pushback_under_pressure"
_VALUES = {"1": "holds", "0": "caves"}


def _root(src: Path) -> Path:
    """Accept the ``sycon`` folder or its ``false-presuppositions-setting`` inside."""
    inner = src / "false-presuppositions-setting"
    return inner if inner.is_dir() else src


def _read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _label(item_id: str, raw: str, rubric_hash: str | None) -> Label:
    value = _VALUES.get(raw.strip())
    if value is None:
        return Label(
            item_id=item_id,
            rubric=_RUBRIC,
            rubric_hash=rubric_hash,
            source=_SOURCE,
            status="unscored",
            raw=raw,
            reason="not a label: expected 1 (holds) or 0 (caves)",
        )
    return Label(
        item_id=item_id,
        rubric=_RUBRIC,
        rubric_hash=rubric_hash,
        source=_SOURCE,
        label=value,
        probs={value: 1.0},
    )


def import_sycon(src: Path, rubric_hash: str | None = None, skip_bad: bool = False) -> Imported:
    """Import every answering model's dialogues with GPT-4o's per-turn labels.

    Item ids are ``sycon:<model>:q<question>:t<turn>`` (question 1..200 in file
    order, turn 1..5). Metadata: ``question_id``, ``turn``, ``answering_model``,
    ``dialogue_id`` (the same for the five turns of one dialogue), and the
    dataset's ``presupposition`` and ``correction`` when present.

    Args:
        src: the ``sycon`` folder (or its ``false-presuppositions-setting``).
        rubric_hash: the ``pushback_under_pressure`` rubric's hash, stamped on labels.
        skip_bad: record bad rows and go on instead of raising at the first.
    """
    root = _root(src)
    push_path = require_file(root / "data" / "push_back.csv", "data/push_back.csv")
    pushbacks = [f"Pushback_{i}" for i in range(1, SYCON_TURNS)]
    push = [row for _, row in read_csv_rows(push_path, ["Question", *pushbacks])]
    premises = _read_lines(root / "data" / "presuppositions.txt")
    corrections = _read_lines(root / "data" / "corrections.txt")
    models = sorted(p.parent.name for p in (root / "output").glob("*/prompt0.csv"))
    if not models:
        raise DataError(str(root / "output"), None, "no <model>/prompt0.csv files")
    responses = [f"Response_{k}" for k in range(1, SYCON_TURNS + 1)]
    out = Imported()
    skip = SkipBad(skip_bad, out.bad)
    for model in models:
        answers_path = root / "output" / model / "prompt0.csv"
        results_path = root / "results" / model / "prompt0_result_all.csv"
        try:
            require_file(results_path, f"GPT-4o results for {model}")
        except DataError as e:
            skip(e)
            continue
        results = {
            row["Row"].strip(): (line, row)
            for line, row in read_csv_rows(results_path, ["Row", *responses])
        }
        for q, (line, row) in enumerate(read_csv_rows(answers_path, ["Question", *responses]), 1):
            with skip.record():
                _import_dialogue(
                    out,
                    model,
                    q,
                    line,
                    row,
                    push,
                    premises,
                    corrections,
                    results,
                    answers_path,
                    results_path,
                    rubric_hash,
                )
    return out


def _import_dialogue(
    out: Imported,
    model: str,
    q: int,
    line: int,
    row: dict[str, str],
    push: list[dict[str, str]],
    premises: list[str],
    corrections: list[str],
    results: dict[str, tuple[int, dict[str, str]]],
    answers_path: Path,
    results_path: Path,
    rubric_hash: str | None,
) -> None:
    question = row["Question"]
    if q > len(push):
        raise DataError(str(answers_path), line, f"question {q} has no row in push_back.csv")
    if push[q - 1]["Question"].strip() != question.strip():
        raise DataError(
            str(answers_path),
            line,
            f"question {q} differs from push_back.csv row {q}: {question[:60]!r}",
        )
    if str(q) not in results:
        raise DataError(str(results_path), None, f"no row {q} for question {q!r} of {model}")
    _, verdicts = results[str(q)]
    dialogue_id = f"sycon:{model}:q{q}"
    messages = [Message(role="user", content=question)]
    for k in range(1, SYCON_TURNS + 1):
        if k > 1:
            messages.append(Message(role="user", content=push[q - 1][f"Pushback_{k - 1}"]))
        messages.append(Message(role="assistant", content=row[f"Response_{k}"]))
        item_id = f"{dialogue_id}:t{k}"
        metadata: dict[str, object] = {
            "question_id": q,
            "turn": k,
            "answering_model": model,
            "dialogue_id": dialogue_id,
        }
        if q <= len(premises):
            metadata["presupposition"] = premises[q - 1]
        if q <= len(corrections):
            metadata["correction"] = corrections[q - 1]
        out.items.append(Item(id=item_id, messages=list(messages), metadata=metadata))
        out.labels.append(_label(item_id, verdicts[f"Response_{k}"], rubric_hash))
