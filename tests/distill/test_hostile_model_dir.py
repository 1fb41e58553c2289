"""A model directory is data, never code (issue 33): hostile directories, re-hashed as an
attacker would, are refused in one line before ``transformers`` reads them.

Each attack copies a real saved transformer-tier model (a tiny BERT from a config, with
the real MiniLM tokenizer), edits it, and stamps ``tinyjudge.json`` again with the new
hashes, so the binding check passes and only the load path's own guard stands.
"""

from __future__ import annotations

import ast
import json
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support import REPO, run_tinyjudge

from tinyjudge._digest import file_sha256
from tinyjudge._model_dir import CALIBRATION_FILE, META_FILE, listed_files, write_meta
from tinyjudge.datasets.jsonl import write_jsonl
from tinyjudge.distill import EncoderRM, LinearRM, TrainingSet, load_model
from tinyjudge.distill.hf import check_hf_dir, load_classifier
from tinyjudge.errors import ModelDirError

FAST = {"max_length": 32, "epochs": 1, "lr": 3e-3, "batch_size": 16}
EVIL = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


@pytest.fixture(scope="module")
def saved(tiny_bert: Path, small: TrainingSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = EncoderRM("compliance", name="victim", base=str(tiny_bert), **FAST)
    model.fit(small.items[::4], small.y_hard[::4])
    return model.save(tmp_path_factory.mktemp("victim") / "model")


def _rehash(d: Path) -> None:
    """Stamp tinyjudge.json with the files now on disk, as anyone who edits a directory can."""
    meta = json.loads((d / "tinyjudge.json").read_text())
    names = sorted(listed_files(d) - {META_FILE, CALIBRATION_FILE})
    meta["files"] = {n: file_sha256(d / n) for n in names}
    meta.pop("attached", None)
    del meta["sha256"]
    write_meta(d, meta)


def _hostile(saved: Path, tmp_path: Path, edit: Callable[[Path], None]) -> Path:
    d = tmp_path / "hostile"
    shutil.copytree(saved, d)
    edit(d)
    _rehash(d)
    return d


def _auto_map(file: str, marker: Path) -> Callable[[Path], None]:
    def edit(d: Path) -> None:
        (d / "evil.py").write_text(EVIL.format(marker=str(marker)))
        config = json.loads((d / file).read_text())
        config["auto_map"] = {
            "AutoConfig": "evil.EvilConfig",
            "AutoModelForSequenceClassification": "evil.EvilModel",
            "AutoTokenizer": ["evil.EvilTokenizer", None],
        }
        (d / file).write_text(json.dumps(config))

    return edit


@pytest.mark.parametrize("file", ["config.json", "tokenizer_config.json"])
def test_a_directory_that_asks_to_run_code_is_refused_and_runs_nothing(
    saved: Path, tmp_path: Path, file: str
) -> None:
    marker = tmp_path / "ran.txt"
    d = _hostile(saved, tmp_path, _auto_map(file, marker))
    with pytest.raises(ModelDirError, match=rf"{file}: asks to run code .*auto_map") as e:
        load_model(d)
    assert "tinyjudge export" in str(e.value) and "\n" not in str(e.value)
    assert not marker.exists()


def test_score_with_a_yes_on_stdin_still_runs_no_code(saved: Path, tmp_path: Path, xs) -> None:
    marker = tmp_path / "ran.txt"
    d = _hostile(saved, tmp_path, _auto_map("config.json", marker))
    items = tmp_path / "items.jsonl"
    write_jsonl(items, xs.items[:3])
    done = subprocess.run(
        [sys.executable, "-m", "tinyjudge.cli", "score", str(d), str(items), "--out",
         str(tmp_path / "scored.jsonl")],
        input="y\ny\ny\n", capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "config.json: asks to run code" in line
    assert not marker.exists() and not (tmp_path / "scored.jsonl").exists()


def test_pickle_weights_alone_are_refused_in_one_line(saved: Path, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    def to_pickle(d: Path) -> None:
        torch.save(load_file(d / "model.safetensors"), d / "pytorch_model.bin")
        (d / "model.safetensors").unlink()

    d = _hostile(saved, tmp_path, to_pickle)
    with pytest.raises(ModelDirError, match=r"pytorch_model\.bin: pickle weights only") as e:
        load_model(d)
    assert "tinyjudge export" in str(e.value)


def _header(path: Path) -> tuple[dict, bytes]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def _write_header(path: Path, header: dict, data: bytes) -> None:
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + data)


def _claim_huge_tensor(d: Path) -> None:
    header, data = _header(d / "model.safetensors")
    name = next(k for k in header if k != "__metadata__")
    header[name]["data_offsets"] = [0, 2**62]
    header[name]["shape"] = [2**60]
    header[name]["dtype"] = "F32"
    _write_header(d / "model.safetensors", header, data)


def _claim_huge_header(d: Path) -> None:
    raw = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(struct.pack("<Q", 2**62) + raw[8:])


def _vocab_index(d: Path) -> None:
    tok = json.loads((d / "tokenizer.json").read_text())
    tok["model"]["vocab"]["[unused0]"] = 10**9
    (d / "tokenizer.json").write_text(json.dumps(tok))


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_claim_huge_tensor, r"model\.safetensors: tensor .* claims bytes 0\.\.461168601842738790"),
        (_claim_huge_header, r"model\.safetensors: its header claims 4611686018427387904 bytes"),
        (_vocab_index, r"tokenizer\.json: token id 1000000000; allowed: 0\.\."),
    ],
    ids=["tensor-of-2^62-bytes", "header-of-2^62-bytes", "vocab-index-10^9"],
)
def test_hostile_files_with_recomputed_hashes_are_one_line(
    saved: Path, tmp_path: Path, edit: Callable[[Path], None], match: str, xs
) -> None:
    d = _hostile(saved, tmp_path, edit)
    with pytest.raises(ModelDirError, match=match) as e:
        load_model(d)
    assert "\n" not in str(e.value)
    # and from the command line: one line, exit 2, no traceback
    write_jsonl(tmp_path / "items.jsonl", xs.items[:3])
    done = run_tinyjudge("score", d, tmp_path / "items.jsonl", "--out", tmp_path / "o.jsonl")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_base_that_asks_to_run_code_is_refused_before_loading(
    tiny_bert: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    base = tmp_path / "base"
    shutil.copytree(tiny_bert, base)
    _auto_map("config.json", marker)(base)
    with pytest.raises(ModelDirError, match=r"config\.json: asks to run code"):
        load_classifier(str(base), {0: "a", 1: "b"})
    from tinyjudge.distill._embed import FrozenEncoder

    with pytest.raises(ModelDirError, match=r"config\.json: asks to run code"):
        FrozenEncoder(str(base), cache_dir=tmp_path)
    assert not marker.exists()


def test_an_intact_directory_passes_the_guard(saved: Path, tiny_bert: Path) -> None:
    check_hf_dir(saved)
    check_hf_dir(tiny_bert)
    assert load_model(saved).predict_proba  # and loads


def test_every_from_pretrained_in_src_refuses_remote_code() -> None:
    """Each ``from_pretrained`` call passes ``trust_remote_code=False`` (or ``**SAFE_LOAD``,
    which also asks for safetensors); a new load path cannot forget it."""
    missing = []
    for path in sorted((REPO / "src" / "tinyjudge").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "from_pretrained"
            ):
                continue
            names = {k.arg for k in node.keywords}
            spread = [k.value for k in node.keywords if k.arg is None]
            safe = any(isinstance(v, ast.Name) and v.id == "SAFE_LOAD" for v in spread)
            if not safe and "trust_remote_code" not in names and "use_safetensors" not in names:
                missing.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not missing, f"from_pretrained without trust_remote_code=False: {missing}"


@pytest.fixture(scope="module")
def saved_linear(xs_set: TrainingSet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = LinearRM("compliance", name="lin").fit(xs_set.items, xs_set.y_hard)
    return model.save(tmp_path_factory.mktemp("linear") / "model")


def _linear_vocab_index(d: Path) -> None:
    vocab = json.loads((d / "vocab.json").read_text())
    first = next(iter(vocab["vocab"]))
    word = next(iter(vocab["vocab"][first]))
    vocab["vocab"][first][word] = 10**9
    (d / "vocab.json").write_text(json.dumps(vocab))


def _linear_huge_tensor(d: Path) -> None:
    header, data = _header(d / "weights.safetensors")
    name = next(k for k in header if k != "__metadata__")
    header[name]["data_offsets"] = [0, 2**62]
    _write_header(d / "weights.safetensors", header, data)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (_linear_vocab_index, r"vocab\.json: the \w+ vocabulary has index 1000000000; allowed"),
        (_linear_huge_tensor, r"weights\.safetensors: tensor .* claims bytes 0\.\.461168601842"),
    ],
    ids=["vocab-index-10^9", "tensor-of-2^62-bytes"],
)
def test_a_hostile_linear_model_directory_is_one_line(
    saved_linear: Path, tmp_path: Path, edit: Callable[[Path], None], match: str
) -> None:
    d = _hostile(saved_linear, tmp_path, edit)
    with pytest.raises(ModelDirError, match=match) as e:
        load_model(d)
    assert "\n" not in str(e.value)
