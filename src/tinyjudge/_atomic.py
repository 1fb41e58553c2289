"""Outputs that appear whole or not at all: new files are staged beside a folder, then swapped in.

A command that writes several files that belong together (``import``'s
``items.jsonl`` and ``labels.jsonl``; a model directory) writes them into a
temporary sibling folder; only when it succeeds does that folder take the
place of the old one, in one rename where the system offers an atomic
exchange (Linux ``renameat2``), else in two renames a moment apart. A command
that fails, is interrupted or killed leaves the old outputs as they were (a
killed one leaves a hidden ``.NAME.*.new`` folder, which a run of the command
an hour later removes). Single files go through
:func:`tinyjudge.datasets.jsonl.atomic_writer`.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import tempfile
import time
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import IO

from tinyjudge.errors import TinyjudgeError, UsageError

__all__ = ["atomic_dir", "carry_over", "same_file", "refuse_writing_over_inputs"]

_STAGING = ".new"
_OLD = ".old"


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name the same file (or would: the same absolute path)."""
    pa, pb = Path(a), Path(b)
    try:
        if pa.exists() and pb.exists():
            return os.path.samefile(pa, pb)
    except OSError:
        pass
    return pa.resolve() == pb.resolve()


def refuse_writing_over_inputs(
    outputs: Iterable[tuple[str | os.PathLike[str] | None, str]],
    inputs: Iterable[tuple[str | os.PathLike[str] | None, str]],
) -> None:
    """Refuse an output path that names one of the inputs, or another output.

    ``score X --out X`` (or ``hints L --out L``, ``audit L --json L``) would
    replace the input with the output. Pairs are ``(path, what to call it)``:
    the command layer calls an output by its flag (``--out``), the library by
    its parameter (``out_path``); a ``None`` path (not given) is left out.

    Raises:
        UsageError: naming the output and the input (or output) it would replace.
    """
    given = [(path, what) for path, what in inputs if path is not None]
    written = [(path, name) for path, name in outputs if path is not None]
    for n, (out_path, name) in enumerate(written):
        for path, what in given:
            if same_file(path, out_path):
                raise UsageError(
                    f"{name} {out_path} is the {what}; writing there would replace it: "
                    f"give another {name}"
                )
        for path, other in written[:n]:
            if same_file(path, out_path):
                raise UsageError(
                    f"{name} {out_path} is also the {other} path; give each its own file"
                )


@contextlib.contextmanager
def atomic_dir(
    path: str | os.PathLike[str], *, keep_others: bool = False, drop: Collection[str] = ()
) -> Iterator[Path]:
    """Stage a folder's new contents; on success they replace the folder's old ones together.

    Example:
        >>> with atomic_dir("runs/xs", keep_others=True) as tmp:  # doctest: +SKIP
        ...     write_jsonl(tmp / "items.jsonl", items)
        ...     write_jsonl(tmp / "labels.jsonl", labels)

    Args:
        path: the folder the outputs belong in.
        keep_others: the folder is a workspace (``import --out runs/xs``): what it
            holds besides the staged files (a judge's labels, a model) is kept.
            False: the folder *is* the output (a model directory) and nothing
            of the old one survives, such as a calibration fitted to old weights.
        drop: with ``keep_others``, names of the old folder's entries that are
            outputs of this run: one the run did not write again is gone after
            it (a calibration that is no longer applied), not carried over.

    Yields:
        The staging folder (empty) to write into.

    Raises:
        TinyjudgeError: ``path`` is a file.
    """
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise TinyjudgeError(f"{target} is a file; give a folder to write into")
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    _sweep(parent, target.name)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=_STAGING, dir=parent))
    try:
        yield staging
        if keep_others and target.is_dir():
            carry_over(target, staging, skip=drop)
        _swap(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _sweep(parent: Path, name: str, min_age: float = 3600.0) -> None:
    """Remove staging and old folders that a killed run on ``name`` left behind.

    Only those untouched for ``min_age`` seconds: a younger one may belong to a
    run still going.
    """
    now = time.time()
    for suffix in (_STAGING, _OLD):
        for left in parent.glob(f".{name}.*{suffix}"):
            with contextlib.suppress(OSError):
                if left.is_dir() and now - left.stat().st_mtime > min_age:
                    shutil.rmtree(left, ignore_errors=True)


def carry_over(old: Path, new: Path, skip: Collection[str] = ()) -> None:
    """Hard-link (else copy) into ``new`` what ``old`` holds and ``new`` does not.

    Hard links cost no space and no time for large files (a model's weights);
    a file reached through one must be replaced, never written in place, or
    the old folder would change with it.

    Args:
        old: the folder to take entries from.
        new: the folder to put them in.
        skip: names of ``old``'s entries to leave out.
    """
    for entry in old.iterdir():
        dest = new / entry.name
        if entry.name in skip or dest.exists() or dest.is_symlink():
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry), dest)
        elif entry.is_dir():
            shutil.copytree(entry, dest, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(entry), str(dest))


def _link_or_copy(src: str, dst: str) -> str:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst


def _swap(staging: Path, target: Path) -> None:
    if not target.exists():
        os.rename(staging, target)
        _fsync_dir(target.parent)
        return
    if _exchange(staging, target):
        # ``staging`` now holds the old contents.
        shutil.rmtree(staging, ignore_errors=True)
    else:
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=_OLD, dir=target.parent))
        os.rename(target, old / "x")
        os.rename(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    _fsync_dir(target.parent)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where unavailable."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at, name = ctypes.c_int, ctypes.c_char_p
    renameat2.argtypes = (at, name, at, name, ctypes.c_uint)
    rc = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once at import: os.umask can only be read by setting it.
_UMASK = _umask()


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """Open a text file that appears at ``path`` only when the block succeeds.

    The file gets the permissions an ordinary ``open(path, "w")`` would give it
    (those of the file it replaces, else 0o666 less the umask), not the
    owner-only ones of the temporary file it is written as.
    """
    p = Path(path)
    if p.is_dir():
        raise TinyjudgeError(f"{p} is a folder; give the path of a file to write")
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        try:
            mode = p.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_UMASK
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
