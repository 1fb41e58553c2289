"""Tolerant verdict parsing: the model's output to a label of the rubric, or a reason why not.

Only the model's output is parsed, never the prompt. When the output holds more
than one verdict (a model that changes its mind), the last one wins. A value
that is not a label of the rubric is never coerced into one.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

__all__ = ["Verdict", "ParseFailure", "parse_verdict", "normalize_label", "clean_text"]

_INVISIBLE = dict.fromkeys(
    [*range(0x200B, 0x2010), 0x00AD, 0x034F, 0x061C, 0x180E, *range(0x2060, 0x2065), 0xFEFF]
)
# "label": "x" / label = x / Label: **x**, for output that is not JSON.
_LABEL_LINE = re.compile(
    r"""(?:^|[\s{,*"'])(?:label|verdict|answer)\s*["'*]*\s*[:=]\s*["'`*]*\s*"""
    r"""([A-Za-z0-9 _\-]+?)["'`*]*[ \t]*(?=[,}\n]|$)""",
    re.IGNORECASE | re.MULTILINE,
)
_STEP_LINE = re.compile(
    r"""(?:^|[\s{,*"'])step\s*["'*]*\s*[:=]\s*["'*]*\s*(-?\d+)""", re.IGNORECASE
)


@dataclass(frozen=True)
class Verdict:
    """A parsed verdict: a label of the rubric and what came with it.

    ``label_span`` is the (start, end) character span of the label value in
    the output, used to find the label's tokens among the logprobs.
    """

    label: str
    rationale: str | None = None
    step: int | None = None
    hint_step: int | None = None
    hint_text: str | None = None
    label_span: tuple[int, int] | None = None


@dataclass(frozen=True)
class ParseFailure:
    """Output that could not be read as a label of the rubric, and why."""

    reason: str


def clean_text(text: str) -> str:
    """NFKC-normalize and drop zero-width and other invisible characters."""
    return unicodedata.normalize("NFKC", text).translate(_INVISIBLE)


def normalize_label(value: str, allowed: list[str]) -> str | None:
    """Map a written label onto one of ``allowed``, or None.

    Case, surrounding quotes/backticks, spaces vs underscores and a numeric
    prefix (``2_full_refusal``, ``2. full refusal``) are forgiven; ``Response A`` /
    ``Output (b)`` name pairwise labels ``a``/``b``. Anything else is not a label.
    """
    v = clean_text(value).strip().strip("`'\"*.").strip().lower()
    v = re.sub(r"[\s\-]+", "_", v)
    lookup = {a.lower(): a for a in allowed}
    if v in lookup:
        return lookup[v]
    stripped = re.sub(r"^\d+[_.):]*_*", "", v)
    if stripped in lookup:
        return lookup[stripped]
    m = re.fullmatch(r"(?:response|output|assistant)_*\(?([a-z])\)?", v)
    if m and m.group(1) in lookup:
        return lookup[m.group(1)]
    return None


def _json_objects(text: str) -> list[tuple[int, dict[str, Any]]]:
    """Every JSON object in ``text`` with its start offset, outermost only."""
    dec = json.JSONDecoder()
    found: list[tuple[int, dict[str, Any]]] = []
    i = text.find("{")
    while i != -1:
        try:
            obj, end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            found.append((i, obj))
        i = text.find("{", end)
    return found


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def _value_span(text: str, start: int, key: str, value: str) -> tuple[int, int] | None:
    m = re.compile(rf'"{key}"\s*:\s*"').search(text, start)
    if not m:
        return None
    at = text.find(value, m.end())
    return (at, at + len(value)) if at == m.end() else None


def parse_verdict(
    output: str | None,
    labels: list[str],
    *,
    step: bool = False,
    step_required: bool | None = None,
    n_steps: int | None = None,
    hint: bool = False,
) -> Verdict | ParseFailure:
    """Read a verdict from the model's output.

    JSON objects with a ``label`` (or ``verdict``) key are tried first, the
    last one winning; then ``label: x`` lines; then an output that is nothing
    but a label. A label the rubric does not offer, an empty output or a
    missing/out-of-range step (for ``step`` rubrics) give a :class:`ParseFailure`.

    Args:
        output: the model's output text.
        labels: the allowed labels (for a ``step`` rubric: the item's agents).
        step: read ``step``, a 0-based message index.
        step_required: a verdict without ``step`` is a failure (default: ``step``).
        n_steps: the number of messages, to range-check steps.
        hint: read a ``hint`` (``{"step", "text"}`` or a string) as well.
    """
    if output is None or not clean_text(output).strip():
        return ParseFailure("empty output")
    # Clean once so that spans refer to the cleaned text, which is also what
    # the logprob tokens are matched against (after the same cleaning).
    text = output
    cleaned = clean_text(text)
    if cleaned != text:
        text = cleaned
    candidates = [
        (pos, obj)
        for pos, obj in _json_objects(text)
        if any(k in obj for k in ("label", "verdict", "agent"))
    ]
    if candidates:
        pos, obj = candidates[-1]
        key = next(k for k in ("label", "verdict", "agent") if k in obj)
        raw_label = obj[key]
        if not isinstance(raw_label, str):
            return ParseFailure(f"label {raw_label!r} is not a string; expected one of {labels}")
        label = normalize_label(raw_label, labels)
        if label is None:
            return ParseFailure(f"label {raw_label!r} is not one of {labels}")
        step_value = _as_int(obj.get("step")) if step else None
        hint_step = hint_text = None
        if hint and obj.get("hint") is not None:
            h = obj["hint"]
            if isinstance(h, dict):
                hint_step, hint_text = _as_int(h.get("step")), h.get("text")
                hint_text = str(hint_text) if hint_text else None
            else:
                hint_text = str(h)
        rationale = obj.get("rationale")
        verdict = Verdict(
            label=label,
            rationale=str(rationale) if rationale is not None else None,
            step=step_value,
            hint_step=hint_step,
            hint_text=hint_text,
            label_span=_value_span(text, pos, key, raw_label),
        )
    else:
        matches = list(_LABEL_LINE.finditer(text))
        raw_label = matches[-1].group(1) if matches else text
        label = normalize_label(raw_label, labels)
        if label is None:
            shown = raw_label.strip()[:80]
            return ParseFailure(f"no verdict found: {shown!r} is not one of {labels}")
        steps = list(_STEP_LINE.finditer(text)) if step else []
        span = (matches[-1].start(1), matches[-1].end(1)) if matches else None
        verdict = Verdict(
            label=label, step=int(steps[-1].group(1)) if steps else None, label_span=span
        )
    if step_required is None:
        step_required = step
    if step:
        if verdict.step is None and step_required:
            return ParseFailure('the verdict has no integer "step"')
        if verdict.step is not None and n_steps is not None and not 0 <= verdict.step < n_steps:
            return ParseFailure(f"step {verdict.step} is out of range 0..{n_steps - 1}")
    return verdict
