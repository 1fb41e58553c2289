"""Tolerant verdict parsing: the model's output to a label of the rubric, or a reason why not.

Only the model's output is parsed, never the prompt. An output that is one JSON
object (what structured output gives) is that verdict, whatever its strings
quote. Otherwise the first complete verdict stands: a model that repeats a
verdict injected into the transcript after its own must not let the injection
win. A later verdict that names a different label is kept as ``ambiguous``
(counted in the run summary and shown on the label). A value that is not a
label of the rubric is never coerced into one. No output, however long, deep or
odd, raises: it gives a verdict or a :class:`ParseFailure`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Verdict",
    "ParseFailure",
    "parse_verdict",
    "normalize_label",
    "clean_text",
    "bound_text",
    "MAX_TEXT",
]

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
    ``ambiguous`` says so when the output holds a later verdict with a
    different label (the first one stands).
    """

    label: str
    rationale: str | None = None
    step: int | None = None
    hint_step: int | None = None
    hint_text: str | None = None
    label_span: tuple[int, int] | None = None
    ambiguous: str | None = None


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


# Bounds that keep any output linear to scan: JSON is decoded from a window at
# each "{" (a failed decode costs time in proportion to where it failed), and
# scanning gives up after so many places that were not JSON objects.
_WINDOW = 100_000
_MAX_MISSES = 1_000
_OBJECT_START = re.compile(r'\{\s*["}]')


def _json_objects(text: str) -> list[tuple[int, dict[str, Any]]]:
    """Every JSON object in ``text`` with its start offset, outermost only.

    An object nested too deep to decode is skipped whole (with every ``{`` in
    the run of brackets that opens it); an object longer than the window is not
    seen here (a whole-output object is read by :func:`_whole_object`).
    """
    dec = json.JSONDecoder()
    found: list[tuple[int, dict[str, Any]]] = []
    misses = 0
    m = _OBJECT_START.search(text)
    while m is not None and misses < _MAX_MISSES:
        i = m.start()
        window = text if len(text) - i <= _WINDOW else text[i : i + _WINDOW]
        base = 0 if window is text else i
        try:
            obj, end = dec.raw_decode(window, i - base)
        except ValueError:  # not JSON here; or an integer of thousands of digits
            misses += 1
            m = _OBJECT_START.search(text, i + 1)
            continue
        except RecursionError:
            misses += 1
            m = _OBJECT_START.search(text, _past_openers(text, i))
            continue
        if isinstance(obj, dict):
            found.append((i, obj))
        m = _OBJECT_START.search(text, base + end)
    return found


_OPENERS = re.compile(r'(?:[\s{\[,:]|"(?:[^"\\]|\\.){0,200}")*')


def _past_openers(text: str, i: int) -> int:
    """The offset after the run of openers, keys and separators starting at ``i``."""
    m = _OPENERS.match(text, i + 1)
    return max(m.end() if m else i + 1, i + 1)


def _whole_object(text: str) -> dict[str, Any] | None:
    """The output as one JSON object (fences allowed), or None."""
    body = text.strip()
    if body.startswith("```"):
        body = re.sub(r"^```[A-Za-z]*\s*|\s*```$", "", body)
    if not body.startswith("{"):
        return None
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


_KEYS = ("label", "verdict", "agent")
# What a verdict keeps of a model's free text (rationale, hint): a runaway
# completion must not become a runaway label file.
MAX_TEXT = 20_000


def _text(value: Any) -> str:
    """A rationale or hint as text, bounded to :data:`MAX_TEXT` characters."""
    return bound_text(value if isinstance(value, str) else _short(value, MAX_TEXT))


def bound_text(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" [... {len(text) - limit:,} more characters not kept]"


def _short(value: Any, limit: int = 80) -> str:
    """A repr of ``value`` for an error message: bounded, and safe for any value."""
    try:
        shown = repr(value)
    except (ValueError, RecursionError):  # a 5,000-digit int, a structure too deep
        shown = f"<{type(value).__name__}>"
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _ambiguity(label: str, later: list[Any], labels: list[str]) -> str | None:
    """A note when a later verdict names a label other than ``label``, else None."""
    for value in later:
        other = normalize_label(value, labels) if isinstance(value, str) else None
        if other != label:
            shown = repr(other) if other is not None else _short(value, 40)
            return f"a later verdict in the same answer says {shown}; the first ({label!r}) stands"
    return None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,18}\s*", value):
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

    An output that is one JSON object is that verdict. Otherwise JSON objects
    with a ``label`` (``verdict``, ``agent``) key are tried first, the first one
    standing; then ``label: x`` lines, the first standing; then an output that
    is nothing but a label. A later verdict with a different label marks the
    verdict ``ambiguous``. A label the rubric does not offer, an empty output or
    a missing/out-of-range step (for ``step`` rubrics) give a :class:`ParseFailure`.

    Args:
        output: the model's output text.
        labels: the allowed labels (for a ``step`` rubric: the item's agents).
        step: read ``step``, a 0-based message index.
        step_required: a verdict without ``step`` is a failure (default: ``step``).
        n_steps: the number of messages, to range-check steps.
        hint: read a ``hint`` (``{"step", "text"}`` or a string) as well.
    """
    if output is None or not isinstance(output, str) or not clean_text(output).strip():
        return ParseFailure("empty output")
    # Clean once so that spans refer to the cleaned text, which is also what
    # the logprob tokens are matched against (after the same cleaning).
    text = clean_text(output)
    whole = _whole_object(text)
    if whole is not None and any(k in whole for k in _KEYS):
        candidates = [(text.index("{"), whole)]
    else:
        candidates = [
            (pos, obj) for pos, obj in _json_objects(text) if any(k in obj for k in _KEYS)
        ]
    if candidates:
        pos, obj = candidates[0]
        key = next(k for k in _KEYS if k in obj)
        raw_label = obj[key]
        if not isinstance(raw_label, str):
            return ParseFailure(
                f"label {_short(raw_label)} is not a string; expected one of {labels}"
            )
        label = normalize_label(raw_label, labels)
        if label is None:
            return ParseFailure(f"label {_short(raw_label)} is not one of {labels}")
        step_value = _as_int(obj.get("step")) if step else None
        hint_step = hint_text = None
        if hint and obj.get("hint") is not None:
            h = obj["hint"]
            if isinstance(h, dict):
                hint_step, hint_text = _as_int(h.get("step")), h.get("text")
                hint_text = _text(hint_text) if hint_text else None
            else:
                hint_text = _text(h)
        rationale = obj.get("rationale")
        later = [o.get(next(k for k in _KEYS if k in o)) for _, o in candidates[1:]]
        verdict = Verdict(
            label=label,
            rationale=_text(rationale) if rationale is not None else None,
            step=step_value,
            hint_step=hint_step,
            hint_text=hint_text,
            label_span=_value_span(text, pos, key, raw_label),
            ambiguous=_ambiguity(label, later, labels),
        )
    else:
        matches = list(_LABEL_LINE.finditer(text))
        raw_label = matches[0].group(1) if matches else text
        label = normalize_label(raw_label, labels)
        if label is None:
            return ParseFailure(
                f"no verdict found: {_short(raw_label.strip())} is not one of {labels}"
            )
        steps = list(_STEP_LINE.finditer(text)) if step else []
        span = (matches[0].start(1), matches[0].end(1)) if matches else None
        verdict = Verdict(
            label=label,
            step=_as_int(steps[0].group(1)) if steps else None,
            label_span=span,
            ambiguous=_ambiguity(label, [m.group(1) for m in matches[1:]], labels),
        )
    if step_required is None:
        step_required = step
    if step:
        if verdict.step is None and step_required:
            return ParseFailure('the verdict has no integer "step"')
        if verdict.step is not None and n_steps is not None and not 0 <= verdict.step < n_steps:
            return ParseFailure(f"step {verdict.step} is out of range 0..{n_steps - 1}")
    return verdict
