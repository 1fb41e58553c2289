"""Durable storage of a reviewer's answers: SQLite in WAL mode, exported to the labels file.

Every answer is committed before the HTTP response leaves (``synchronous=FULL``), so
closing the browser or killing the server loses nothing. A new label is also appended
(and fsynced) to the labels file in the same locked step, so ``tinyjudge calibrate``
and ``tinyjudge audit`` read it with no conversion; an undo rewrites the file
atomically instead (:meth:`LabelStore.export`: every other record untouched, then the
store's live human labels). The app exports at start too, which repairs a file that
disagrees with the store for any reason (a crash after the append but before the
commit, a hand edit).

Skips and undone answers stay in SQLite (for the record) but are never exported: a
skip is the absence of a human answer, not a verdict.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, NamedTuple

from tinyjudge._atomic import exclusive_lock
from tinyjudge.datasets.jsonl import atomic_writer
from tinyjudge.errors import StorageError, UsageError
from tinyjudge.records import Label
from tinyjudge.rubric import Rubric

from ._labels_file import append_line, cut_to, lines_except, mend_tail, read_objects
from ._schema import SCHEMA

__all__ = ["Answer", "LabelStore", "store_path", "check_reviewer"]


_REVIEWER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class Answer(NamedTuple):
    """One live (not undone) answer of a reviewer."""

    id: int
    reviewer: str
    item_id: str
    kind: Literal["label", "skip"]
    label: str | None
    note: str | None
    rubric_hash: str


def store_path(labels: str | os.PathLike[str]) -> Path:
    """Where the SQLite store of a labels file lives: right next to it."""
    p = Path(labels)
    return p.with_name(p.name + ".tinyjudge-label.sqlite")


def check_reviewer(name: str) -> str:
    """Validate a reviewer name, which becomes the label source ``human:<name>``."""
    if not _REVIEWER.fullmatch(name or ""):
        raise UsageError(
            f"reviewer name {name!r} is not allowed: use 1-64 letters, digits, '_', '.' or '-' "
            "(it becomes the label source human:<name>)",
        )
    return name


class LabelStore:
    """Answers of any number of reviewers for one rubric, on disk.

    Args:
        labels: the labels JSONL file the answers are exported to (created if absent).
        rubric: the rubric being labelled; answers are kept per rubric id.
        db: the SQLite file; by default :func:`store_path` of ``labels``.

    Thread-safe: one connection guarded by a lock, since FastAPI runs sync handlers
    in a thread pool. Two server processes (two reviewers) may share one store:
    exports are serialised by SQLite's write lock.
    """

    def __init__(
        self,
        labels: str | os.PathLike[str],
        rubric: Rubric,
        db: str | os.PathLike[str] | None = None,
    ) -> None:
        self.labels_path = Path(labels)
        self.rubric = rubric
        self.db_path = Path(db) if db is not None else store_path(self.labels_path)
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._on_rollback: list[Callable[[], None]] = []  # of the open transaction
        self._db = sqlite3.connect(
            self.db_path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        # FULL: an answer survives a power cut too, not only a killed process.
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding SQLite's write lock and the labels file's lock.

        A full disk (at the store or the labels file) rolls it back and is a
        :class:`StorageError`; nothing of it is kept.
        """
        # The labels file's lock too: `import labels` (or another tool) rewriting the file
        # at the same time would otherwise drop an answer appended in between.
        with self._lock, exclusive_lock(self.labels_path):
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as e:
                raise self._storage_error(e, self.db_path) from None
            self._on_rollback = []
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as e:
                for undo in self._on_rollback:  # while SQLite's write lock is still held
                    undo()
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(e, sqlite3.OperationalError):
                    raise self._storage_error(e, self.db_path) from None
                if isinstance(e, OSError):
                    raise self._storage_error(e, self.labels_path) from None
                raise

    @staticmethod
    def _storage_error(e: Exception, path: Path) -> StorageError:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        return StorageError(
            f"{path}: cannot save the answer ({why}); nothing of it was kept: free some "
            "space (or fix the folder), then answer again"
        )

    # -- reading ---------------------------------------------------------------------------
    def answers(self, reviewer: str | None = None) -> list[Answer]:
        """Live answers (labels and skips) in the order given, of one reviewer or all."""
        sql = (
            "SELECT id, reviewer, item_id, kind, label, note, rubric_hash FROM answers "
            "WHERE rubric = ? AND undone IS NULL"
        )
        args: list[str] = [self.rubric.id]
        if reviewer is not None:
            sql += " AND reviewer = ?"
            args.append(reviewer)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", args).fetchall()
        return [Answer(*row) for row in rows]

    def reviewers(self) -> list[str]:
        """Everyone registered to label this rubric here (see :meth:`register`)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT reviewer FROM reviewers WHERE rubric = ? ORDER BY reviewer",
                (self.rubric.id,),
            ).fetchall()
        return [r[0] for r in rows]

    def register(self, reviewer: str) -> None:
        """Claim ``human:<reviewer>`` for this rubric: the store now owns those labels in
        the labels file (check :meth:`foreign_labels` first)."""
        with self._write() as db:
            db.execute(
                "INSERT OR IGNORE INTO reviewers (reviewer, rubric) VALUES (?, ?)",
                (reviewer, self.rubric.id),
            )

    def current(self, reviewer: str) -> tuple[str, str | None] | None:
        """The item assigned to the reviewer and not yet answered: (item_id, selected_by)."""
        with self._lock:
            row = self._db.execute(
                "SELECT item_id, selected_by FROM cursor WHERE reviewer = ? AND rubric = ?",
                (reviewer, self.rubric.id),
            ).fetchone()
        return (row[0], row[1]) if row else None

    def current_or_next(
        self,
        reviewer: str,
        choose: Callable[[set[str]], tuple[str, str | None] | None],
        known: Callable[[str], bool] = lambda _: True,
    ) -> str | None:
        """The reviewer's current item, else the one ``choose`` picks (then assigned).

        One write transaction, so two tabs racing an answer or an undo cannot assign
        an item that is answered meanwhile (which once made every later answer fail).

        Args:
            reviewer: whose item.
            choose: given the items the reviewer has finished (labelled or skipped),
                the next ``(item_id, selected_by)``, or None when there is none.
            known: whether an assigned item is still among the session's items.
        """
        with self._write() as db:
            row = db.execute(
                "SELECT item_id FROM cursor WHERE reviewer = ? AND rubric = ?",
                (reviewer, self.rubric.id),
            ).fetchone()
            if row is not None and known(row[0]) and not self._answered(reviewer, row[0]):
                return str(row[0])
            finished = {a.item_id for a in self.answers(reviewer)}
            nxt = choose(finished)
            if nxt is None:
                return None
            db.execute(
                "INSERT OR REPLACE INTO cursor (reviewer, rubric, item_id, selected_by) "
                "VALUES (?, ?, ?, ?)",
                (reviewer, self.rubric.id, nxt[0], nxt[1]),
            )
            return nxt[0]

    # -- writing ---------------------------------------------------------------------------
    def assign(self, reviewer: str, item_id: str, selected_by: str | None = None) -> None:
        """Make ``item_id`` the reviewer's current item (kept across restarts)."""
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO cursor (reviewer, rubric, item_id, selected_by) "
                "VALUES (?, ?, ?, ?)",
                (reviewer, self.rubric.id, item_id, selected_by),
            )

    def answer(
        self,
        reviewer: str,
        item_id: str,
        label: str | None,
        note: str | None = None,
    ) -> Answer:
        """Commit a label (or a skip when ``label`` is None) and append it to the labels file.

        The reviewer is registered (:meth:`register`) on their first answer.

        Raises:
            TinyjudgeError: ``item_id`` is not the reviewer's current item (a stale
                page), or the label is not one of the rubric's.
        """
        if label is not None and label not in self.rubric.label_names:
            raise UsageError(
                f"label {label!r} is not one of rubric {self.rubric.id!r}'s labels "
                f"{self.rubric.label_names}",
                param="label",
            )
        note = (note or "").strip() or None
        kind: Literal["label", "skip"] = "skip" if label is None else "label"
        stale = False
        with self._write() as db:
            row = db.execute(
                "SELECT item_id, selected_by FROM cursor WHERE reviewer = ? AND rubric = ?",
                (reviewer, self.rubric.id),
            ).fetchone()
            if row is None or row[0] != item_id:
                current = row[0] if row else None
                raise UsageError(
                    f"item {item_id!r} is not {reviewer}'s current item ({current!r}); "
                    "reload the page",
                    param="item_id",
                )
            db.execute(
                "DELETE FROM cursor WHERE reviewer = ? AND rubric = ?",
                (reviewer, self.rubric.id),
            )
            # A cursor on an answered item (an older version's race left such): freed
            # above, rather than failing on the unique index from now on.
            stale = self._answered(reviewer, item_id)
            if not stale:
                db.execute(
                    "INSERT OR IGNORE INTO reviewers (reviewer, rubric) VALUES (?, ?)",
                    (reviewer, self.rubric.id),
                )
                cur = db.execute(
                    "INSERT INTO answers (reviewer, rubric, rubric_hash, item_id, kind, label,"
                    " note, selected_by, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        reviewer,
                        self.rubric.id,
                        self.rubric.hash,
                        item_id,
                        kind,
                        label,
                        note,
                        row[1],
                        time.time(),
                    ),
                )
                answer = Answer(
                    int(cur.lastrowid or 0), reviewer, item_id, kind, label, note, self.rubric.hash
                )
                if kind == "label":
                    # Appended while SQLite's write lock is held: no other process's export
                    # can run in between, so the file gets the line exactly once, in O(1);
                    # cut off again if the commit fails, so it never holds more than the store.
                    before = self._append(answer, (reviewer, item_id) in self.seen(reviewer))
                    self._on_rollback.append(lambda: cut_to(self.labels_path, before))
        if stale:
            raise UsageError(
                f"item {item_id!r} is already answered; reload the page", param="item_id"
            )
        return answer

    def _answered(self, reviewer: str, item_id: str) -> bool:
        return (
            self._db.execute(
                "SELECT 1 FROM answers WHERE reviewer = ? AND rubric = ? AND item_id = ? "
                "AND undone IS NULL",
                (reviewer, self.rubric.id, item_id),
            ).fetchone()
            is not None
        )

    def _append(self, answer: Answer, seen: bool) -> int:
        """Append the answer's line to the labels file; return the file's length before.

        A write that fails part-way (a full disk) is cut off again before the error
        goes on: truncating needs no free space, and the file never holds a torn line.
        """
        line = self.to_label(answer, seen).model_dump_json(exclude_none=True) + "\n"
        return append_line(self.labels_path, line.encode("utf-8"))

    def mend(self) -> bool:
        """Cut a torn last line (a write that a crash or a full disk cut short) off the
        labels file; True when there was one. The store, not the file, holds the answers:
        :meth:`export` then writes them back."""
        if not self.labels_path.exists():
            return False
        with self._write():  # no other process appends meanwhile
            return mend_tail(self.labels_path)

    def undo(self, reviewer: str) -> Answer | None:
        """Withdraw the reviewer's latest live answer; its item becomes current again.

        Returns the withdrawn answer, or None when there is nothing to undo.
        """
        with self._write() as db:
            row = db.execute(
                "SELECT id, reviewer, item_id, kind, label, note, rubric_hash, selected_by "
                "FROM answers WHERE reviewer = ? AND rubric = ? AND undone IS NULL "
                "ORDER BY id DESC LIMIT 1",
                (reviewer, self.rubric.id),
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE answers SET undone = ? WHERE id = ?", (time.time(), row[0]))
            db.execute(
                "INSERT OR REPLACE INTO cursor (reviewer, rubric, item_id, selected_by) "
                "VALUES (?, ?, ?, ?)",
                (reviewer, self.rubric.id, row[2], row[7]),
            )
            # In the same transaction: a file that cannot be rewritten (a full disk)
            # undoes the undo, so the file and the store never disagree.
            self._export()
        return Answer(*row[:7])

    # -- the labels file -------------------------------------------------------------------
    def seen(self, reviewer: str | None = None) -> set[tuple[str, str]]:
        """(reviewer, item_id) pairs where the reviewer withdrew a label, and so has seen
        what the machines said about the item (the page shows it after each label)."""
        sql = (
            "SELECT DISTINCT reviewer, item_id FROM answers "
            "WHERE rubric = ? AND kind = 'label' AND undone IS NOT NULL"
        )
        args = [self.rubric.id]
        if reviewer is not None:
            sql += " AND reviewer = ?"
            args.append(reviewer)
        with self._lock:
            return {(r, i) for r, i in self._db.execute(sql, args).fetchall()}

    def to_label(self, answer: Answer, seen: bool = False) -> Label:
        """The exported record of a live label answer: source ``human:<reviewer>``.

        ``seen``: the reviewer gave this answer after seeing the machines' verdicts on
        the item (an undo after the reveal), which ``raw`` records, so an audit can
        leave such answers out: they are not independent of the judge.
        """
        assert answer.label is not None
        probs = {answer.label: 1.0}
        return Label(
            raw={"seen_machine_verdicts": True} if seen else None,
            item_id=answer.item_id,
            rubric=self.rubric.id,
            rubric_hash=answer.rubric_hash,
            source=f"human:{answer.reviewer}",
            label=answer.label,
            probs=probs,
            score=self.rubric.score(probs),
            rationale=answer.note,
        )

    def foreign_labels(self, reviewer: str) -> int:
        """How many labels of ``human:<reviewer>`` for this rubric the labels file holds
        that this store did not write (0 when the reviewer is registered here)."""
        if reviewer in self.reviewers() or not self.labels_path.exists():
            return 0
        source = f"human:{reviewer}"
        return sum(1 for obj in read_objects(self.labels_path) if self._owned(obj, {source}))

    def _owned(self, obj: object, sources: set[str]) -> bool:
        return (
            isinstance(obj, dict)
            and obj.get("source") in sources
            and obj.get("rubric") == self.rubric.id
        )

    def export(self, also: Sequence[str] = ()) -> int:
        """Rewrite the labels file atomically: its other records untouched, in order,
        then every live human label of this store. Returns the number exported.

        ``also`` names more reviewers whose ``human:`` labels are the store's.
        """
        with self._write():
            # Holding SQLite's write lock serialises exports of two server processes.
            return self._export(also)

    def _export(self, also: Sequence[str] = ()) -> int:
        """:meth:`export`, inside a write transaction already open."""
        sources = {f"human:{r}" for r in (*self.reviewers(), *also)}
        keep = lines_except(self.labels_path, lambda obj: self._owned(obj, sources))
        mine = [a for a in self.answers() if a.kind == "label"]
        seen = self.seen()
        with atomic_writer(self.labels_path) as out:
            out.writelines(keep)
            for a in mine:
                label = self.to_label(a, (a.reviewer, a.item_id) in seen)
                out.write(label.model_dump_json(exclude_none=True) + "\n")
        return len(mine)
