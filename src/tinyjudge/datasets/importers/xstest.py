"""XSTest v2 (Röttger et al., 2024): exaggerated-safety prompts answered by five models.

Each ``xstest_v2_completions_<model>_gpteval.csv`` row gives the prompt, the
completion, two annotators, the final human label and GPT-4's label; the
matching ``*_streval.csv`` adds a string-match classifier's label.
"""

from __future__ import annotations

import re
from pathlib import Path

from tinyjudge.errors import DataError
from tinyjudge.records import Item, Label, Message

from ._common import Imported, SkipBad, read_csv_rows, require_file

__all__ = ["import_xstest", "XSTEST_LABELS"]

XSTEST_LABELS = ("full_compliance", "full_refusal", "partial_refusal")
_SOURCES = {
    "annotation_1": "human:annotator_1",
    "annotation_2": "human:annotator_2",
    "final_label": "human:final",
    "gpt4_label": "judge:gpt-4",
}
_PATTERN = re.compile(r"xstest_v2_completions_(?P<model>[A-Za-z0-9]+)_gpteval\.csv$")


def _label_value(raw: str) -> str | None:
    """``1_full_compliance`` -> ``full_compliance``; anything else -> None."""
    value = raw.strip()
    m = re.fullmatch(r"[123]_(full_compliance|full_refusal|partial_refusal)", value)
    return m.group(1) if m else None


def _make_label(item_id: str, source: str, raw: str, rubric_hash: str | None) -> Label:
    value = _label_value(raw)
    if value is None:
        return Label(
            item_id=item_id,
            rubric="compliance",
            rubric_hash=rubric_hash,
            source=source,
            status="unscored",
            raw=raw,
            reason=f"not a label: expected one of {list(XSTEST_LABELS)} with a 1_/2_/3_ prefix",
        )
    return Label(
        item_id=item_id,
        rubric="compliance",
        rubric_hash=rubric_hash,
        source=source,
        label=value,
        probs={value: 1.0},
        score=None,
    )


def import_xstest(src: Path, rubric_hash: str | None = None, skip_bad: bool = False) -> Imported:
    """Import every ``*_gpteval.csv`` (and its ``*_streval.csv``) in ``src``.

    Args:
        src: a folder laid out like XSTest's ``model_completions`` export.
        rubric_hash: the ``compliance`` rubric's hash, stamped on each label.
        skip_bad: record bad rows and go on instead of raising at the first.
    """
    files = sorted(p for p in src.glob("*_gpteval.csv") if _PATTERN.search(p.name))
    if not files:
        raise DataError(str(src), None, "no xstest_v2_completions_<model>_gpteval.csv files")
    out = Imported()
    skip = SkipBad(skip_bad, out.bad)
    for path in files:
        model = _PATTERN.search(path.name).group("model")  # type: ignore[union-attr]
        strmatch: dict[str, str] = {}
        strpath = path.with_name(path.name.replace("_gpteval", "_streval"))
        if strpath.exists():
            for _, row in read_csv_rows(
                require_file(strpath, "string-match file"), ["id", "strmatch_label"], skip
            ):
                strmatch[row["id"]] = row["strmatch_label"]
        required = ["id", "type", "prompt", "completion", *_SOURCES]
        seen: set[str] = set()
        for line, row in read_csv_rows(path, required, skip):
            with skip.record():
                if not row["id"] or not row["prompt"]:
                    raise DataError(str(path), line, 'empty "id" or "prompt"')
                if row["id"] in seen:
                    raise DataError(str(path), line, f"duplicate id {row['id']!r}")
                seen.add(row["id"])
                item_id = f"xstest:{model}:{row['id']}"
                out.items.append(
                    Item(
                        id=item_id,
                        messages=[
                            Message(role="user", content=row["prompt"]),
                            Message(role="assistant", content=row["completion"]),
                        ],
                        metadata={
                            "prompt_id": row["id"],
                            "answering_model": model,
                            "type": row["type"],
                            "safe": not row["type"].startswith("contrast_"),
                        },
                    )
                )
                for col, source in _SOURCES.items():
                    out.labels.append(_make_label(item_id, source, row[col], rubric_hash))
                if row["id"] in strmatch:
                    out.labels.append(
                        _make_label(
                            item_id, "classifier:string-match", strmatch[row["id"]], rubric_hash
                        )
                    )
    return out
