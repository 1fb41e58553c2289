"""``tinyjudge.json``: read, checked against the files on disk, written; the file listing."""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from pathlib import Path
from typing import Any

from tinyjudge._atomic import atomic_writer
from tinyjudge._digest import content_sha256, file_sha256
from tinyjudge.errors import DataError, ModelDirError

__all__ = [
    "BOUND_BY_ITSELF",
    "META_FILE",
    "CARD_FILE",
    "CALIBRATION_FILE",
    "FORMAT",
    "FORMAT_VERSION",
    "READ_ONLY_VERSION",
    "ModelFileError",
    "identity_sha256",
    "is_model_dir",
    "read_record",
    "read_meta",
    "check_files",
    "check",
    "listed_files",
    "write_meta",
    "write_json",
    "write_text",
]

META_FILE = "tinyjudge.json"
CARD_FILE = "README.md"
CALIBRATION_FILE = "calibration.json"
FORMAT = "tinyjudge-reward-model"
# 3: every file is listed from disk and hashed ("files": the model; "attached": the card,
# plots, exports). 2 hashed only the files a tier named (weights, rubric copy) and exports:
# such a directory is still read (loaded, scored, served), checking the files it names.
FORMAT_VERSION = 3
READ_ONLY_VERSION = 2
# Fields of tinyjudge.json outside the model's identity: its own hash, and what was attached.
_NOT_IDENTITY = ("sha256", "attached")
# Files the listing leaves out: the record itself, and the calibration, bound by its own hashes.
BOUND_BY_ITSELF = frozenset({META_FILE, CALIBRATION_FILE})


class ModelFileError(ModelDirError, DataError):
    """A file of a model directory that cannot be used, located as bad data is (``path:line``)."""


def is_model_dir(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder holding a ``tinyjudge.json``."""
    return (Path(path) / META_FILE).is_file()


def read_record(path: Path) -> dict[str, Any]:
    """A JSON object from ``path`` (``tinyjudge.json``, ``calibration.json``), or one line why not.

    Raises:
        ModelFileError: not UTF-8, not JSON (a 5,000-digit number, nesting too deep
            included), or not an object.
    """
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ModelFileError(str(path), None, f"not UTF-8 text (byte {e.start + 1})") from None
    except json.JSONDecodeError as e:
        raise ModelFileError(str(path), e.lineno, f"not valid JSON ({e.msg})") from None
    except (ValueError, RecursionError) as e:
        what = "nested too deep" if isinstance(e, RecursionError) else str(e).split(":")[0]
        raise ModelFileError(str(path), None, f"not valid JSON ({what})") from None
    if not isinstance(data, dict):
        raise ModelFileError(str(path), None, f"expected a JSON object, got {type(data).__name__}")
    return data


def _short(value: Any) -> str:
    shown = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return shown if len(shown) <= 60 else shown[:57] + "..."


def identity_sha256(meta: dict[str, Any]) -> str:
    """The model's identity: the hash of ``tinyjudge.json`` without ``sha256`` and ``attached``."""
    return content_sha256(meta, _NOT_IDENTITY)


def read_meta(model_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """``tinyjudge.json`` of ``model_dir``, checked for format, version, its hash and shape.

    Raises:
        ModelDirError: not a model directory, another format or version, the
            record edited after the save, ``files``/``attached`` not objects.
    """
    d = Path(model_dir)
    path = d / META_FILE
    if not path.is_file():
        raise ModelDirError(f"{d}: not a tinyjudge model directory (no {META_FILE})")
    meta = read_record(path)
    version = meta.get("version")
    if meta.get("format") == FORMAT and version == READ_ONLY_VERSION:
        return _read_version_2(path, meta)
    if meta.get("format") != FORMAT or version != FORMAT_VERSION:
        raise ModelDirError(
            f"{path}: format {_short(meta.get('format'))} version {_short(version)}; this "
            f"tinyjudge reads {FORMAT!r} versions {READ_ONLY_VERSION} and {FORMAT_VERSION}: "
            "re-distill the model"
        )
    if meta.get("sha256") != identity_sha256(meta):
        raise ModelDirError(
            f"{path}: edited after the model was saved (its content hash differs); "
            "the classes and rubric in it are bound to the weights: re-distill, or restore it"
        )
    if not isinstance(meta.get("files"), dict) or not isinstance(meta.get("attached", {}), dict):
        raise ModelDirError(f'{path}: "files" and "attached" must be objects')
    return meta


def _read_version_2(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """A version 2 record: its hash covered all of it; its ONNX ``exports`` are what is attached."""
    if meta.get("sha256") != content_sha256(meta):
        raise ModelDirError(
            f"{path}: edited after the model was saved (its content hash differs); "
            "the classes and rubric in it are bound to the weights: re-distill, or restore it"
        )
    exports = meta.get("exports", {})
    if not isinstance(meta.get("files"), dict) or not isinstance(exports, dict):
        raise ModelDirError(f'{path}: "files" and "exports" must be objects')
    return {**meta, "attached": exports}


def listed_files(folder: Path) -> set[str]:
    """Every file under ``folder`` as a relative POSIX path, hidden ones left out."""
    found = set()
    for p in folder.rglob("*"):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            found.add(rel.as_posix())
    return found


def check_files(model_dir: str | os.PathLike[str], meta: dict[str, Any]) -> None:
    """The files on disk are exactly those ``meta`` records, each with its recorded hash.

    Raises:
        ModelDirError: a recorded file is missing, a file is there that was
            added after the save, or a file's SHA-256 differs (edited, corrupted).
    """
    d = Path(model_dir)
    recorded = {**meta["files"], **meta.get("attached", {})}
    on_disk = listed_files(d) - BOUND_BY_ITSELF
    missing = sorted(set(recorded) - on_disk)
    if missing:
        raise ModelDirError(f"{d}: missing {missing[0]}; the model directory is incomplete")
    if meta.get("version") == READ_ONLY_VERSION:
        # Version 2 named only the files it bound (weights, rubric copy, exports): those
        # are checked; its other files (tokenizer, card, plot) were never in the record.
        on_disk &= set(recorded)
    added = sorted(on_disk - set(recorded))
    if added:
        more = f" (and {len(added) - 1} more)" if len(added) > 1 else ""
        raise ModelDirError(
            f"{d / added[0]}{more}: not in {META_FILE}; added after the model was saved, "
            "it is not part of the model: remove it, or re-distill"
        )
    for name, expected in sorted(recorded.items()):
        if file_sha256(d / name) != expected:
            raise ModelDirError(
                f"{d / name}: SHA-256 differs from the one recorded at save time; the file was "
                "changed or corrupted: re-distill or restore it"
            )


def check(
    model_dir: str | os.PathLike[str], tiers: Collection[str] | None = None
) -> dict[str, Any]:
    """:func:`read_meta` and :func:`check_files`: the directory is as it was saved.

    Args:
        model_dir: the model directory.
        tiers: the tiers a caller can load; another recorded ``tier`` is refused.

    Raises:
        ModelDirError: see :func:`read_meta` and :func:`check_files`; a tier not
            in ``tiers``.
    """
    meta = read_meta(model_dir)
    check_files(model_dir, meta)
    tier = meta.get("tier")
    if tiers is not None and (not isinstance(tier, str) or tier not in tiers):
        raise ModelDirError(
            f"{Path(model_dir) / META_FILE}: unknown tier {_short(tier)}; tiers are {sorted(tiers)}"
        )
    return meta


def write_meta(folder: Path, meta: dict[str, Any]) -> str:
    """Write ``tinyjudge.json`` stamped with the model's identity hash; returns the hash.

    The hash covers everything but ``attached``: the classes, the rubric (so
    its ``positive`` labels), the params and the model files' hashes.
    """
    meta = {**meta, "sha256": identity_sha256(meta)}
    write_json(folder / META_FILE, meta)
    return str(meta["sha256"])


def write_json(path: Path, record: dict[str, Any]) -> None:
    # atomic_writer replaces the file: a hard link to an old directory's is never written through.
    with atomic_writer(path) as fh:
        fh.write(json.dumps(record, indent=2, ensure_ascii=False) + "\n")


def write_text(path: Path, text: str) -> None:
    with atomic_writer(path) as fh:
        fh.write(text)
