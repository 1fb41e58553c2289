"""tau-bench (Yao et al., 2024): tool-calling customer-service trajectories with a rule reward.

``historical_trajectories/<agent model>-<domain>.json`` is a list of runs, each
with ``task_id``, ``trial``, ``reward`` (1.0 when the final database state and
outputs match the task's expected ones, else 0.0), ``info`` (the simulated
user's instruction and the expected actions) and ``traj``: OpenAI chat messages
with ``tool_calls`` and ``tool`` results.

Call ids are kept as they are: the export reuses an id within a run for a later,
different call 71 times, so a result is matched to the latest open call with its
id, in order, and a result with no open call is an error. A result's ``name`` (the
tool's name) must be its call's function name and is not copied: ``Message.name``
is the speaking agent's name.

The reward is a rule's verdict on task success, imported as source
``rule:reward`` under the ``task_success`` rubric (``pass`` = 1.0, ``fail`` = 0.0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from tinyjudge.datasets.jsonl import describe_validation_error
from tinyjudge.errors import DataError
from tinyjudge.records import Item, Label, Message, Role, ToolCall, ToolFunction

from ._common import Imported, SkipBad
from ._json import load_json

__all__ = ["import_tau_bench", "tool_error_steps", "TAU_BENCH_SOURCE"]

TAU_BENCH_SOURCE = "rule:reward"
_RUBRIC = "task_success"
_ROLES = {"system", "user", "assistant", "tool"}


def tool_error_steps(messages: list[Message]) -> list[int]:
    """Indices of tool results that report a failed call.

    tau-bench's environment answers a failed call with a result starting with
    ``Error:`` (e.g. ``Error: gift card balance is not enough``).
    """
    return [
        i
        for i, m in enumerate(messages)
        if m.role == "tool" and m.text.lstrip().startswith("Error")
    ]


def _message(where: str, i: int, raw: Any, open_calls: dict[str | None, str]) -> Message:
    if not isinstance(raw, dict):
        raise DataError(where, None, f"traj[{i}] is not a message object")
    role = raw.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise DataError(
            where, None, f"traj[{i}] has unknown role {role!r}; allowed: {sorted(_ROLES)}"
        )
    try:
        if role == "assistant" and raw.get("tool_calls"):
            calls = [
                ToolCall(
                    id=tc["id"],
                    function=ToolFunction(
                        name=tc["function"]["name"],
                        arguments=tc["function"].get("arguments") or "",
                    ),
                )
                for tc in raw["tool_calls"]
            ]
            open_calls.update((c.id, c.function.name) for c in calls)
            return Message(role="assistant", content=raw.get("content"), tool_calls=calls)
        if role == "tool":
            call_id = raw.get("tool_call_id")
            if call_id not in open_calls:
                raise DataError(
                    where,
                    None,
                    f"traj[{i}] is a tool result for {call_id!r}, "
                    "which no earlier assistant message called",
                )
            called = open_calls.pop(call_id)
            if raw.get("name") not in (None, called):
                raise DataError(
                    where,
                    None,
                    f"traj[{i}] is a result of {raw['name']!r}, but call "
                    f"{call_id!r} was to {called!r}",
                )
            # ``name`` is the speaking agent's name in tinyjudge; the tool's name is
            # already in the call this result answers, so it is not repeated here.
            return Message(role="tool", content=raw.get("content"), tool_call_id=call_id)
        return Message(role=cast(Role, role), content=raw.get("content"))  # checked above
    except (KeyError, TypeError) as e:
        raise DataError(where, None, f"traj[{i}] has a malformed tool call ({e!r})") from None
    except ValidationError as e:
        raise DataError(where, None, f"traj[{i}]: {describe_validation_error(e)}") from None


def _label(item_id: str, reward: Any, rubric_hash: str | None) -> Label:
    base: dict[str, Any] = {
        "item_id": item_id,
        "rubric": _RUBRIC,
        "rubric_hash": rubric_hash,
        "source": TAU_BENCH_SOURCE,
    }
    if isinstance(reward, bool) or not isinstance(reward, int | float) or reward not in (0, 1):
        return Label(
            **base,
            status="unscored",
            raw=reward,
            reason=f"{item_id}: reward {reward!r} is not 0 or 1",
        )
    value = "pass" if reward == 1 else "fail"
    return Label(**base, label=value, probs={value: 1.0}, score=float(reward))


def import_tau_bench(src: Path, rubric_hash: str | None = None, skip_bad: bool = False) -> Imported:
    """Import every trajectory with its tool calls as OpenAI messages and its reward.

    Item ids are ``tau_bench:<file stem>:<task_id>:<trial>``. Metadata: ``task_id``,
    ``trial``, ``agent_model`` and ``domain`` (from the file name), ``instruction``
    (what the simulated user wants), ``expected_actions``, ``reward`` and
    ``tool_error_steps`` (message indices of failed tool results).

    Args:
        src: the ``tau_bench`` folder (or its ``historical_trajectories``).
        rubric_hash: the ``task_success`` rubric's hash, stamped on labels.
        skip_bad: record bad runs and go on instead of raising at the first.
    """
    inner = src / "historical_trajectories"
    root = inner if inner.is_dir() else src
    files = sorted(root.glob("*.json"))
    if not files:
        raise DataError(str(root), None, "no <agent model>-<domain>.json trajectory files")
    out = Imported()
    skip = SkipBad(skip_bad, out.bad)
    for path in files:
        runs: list[Any] = []
        with skip.record():
            loaded = load_json(path.read_bytes(), path)
            if not isinstance(loaded, list):
                raise DataError(str(path), None, "expected a JSON list of runs")
            runs = loaded
        agent_model, _, domain = path.stem.rpartition("-")
        for n, run in enumerate(runs):
            with skip.record():
                out_item, out_label = _run(path, n, run, agent_model, domain, rubric_hash)
                out.items.append(out_item)
                out.labels.append(out_label)
    return out


def _run(
    path: Path, n: int, run: Any, agent_model: str, domain: str, rubric_hash: str | None
) -> tuple[Item, Label]:
    if not isinstance(run, dict) or "traj" not in run:
        raise DataError(str(path), None, f'run [{n}] has no "traj"')
    item_id = f"tau_bench:{path.stem}:{run.get('task_id', n)}:{run.get('trial', 0)}"
    where = f"{path} ({item_id})"
    traj = run["traj"]
    if not isinstance(traj, list):
        kind = type(traj).__name__
        raise DataError(where, None, f'"traj" is {kind}, not a list of messages')
    if not traj:
        raise DataError(where, None, "empty trajectory; nothing to judge")
    open_calls: dict[str | None, str] = {}
    messages = [_message(where, i, m, open_calls) for i, m in enumerate(traj)]
    info = run.get("info") or {}
    task = info.get("task") or {} if isinstance(info, dict) else None
    if not isinstance(task, dict):
        raise DataError(where, None, '"info" is not an object with a "task" object')
    metadata = {
        "task_id": run.get("task_id"),
        "trial": run.get("trial"),
        "agent_model": agent_model or path.stem,
        "domain": domain,
        "instruction": task.get("instruction"),
        "expected_actions": task.get("actions"),
        "reward": run.get("reward"),
        "tool_error_steps": tool_error_steps(messages),
    }
    return Item(id=item_id, messages=messages, metadata=metadata), _label(
        item_id, run.get("reward"), rubric_hash
    )
