"""The judgment store and cache: SQLite in WAL mode, one row per finished judgment.

Each judgment is committed the moment it is finished, so a run killed with
SIGKILL at any point keeps everything it finished (WAL with synchronous=NORMAL
survives a killed process; only a power cut can lose the last transactions),
and the next run answers those items from here without a call. Only results
are stored: never the API key, never request headers.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from typing import Any

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


class Store:
    """A SQLite file of finished judgments, keyed by :func:`cache_key`.

    Args:
        path: the database file (created with its folder if missing).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.executescript(_SCHEMA)

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """The stored results of those ``keys`` that have one."""
        found: dict[str, dict[str, Any]] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, result FROM judgments WHERE key IN ({marks})", chunk
            )
            found.update((k, json.loads(r)) for k, r in rows)
        return found

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
        self._db.execute(
            "INSERT OR REPLACE INTO judgments VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                item_id,
                order,
                rubric_hash,
                model,
                json.dumps(result, ensure_ascii=False),
                time.time(),
            ),
        )

    def item_ids(self) -> set[str]:
        """The ids of items with at least one stored judgment."""
        return {r[0] for r in self._db.execute("SELECT DISTINCT item_id FROM judgments")}

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
