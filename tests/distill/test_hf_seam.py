"""The Hugging Face seam: codecs chosen by config, decoders as reward models, the one
trainer (accumulation, checkpointing, best epoch, seeds), devices, and 2-process DDP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import REPO

from tinyjudge.datasets.importers import Imported
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.distill import EncoderRM, TrainingSet, TransformerRM, load_model, make_model
from tinyjudge.distill._text import View
from tinyjudge.distill.hf import (
    PAD_TOKEN,
    ChatCodec,
    PairCodec,
    codec_for,
    is_decoder,
    load_classifier,
    resolve_device,
)
from tinyjudge.errors import ModelDirError, UsageError

FAST = {"max_length": 64, "epochs": 1, "lr": 3e-3, "batch_size": 16, "device": "cpu"}


def _loaded(base: Path) -> tuple[object, object]:
    return load_classifier(str(base), {0: "no", 1: "yes"})


@pytest.mark.parametrize(
    ("which", "kind"), [("bert", "pair"), ("qwen2", "chat"), ("llama", "chat")], ids=str
)
def test_the_codec_follows_the_config(tiny_bert, tiny_decoders, which, kind) -> None:
    base = tiny_bert if which == "bert" else tiny_decoders[which]
    model, tok = _loaded(base)
    codec = codec_for(model.config, tok)
    assert codec.kind == kind
    assert is_decoder(model.config) == (kind == "chat")
    # a decoder saved as a causal LM reads as one by its architectures, loaded or not
    raw = json.loads((base / "config.json").read_text())["architectures"]
    assert raw[0].endswith("ForCausalLM") == (kind == "chat")


def test_pair_codec_is_the_tokenizers_own_pair_encoding(tiny_bert) -> None:
    model, tok = _loaded(tiny_bert)
    codec = codec_for(model.config, tok)
    assert isinstance(codec, PairCodec) and codec.token_types
    ctx, rsp = "user: how do I kill a process?", "Use kill with its PID."
    enc = codec.encode([View(ctx, rsp)], 64)
    own = tok(ctx, rsp)
    assert enc.ids[0] == own["input_ids"] and enc.types == [own["token_type_ids"]]
    assert enc.dropped == 0
    assert codec.wrap([7, 8]) == [tok.cls_token_id, 7, 8, tok.sep_token_id]


def test_references_open_the_first_segment_and_outlive_the_context(tiny_bert) -> None:
    model, tok = _loaded(tiny_bert)
    codec = codec_for(model.config, tok)
    ref = "the capital of France is Paris"
    long_ctx = "user: " + "tell me more about it " * 30
    enc = codec.encode([View(long_ctx, "Paris.", references=ref)], 40)
    ref_ids = tok(ref + "\n\n", add_special_tokens=False)["input_ids"]
    assert enc.ids[0][1 : 1 + len(ref_ids)] == ref_ids  # right after [CLS]
    assert len(enc.ids[0]) == 40 and enc.dropped > 0
    reply = tok("Paris.", add_special_tokens=False)["input_ids"]
    assert enc.ids[0][-1 - len(reply) : -1] == reply  # the reply survives whole


def test_chat_codec_renders_the_chat_template(tiny_decoders) -> None:
    model, tok = _loaded(tiny_decoders["qwen2"])
    codec = codec_for(model.config, tok)
    assert isinstance(codec, ChatCodec) and codec.uses_chat_template
    ctx, rsp = "user: how do I kill a process?", "Use kill with its PID."
    text = tok.apply_chat_template(
        [{"role": "user", "content": ctx}, {"role": "assistant", "content": rsp}], tokenize=False
    )
    enc = codec.encode([View(ctx, rsp)], 256)
    assert enc.ids[0] == tok(text, add_special_tokens=False)["input_ids"] and enc.types is None


def test_chat_codec_cuts_the_context_from_its_start(tiny_decoders) -> None:
    model, tok = _loaded(tiny_decoders["qwen2"])
    codec = codec_for(model.config, tok)
    ctx = "user: first request that will be cut " * 20 + "user: the last request"
    full = codec.encode([View(ctx, "the reply")], 1024).ids[0]
    cut = codec.encode([View(ctx, "the reply")], 48)
    assert len(cut.ids[0]) == 48 and cut.dropped == len(full) - 48
    # the template's opening, then the last 48 - n tokens: only the context's start went
    n = len(tok("<|im_start|>user\n", add_special_tokens=False)["input_ids"])
    assert cut.ids[0] == full[:n] + full[len(full) - (48 - n) :]


def test_plain_rendering_without_a_chat_template(tiny_decoders) -> None:
    model, tok = _loaded(tiny_decoders["llama"])
    codec = codec_for(model.config, tok)
    assert isinstance(codec, ChatCodec) and not codec.uses_chat_template
    ids = codec.encode([View("user: hi", "hello")], 64).ids[0]
    assert ids[0] == tok.bos_token_id and ids[-1] == tok.eos_token_id
    assert tok.decode(ids[1:-1]) == "user: hi\n\nassistant: hello"


@pytest.mark.parametrize("which", ["qwen2", "llama"], ids=str)
def test_a_decoder_pads_with_its_own_token_and_pools_the_real_last_one(
    tiny_decoders, which
) -> None:
    import torch

    model, tok = _loaded(tiny_decoders[which])
    # qwen2 padded with eos, llama had no pad: both get a pad token that no text holds
    assert tok.pad_token == PAD_TOKEN and tok.pad_token_id != tok.eos_token_id
    assert model.config.pad_token_id == tok.pad_token_id
    codec = codec_for(model.config, tok)
    rows = codec.encode([View("user: hi", "hello there"), View("user: a longer one", "ok")], 64).ids
    assert rows[0][-1] == rows[1][-1]  # both end on the template's final token (eos here)
    model.eval()
    with torch.no_grad():
        alone = [model(input_ids=torch.tensor([r])).logits[0] for r in rows]
        width = max(map(len, rows))
        for side in ("right", "left"):
            pad = [[tok.pad_token_id] * (width - len(r)) for r in rows]
            ids = [r + p if side == "right" else p + r for r, p in zip(rows, pad, strict=True)]
            mask = [[int(t != tok.pad_token_id) for t in r] for r in ids]
            got = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits
            for k in range(2):
                torch.testing.assert_close(got[k], alone[k], atol=1e-5, rtol=1e-4)


def test_an_unloadable_base_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ModelDirError, match=r"base='/nonexistent/model'.*cannot be loaded"):
        load_classifier("/nonexistent/model", {0: "reward"})


_PLAIN = """
import json, sys, torch
from transformers import AutoModelForSequenceClassification
d, rows = sys.argv[1], json.loads(sys.argv[2])
model, info = AutoModelForSequenceClassification.from_pretrained(d, output_loading_info=True)
with torch.inference_mode():
    logits = [model.eval()(input_ids=torch.tensor([r])).logits[0].tolist() for r in rows]
print(json.dumps({"logits": logits, "missing": sorted(info["missing_keys"]),
                  "tinyjudge": any(m.startswith("tinyjudge") for m in sys.modules)}))
"""


def _plain_logits(model_dir: Path, rows: list[list[int]]) -> dict:
    """Logits of token-id rows from plain transformers, in a process without tinyjudge."""
    res = subprocess.run(
        [sys.executable, "-c", _PLAIN, str(model_dir), json.dumps(rows)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("which", ["qwen2", "llama"], ids=str)
def test_a_decoder_distils_saves_and_reloads_in_plain_transformers(
    tiny_decoders, small: TrainingSet, tmp_path: Path, which
) -> None:
    model = make_model("transformer", "compliance", base=str(tiny_decoders[which]), **FAST)
    model.fit(small.items[:64], small.y_hard[:64])
    assert model.card_["codec"] == "chat" and model.tier == "transformer"
    d = model.save(tmp_path / which)
    again = load_model(d)
    items = small.items[:12]
    np.testing.assert_allclose(again.predict_proba(items), model.predict_proba(items), atol=1e-6)
    views = model.views_of(items[:3])
    rows = model.codec_.encode(views, model.config.max_length).ids
    out = _plain_logits(d, rows)
    assert out["missing"] == [] and out["tinyjudge"] is False
    ours = model.set_params(precision="fp32").logits(views)
    np.testing.assert_allclose(out["logits"], ours, atol=1e-5)


def test_the_tier_is_transformer_and_encoder_is_its_alias(tiny_bert) -> None:
    new = make_model("transformer", "compliance", base=str(tiny_bert))
    old = make_model("encoder", "compliance", base=str(tiny_bert))
    assert type(new) is TransformerRM and new.tier == "transformer"
    assert isinstance(old, EncoderRM) and isinstance(old, TransformerRM) and old.tier == "encoder"
    # the rubric's options under the first name reach the new name too
    pushback = make_model("transformer", "pushback_under_pressure")
    assert (pushback.config.epochs, pushback.config.max_length) == (3, 256)


def test_options_are_typed_and_checked(tiny_bert) -> None:
    model = make_model("transformer", "compliance", base=str(tiny_bert), grad_accum=2)
    assert model.config.grad_accum == 2 and model.get_params()["grad_accum"] == 2
    assert model.grad_accum == 2  # every option an attribute, as scikit-learn has it
    with pytest.raises(UsageError, match=r"unknown option 'epoch' for the transformer tier"):
        TransformerRM("compliance", epoch=2)
    with pytest.raises(UsageError, match=r"grad_accum must be a whole number .*got 1.5"):
        make_model("transformer", "compliance", grad_accum=1.5)
    from sklearn.base import clone

    twin = clone(model)
    assert twin.config == model.config and twin.config is not model.config


@pytest.mark.parametrize(
    ("device", "match"),
    [("tpu", r"device='tpu' is not a device; devices: \['auto', 'cpu', 'cuda', 'mps'\]")],
    ids=["unknown"],
)
def test_device_errors_name_the_parameter(device, match) -> None:
    with pytest.raises(UsageError, match=match) as info:
        resolve_device(device)
    assert info.value.param == "device"


def test_a_missing_gpu_is_one_line() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(UsageError, match=r"device='cuda': this machine has no CUDA device"):
        resolve_device("cuda")
    assert resolve_device("auto").type in ("cpu", "mps")


def test_a_seeded_fit_is_repeatable_and_checkpointing_changes_nothing(
    tiny_bert, small: TrainingSet
) -> None:
    items, y = small.items[:48], small.y_hard[:48]
    runs = [
        TransformerRM(base=str(tiny_bert), **FAST, **extra).fit(items, y)
        for extra in ({}, {}, {"grad_checkpointing": True})
    ]
    P = [m.predict_proba(items[:16]) for m in runs]
    np.testing.assert_array_equal(P[0], P[1])
    assert runs[2].model_.is_activation_checkpointing
    assert not runs[0].model_.is_activation_checkpointing
    np.testing.assert_allclose(P[2], P[0], atol=1e-5)


def test_gradient_accumulation_takes_fewer_optimizer_steps(tiny_bert, small: TrainingSet) -> None:
    items, y = small.items[:64], small.y_hard[:64]
    plain = TransformerRM(base=str(tiny_bert), **FAST).fit(items, y)
    accum = TransformerRM(base=str(tiny_bert), **{**FAST, "batch_size": 8}, grad_accum=2).fit(
        items, y
    )
    assert plain.card_["steps"] == 4 and accum.card_["steps"] == 4  # 64 / 16, (64 / 8) / 2
    # same examples per optimizer step, but micro-batches of 8 average differently: close
    assert np.abs(plain.predict_proba(items) - accum.predict_proba(items)).max() < 0.05


def test_the_best_epoch_on_the_validation_split_is_kept(tiny_bert, small: TrainingSet) -> None:
    train, val = small.items[::2], small.items[1::2]
    y_train, y_val = small.y_hard[::2], small.y_hard[1::2]
    model = TransformerRM(base=str(tiny_bert), **{**FAST, "epochs": 3, "lr": 2e-2}).fit(
        train, y_train, eval_set=(val, y_val)
    )
    scores = model.card_["validation_by_epoch"]
    assert len(scores) == 3
    assert model.card_["best_epoch"] == int(np.argmax(scores)) + 1
    P = model.predict_proba(val)
    Y = model._targets(val, y_val)
    assert float(np.mean((Y * np.log(P)).sum(axis=1))) == pytest.approx(max(scores), abs=1e-5)


def _torchrun(files: Path, base: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        str(Path(sys.executable).with_name("torchrun")),
        "--standalone",  # a free port on this machine
        "--nproc-per-node",
        "2",
        "-m",
        "tinyjudge",
        "distill",
        str(files / "items.jsonl"),
        str(files / "labels.jsonl"),
        "--source",
        "judge:gpt-4",
        "--rubric",
        "compliance",
        "--tier",
        "transformer",
        *[
            a
            for kv in ("base=" + str(base), "max_length=32", "epochs=2", "device=cpu")
            for a in ("--param", kv)
        ],
        *extra,
        "--out",
        str(out),
    ]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=out.parent)


@pytest.mark.slow
def test_torchrun_trains_one_data_parallel_run(
    xs: Imported, tiny_bert: Path, tmp_path: Path
) -> None:
    files = tmp_path / "data"
    files.mkdir()
    write_jsonl(files / "items.jsonl", xs.items[:200])
    write_jsonl(files / "labels.jsonl", xs.labels)
    runs = tmp_path / "runs"
    runs.mkdir()
    res = _torchrun(files, tiny_bert, runs / "ddp")
    assert res.returncode == 0, res.stderr[-3000:]
    assert [p.name for p in runs.iterdir()] == ["ddp"]  # one output directory, nothing else
    assert res.stdout.count("compliance-transformer (transformer): trained on 160") == 1
    assert res.stdout.count("agreement with judge:gpt-4") == 1  # one summary
    card = json.loads((runs / "ddp" / "tinyjudge.json").read_text())["card"]
    ddp = card["data_parallel"]
    # 160 training items, 80 a rank, 5 steps of 16 an epoch: half of one process's 10
    assert ddp["world_size"] == 2 and ddp["steps_by_rank"] == [10, 10]
    assert ddp["examples_by_rank"] == [160, 160] and ddp["replicas_in_sync"] is True
    assert len(card["validation_by_epoch"]) == 2  # rank 0 validated each epoch
    assert load_model(runs / "ddp").predict_proba(xs.items[:3]).shape == (3, 3)


def test_list_options_take_a_comma_separated_string() -> None:
    model = make_model("transformer", "compliance", lora_target_modules="q_proj, v_proj")
    assert model.config.lora_target_modules == ["q_proj", "v_proj"]
    from tinyjudge.commands.distill import tier_options

    given = tier_options("transformer", {}, ["lora_target_modules=query,value", "lora_r=8"])
    model = make_model("transformer", "compliance", **given)
    assert (model.config.lora_target_modules, model.config.lora_r) == (["query", "value"], 8)


@pytest.mark.parametrize("which", ["bert", "qwen2"], ids=str)
def test_a_lora_adapter_keeps_its_head_through_save_and_reload(
    tiny_bert, tiny_decoders, small: TrainingSet, tmp_path: Path, which
) -> None:
    base = tiny_bert if which == "bert" else tiny_decoders[which]
    model = TransformerRM(base=str(base), **{**FAST, "epochs": 2}, lora_r=4).fit(
        small.items[:64], small.y_hard[:64]
    )
    d = model.save(tmp_path / "lora")
    names = {p.name for p in d.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors"} <= names
    assert "model.safetensors" not in names  # the base is not copied
    files = json.loads((d / "tinyjudge.json").read_text())["files"]
    assert "adapter_model.safetensors" in files  # bound by hash like the weights
    items = small.items[:16]
    again = load_model(d)
    np.testing.assert_allclose(again.predict_proba(items), model.predict_proba(items), atol=1e-6)
    # the trained head is in the adapter file: a fresh head would score differently
    from safetensors.numpy import load_file

    saved = load_file(d / "adapter_model.safetensors")
    head = "classifier" if which == "bert" else "score"
    assert any(head in k for k in saved), sorted(saved)


@pytest.mark.slow
def test_cli_lora_with_target_modules_then_export_merge(
    xs: Imported, tiny_decoders, tmp_path: Path, cli
) -> None:
    write_jsonl(tmp_path / "items.jsonl", xs.items[:120])
    write_jsonl(tmp_path / "labels.jsonl", xs.labels)
    params = [f"base={tiny_decoders['qwen2']}", "max_length=48", "epochs=1", "lora_r=4"]
    params += ["lora_target_modules=q_proj,v_proj", "device=cpu"]
    res = cli(
        "distill",
        tmp_path / "items.jsonl",
        tmp_path / "labels.jsonl",
        "--source",
        "judge:gpt-4",
        "--rubric",
        "compliance",
        "--tier",
        "transformer",
        *[a for p in params for a in ("--param", p)],
        "--out",
        tmp_path / "lora",
    )
    assert res.returncode == 0, res.stderr[-2000:]
    meta = json.loads((tmp_path / "lora" / "tinyjudge.json").read_text())
    assert meta["params"]["lora_target_modules"] == ["q_proj", "v_proj"]
    adapter = json.loads((tmp_path / "lora" / "adapter_config.json").read_text())
    assert sorted(adapter["target_modules"]) == ["q_proj", "v_proj"]
    res = cli("export", tmp_path / "lora", "--merge", "--out", tmp_path / "merged")
    assert res.returncode == 0, res.stderr[-2000:]
    lora, merged = load_model(tmp_path / "lora"), load_model(tmp_path / "merged")
    assert merged.config.lora_r == 0 and (tmp_path / "merged" / "model.safetensors").is_file()
    views = lora.views_of(xs.items[:3])
    rows = lora.codec_.encode(views, lora.config.max_length).ids
    out = _plain_logits(tmp_path / "merged", rows)
    assert out["missing"] == []
    np.testing.assert_allclose(
        out["logits"], lora.set_params(precision="fp32").logits(views), atol=1e-4
    )
    res = cli("export", tmp_path / "merged", "--merge", "--out", tmp_path / "again")
    assert res.returncode == 2 and "without a LoRA adapter" in res.stderr


@pytest.mark.slow
def test_the_gpu_check_runs_at_a_tiny_size_on_the_cpu(tmp_path: Path) -> None:
    out = tmp_path / "gpu_check.json"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    res = subprocess.run(
        [sys.executable, str(REPO / "bench" / "gpu_check.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(out.read_text())
    assert got["smoke"] is True
    fold = got["cross_encoder"]
    assert fold["n_test"] > 0 and set(fold) >= {"linear", "transformer", "held_out"}
    assert -1.0 <= fold["transformer"]["cohen_kappa_vs_gpt4o"] <= 1.0
    speed = got["decoder_speed"]
    assert speed["steps"] == 3 and speed["tokens_per_s"] > 0 and 0 < speed["mfu"] < 1


def test_a_decoder_model_scores_from_the_cli_and_serves_a_request(
    tiny_decoders, small: TrainingSet, tmp_path: Path, cli
) -> None:
    import httpx

    from tinyjudge.serve import create_app

    from ..serve.conftest import running

    model = TransformerRM(base=str(tiny_decoders["qwen2"]), **FAST).fit(
        small.items[:48], small.y_hard[:48]
    )
    d = model.save(tmp_path / "qwen2")
    items = small.items[:6]
    expected = model.score_items(items)
    write_jsonl(tmp_path / "items.jsonl", items)
    res = cli("score", d, tmp_path / "items.jsonl", "--out", tmp_path / "scored.jsonl")
    assert res.returncode == 0, res.stderr[-2000:]
    scored = [json.loads(line) for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    assert [s["label"] for s in scored] == [e.label for e in expected]
    for s, e in zip(scored, expected, strict=True):
        assert s["probs"] == pytest.approx(e.probs, abs=1e-6)
    payload = {"items": [items[0].model_dump(mode="json", exclude_none=True)]}
    with running(create_app(load_model(d))) as url:
        r = httpx.post(f"{url}/score", json=payload, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["labels"][0]["probs"] == pytest.approx(expected[0].probs, abs=1e-6)
    from tinyjudge.distill import export_onnx
    from tinyjudge.errors import TinyjudgeError

    with pytest.raises(TinyjudgeError, match=r"on a decoder \(qwen2\); only the encoder tier"):
        export_onnx(d)
