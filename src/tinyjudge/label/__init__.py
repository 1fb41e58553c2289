"""The labelling web page: people label items one at a time, each answer saved at once.

``tinyjudge label ITEMS --rubric NAME --labels LABELS.jsonl --as REVIEWER`` serves it.
Answers become :class:`~tinyjudge.records.Label` records with source
``human:<reviewer>``, committed to SQLite next to the labels file and exported into it,
so ``tinyjudge calibrate`` and ``tinyjudge audit`` use them with no conversion.

FastAPI, uvicorn and Jinja2 load only when the app is built, not on import.
"""

from __future__ import annotations

from tinyjudge._faces import lazy_names
from tinyjudge.label._session import LabelSession as LabelSession
from tinyjudge.label._session import open_session as open_session
from tinyjudge.label.app import check_token as check_token
from tinyjudge.label.app import create_app as create_app
from tinyjudge.label.app import serve as serve
from tinyjudge.label.store import LabelStore as LabelStore

_, __dir__ = lazy_names(__name__)
