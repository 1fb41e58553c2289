"""The labelling store's SQLite schema: answers, who labels here, and each reviewer's cursor."""

from __future__ import annotations

__all__ = ["SCHEMA"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    reviewer TEXT NOT NULL,
    rubric TEXT NOT NULL,
    rubric_hash TEXT NOT NULL,
    item_id TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('label', 'skip')),
    label TEXT,
    note TEXT,
    selected_by TEXT,
    created REAL NOT NULL,
    undone REAL
);
-- at most one live answer per reviewer and item: undo frees the slot
CREATE UNIQUE INDEX IF NOT EXISTS answers_live
    ON answers (reviewer, rubric, item_id) WHERE undone IS NULL;
-- who labels here: their human: labels in the labels file belong to this store
CREATE TABLE IF NOT EXISTS reviewers (
    reviewer TEXT NOT NULL,
    rubric TEXT NOT NULL,
    PRIMARY KEY (reviewer, rubric)
);
CREATE TABLE IF NOT EXISTS cursor (
    reviewer TEXT NOT NULL,
    rubric TEXT NOT NULL,
    item_id TEXT NOT NULL,
    selected_by TEXT,
    PRIMARY KEY (reviewer, rubric)
);
"""
