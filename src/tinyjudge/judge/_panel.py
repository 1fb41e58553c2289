"""A panel of judges: several models judge the same items, and their verdicts are combined.

Each member is a judge of its own (labels ``judge:<model>``, its own cache entries, so a
run resumes per member): an endpoint, or, opened through
:func:`~tinyjudge.judge.open_judge`, a local llama.cpp model or a replay of recorded
labels (:meth:`PanelMember.judge_config`); the panel adds one label per item
(default source ``judge:panel``). ``majority``: the most frequent label among the members
that scored the item, ``probs`` their mean; a tie is ``unscored`` with its reason.
``mean``: the members' distributions are averaged first and the top label wins (a tie
at the top is ``unscored``). Verga et al. (2024), "Replacing Judges with Juries".

A panel's label keeps what each member said in ``raw`` (``{"panel": {source: label}}``),
which is how ``audit`` tells a panel's source from its members'.
"""

from __future__ import annotations

import os
import re
import reprlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tinyjudge._rubric_yaml import load_yaml_bounded
from tinyjudge.errors import DataError, UsageError
from tinyjudge.records import Item, Label
from tinyjudge.rubric import Rubric

from ._config import JudgeConfig, PanelVote
from ._like import JudgeLike
from ._summary import Judgment

__all__ = [
    "PanelMember",
    "PanelVote",
    "PANEL_VOTES",
    "Panel",
    "PanelJudgment",
    "load_panel",
    "panel_labels",
    "agreement_with_panel",
    "is_panel_label",
]

PANEL_VOTES: tuple[PanelVote, ...] = get_args(PanelVote)
_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class PanelMember(BaseModel):
    """One judge of a panel: where its model is, and the environment variable of its key.

    An endpoint (``model`` at ``base_url``), a local llama.cpp model (``local``, with
    ``gguf``, ``threads``, ``n_ctx``) or a replay of recorded labels (``replay``,
    ``replay_source``): the same fields, and the same rules, as a
    :class:`~tinyjudge.judge.JudgeConfig`'s, which the member becomes under the panel's
    call options (:meth:`judge_config`). ``model`` names the member's labels
    (``judge:<model>``). Keys are never written in a panel file: ``api_key_env`` names the
    variable that holds one (a local endpoint may need none).
    """

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str = Field(default="OPENAI_API_KEY", pattern=_ENV_NAME)
    local: bool = False
    gguf: Path | None = None
    threads: int | None = None
    n_ctx: int = 4096
    replay: Path | None = None
    replay_source: str = "judge:gpt-4"

    @property
    def source(self) -> str:
        return f"judge:{self.model}"

    @property
    def is_endpoint(self) -> bool:
        """Whether the member is a model at an endpoint (not local, not a replay)."""
        return not self.local and self.replay is None

    def judge_config(self, panel: JudgeConfig | None = None) -> JudgeConfig:
        """The member as a :class:`JudgeConfig`: its own fields over the ``panel``'s options.

        Raises:
            UsageError: fields that do not go together (``local`` with ``base_url``, ...).
        """
        return JudgeConfig.from_options(
            panel, panel=None, **self.model_dump(exclude={"api_key_env"}),
            api_key_env=self.api_key_env,
        )  # fmt: skip

    def check_reachable(self) -> None:
        """Refuse an endpoint member with neither a ``base_url`` nor a key in its variable.

        Raises:
            UsageError: naming the member and the variable.
        """
        if self.is_endpoint and self.base_url is None and not os.environ.get(self.api_key_env):
            raise UsageError(
                f"panel member {self.model!r} has no base_url and no key in ${self.api_key_env}: "
                "set that variable or give the member a base_url",
                param="members",
            )


def load_panel(path: str | os.PathLike[str]) -> list[PanelMember]:
    """Read a panel file: a YAML list of ``{model, base_url, api_key_env}`` members
    (or ``{model, local, gguf, ...}``, ``{model, replay, replay_source}``: :class:`PanelMember`).

    Raises:
        DataError: the file is missing, not a list of at least two members, a member
            has an unknown field (a key written in the file, say) or fields that do not
            go together, or two members share a model; one line naming the file and
            the member.
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(str(p), None, "no such panel file")

    def too_big() -> DataError:
        return DataError(
            str(p), None, "the panel expands to too many YAML nodes: write it without aliases"
        )

    try:
        data = load_yaml_bounded(p.read_text(encoding="utf-8"), too_big, limit=10_000)
    except yaml.YAMLError as e:
        raise DataError(str(p), None, f"not valid YAML ({getattr(e, 'problem', e)})") from None
    if isinstance(data, dict) and set(data) == {"members"}:
        data = data["members"]
    if not isinstance(data, list) or len(data) < 2:
        raise DataError(
            str(p),
            None,
            "a panel is a YAML list of at least 2 members: "
            "- {model: M, base_url: URL, api_key_env: NAME} (or local: true, or replay: FILE)",
        )
    members = []
    for n, raw in enumerate(data, 1):
        if not isinstance(raw, dict):
            shown = reprlib.repr(raw)
            raise DataError(str(p), None, f"member {n}: expected a mapping, got {shown}")
        if any(k in raw for k in ("api_key", "key")):
            raise DataError(
                str(p),
                None,
                f"member {n}: a key is never written in a panel file; name the "
                "environment variable that holds it with api_key_env",
            )
        try:
            members.append(PanelMember.model_validate(raw))
        except ValidationError as e:
            first = e.errors()[0]
            field = ".".join(str(x) for x in first["loc"])
            msg = "unknown field" if first["type"] == "extra_forbidden" else first["msg"]
            allowed = sorted(PanelMember.model_fields)
            raise DataError(
                str(p), None, f"member {n}: field {field}: {msg} (fields: {allowed})"
            ) from None
    for n, member in enumerate(members, 1):
        try:
            member.judge_config()
        except UsageError as e:
            raise DataError(str(p), None, f"member {n}: {e}") from None
    models = [m.model for m in members]
    dupes = sorted({m for m in models if models.count(m) > 1})
    if dupes:
        raise DataError(str(p), None, f"members share a model {dupes}: each labels as judge:MODEL")
    return members


def is_panel_label(label: Label) -> bool:
    """Whether ``label`` is a panel's (its ``raw`` holds the members' verdicts)."""
    return isinstance(label.raw, dict) and isinstance(label.raw.get("panel"), dict)


def _mean_probs(labels: list[Label], names: list[str]) -> dict[str, float]:
    total = dict.fromkeys(names, 0.0)
    for lab in labels:
        probs = lab.probs or ({lab.label: 1.0} if lab.label is not None else {})
        for k, v in probs.items():
            total[k] = total.get(k, 0.0) + v / len(labels)
    return total


def _one_panel_label(
    item_id: str, votes: dict[str, Label | None], rubric: Rubric, source: str, vote: PanelVote
) -> Label:
    said = {s: (lab.label if lab and lab.status == "ok" else None) for s, lab in votes.items()}
    base: dict[str, Any] = {
        "item_id": item_id,
        "rubric": rubric.id,
        "rubric_hash": rubric.hash,
        "source": source,
        "raw": {"panel": said},
    }
    scored = [lab for lab in votes.values() if lab is not None and lab.status == "ok"]
    if not scored:
        return Label(**base, status="unscored", reason="no member of the panel scored the item")
    probs = _mean_probs(scored, rubric.label_names)
    if vote == "mean":
        ranked = sorted(probs.items(), key=lambda kv: -kv[1])
        tied = [k for k, v in ranked if abs(v - ranked[0][1]) < 1e-9]
        why = f"mean probabilities tie between {tied}"
    else:
        counts = Counter(lab.label for lab in scored)
        top = max(counts.values())
        tied = sorted(str(k) for k, c in counts.items() if c == top)
        why = "tie between members: " + "; ".join(
            f"{k} ({', '.join(s for s, v in said.items() if v == k)})" for k in tied
        )
    if len(tied) > 1:
        return Label(**base, status="unscored", probs=None, reason=why)
    label = tied[0]
    agree = sum(lab.label == label for lab in scored)
    return Label(
        **base,
        label=label,
        probs=probs,
        score=rubric.score(probs),
        rationale=f"{agree} of {len(scored)} members scoring the item said {label} ({vote} vote)",
    )


def panel_labels(
    members: dict[str, Sequence[Label]],
    rubric: Rubric,
    source: str = "judge:panel",
    vote: PanelVote = "majority",
) -> list[Label]:
    """One panel label per item, in the first member's order (see the module docstring).

    Args:
        members: each member's labels, by member source.
        rubric: the rubric the members judged under.
        source: the panel's label source.
        vote: ``majority`` (most frequent label; probabilities averaged) or ``mean``
            (probabilities averaged first, then the top label).
    """
    if vote not in PANEL_VOTES:
        raise UsageError(f"vote must be one of {list(PANEL_VOTES)}, got {vote!r}", param="vote")
    if source in members:
        raise UsageError(f"the panel's source {source!r} is a member's", param="source")
    by_member = {s: {lab.item_id: lab for lab in labs} for s, labs in members.items()}
    order = list(dict.fromkeys(lab.item_id for labs in members.values() for lab in labs))
    return [
        _one_panel_label(i, {s: d.get(i) for s, d in by_member.items()}, rubric, source, vote)
        for i in order
    ]


def agreement_with_panel(
    members: dict[str, Sequence[Label]], panel: Sequence[Label]
) -> dict[str, dict[str, float | int]]:
    """Per member: the share of items it and the panel both scored where they agree."""
    verdict = {lab.item_id: lab.label for lab in panel if lab.status == "ok"}
    out: dict[str, dict[str, float | int]] = {}
    for s, labs in members.items():
        both = [lab for lab in labs if lab.status == "ok" and lab.item_id in verdict]
        same = sum(lab.label == verdict[lab.item_id] for lab in both)
        out[s] = {"agreement": same / len(both) if both else float("nan"), "n": len(both)}
    return out


@dataclass
class PanelJudgment:
    """What a panel run gives: each member's judgment, the panel's labels, the agreement."""

    members: dict[str, Judgment]
    panel: list[Label]
    source: str
    vote: PanelVote

    @property
    def labels(self) -> list[Label]:
        """Every member's labels, then the panel's."""
        return [lab for j in self.members.values() for lab in j.labels] + self.panel

    @property
    def agreement(self) -> dict[str, dict[str, float | int]]:
        return agreement_with_panel({s: j.labels for s, j in self.members.items()}, self.panel)

    def as_dict(self) -> dict[str, Any]:
        return {
            "panel": {"source": self.source, "vote": self.vote, "n": len(self.panel)},
            "agreement_with_panel": self.agreement,
            "members": {s: j.as_dict() for s, j in self.members.items()},
        }


class Panel:
    """Several judges on the same items, and one combined label per item.

    Args:
        rubric: the rubric every member judges under.
        members: the members: ready judges of any kind (what
            :func:`~tinyjudge.judge.open_judge` gives for each member's
            :meth:`PanelMember.judge_config`, as it does for a panel), or endpoint
            members (:class:`PanelMember`, see :func:`load_panel`) made into judges here.
        source: the panel's label source.
        vote: ``majority`` or ``mean`` (see :func:`panel_labels`).
        judge_options: options given to every endpoint member's :class:`Judge` (cache,
            concurrency, samples, ...); one cache serves all, keyed by model.

    Raises:
        UsageError: a bad vote or source, an endpoint member with no way to reach it,
            or a local or replay :class:`PanelMember` (open those with ``open_judge``).
    """

    def __init__(
        self,
        rubric: Rubric,
        members: Sequence[PanelMember | JudgeLike],
        *,
        source: str = "judge:panel",
        vote: PanelVote = "majority",
        **judge_options: Any,
    ) -> None:
        from ._runner import Judge

        if vote not in PANEL_VOTES:
            raise UsageError(f"vote must be one of {list(PANEL_VOTES)}, got {vote!r}", param="vote")
        if not re.match(r"^[a-z]+:.+", source) or source in {m.source for m in members}:
            raise UsageError(
                f"source {source!r}: expected KIND:NAME, not a member's source", param="source"
            )
        for m in members:
            if isinstance(m, PanelMember):
                if not m.is_endpoint:
                    raise UsageError(
                        f"panel member {m.model!r} is a local model or a replay: open the panel "
                        "with open_judge(JudgeConfig(panel=...), rubric), which starts it",
                        param="members",
                    )
                m.check_reachable()
        self.rubric, self.source, self.vote = rubric, source, vote
        self.judges: list[JudgeLike] = [
            Judge(
                rubric,
                m.model,
                base_url=m.base_url,
                api_key=os.environ.get(m.api_key_env) or None,
                **judge_options,
            )
            if isinstance(m, PanelMember)
            else m
            for m in members
        ]

    def run(
        self, items: Sequence[Item], progress: Callable[[Judgment], None] | None = None
    ) -> PanelJudgment:
        """Each member judges every item in turn (each resumes from the cache), then the vote."""
        judged: dict[str, Judgment] = {}
        for judge in self.judges:
            judged[judge.source] = judge.run(items)
            if progress is not None:
                progress(judged[judge.source])
        panel = panel_labels(
            {s: j.labels for s, j in judged.items()}, self.rubric, self.source, self.vote
        )
        return PanelJudgment(judged, panel, self.source, self.vote)
