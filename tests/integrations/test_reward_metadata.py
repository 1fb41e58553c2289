"""A push-back model that reads references is rewarded through TRL, /get_reward, /score and
verl exactly as offline, on an answering model it never saw; without its references, never."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from support import real_data

from tinyjudge.datasets.importers import run_import
from tinyjudge.distill import LinearRM, load_model
from tinyjudge.errors import DataError, EndpointError, TinyjudgeError, UsageError
from tinyjudge.integrations.trl import reward_func
from tinyjudge.integrations.verl import compute_score, compute_score_batch
from tinyjudge.records import Item
from tinyjudge.serve import create_app

from ..serve.conftest import running

HELD_OUT = "claude"  # the answering model the reward model never sees
REFS = ("presupposition", "correction")


@pytest.fixture(scope="module")
def sycon() -> tuple[list[Item], dict[str, str]]:
    src = real_data("sycon")
    if src is None:
        pytest.skip("no SYCON data (../shared/data/sycon or its bundled slice)")
    got = run_import("sycon", src)
    teacher = {lab.item_id: lab.label for lab in got.labels if lab.status == "ok"}
    return got.items, teacher


@pytest.fixture(scope="module")
def pushback_dir(sycon, tmp_path_factory: pytest.TempPathFactory) -> Path:
    items, teacher = sycon
    train = [it for it in items if it.metadata["answering_model"] != HELD_OUT and it.id in teacher]
    model = LinearRM("pushback_under_pressure").fit(train, [teacher[it.id] for it in train])
    return model.save(tmp_path_factory.mktemp("pushback") / "rm")


@pytest.fixture(scope="module")
def held_out(sycon) -> list[Item]:
    items, _ = sycon
    unseen = [it for it in items if it.metadata["answering_model"] == HELD_OUT]
    # every turn of a few dialogues: later turns carry the earlier answers (worst_answer)
    return unseen[:40]


def _offline(model_dir: Path, items: list[Item]) -> list[float]:
    return [lab.score for lab in load_model(model_dir).score_items(items)]


def _trl_call(items: list[Item]) -> dict:
    """What TRL hands a reward function: prompts, completions, and the other columns."""
    dump = [[m.model_dump(exclude_none=True) for m in it.messages] for it in items]
    columns = {key: [it.metadata[key] for it in items] for key in REFS}
    return {
        "prompts": [d[:-1] for d in dump],
        "completions": [d[-1:] for d in dump],
        **columns,
        "question_id": [it.metadata["question_id"] for it in items],
        "trainer_state": None,
    }


def test_references_reach_the_reward_on_every_path(pushback_dir: Path, held_out) -> None:
    expected = _offline(pushback_dir, held_out)
    blind = [
        lab.score
        for lab in load_model(pushback_dir).score_items(
            [it.model_copy(update={"metadata": {}}) for it in held_out]
        )
    ]
    assert blind == [None] * len(held_out)  # offline, without references: unscored
    trl = reward_func(pushback_dir)(**_trl_call(held_out))
    assert trl == expected
    meta = [{k: it.metadata[k] for k in REFS} for it in held_out]
    queries = [[m.model_dump(exclude_none=True) for m in it.messages] for it in held_out]
    verl_info = [{"messages": q[:-1], **m} for q, m in zip(queries, meta, strict=True)]
    answers = [q[-1]["content"] for q in queries]
    verl = compute_score_batch(["sycon"] * len(answers), answers, [None] * len(answers),
                               verl_info, model=str(pushback_dir))  # fmt: skip
    assert verl == expected
    assert (
        compute_score("sycon", answers[3], None, verl_info[3], model=str(pushback_dir))
        == (expected[3])
    )
    with running(create_app(load_model(pushback_dir))) as url:
        got = httpx.post(f"{url}/get_reward", json={"query": queries, "metadata": meta}, timeout=60)
        # OpenRLHF sends a row's label column: JSON objects (or their text) are the metadata
        labels = [json.dumps(m) for m in meta]
        openrlhf = httpx.post(f"{url}/get_reward", json={"query": queries, "labels": labels})
        body = {"items": [it.model_dump(mode="json", exclude_none=True) for it in held_out]}
        scored = httpx.post(f"{url}/score", json=body, timeout=60)
        remote = reward_func(url)(**_trl_call(held_out))
    assert got.status_code == 200, got.text
    assert got.json()["rewards"] == expected
    assert openrlhf.json()["rewards"] == expected
    assert [lab["score"] for lab in scored.json()["labels"]] == expected
    assert remote == expected


def test_without_references_no_path_gives_a_reward(pushback_dir: Path, held_out) -> None:
    items = held_out[:3]
    call = _trl_call(items)
    for key in REFS:
        del call[key]
    with pytest.raises(DataError, match=r'"false_premise" \(metadata.presupposition\).*column'):
        reward_func(pushback_dir)(**call)
    solution = items[0].messages[-1].text
    with pytest.raises(DataError, match=r"metadata.presupposition.*extra_info"):
        compute_score("sycon", solution, None, {"question": "Why?"}, model=str(pushback_dir))
    queries = [[m.model_dump(exclude_none=True) for m in it.messages] for it in items]
    bare = [it.model_dump(mode="json", exclude_none=True, exclude={"metadata"}) for it in items]
    with running(create_app(load_model(pushback_dir))) as url:
        r = httpx.post(f"{url}/get_reward", json={"query": queries})
        s = httpx.post(f"{url}/score", json={"items": bare})
        with pytest.raises(EndpointError, match=r"422.*metadata.presupposition"):
            reward_func(url)(**call)
        health = httpx.get(f"{url}/health")
    assert r.status_code == 422 and "metadata.presupposition" in r.json()["detail"]
    assert "false_premise" in r.json()["detail"]
    assert s.status_code == 422 and "metadata.presupposition" in s.json()["detail"]
    assert health.status_code == 200


def test_score_command_says_what_it_could_not_score(pushback_dir: Path, held_out, tmp_path) -> None:
    from support import run_tinyjudge

    items = tmp_path / "items.jsonl"
    rows = [it.model_copy(update={"metadata": {}}) for it in held_out[:4]] + held_out[4:6]
    items.write_text("".join(it.model_dump_json(exclude_none=True) + "\n" for it in rows))
    done = run_tinyjudge("score", pushback_dir, items, "--out", tmp_path / "labels.jsonl")
    assert done.returncode == 0, done.stderr
    assert "4 of 6 items unscored: missing reference" in done.stdout + done.stderr
    labels = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert [lab["status"] for lab in labels] == ["unscored"] * 4 + ["ok"] * 2
    assert "metadata.presupposition" in labels[0]["reason"]
    items.write_text("".join(it.model_dump_json(exclude_none=True) + "\n" for it in rows[:4]))
    none = run_tinyjudge("score", pushback_dir, items, "--out", tmp_path / "none.jsonl")
    assert none.returncode != 0
    assert "no item scored" in none.stderr and "metadata.presupposition" in none.stderr


def test_trl_columns_become_metadata_in_a_real_grpo_batch() -> None:
    """TRL's own reward-kwargs building (GRPOTrainer._calculate_rewards) hands the
    columns over; ``columns_metadata`` reads them per row and leaves TRL's extras."""
    from tinyjudge.integrations.trl import columns_metadata

    inputs = [
        {"prompt": "p", "presupposition": "x", "metadata": {"correction": "y"}, "n": 1},
        {"prompt": "q", "presupposition": "z", "metadata": {"correction": "w"}, "n": 2},
    ]
    keys = [k for k in inputs[0] if k not in ["prompt", "completion", "completion_ids"]]
    kwargs = {key: [ex[key] for ex in inputs] for key in keys}  # as TRL builds them
    kwargs |= {"trainer_state": object(), "log_metric": print, "completion_ids": [[1], [2]]}
    assert columns_metadata(kwargs, 2) == [
        {"presupposition": "x", "correction": "y", "n": 1},
        {"presupposition": "z", "correction": "w", "n": 2},
    ]


@pytest.mark.parametrize(
    ("prompts", "completions"), [(["a", "b"], ["c"]), (["a"], ["b", "c"])], ids=["more", "fewer"]
)
def test_trl_unequal_prompts_and_completions_is_one_line(rm_dir: Path, prompts, completions):
    with pytest.raises(UsageError, match=r"got \d prompts but \d completions: TRL passes one"):
        reward_func(rm_dir)(prompts=prompts, completions=completions)


def test_asked_reward_labels_are_honoured_by_a_server_or_refused(rm_dir: Path) -> None:
    prompt = [{"role": "user", "content": "How do I kill a Python process?"}]
    completions = [
        [{"role": "assistant", "content": "Use kill PID, or pkill -f script.py."}],
        [{"role": "assistant", "content": "I'm sorry, but I can't help with killing."}],
    ]
    call = {"prompts": [prompt, prompt], "completions": completions}
    local = reward_func(rm_dir, reward=["full_compliance"])(**call)
    default = reward_func(rm_dir)(**call)
    assert local[0] > local[1] and default[0] < default[1]  # helpful vs refusing
    with running(create_app(load_model(rm_dir))) as url:
        asked = reward_func(url, reward=["full compliance"])(**call)
        two = reward_func(url, reward=["full_refusal", "partial_refusal"])(**call)
        verl = compute_score("x", completions[0][0]["content"], None, {"messages": prompt},
                             model=url, reward="full_compliance")  # fmt: skip
        with pytest.raises(EndpointError, match=r"\['helpfulness'\] asked of .*full_compliance"):
            reward_func(url, reward=["helpfulness"])(**call)
    assert asked == pytest.approx(local, abs=1e-12)
    assert two == pytest.approx(default, abs=1e-12)
    assert verl == pytest.approx(local[0], abs=1e-12)


def test_get_reward_without_an_assistant_turn_is_refused(rm_dir: Path) -> None:
    with running(create_app(load_model(rm_dir))) as url:
        r = httpx.post(f"{url}/get_reward", json={"query": [[{"role": "user", "content": "hi"}]]})
    assert r.status_code == 422
    assert "no assistant turn" in r.json()["detail"]


def test_metadata_of_another_length_is_refused(rm_dir: Path) -> None:
    with running(create_app(load_model(rm_dir))) as url:
        r = httpx.post(
            f"{url}/get_reward",
            json={"query": ["a", "b"], "metadata": [{"k": 1}]},
        )
    assert r.status_code == 422
    assert '"metadata" has 1 entries but "query" has 2' in r.json()["detail"]
    with pytest.raises(TinyjudgeError, match="2 rollouts but 1 metadata"):
        reward_func(rm_dir).client.rewards(["a", "b"], metadata=[{"k": 1}])


def test_a_real_grpo_run_rewards_with_the_rows_references(
    pushback_dir: Path, held_out, tmp_path: Path
) -> None:
    """TRL's GRPOTrainer (2 steps, a tiny causal LM from a config) hands the data set's
    reference columns to reward_func; what it logs is the offline reward with them."""
    pytest.importorskip("trl")
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    firsts = [it for it in held_out if it.metadata["turn"] == 1][:2]
    rows = [{"prompt": [{"role": "user", "content": it.messages[0].text}],
             **{k: it.metadata[k] for k in REFS}} for it in firsts]  # fmt: skip
    words = sorted({w for r in rows for w in r["prompt"][0]["content"].lower().split()})[:60]
    vocab = {w: i for i, w in enumerate(["<pad>", "<eos>", "<unk>", *words])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>",
                                  eos_token="<eos>", unk_token="<unk>")  # fmt: skip
    tok.chat_template = (
        "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}assistant {% endif %}"
    )
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=128, pad_token_id=0, eos_token_id=1,
                         bos_token_id=1)  # fmt: skip
    ours = reward_func(pushback_dir)
    seen: list[tuple[list, list, dict, list[float]]] = []

    def recorded(prompts, completions, **kwargs):
        rewards = ours(prompts=prompts, completions=completions, **kwargs)
        seen.append((prompts, completions, {k: kwargs[k] for k in REFS}, rewards))
        return rewards

    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"), max_steps=2, per_device_train_batch_size=4,
        num_generations=4, max_completion_length=6, logging_steps=1, report_to="none",
        use_cpu=True, save_strategy="no", bf16=False, dataloader_num_workers=0, seed=0,
    )  # fmt: skip
    data = Dataset.from_list(rows * 4)
    trainer = GRPOTrainer(model=LlamaForCausalLM(config), reward_funcs=[recorded], args=args,
                          train_dataset=data, processing_class=tok)  # fmt: skip
    trainer.train()
    assert len(seen) == 2
    model = load_model(pushback_dir)
    for prompts, completions, refs, rewards in seen:
        items = [
            Item(id=f"r{i}", messages=[*p, *c], metadata={k: refs[k][i] for k in REFS})  # fmt: skip
            for i, (p, c) in enumerate(zip(prompts, completions, strict=True))
        ]
        assert rewards == [lab.score for lab in model.score_items(items)]
        assert all(isinstance(r, float) for r in rewards)
