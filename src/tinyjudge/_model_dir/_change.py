"""Saving a model directory, and changing one as a whole (calibrate, export)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tinyjudge._atomic import atomic_dir, carry_over, same_file
from tinyjudge._digest import file_sha256
from tinyjudge.errors import ModelDirError
from tinyjudge.rubric import Rubric, save_rubric_copy

from ._calibration import bind_calibration
from ._record import (
    BOUND_BY_ITSELF,
    CALIBRATION_FILE,
    CARD_FILE,
    FORMAT,
    FORMAT_VERSION,
    META_FILE,
    READ_ONLY_VERSION,
    check,
    is_model_dir,
    listed_files,
    write_json,
    write_meta,
    write_text,
)

__all__ = ["save_model_dir", "ModelDirUpdate", "update_model_dir", "write_calibration"]


def save_model_dir(
    model_dir: str | os.PathLike[str],
    meta: dict[str, Any],
    rubric: Rubric,
    write_files: Callable[[Path], None],
    card: Callable[[dict[str, Any]], str],
    attach: Callable[[ModelDirUpdate], None] | None = None,
) -> Path:
    """Save a model: its files, the rubric's copy, ``tinyjudge.json``, the card and what
    is attached to it (a calibration), whole.

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
        attach: writes what goes beside the model (a calibration bound to its
            identity, a plot, a card section) through the :class:`ModelDirUpdate`
            it is given, once the model's record is known.

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
        names = listed_files(tmp) - BOUND_BY_ITSELF - {CARD_FILE}  # our card replaces a tier's
        record = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            **meta,
            "rubric": rubric.model_dump(mode="json", by_alias=True),
            "rubric_hash": rubric.hash,
            "rubric_file": copy,
            "files": {name: file_sha256(tmp / name) for name in sorted(names)},
        }
        write_text(tmp / CARD_FILE, card(record))
        record["attached"] = {CARD_FILE: file_sha256(tmp / CARD_FILE)}
        record["sha256"] = write_meta(tmp, record)
        if attach is not None:
            staged = ModelDirUpdate(tmp, record, d)
            attach(staged)
            staged.seal()
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
        write_json(path, bind_calibration(state, self.identity))
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
        write_text(self.path(CARD_FILE), text)

    def seal(self) -> None:
        """List the staged folder, hash what is attached and write ``tinyjudge.json``."""
        old = self.meta.get("attached", {})
        attached = {}
        for name in sorted(listed_files(self.root) - BOUND_BY_ITSELF - set(self.meta["files"])):
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
        ModelDirError: ``model_dir`` does not pass :func:`check`, is of the
            read-only version 2, or ``out_dir`` is a file or a folder that holds files.
    """
    d = Path(model_dir)
    meta = check(d)
    if meta.get("version") == READ_ONLY_VERSION:
        raise ModelDirError(
            f"{d / META_FILE}: version {READ_ONLY_VERSION}, which this tinyjudge loads and "
            f"scores but does not change (version {FORMAT_VERSION} lists every file): "
            "re-distill the model to calibrate or export it"
        )
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
        write_json(f / CALIBRATION_FILE, bind_calibration(state, None))
    return f / CALIBRATION_FILE
