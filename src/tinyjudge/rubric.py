"""Rubrics: versioned YAML descriptions of a behaviour and how to judge it.

A rubric's content hash goes into every label and every cache key, so changing
a single word of a criterion is visible downstream.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tinyjudge._atomic import atomic_writer
from tinyjudge._rubric_yaml import (
    MAX_RUBRIC_BYTES,
    MAX_RUBRIC_NODES,
    list_rubrics,
    locate_rubric,
    parse_bounded,
    read_bounded,
    rubric_dirs,
)
from tinyjudge.errors import RubricError

if TYPE_CHECKING:
    from tinyjudge.records import Item, Label

__all__ = [
    "Rubric",
    "LabelSpec",
    "Example",
    "Window",
    "RewardModelSpec",
    "ReferenceSpec",
    "VIEWS",
    "load_rubric",
    "list_rubrics",
    "rubric_dirs",
    "rubric_copy_name",
    "save_rubric_copy",
    "load_rubric_copy",
    "stored_rubric",
    "MAX_RUBRIC_BYTES",
    "MAX_RUBRIC_NODES",
]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LabelSpec(_Spec):
    """One label the judge may give, with what earns it."""

    name: str = Field(pattern=r"^[a-z0-9_]+$")
    description: str
    criteria: list[str] = Field(default_factory=list)


class Example(_Spec):
    """A worked example shown to the judge."""

    trajectory: str
    label: str
    rationale: str
    step: int | None = None
    hint: str | None = None


class Window(_Spec):
    """Which part of a long trajectory the judge sees.

    ``full`` shows everything up to ``max_tokens``; ``first_and_last`` shows
    the first user turn plus the last ``last_turns`` messages; ``around_step``
    and ``around_tool_errors`` show ``around`` messages either side of a flagged
    step (``metadata.flagged_step``) or of each failed tool call.
    """

    strategy: Literal["full", "first_and_last", "around_step", "around_tool_errors"] = "full"
    last_turns: int = Field(default=8, ge=1)
    around: int = Field(default=3, ge=0)
    max_tokens: int = Field(default=8000, ge=256)


# What a reward model may read of an item: the view's name, its context side and its reply
# side. The one table of views: the rubric's schema, distill, the CLI and docs/distill.md.
VIEWS: dict[str, tuple[str, str]] = {
    "window": (
        "everything up to the last user turn (the encoder keeps its end)",
        "what follows it",
    ),
    "answer": ("nothing (the references alone, when the model reads them)", "the last answer"),
    "first_user_last_answer": ("the first user turn (kept from its start)", "the last answer"),
    "first_user_first_last_answer": (
        "the first user turn and the first answer",
        "the last answer",
    ),
}

# ``from`` paths a reference may name: a key (or nested key) of the item's metadata.
_REFERENCE_PATH = re.compile(r"^metadata(\.[A-Za-z0-9_\-]+)+$")


class ReferenceSpec(_Spec):
    """An item field a grader is given beside the transcript (the correct answer, say).

    ``from`` is a dotted path into the item (``metadata.presupposition``); an item
    whose ``required`` reference is missing or empty is never judged blind.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(pattern=r"^[a-z0-9_]+$")
    from_: str = Field(alias="from")
    description: str = ""
    required: bool = True

    @field_validator("from_")
    @classmethod
    def _check_path(cls, path: str) -> str:
        if not _REFERENCE_PATH.match(path):
            raise ValueError(
                f"{path!r} is not an item field; a reference reads the item's metadata: "
                "metadata.KEY (or metadata.KEY.SUBKEY)"
            )
        return path


class RewardModelSpec(_Spec):
    """What a distilled reward model reads of an item, and its tiers' defaults.

    The judge always reads the whole dialogue (``window``); a small model may
    do better on less. ``view`` is one of :data:`VIEWS`: ``window`` (everything
    up to the last user turn, then the reply), ``answer`` (the last answer
    alone), ``first_user_last_answer`` (the first user turn, then the last
    assistant answer) or ``first_user_first_last_answer`` (the first user turn
    and the first answer, then the last answer). The last answer is the reply
    segment, which keeps its start and most of the token budget.

    ``references``: the rubric's references go on the context side of every
    tier, apart from the dialogue (see :meth:`Rubric.reference_text`).

    ``combine``: ``last`` scores the item's view as it is; ``worst_answer``
    scores every answer of the dialogue in the view (the item cut after each
    answer) and gives the item the distribution of its worst one (least mass on
    ``positive``), for labels that stay negative once they turn negative (a
    dialogue that caved stays caved). Such a model trains only on items whose
    label describes their own answer: an item is left out when an earlier
    labelled answer of the same dialogue is already negative.

    ``params``: per tier, options used when ``distill`` is not given them
    (e.g. ``encoder: {epochs: 3, max_length: 256}``).

    ``claims``: stock phrases that claim the rewarded behaviour without doing it
    ("I must respectfully disagree"), which ``tinyjudge exploit`` puts in front of
    answers: a list (claims of the ``positive`` labels) or a mapping from a label
    to its claims (``full_compliance: ["Sure, here is"]``).
    """

    view: str = Field(default="window", json_schema_extra={"enum": list(VIEWS)})
    combine: Literal["last", "worst_answer"] = "last"
    references: bool = False
    params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    claims: list[str] | dict[str, list[str]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_view(self) -> RewardModelSpec:
        if self.view not in VIEWS:
            raise ValueError(f"field view: {self.view!r} is not one of {list(VIEWS)}")
        return self

    def claims_for(self, label: str, positive: list[str]) -> list[str]:
        """The claims of ``label``: its own under a mapping, the list for a positive label."""
        if isinstance(self.claims, dict):
            return list(self.claims.get(label, []))
        return list(self.claims) if label in positive else []


class Rubric(_Spec):
    """A behaviour, its label set and how to judge it (see ``rubrics/*.yaml``)."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    version: str
    title: str
    behavior: str
    type: Literal["nominal", "ordinal", "pairwise", "step"] = "nominal"
    labels: list[LabelSpec] = Field(default_factory=list)
    positive: list[str] = Field(
        default_factory=list,
        description="labels whose summed probability is a label's scalar score",
    )
    examples: list[Example] = Field(default_factory=list)
    window: Window = Field(default_factory=Window)
    references: list[ReferenceSpec] = Field(default_factory=list)
    reward_model: RewardModelSpec = Field(default_factory=RewardModelSpec)
    hint: bool = False
    step: bool = False
    notes: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Rubric:
        names = self.label_names
        if self.type == "step":
            # The verdict names a step and the responsible agent of that item,
            # so the label set is open: agent names differ between trajectories.
            if names:
                raise ValueError(
                    'field labels: a "step" rubric has no fixed labels; the verdict is an '
                    "agent name"
                )
            self.step = True
        elif len(names) < 2:
            raise ValueError(
                f"field labels: a {self.type} rubric needs at least 2 labels, got {names}"
            )
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"field labels: label names are not unique: {dupes}")
        for i, ex in enumerate(self.examples):
            if self.type != "step" and ex.label not in names:
                raise ValueError(f"field examples.{i}.label: {ex.label!r} is not one of {names}")
        for p in self.positive:
            if p not in names:
                raise ValueError(f"field positive: {p!r} is not one of {names}")
        ref_names = [r.name for r in self.references]
        if len(set(ref_names)) != len(ref_names):
            raise ValueError(f"field references: reference names are not unique: {ref_names}")
        if isinstance(self.reward_model.claims, dict):
            for key in self.reward_model.claims:
                if key not in names:
                    raise ValueError(f"field reward_model.claims: {key!r} is not one of {names}")
        if self.reward_model.references and not self.references:
            raise ValueError("field reward_model.references: the rubric names no references")
        if self.reward_model.combine == "worst_answer" and (
            not self.positive or self.type in ("pairwise", "step")
        ):
            raise ValueError(
                "field reward_model.combine: worst_answer needs a nominal or ordinal rubric "
                "with positive labels (the worst answer is the one with least positive mass)"
            )
        return self

    @property
    def label_names(self) -> list[str]:
        return [spec.name for spec in self.labels]

    def __repr__(self) -> str:
        # a rubric travels inside models and results: their reprs name it, not its prose
        return f"Rubric(id={self.id!r}, version={self.version!r}, labels={self.label_names!r})"

    @property
    def hash(self) -> str:
        """Content hash (16 hex digits) of everything that defines the judging.

        ``reward_model`` is left out: what a small model reads does not change
        what the judge was asked, so its labels and cache entries stay valid.
        """
        spec = self.model_dump(mode="json", exclude={"reward_model"}, by_alias=True)
        if not spec["references"]:
            del spec["references"]  # rubrics without references keep the hash they had
        blob = json.dumps(spec, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def label_problem(self, label: Label) -> str | None:
        """Why ``label`` cannot be a verdict under this rubric, or None when it can.

        The label must name this rubric's id. An ``unscored`` label always can
        be a verdict: it holds no class. A ``step`` rubric's
        verdict is an agent name (an open set) and must name the ``step``.
        """
        if label.rubric != self.id:
            return f'label of rubric "{label.rubric}", not of rubric {self.id}'
        if label.status == "unscored":
            return None
        if self.type == "step":
            if label.label is not None and label.step is None:
                return f'label "{label.label}" names no "step", which rubric {self.id} needs'
            return None
        names = self.label_names
        allowed = f"is not one of {names} of rubric {self.id}"
        if label.label is not None and label.label not in names:
            return f'label "{label.label}" {allowed}'
        for key in label.probs or {}:
            if key not in names:
                return f'"probs" key "{key}" {allowed}'
        for order, verdict in (label.orders or {}).items():
            if self.type == "pairwise" and order not in ("ab", "ba"):
                return f"\"orders\" key \"{order}\" is not one of ['ab', 'ba']"
            if verdict is not None and verdict not in names:
                return f'"orders.{order}" verdict "{verdict}" {allowed}'
        return None

    def item_references(self, item: Item) -> dict[str, str]:
        """The item's references by name as text (JSON for a structured value); absent or
        empty ones are left out."""
        found = {ref.name: item.get(ref.from_) for ref in self.references}
        return {
            name: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            for name, value in found.items()
            if value not in (None, [], {}) and not (isinstance(value, str) and not value.strip())
        }

    def missing_references(self, item: Item) -> list[str]:
        """The names of the required references ``item`` lacks (an item is not judged blind)."""
        present = self.item_references(item)
        return [r.name for r in self.references if r.required and r.name not in present]

    def missing_reference_note(self, item: Item) -> str | None:
        """The required references ``item`` lacks, each with the field it is read from
        (``"false_premise" (metadata.presupposition)``); None when it has them all."""
        where = {r.name: r.from_ for r in self.references}
        missing = self.missing_references(item)
        return ", ".join(f'"{n}" ({where[n]})' for n in missing) if missing else None

    def reference_text(self, item: Item) -> str:
        """The item's references as the reward models read them: ``name: text`` blocks."""
        return "\n".join(f"{k}: {v}" for k, v in self.item_references(item).items())

    def score(self, probs: dict[str, float]) -> float | None:
        """The scalar score of a distribution: the mass on ``positive`` labels."""
        if not self.positive:
            return None
        return float(sum(probs.get(p, 0.0) for p in self.positive))

    def render(self) -> str:
        """The judge's instructions: behaviour, labels with criteria, examples."""
        lines = [f"# Rubric: {self.title} ({self.id} v{self.version})", "", self.behavior.strip()]
        lines += ["", "## Labels"]
        for spec in self.labels:
            lines.append(f"- `{spec.name}`: {spec.description.strip()}")
            lines += [f"    - {c.strip()}" for c in spec.criteria]
        if self.notes:
            lines += ["", "## Notes", self.notes.strip()]
        if self.examples:
            lines += ["", "## Worked examples"]
            for i, ex in enumerate(self.examples, 1):
                lines += [f"### Example {i}", ex.trajectory.strip(), f"Verdict: `{ex.label}`"]
                if ex.step is not None:
                    lines.append(f"Step: {ex.step}")
                lines.append(f"Why: {ex.rationale.strip()}")
                if ex.hint:
                    lines.append(f"Hint: {ex.hint.strip()}")
        return "\n".join(lines)


def load_rubric(name_or_path: str | os.PathLike[str] | Rubric) -> Rubric:
    """Load a built-in rubric by name, or any rubric YAML file by path.

    Raises:
        RubricError: the file is missing, not YAML, or invalid; the message
            names the file and the field path.
    """
    if isinstance(name_or_path, Rubric):
        return name_or_path
    path = locate_rubric(name_or_path)
    try:
        data = parse_bounded(path, read_bounded(path).decode("utf-8"))
    except UnicodeDecodeError as e:
        raise RubricError(f"{path}: not UTF-8 text (byte {e.start + 1})") from None
    except RecursionError:
        raise RubricError(f"{path}: not valid YAML (nested too deep)") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise RubricError(f"{where}: not valid YAML ({getattr(e, 'problem', e)})") from None
    if not isinstance(data, dict):
        raise RubricError(f"{path}: a rubric must be a YAML mapping")
    try:
        return Rubric.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        msg = first["msg"].removeprefix("Value error, ")
        if first["type"] == "missing":
            msg = "missing"
        elif first["type"] == "extra_forbidden" and len(first["loc"]) == 1:
            msg = f"unknown field (allowed: {sorted(Rubric.model_fields)})"
        elif first["type"] == "extra_forbidden":
            msg = "unknown field"
        elif first["type"] == "string_type" and isinstance(first.get("input"), dict):
            # The usual cause: "text: more text" unquoted reads as a mapping.
            msg += '; an unquoted ": " makes YAML read a mapping, so quote the text'
        elif first["type"] == "string_type" and isinstance(first.get("input"), (int, float)):
            # YAML reads `version: 1.10` as the number 1.1; only quotes keep the text.
            msg += f'; got the number {first["input"]!r}, so quote it ("{first["input"]}")'
        # Whole-rubric checks name their own field ("field labels: ...").
        where = f"{path}: field {loc}: " if loc else f"{path}: "
        raise RubricError(where + msg) from None


def rubric_copy_name(rubric: Rubric) -> str:
    """The file name of a rubric's stored copy: ``rubric.<hash>.yaml``."""
    return f"rubric.{rubric.hash}.yaml"


def save_rubric_copy(rubric: Rubric, folder: str | os.PathLike[str]) -> Path:
    """Store a copy of ``rubric`` in ``folder`` as ``rubric.<hash>.yaml`` (atomically).

    The copy is the whole rubric (its ``reward_model`` block too), so labels and
    model directories carry the rubric they were made under, wherever its YAML
    file was or goes. Returns the copy's path.
    """
    path = Path(folder) / rubric_copy_name(rubric)
    data = rubric.model_dump(mode="json", by_alias=True)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    if path.is_file() and path.read_bytes() == text.encode("utf-8"):
        return path
    with atomic_writer(path) as fh:  # a temporary name of its own: concurrent runs cannot collide
        fh.write(text)
    return path


def load_rubric_copy(path: str | os.PathLike[str], rubric_hash: str | None = None) -> Rubric:
    """Load a stored copy, checking its content against ``rubric_hash`` (default: its name's).

    Raises:
        RubricError: the file is not a valid rubric, or its content hash differs
            from the one recorded (the copy was edited).
    """
    p = Path(path)
    rubric = load_rubric(p)
    want = rubric_hash or p.name.removeprefix("rubric.").removesuffix(".yaml")
    if rubric.hash != want:
        raise RubricError(
            f"{p}: the rubric's hash is {rubric.hash}, not the {want} recorded for it; the "
            "copy was edited after it was stored: restore it"
        )
    return rubric


def stored_rubric(folder: str | os.PathLike[str], rubric_hash: str) -> Rubric | None:
    """The copy of the rubric with hash ``rubric_hash`` stored in ``folder``, if there is one.

    Raises:
        RubricError: the copy is there but its content no longer has that hash.
    """
    path = Path(folder) / f"rubric.{rubric_hash}.yaml"
    return load_rubric_copy(path, rubric_hash) if path.is_file() else None
