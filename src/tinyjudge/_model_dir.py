"""The model directory's one owner: ``tinyjudge.json``, the file hashes, the card, the calibration.

A model directory holds a reward model's files (weights, sharded or not, with
their index; adapter files; config and tokenizer files; the rubric's stored
copy) and what was attached to it later (the card ``README.md``, the
calibration's plot, ONNX exports). ``tinyjudge.json`` records

- ``files``: the SHA-256 of every file of the model, listed from disk when it
  was saved. With the rest of the record (tier, classes, rubric, params, card
  data) they are the model's identity, whose hash is ``sha256``;
- ``attached``: the SHA-256 of every file written beside the model (the card,
  plots, exports), checked like the others but not part of the identity, so a
  calibration fitted before an export still applies after it.

``calibration.json`` is bound by itself: it carries its own content hash and
the identity of the model it was fitted to.

A check lists the directory from disk: a file added after the save (an extra
shard), removed or edited is refused in one line. Hidden files (``.DS_Store``,
an editor's swap file) are no part of a model and are left alone.

Every change is whole. :func:`save_model_dir` builds a new directory beside the
old one and swaps it in; :func:`update_model_dir` (calibrate, export) stages a
copy whose files are hard links to the old ones (no weights are copied), lets
the caller write into it, lists and hashes it again and swaps it in. A failed or
killed run leaves the previous directory as it was.

This module is on floor 0 so that ``calibrate`` (floor 2, which writes the
calibration) and ``distill`` (floor 3, which saves and loads models) both go
through it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from tinyjudge._atomic import atomic_dir, atomic_writer, carry_over, same_file
from tinyjudge._digest import content_sha256, file_sha256
from tinyjudge.errors import DataError, ModelDirError, TinyjudgeError
from tinyjudge.rubric import Rubric, load_rubric_copy, save_rubric_copy

__all__ = [
    "META_FILE",
    "CARD_FILE",
    "CALIBRATION_FILE",
    "FORMAT",
    "FORMAT_VERSION",
    "ModelFileError",
    "identity_sha256",
    "ModelDirUpdate",
    "is_model_dir",
    "read_record",
    "read_meta",
    "check_files",
    "check",
    "listed_files",
    "write_meta",
    "save_model_dir",
    "update_model_dir",
    "model_rubric",
    "model_identity",
    "bind_calibration",
    "check_calibration",
    "write_calibration",
]

META_FILE = "tinyjudge.json"
CARD_FILE = "README.md"
CALIBRATION_FILE = "calibration.json"
FORMAT = "tinyjudge-reward-model"
# 3: every file is listed from disk and hashed ("files": the model; "attached": the card,
# plots, exports). 2 hashed only the files a tier named (weights, rubric copy) and exports.
FORMAT_VERSION = 3
# Fields of tinyjudge.json outside the model's identity: its own hash, and what was attached.
_NOT_IDENTITY = ("sha256", "attached")
# Files the listing leaves out: the record itself, and the calibration, bound by its own hashes.
_BOUND_BY_ITSELF = frozenset({META_FILE, CALIBRATION_FILE})


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
    if meta.get("format") != FORMAT or version != FORMAT_VERSION:
        older = " (version 2 hashed only the weights; 3 lists every file)" if version == 2 else ""
        raise ModelDirError(
            f"{path}: format {_short(meta.get('format'))} version {_short(version)}; this "
            f"tinyjudge reads {FORMAT!r} version {FORMAT_VERSION}{older}: re-distill the model"
        )
    if meta.get("sha256") != identity_sha256(meta):
        raise ModelDirError(
            f"{path}: edited after the model was saved (its content hash differs); "
            "the classes and rubric in it are bound to the weights: re-distill, or restore it"
        )
    if not isinstance(meta.get("files"), dict) or not isinstance(meta.get("attached", {}), dict):
        raise ModelDirError(f'{path}: "files" and "attached" must be objects')
    return meta


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
    on_disk = listed_files(d) - _BOUND_BY_ITSELF
    missing = sorted(set(recorded) - on_disk)
    if missing:
        raise ModelDirError(f"{d}: missing {missing[0]}; the model directory is incomplete")
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
    _write_json(folder / META_FILE, meta)
    return str(meta["sha256"])


def _write_json(path: Path, record: dict[str, Any]) -> None:
    # atomic_writer replaces the file: a hard link to an old directory's is never written through.
    with atomic_writer(path) as fh:
        fh.write(json.dumps(record, indent=2, ensure_ascii=False) + "\n")


def _write_text(path: Path, text: str) -> None:
    with atomic_writer(path) as fh:
        fh.write(text)


def save_model_dir(
    model_dir: str | os.PathLike[str],
    meta: dict[str, Any],
    rubric: Rubric,
    write_files: Callable[[Path], None],
    card: Callable[[dict[str, Any]], str],
) -> Path:
    """Save a model: its files, the rubric's copy, ``tinyjudge.json`` and the card, whole.

    The directory is built beside ``model_dir`` and swapped in when complete: a
    failed or killed save leaves the old model as it was, and nothing of an old
    model (a calibration fitted to its weights) survives.

    Args:
        model_dir: where the model goes (new, empty, or an earlier model's).
        meta: the record's own fields (tier, name, classes, params, card data).
        rubric: the rubric the model was trained under; its copy is stored and hashed.
        write_files: writes the model's files into the folder it is given;
            every file it writes there is listed and hashed.
        card: the card's Markdown from the whole record.

    Raises:
        ModelDirError: ``model_dir`` holds files but is not a model directory.
    """
    d = Path(model_dir)
    if d.is_dir() and any(d.iterdir()) and not is_model_dir(d):
        raise ModelDirError(
            f"{d} holds files and is not a model directory; saving there would replace "
            "them: give a new folder (or an earlier model's)"
        )
    with atomic_dir(d) as tmp:
        write_files(tmp)
        copy = save_rubric_copy(rubric, tmp).name
        names = listed_files(tmp) - _BOUND_BY_ITSELF - {CARD_FILE}  # our card replaces a tier's
        record = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            **meta,
            "rubric": rubric.model_dump(mode="json"),
            "rubric_hash": rubric.hash,
            "rubric_file": copy,
            "files": {name: file_sha256(tmp / name) for name in sorted(names)},
        }
        _write_text(tmp / CARD_FILE, card(record))
        record["attached"] = {CARD_FILE: file_sha256(tmp / CARD_FILE)}
        write_meta(tmp, record)
    return d


class ModelDirUpdate:
    """A model directory being changed, in a staging copy (see :func:`update_model_dir`).

    Attributes:
        root: the staging folder (its files are hard links to the old ones).
        meta: the model's ``tinyjudge.json`` as checked before the change.
    """

    def __init__(self, root: Path, meta: dict[str, Any], source: Path) -> None:
        self.root = root
        self.meta = meta
        self._source = source

    @property
    def identity(self) -> str:
        """The model's identity hash, which a calibration records."""
        return str(self.meta["sha256"])

    def path(self, name: str) -> Path:
        """A fresh path for the attached file ``name``, to write (an old one there is removed).

        Raises:
            ModelDirError: ``name`` is one of the model's own files.
        """
        if name in self.meta["files"] or name == META_FILE:
            raise ModelDirError(
                f"{self._source / name}: a file of the model itself; only re-distilling changes it"
            )
        p = self.root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.unlink(missing_ok=True)  # a hard link: writing through it would change the old folder
        return p

    def remove(self, name: str) -> None:
        """Remove the attached file ``name`` if it is there."""
        self.path(name)

    def write_calibration(self, state: dict[str, Any]) -> Path:
        """Write ``calibration.json`` bound to this model (see :func:`bind_calibration`)."""
        path = self.path(CALIBRATION_FILE)
        _write_json(path, bind_calibration(state, self.identity))
        return path

    def set_card_section(self, key: str, markdown: str) -> None:
        """Put ``markdown`` in the card as its section ``key``, replacing an earlier one."""
        card = self.root / CARD_FILE
        text = card.read_text(encoding="utf-8") if card.is_file() else ""
        start, end = f"<!-- tinyjudge:{key}:start -->", f"<!-- tinyjudge:{key}:end -->"
        section = f"{start}\n{markdown.strip()}\n{end}\n"
        if start in text and end in text:
            head, rest = text.split(start, 1)
            text = head + section + rest.split(end, 1)[1].lstrip("\n")
        else:
            text = text.rstrip("\n") + "\n\n" + section
        _write_text(self.path(CARD_FILE), text)

    def seal(self) -> None:
        """List the staged folder, hash what is attached and write ``tinyjudge.json``."""
        old = self.meta.get("attached", {})
        attached = {}
        for name in sorted(listed_files(self.root) - _BOUND_BY_ITSELF - set(self.meta["files"])):
            unchanged = name in old and _same_inode(self.root / name, self._source / name)
            attached[name] = old[name] if unchanged else file_sha256(self.root / name)
        self.meta = {**self.meta, "attached": attached}
        write_meta(self.root, self.meta)


def _same_inode(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


@contextlib.contextmanager
def update_model_dir(
    model_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None
) -> Iterator[ModelDirUpdate]:
    """Change a model directory as a whole: what the block writes appears together, or nothing.

    The directory is checked first. Its files are hard-linked (copied where the
    file system cannot link) into a staging folder beside the target; the
    block writes attached files through the :class:`ModelDirUpdate` it gets;
    then the folder is listed and hashed again and swapped in. A failure or a
    kill leaves the directory as it was.

    Example:
        >>> with update_model_dir("rm") as staged:  # doctest: +SKIP
        ...     staged.write_calibration(state)
        ...     staged.set_card_section("calibration", "## Calibration ...")

    Args:
        model_dir: the model directory.
        out_dir: write the changed model here instead (new or empty); the
            original stays as it was.

    Raises:
        ModelDirError: ``model_dir`` does not pass :func:`check`, or ``out_dir``
            is a file or a folder that holds files.
    """
    d = Path(model_dir)
    meta = check(d)
    target = d if out_dir is None else Path(out_dir)
    if not same_file(target, d) and target.exists():
        if not target.is_dir() or any(target.iterdir()):
            raise ModelDirError(
                f"{target} exists and is not empty; give a new folder for the changed model"
            )
    with atomic_dir(target) as tmp:
        carry_over(d, tmp)
        staged = ModelDirUpdate(tmp, meta, d)
        yield staged
        staged.seal()


def model_rubric(model_dir: str | os.PathLike[str], meta: dict[str, Any]) -> Rubric:
    """The rubric a saved model was trained under: its stored copy (``rubric_file``).

    The copy must be the rubric ``tinyjudge.json`` records; a directory saved
    before models carried the copy gives that one.

    Raises:
        ModelDirError: the copy's content hash differs from the recorded
            ``rubric_hash``, or the copy is not the recorded rubric.
        pydantic.ValidationError: the recorded rubric is malformed.
    """
    recorded = Rubric.model_validate(meta["rubric"])
    name = meta.get("rubric_file")
    if name is None:
        return recorded
    path = Path(model_dir) / str(name)
    try:
        copy = load_rubric_copy(path, meta.get("rubric_hash"))
    except ModelDirError:
        raise
    except TinyjudgeError as e:
        raise ModelDirError(str(e)) from None
    if copy != recorded:
        raise ModelDirError(
            f"{path}: not the rubric recorded in {META_FILE}; the model directory was "
            "rewritten by other code: re-distill, or restore it"
        )
    return copy


def model_identity(folder: str | os.PathLike[str]) -> str | None:
    """The identity hash in ``FOLDER/tinyjudge.json``; None outside a model directory."""
    if not is_model_dir(folder):
        return None
    try:
        meta = read_record(Path(folder) / META_FILE)
    except ModelFileError:
        return "unreadable"
    return str(meta.get("sha256"))


def bind_calibration(state: dict[str, Any], identity: str | None) -> dict[str, Any]:
    """A calibration's record with the model's ``identity`` (if any) and its own content hash."""
    bound = {k: v for k, v in state.items() if k not in ("model", "sha256")}
    if identity is not None:
        bound["model"] = identity  # the weights (and classes) it was fitted to
    bound["sha256"] = content_sha256(bound)
    return bound


def check_calibration(state: dict[str, Any], folder: str | os.PathLike[str]) -> None:
    """``FOLDER/calibration.json`` was not edited and, in a model directory, fits its model.

    Raises:
        ModelFileError: its content hash differs, or it was fitted to another
            model than the one in ``folder``.
    """
    path = str(Path(folder) / CALIBRATION_FILE)
    if state.get("sha256") != content_sha256(state):
        raise ModelFileError(
            path, None, "edited after it was written (its content hash differs): re-run calibrate"
        )
    identity = model_identity(folder)
    if identity is not None and state.get("model") != identity:
        raise ModelFileError(
            path, None,
            "fitted to another model than the one in this directory (re-distilled since?): "
            "re-run calibrate, or load the model uncalibrated",
        )  # fmt: skip


def write_calibration(folder: str | os.PathLike[str], state: dict[str, Any]) -> Path:
    """Write ``FOLDER/calibration.json``: into a model directory as a whole change, bound to it.

    Outside a model directory (a label source's calibration) the file is
    written on its own, with its content hash.
    """
    f = Path(folder)
    if is_model_dir(f):
        with update_model_dir(f) as staged:
            staged.write_calibration(state)
    else:
        f.mkdir(parents=True, exist_ok=True)
        _write_json(f / CALIBRATION_FILE, bind_calibration(state, None))
    return f / CALIBRATION_FILE
