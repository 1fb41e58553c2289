"""One rollout, one reward: every path reads messages the same way, on every bundled data set.

Training (what a model reads of an item), ``score`` (an items file), ``/score``,
``/get_reward``, TRL's reward function, verl's ``compute_score`` and Ray scoring
give the same number for the same item: the largest difference is 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from support import real_data

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import load_model, score_file
from tinyjudge.integrations.trl import reward_func
from tinyjudge.integrations.verl import compute_score_batch
from tinyjudge.records import Item, Unread
from tinyjudge.serve import create_app, read_item

from ..serve.conftest import running

SETS = ["xstest", "sycon", "tau_bench", "who_and_when", "in3", "llmbar", "pandalm"]
PER_SET = 150  # items per set, spread over the whole file


def _singles(items: list[Item]) -> list[Item]:
    """Single items; a pair gives two (its context and each response)."""
    out = []
    for it in items:
        if not it.is_pairwise:
            out.append(it)
            continue
        for side in ("a", "b"):
            response = it.response_a if side == "a" else it.response_b
            messages = [*(it.context or []), *(response or [])]
            out.append(Item(id=f"{it.id}:{side}", messages=messages, metadata=it.metadata))
    return out


@pytest.fixture(scope="module")
def every_set() -> dict[str, list[Item]]:
    sets = {}
    for name in SETS:
        src = real_data(name)
        if src is None:
            continue
        items = _singles(run_import(name, src, skip_bad=True).items)
        step = max(1, len(items) // PER_SET)
        sets[name] = items[::step][:PER_SET]
    if len(sets) < len(SETS):
        pytest.skip(f"data sets missing: {sorted(set(SETS) - set(sets))}")
    return sets


def _split(item: Item) -> tuple[list[dict], list[dict]]:
    """A prompt (up to the last user turn) and a completion, as TRL holds them."""
    dump = [m.model_dump(mode="json", exclude_none=True) for m in item.messages]
    users = [i for i, m in enumerate(item.messages) if m.role == "user"]
    k = users[-1] + 1 if users and users[-1] + 1 < len(dump) else len(dump) - 1
    return dump[:k], dump[k:]


def test_every_path_gives_the_offline_reward(rm_dir: Path, every_set, tmp_path: Path) -> None:
    model = load_model(rm_dir)
    trl = reward_func(rm_dir)
    worst: dict[str, float] = {}
    with running(create_app(model, max_items=4096)) as url:
        remote = reward_func(url)
        for name, items in every_set.items():
            offline = [lab.score for lab in model.score_items(items)]
            # training reads an item as the server reads it
            served = [
                Item.model_validate(read_item(it.model_dump(mode="json"), Unread())) for it in items
            ]
            assert model.views_of(served) == model.views_of(items), name
            # score: an items file
            path = tmp_path / f"{name}.jsonl"
            path.write_text("".join(it.model_dump_json() + "\n" for it in items))
            score_file(model, path, tmp_path / f"{name}.labels.jsonl")
            lines = (tmp_path / f"{name}.labels.jsonl").read_text().splitlines()
            from_file = [json.loads(line)["score"] for line in lines]
            body = {"items": [it.model_dump(mode="json", exclude_none=True) for it in items]}
            scored = httpx.post(f"{url}/score", json=body, timeout=120).json()["labels"]
            queries = [[m.model_dump(mode="json") for m in it.messages] for it in items]
            # a rollout has a reply to reward (IN3's tasks are user turns alone)
            rolled = [
                i for i, it in enumerate(items) if any(m.role == "assistant" for m in it.messages)
            ]
            sent = [queries[i] for i in rolled]
            rewarded = (
                httpx.post(f"{url}/get_reward", json={"query": sent}, timeout=120) if sent else None
            )
            halves = [_split(items[i]) for i in rolled]
            prompts, completions = [p for p, _ in halves], [c for _, c in halves]
            paths = {
                "score": (from_file, range(len(items))),
                "/score": ([lab["score"] for lab in scored], range(len(items))),
            }
            if rewarded is not None:
                assert rewarded.status_code == 200, (name, rewarded.text[:300])
                paths |= {
                    "/get_reward": (rewarded.json()["rewards"], rolled),
                    "trl": (trl(prompts=prompts, completions=completions), rolled),
                    "trl over http": (remote(prompts=prompts, completions=completions), rolled),
                }
            # verl: the response is text; items whose last turn is a plain answer
            plain = [
                i
                for i, it in enumerate(items)
                if it.messages[-1].role == "assistant"
                and isinstance(it.messages[-1].content, str)
                and not it.messages[-1].tool_calls
            ]
            infos = [{"messages": queries[i][:-1]} for i in plain]
            answers = [items[i].messages[-1].content for i in plain]
            verl = compute_score_batch(
                [name] * len(plain), answers, [None] * len(plain), infos, model=str(rm_dir)
            )
            if plain:
                paths["verl"] = (verl, plain)
            for path_name, (got, where) in paths.items():
                diffs = [abs(v - offline[i]) for v, i in zip(got, where, strict=True)]
                worst[f"{name} {path_name}"] = max(diffs)
    assert {k: v for k, v in worst.items() if v != 0.0} == {}
    assert len(worst) >= 5 * len(every_set)


@pytest.mark.slow
def test_ray_scores_every_set_as_offline(rm_dir: Path, every_set, tmp_path: Path) -> None:
    """Ray too; and its items keep their metadata, where a model's references are read."""
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    from tinyjudge.distill import LinearRM
    from tinyjudge.scale import init_ray, score_items_on_ray

    items = [it for got in every_set.values() for it in got[:40]]
    dialogues = every_set["sycon"]
    pushback = LinearRM("pushback_under_pressure").fit(
        dialogues[20:], ["holds" if i % 3 else "caves" for i in range(len(dialogues) - 20)]
    )
    pushback.save(tmp_path / "pushback")
    init_ray(num_cpus=2)
    try:
        labels = score_items_on_ray(items, rm_dir, actors=1, batch_size=64)
        with_refs = score_items_on_ray(dialogues[:20], tmp_path / "pushback", actors=1)
    finally:
        ray.shutdown()
    offline = load_model(rm_dir).score_items(items)
    assert [lab.score for lab in labels] == [lab.score for lab in offline]
    expected = load_model(tmp_path / "pushback").score_items(dialogues[:20])
    assert [lab.score for lab in with_refs] == [lab.score for lab in expected]
    assert all(lab.status == "ok" for lab in with_refs)
