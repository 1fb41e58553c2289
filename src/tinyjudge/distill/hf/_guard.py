"""What a model directory may hold before ``transformers`` reads it: data, never code.

A model directory is data a stranger can hand over; anyone who edits it can also
re-hash it, so the hashes of ``tinyjudge.json`` prove nothing about intent. So
every load path (weights, tokenizer, adapter) first checks the directory here:

- no ``auto_map`` in any of its configs: that key points ``transformers`` at a
  Python file to run (``trust_remote_code``), which tinyjudge never does;
- weights in safetensors: a directory with only pickle weights
  (``pytorch_model.bin``: unpickling can run code) is refused;
- every safetensors header in bounds: its length and every tensor's byte range
  inside the file, and each range the size its shape and dtype say (a header
  claiming 2^62 bytes is refused before anything is allocated);
- every token id of ``tokenizer.json`` (and the lines of ``vocab.txt``) inside
  the embedding table that ``config.json`` declares.

Each refusal is one :class:`ModelDirError` line naming the file and the fix.
:func:`hf_call` then turns whatever ``transformers`` or ``peft`` still raises
into one such line too.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tinyjudge.errors import ModelDirError, TinyjudgeError

__all__ = ["SAFE_LOAD", "check_hf_dir", "hf_call", "check_token_ids"]

# Passed to every from_pretrained: never run a directory's code, never unpickle.
SAFE_LOAD: dict[str, Any] = {"trust_remote_code": False, "use_safetensors": True}

_FIX = "re-save it from a trusted copy (`tinyjudge export`, or save_pretrained with safetensors)"
_CONFIGS = (
    "config.json",
    "tokenizer_config.json",
    "adapter_config.json",
    "preprocessor_config.json",
    "processor_config.json",
    "generation_config.json",
)
_PICKLES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
# safetensors' own limit on a header; a header this size is already absurd
_MAX_HEADER = 100 * 2**20
_MAX_JSON = 64 * 2**20  # a config or tokenizer file read here, whole
_DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip
# Tokens a tokenizer may hold beyond config.vocab_size (added at training, e.g. a pad).
_SLACK = 1024

T = TypeVar("T")


def _refuse(path: Path, problem: str, fix: str = _FIX) -> ModelDirError:
    return ModelDirError(f"{path}: {problem}; {fix}")


def _read_json(path: Path) -> Any:
    if path.stat().st_size > _MAX_JSON:
        raise _refuse(path, f"{path.stat().st_size} bytes, over the {_MAX_JSON} allowed")
    try:
        return json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as e:
        raise _refuse(path, f"not valid JSON ({str(e).splitlines()[0][:120]})") from None


def _check_no_code(folder: Path) -> None:
    for name in _CONFIGS:
        path = folder / name
        if not path.is_file():
            continue
        data = _read_json(path)
        if isinstance(data, dict) and data.get("auto_map"):
            target = data["auto_map"]
            shown = json.dumps(target)[:120] if not isinstance(target, str) else target[:120]
            raise _refuse(
                path,
                f"asks to run code from the directory (auto_map {shown}); tinyjudge loads "
                "model directories as data and never runs their code",
            )


def _check_safetensors(path: Path) -> None:
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise _refuse(path, f"{size} bytes: too short for a safetensors header")
        (n,) = struct.unpack("<Q", head)
        if n > min(_MAX_HEADER, size - 8):
            raise _refuse(
                path,
                f"its header claims {n} bytes; allowed: at most {min(_MAX_HEADER, size - 8)} "
                "(the file's size)",
            )
        raw = fh.read(n)
    try:
        header = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise _refuse(path, "its safetensors header is not valid JSON") from None
    if not isinstance(header, dict):
        raise _refuse(path, "its safetensors header is not a JSON object")
    data = size - 8 - n
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        _check_tensor(path, str(name)[:80], spec, data)


def _check_tensor(path: Path, name: str, spec: Any, data: int) -> None:
    if not isinstance(spec, dict):
        raise _refuse(path, f"tensor {name!r}: not a tensor record")
    dtype, shape, offsets = spec.get("dtype"), spec.get("shape"), spec.get("data_offsets")
    if not isinstance(dtype, str):
        raise _refuse(path, f"tensor {name!r}: no dtype")
    if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)) or not (
        isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
    ):
        raise _refuse(path, f"tensor {name!r}: malformed shape or data_offsets")
    begin, end = offsets
    if not 0 <= begin <= end <= data:
        raise _refuse(
            path,
            f"tensor {name!r} claims bytes {begin}..{end}; allowed: within the file's "
            f"{data} bytes of data",
        )
    if dtype in _DTYPE_BYTES and math.prod(shape) * _DTYPE_BYTES[dtype] != end - begin:
        raise _refuse(
            path,
            f"tensor {name!r}: shape {shape[:8]} of {dtype} does not fit its {end - begin} bytes",
        )


def _check_weights(folder: Path, adapter: bool) -> None:
    files = [p for p in folder.iterdir() if p.is_file()]
    tensors = [p for p in files if p.name.endswith(".safetensors")]
    pickles = [p for p in files if p.name.endswith(_PICKLES)]
    if adapter:
        tensors = [p for p in tensors if p.name.startswith("adapter_model")]
    if pickles and not tensors:
        raise _refuse(
            sorted(pickles)[0],
            "pickle weights only (unpickling can run code); tinyjudge reads safetensors",
        )
    for p in tensors:
        _check_safetensors(p)


def check_token_ids(folder: Path, vocab_size: int | None = None) -> None:
    """Every token id of the folder's tokenizer files falls inside the embedding table.

    Args:
        folder: a model or tokenizer directory.
        vocab_size: the embedding rows; by default ``config.json``'s ``vocab_size``
            (nothing is checked without one).

    Raises:
        ModelDirError: an id at or past ``vocab_size`` (plus a few added tokens).
    """
    if vocab_size is None:
        config = folder / "config.json"
        data = _read_json(config) if config.is_file() else {}
        vocab_size = data.get("vocab_size") if isinstance(data, dict) else None
        if not isinstance(vocab_size, int):
            return
    limit = vocab_size + _SLACK
    path = folder / "tokenizer.json"
    if path.is_file():
        tok = _read_json(path)
        ids: list[Any] = []
        if isinstance(tok, dict):
            vocab = (
                (tok.get("model") or {}).get("vocab")
                if isinstance(tok.get("model"), dict)
                else None
            )
            if isinstance(vocab, dict):
                ids += vocab.values()
            elif isinstance(vocab, list) and len(vocab) > limit:
                ids.append(len(vocab) - 1)
            ids += [t.get("id") for t in tok.get("added_tokens") or [] if isinstance(t, dict)]
        bad = next((i for i in ids if not (type(i) is int and 0 <= i < limit)), None)
        if bad is not None:
            raise _refuse(
                path,
                f"token id {str(bad)[:40]}; allowed: 0..{limit - 1} (config.json's vocab_size "
                f"{vocab_size} and up to {_SLACK} added tokens)",
            )
    path = folder / "vocab.txt"
    if path.is_file() and path.stat().st_size > 0:
        with path.open("rb") as fh:
            lines = sum(1 for _ in fh)
        if lines > limit:
            raise _refuse(
                path,
                f"{lines} tokens; allowed: at most {limit} (config.json's vocab_size {vocab_size})",
            )


def check_hf_dir(path: str | Path, adapter: bool = False) -> None:
    """Refuse, before ``transformers`` reads it, a local directory that could run code.

    A hub id (not a local directory) passes: ``transformers`` is then called with
    :data:`SAFE_LOAD`, which refuses remote code and pickle weights itself.

    Args:
        path: a local model directory or a hub id.
        adapter: the directory holds a LoRA adapter (its weights are
            ``adapter_model.*``).

    Raises:
        ModelDirError: one line naming the file: code asked for (``auto_map``),
            pickle weights only, a safetensors header out of bounds, a token id
            outside the embedding table.
    """
    folder = Path(path)
    if not folder.is_dir():
        return
    _check_no_code(folder)
    _check_weights(folder, adapter)
    check_token_ids(folder)


def hf_call(who: str, load: Callable[[], T]) -> T:
    """``load()`` (a ``from_pretrained``), with anything it raises as one ModelDirError line.

    Args:
        who: what failed, for the message's start (``"base='x' (x): cannot be
            loaded as a sequence classifier"``).
        load: the call.
    """
    try:
        return load()
    except TinyjudgeError:
        raise
    except Exception as e:  # noqa: BLE001 - any library failure becomes one line
        text = str(e).strip()
        first = text.splitlines()[0][:300] if text else type(e).__name__
        raise ModelDirError(
            f"{who}: {first}; give an intact local model directory or an available hub id"
        ) from None
