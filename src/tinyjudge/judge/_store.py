"""The judgment store and cache: SQLite in WAL mode, one row per finished judgment.

Each judgment is committed the moment it is finished, so a run killed with
SIGKILL at any point keeps everything it finished (WAL with synchronous=NORMAL
survives a killed process; only a power cut can lose the last transactions),
and the next run answers those items from here without a call. Only results
are stored: never the API key, never request headers.

Whatever SQLite cannot do with the file (a full disk, a read-only folder, a
file that is not a cache or is corrupt, a lock another process holds) is a
:class:`~tinyjudge.errors.StorageError` naming the file and the fix; what was
committed before it stays in the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tinyjudge.errors import StorageError

__all__ = ["Store", "cache_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgments (
    key TEXT PRIMARY KEY,
    item_id TEXT NOT NULL,
    ord TEXT NOT NULL,
    rubric_hash TEXT NOT NULL,
    model TEXT NOT NULL,
    result TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS judgments_item ON judgments (item_id);
"""


def cache_key(
    rubric_hash: str, content_hash: str, model: str, params: dict[str, Any], order: str
) -> str:
    """The cache key of one judgment: rubric, item content, model, sampling parameters, order."""
    blob = json.dumps(
        {"r": rubric_hash, "c": content_hash, "m": model, "p": params, "o": order},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


# How long a write waits for another process's lock before it is an error.
_BUSY_MS = 5000
_COLUMNS = ["key", "item_id", "ord", "rubric_hash", "model", "result", "created"]


def _fix(path: str, e: BaseException) -> str:
    """What went wrong with the cache file at ``path``, and what to do, in one sentence."""
    code = getattr(e, "sqlite_errorname", "") or ""
    text = str(e)
    low = text.lower()
    if isinstance(e, OSError):
        low += " " + (os.strerror(e.errno) if e.errno else "").lower()
    if "full" in code.lower() or "disk is full" in low or "no space" in low:
        return (
            f"the disk holding the judge cache {path} is full ({text}); free space and run "
            "again: finished judgments are kept there and the run resumes from them"
        )
    read_only = "readonly" in code.lower() or "read-only" in low or "readonly" in low
    if read_only or "permission" in low or _folder_read_only(path):
        return (
            f"the judge cache {path} cannot be written ({text}): its folder or file is "
            "read-only; make it writable or give another cache (or none)"
        )
    if "busy" in code.lower() or "locked" in low:
        return (
            f"the judge cache {path} is locked by another process ({text}); wait for that "
            "run to end or give another cache"
        )
    if (
        "notadb" in code.lower()
        or "corrupt" in code.lower()
        or "not a database" in low
        or ("malformed" in low)
    ):
        return (
            f"{path} is not a readable judge cache ({text}); it was left as it is: move it "
            "aside or give another cache (the judgments it held are asked for again)"
        )
    if "cantopen" in code.lower() or "unable to open" in low:
        return (
            f"the judge cache {path} cannot be opened ({text}); check that its folder "
            "exists and is writable, or give another cache"
        )
    return f"the judge cache {path} failed ({type(e).__name__}: {text}); give another cache"


def _folder_read_only(path: str) -> bool:
    """Whether the folder that holds (or would hold) ``path`` cannot be written."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY) or not os.access(folder, os.W_OK)
    except OSError:
        return False


@contextmanager
def _storage_errors(path: str) -> Iterator[None]:
    """SQLite's and the file system's errors on the cache, as one-line StorageErrors."""
    try:
        yield
    except (sqlite3.Error, OSError) as e:
        raise StorageError(_fix(path, e)) from None


class Store:
    """A SQLite file of finished judgments, keyed by :func:`cache_key`.

    Args:
        path: the database file (created with its folder if missing).

    Raises:
        StorageError: the file cannot be created, read or written (see the module).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        if os.path.isdir(self.path):
            raise StorageError(f"the judge cache {self.path} is a folder; give a file path")
        with _storage_errors(self.path):
            folder = os.path.dirname(self.path)
            if folder:
                os.makedirs(folder, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            with _storage_errors(self.path):
                self._db.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._check_schema()
                self._db.executescript(_SCHEMA)
                # Take the write lock once now, so a cache another process holds is
                # refused before any call is paid for, not after.
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute("ROLLBACK")
        except BaseException:
            self._db.close()
            raise

    def _check_schema(self) -> None:
        columns = [r[1] for r in self._db.execute("PRAGMA table_info(judgments)")]
        if columns and columns != _COLUMNS:
            raise StorageError(
                f"{self.path} is an SQLite file but not a judge cache (its judgments table "
                f"has columns {columns}); it was left as it is: give another cache"
            )

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """The stored results of those ``keys`` that have one."""
        found: dict[str, dict[str, Any]] = {}
        with _storage_errors(self.path):
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, result FROM judgments WHERE key IN ({marks})", chunk
                ).fetchall()
                found.update((k, self._result(k, r)) for k, r in rows)
        return found

    def _result(self, key: str, text: str) -> dict[str, Any]:
        try:
            result = json.loads(text)
        except (ValueError, RecursionError):
            result = None
        if not isinstance(result, dict):
            raise StorageError(
                f"{self.path}: the stored judgment {key[:12]} is not a result (edited or "
                "corrupt); move the cache aside or give another cache"
            )
        return result

    def get(self, key: str) -> dict[str, Any] | None:
        return self.get_many([key]).get(key)

    def put(
        self,
        key: str,
        item_id: str,
        order: str,
        rubric_hash: str,
        model: str,
        result: dict[str, Any],
    ) -> None:
        """Store one finished judgment and commit it at once."""
        row = (key, item_id, order, rubric_hash, model)
        text = json.dumps(result, ensure_ascii=False)
        with _storage_errors(self.path):
            self._db.execute(
                "INSERT OR REPLACE INTO judgments VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*row, text, time.time()),
            )

    def item_ids(self) -> set[str]:
        """The ids of items with at least one stored judgment."""
        with _storage_errors(self.path):
            return {r[0] for r in self._db.execute("SELECT DISTINCT item_id FROM judgments")}

    def __len__(self) -> int:
        with _storage_errors(self.path):
            return int(self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
