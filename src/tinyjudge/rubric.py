"""Rubrics: versioned YAML descriptions of a behaviour and how to judge it.

A rubric's content hash goes into every label and every cache key, so changing
a single word of a criterion is visible downstream.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tinyjudge._atomic import atomic_writer
from tinyjudge.errors import RubricError, TinyjudgeError

if TYPE_CHECKING:
    from tinyjudge.records import Label

__all__ = [
    "Rubric",
    "LabelSpec",
    "Example",
    "Window",
    "RewardModelSpec",
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

# A rubric is prose and a few worked examples: these bounds are far above any real one,
# and keep a hostile file (a YAML alias bomb expands 3.5 KB into billions of nodes)
# from taking the machine's memory.
MAX_RUBRIC_BYTES = 1 << 20
MAX_RUBRIC_NODES = 100_000


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


class RewardModelSpec(_Spec):
    """What a distilled reward model reads of an item, and its tiers' defaults.

    The judge always reads the whole dialogue (``window``); a small model may
    do better on less. ``view``: ``window`` (everything up to the last user turn,
    then the reply), ``first_user_last_answer`` (the first user turn, then the
    last assistant answer) or ``first_user_first_last_answer`` (the first user
    turn and the first answer, then the last answer). The last answer is the
    reply segment, which keeps its start and most of the token budget.

    ``combine``: ``last`` scores the item's view as it is; ``worst_answer``
    scores every answer of the dialogue in the view (the item cut after each
    answer) and gives the item the distribution of its worst one (least mass on
    ``positive``), for labels that stay negative once they turn negative (a
    dialogue that caved stays caved). Such a model trains only on items whose
    label describes their own answer: an item is left out when an earlier
    labelled answer of the same dialogue is already negative.

    ``params``: per tier, options used when ``distill`` is not given them
    (e.g. ``encoder: {epochs: 3, max_length: 256}``).
    """

    view: Literal["window", "first_user_last_answer", "first_user_first_last_answer"] = "window"
    combine: Literal["last", "worst_answer"] = "last"
    params: dict[str, dict[str, Any]] = Field(default_factory=dict)


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

    @property
    def hash(self) -> str:
        """Content hash (16 hex digits) of everything that defines the judging.

        ``reward_model`` is left out: what a small model reads does not change
        what the judge was asked, so its labels and cache entries stay valid.
        """
        spec = self.model_dump(mode="json", exclude={"reward_model"})
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


def rubric_dirs() -> list[Path]:
    """Where built-in rubrics are looked up: ``$TINYJUDGE_RUBRICS``, then the repo's."""
    dirs = []
    if env := os.environ.get("TINYJUDGE_RUBRICS"):
        dirs += [Path(d) for d in env.split(os.pathsep) if d]
    here = Path(__file__).resolve().parent
    # A source checkout (or editable install) reads the repository's rubrics/; a wheel
    # carries the same files in the package.
    dirs += [here.parents[1] / "rubrics", here / "_shipped" / "rubrics"]
    return dirs


def list_rubrics() -> list[str]:
    """Names of the built-in rubrics."""
    names: set[str] = set()
    for d in rubric_dirs():
        names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


def _locate(name_or_path: str | os.PathLike[str]) -> Path:
    p = Path(name_or_path)
    # A folder that happens to share a rubric's name (an import's --out, say) is not a rubric.
    if p.suffix in {".yaml", ".yml"} or p.is_file():
        if not p.exists():
            raise TinyjudgeError(f"{p}: no such rubric file")
        return p
    for d in rubric_dirs():
        cand = d / f"{name_or_path}.yaml"
        if cand.exists():
            return cand
    raise TinyjudgeError(
        f"unknown rubric {str(name_or_path)!r}; built-in rubrics are {list_rubrics()}, "
        "or pass a path to a .yaml file"
    )


def load_rubric(name_or_path: str | os.PathLike[str] | Rubric) -> Rubric:
    """Load a built-in rubric by name, or any rubric YAML file by path.

    Raises:
        TinyjudgeError: the file is missing, not YAML, or invalid; the message
            names the file and the field path.
    """
    if isinstance(name_or_path, Rubric):
        return name_or_path
    path = _locate(name_or_path)
    try:
        data = _parse_bounded(path, _read_bounded(path).decode("utf-8"))
    except UnicodeDecodeError as e:
        raise TinyjudgeError(f"{path}: not UTF-8 text (byte {e.start + 1})") from None
    except RecursionError:
        raise TinyjudgeError(f"{path}: not valid YAML (nested too deep)") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise TinyjudgeError(f"{where}: not valid YAML ({getattr(e, 'problem', e)})") from None
    if not isinstance(data, dict):
        raise TinyjudgeError(f"{path}: a rubric must be a YAML mapping")
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
        raise TinyjudgeError(where + msg) from None


def _read_bounded(path: Path) -> bytes:
    """The file's bytes, refused past :data:`MAX_RUBRIC_BYTES` without reading the rest."""
    with path.open("rb") as fh:
        data = fh.read(MAX_RUBRIC_BYTES + 1)
    if len(data) > MAX_RUBRIC_BYTES:
        raise RubricError(
            f"{path}: a rubric file may hold at most {MAX_RUBRIC_BYTES:,} bytes; this one "
            "is larger: keep the rubric to its prose and a few short examples"
        )
    return data


def _parse_bounded(path: Path, text: str) -> Any:
    """The YAML document in ``text``, refused when its aliases expand past the node bound.

    PyYAML composes an alias as a second reference to one node, so composing is
    cheap; what comes after walks the expanded tree (merge keys ``<<`` are
    flattened while the document is built; validation, hashing and the prompt
    walk the values). So the composed graph is counted first, each node as often
    as it appears, stopping at :data:`MAX_RUBRIC_NODES`: the count costs no more
    than a rubric at the limit, and only a document within it is built.
    """
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_expansion(path, root)
        return loader.construct_document(root)
    finally:
        loader.dispose()


def _check_expansion(path: Path, root: yaml.Node) -> None:
    count = 0
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        count += 1
        if count > MAX_RUBRIC_NODES:
            raise RubricError(
                f"{path}: the rubric expands to more than {MAX_RUBRIC_NODES:,} YAML nodes "
                "(each alias such as *name repeats all it points at); write it out "
                "without nested aliases"
            )
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack += (key, value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


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
    text = yaml.safe_dump(rubric.model_dump(mode="json"), sort_keys=False, allow_unicode=True)
    if path.is_file() and path.read_bytes() == text.encode("utf-8"):
        return path
    with atomic_writer(path) as fh:  # a temporary name of its own: concurrent runs cannot collide
        fh.write(text)
    return path


def load_rubric_copy(path: str | os.PathLike[str], rubric_hash: str | None = None) -> Rubric:
    """Load a stored copy, checking its content against ``rubric_hash`` (default: its name's).

    Raises:
        TinyjudgeError: the file is not a valid rubric, or its content hash differs
            from the one recorded (the copy was edited).
    """
    p = Path(path)
    rubric = load_rubric(p)
    want = rubric_hash or p.name.removeprefix("rubric.").removesuffix(".yaml")
    if rubric.hash != want:
        raise TinyjudgeError(
            f"{p}: the rubric's hash is {rubric.hash}, not the {want} recorded for it; the "
            "copy was edited after it was stored: restore it"
        )
    return rubric


def stored_rubric(folder: str | os.PathLike[str], rubric_hash: str) -> Rubric | None:
    """The copy of the rubric with hash ``rubric_hash`` stored in ``folder``, if there is one.

    Raises:
        TinyjudgeError: the copy is there but its content no longer has that hash.
    """
    path = Path(folder) / f"rubric.{rubric_hash}.yaml"
    return load_rubric_copy(path, rubric_hash) if path.is_file() else None
