"""Outputs that appear whole or not at all: new files are staged beside a folder, then swapped in.

A command that writes several files that belong together (``import``'s
``items.jsonl`` and ``labels.jsonl``; a model directory) writes them into a
temporary sibling folder; only when it succeeds does that folder take the
place of the old one, in one rename where the system offers an atomic
exchange (Linux ``renameat2``), else in two renames a moment apart. Single
files go through :func:`atomic_writer` (a temporary ``.NAME.*.tmp`` beside them).

A command that fails or is interrupted (SIGINT, and SIGTERM under the CLI)
removes its temporary files and leaves the old outputs as they were. One killed
with ``kill -9`` leaves its hidden ``.NAME.*.new`` folder or ``.NAME.*.tmp``
file; the next write of that output removes them. A writer holds an advisory
lock (``flock``) on what it stages while it writes, and the kernel drops it when
the writer dies, so a leftover is told from a write still going by its lock,
not by its age. A write that fails for a full disk raises
:class:`~tinyjudge.errors.DiskFull` (a ``StorageError``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import IO

from tinyjudge.errors import DiskFull, StorageError, TinyjudgeError, UsageError

__all__ = [
    "atomic_dir",
    "atomic_writer",
    "carry_over",
    "same_file",
    "current_umask",
    "check_writable",
    "refuse_writing_over_inputs",
    "exclusive_lock",
]

_STAGING = ".new"
_OLD = ".old"
_TMP = ".tmp"


def check_writable(path: str | os.PathLike[str]) -> None:
    """Refuse, before any work, an output whose folder cannot take a new file.

    Creates a temporary file (removed at once) in the output's folder, or in the
    nearest folder above it that exists (nothing is created for an output never
    written): the one test that a read-only mount and a full disk both fail.

    Raises:
        StorageError: naming the output and why.
    """
    p = Path(path)
    folder = p.absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=f".{p.name}.", suffix=".probe") as fh:
            fh.write(b"x")
            fh.flush()
    except OSError as e:
        raise StorageError(
            f"{p}: cannot write there ({e.strerror or e}); give a path on a writable disk"
        ) from None


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
        raise StorageError(f"{target} is a file; give a folder to write into")
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    _sweep(parent, target.name)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=_STAGING, dir=parent))
    lock = _hold(staging)
    try:
        yield staging
        # Before what is carried over joins it: those are hard links to the old files.
        # A workspace keeps its own mode; a folder that is the output is made anew.
        kept_mode = target.stat().st_mode & 0o7777 if keep_others and target.is_dir() else None
        _honour_umask(staging, kept_mode)
        if keep_others and target.is_dir():
            carry_over(target, staging, skip=drop)
        _swap(staging, target)
    except BaseException as e:
        shutil.rmtree(staging, ignore_errors=True)
        _raise_if_full(e, target)
        raise
    finally:
        os.close(lock)


def _hold(path: Path) -> int:
    """Open ``path`` and take its advisory lock: held until closed, or the process dies."""
    fd = os.open(path, os.O_RDONLY)
    with contextlib.suppress(OSError):  # a file system without flock: the age rule alone
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _abandoned(path: Path, min_age: float) -> bool:
    """Whether no live writer holds ``path``: its lock is free and it is ``min_age`` old.

    The age covers the instant between a writer creating its temporary name and
    locking it.
    """
    try:
        if time.time() - path.lstat().st_mtime < min_age:
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # no flock here: only a leftover an hour old is surely abandoned
        return time.time() - path.lstat().st_mtime > 3600
    finally:
        os.close(fd)
    return True


def _sweep(parent: Path, name: str, min_age: float = 0.5) -> None:
    """Remove the staging folders and temporary files a killed write of ``name`` left."""
    for suffix in (_STAGING, _OLD):
        for left in parent.glob(f".{name}.*{suffix}"):
            if left.is_dir() and not left.is_symlink() and _abandoned(left, min_age):
                shutil.rmtree(left, ignore_errors=True)
    for left in parent.glob(f".{name}.*{_TMP}"):
        if left.is_file() and not left.is_symlink() and _abandoned(left, min_age):
            with contextlib.suppress(OSError):
                left.unlink()


_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
# How writers that are not Python's own file objects say ENOSPC (safetensors: Rust's
# io::Error; torch: "file write failed").
_FULL_WORDS = ("no space left", "storagefull", "os error 28", "quota exceeded", "file too large")


def _disk_full(e: BaseException, folder: Path) -> bool:
    """Whether the write failed because the disk (or a quota) under ``folder`` is full."""
    if isinstance(e, OSError):
        return e.errno in _FULL_ERRNOS
    if not isinstance(e, Exception) or isinstance(e, TinyjudgeError):
        return False  # SIGINT, SIGTERM, an exit, a bad record: not the disk
    if any(w in str(e).lower() for w in _FULL_WORDS):
        return True
    try:
        vfs = os.statvfs(folder)
    except OSError:
        return False
    return vfs.f_bavail * vfs.f_frsize < 64 * 1024  # a writer that did not say why


def _raise_if_full(e: BaseException, target: Path) -> None:
    folder = target.parent
    if _disk_full(e, folder):
        raise DiskFull(
            f"{target}: no space left on the device writing it ({type(e).__name__}: "
            f"{str(e)[:200]}); it is as it was before: free space and run again",
            str(target),
        ) from None


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


def current_umask() -> int:
    """The process's umask, read without changing it where Linux says it (/proc)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere it can only be read by setting it
    os.umask(mask)
    return mask


def _honour_umask(folder: Path, mode: int | None = None) -> None:
    """Give ``folder`` and all it holds the permissions the umask says.

    Writers that go through a temporary file (``tempfile``, safetensors) leave
    0600 files and 0700 folders; a model another user must read (a service
    account, Ray workers) needs what an ordinary ``open``/``mkdir`` would give:
    0644 and 0755 under umask 022. Execute bits already set are kept.

    Args:
        folder: the staging folder, holding only files this run wrote.
        mode: the folder's own mode (that of the folder it replaces); None: the umask's.
    """
    mask = current_umask()
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o777 & ~mask)
        for name in files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                os.chmod(path, (0o666 | (0o111 if st.st_mode & 0o111 else 0)) & ~mask)
    os.chmod(folder, mode if mode is not None else 0o777 & ~mask)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """Open a text file that appears at ``path`` only when the block succeeds.

    The file gets the permissions an ordinary ``open(path, "w")`` would give it
    (those of the file it replaces, else 0o666 less the umask), not the
    owner-only ones of the temporary file it is written as.
    """
    p = Path(path)
    if p.is_dir():
        raise StorageError(f"{p} is a folder; give the path of a file to write")
    p.parent.mkdir(parents=True, exist_ok=True)
    _sweep(p.parent, p.name)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=_TMP, dir=p.parent)
    with contextlib.suppress(OSError):  # see the module: a live write holds its lock
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        try:
            mode = p.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~current_umask()
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        _raise_if_full(e, p)
        raise


@contextlib.contextmanager
def exclusive_lock(path: str | os.PathLike[str], timeout: float = 120.0) -> Iterator[None]:
    """Hold the exclusive lock of the file at ``path`` for a read-modify-write of it.

    Every writer that reads a labels file and writes it back (an import, a judge
    or a score run keeping other sources' labels, the labelling page) holds this
    lock from its read to its rename, so two of them never lose each other's
    update. The lock is ``flock`` on the file itself: a writer replaces the file
    (a rename), so a waiter that gets the lock checks that the path still names
    the file it locked, and locks the new one if not. A file that did not exist
    is created (empty) to be locked, and removed again if it is still empty and
    unreplaced when the lock is let go. The kernel drops the lock when its holder
    dies; no lock file is left behind.

    Raises:
        StorageError: another writer held it for ``timeout`` seconds.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    while True:
        created = not p.exists()
        fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o666 & ~current_umask())
        try:
            _flock_until(fd, p, deadline, timeout)
            st = os.fstat(fd)
            try:
                now = os.stat(p)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # replaced while we waited: lock the file that is there now
    try:
        yield
    finally:
        if created:
            with contextlib.suppress(OSError):
                now = os.stat(p)
                if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) and now.st_size == 0:
                    p.unlink()
        os.close(fd)


def _flock_until(fd: int, path: Path, deadline: float, timeout: float) -> None:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise StorageError(
                    f"{path}: another process has been writing it for {timeout:.0f} s; "
                    "wait for it to finish, then run again"
                ) from None
            time.sleep(0.02)
        except OSError:  # a file system without flock: nothing to hold
            return
