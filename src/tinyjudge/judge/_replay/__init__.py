"""Real local OpenAI-compatible servers for tests, benchmarks and the keyless demo.

:class:`LocalServer` answers chat completions from a *responder* (a function of
the :class:`Request` that returns a :class:`Reply` or a :class:`Fault`);
:func:`replay_server` answers from recorded labels, so the whole judge path
runs on a public set's recorded verdicts without a key. Given the items, a
server recognises the item a prompt shows by its fence nonce (item ids never
leave the machine). The judge's runner never imports this package.

Private to the judge (``judge._open`` starts a replay server for ``replay=``); the public
face of these names is :mod:`tinyjudge.testing`, where tests, the demo and users import them.
"""

from __future__ import annotations

from tinyjudge._faces import lazy_names

from ._calls import Fault as Fault
from ._calls import Reply as Reply
from ._calls import Request as Request
from ._calls import Responder as Responder
from ._completion import completion_body as completion_body
from ._replay import load_replay_labels as load_replay_labels
from ._replay import replay_responder as replay_responder
from ._replay import replay_server as replay_server
from .server import LocalServer as LocalServer

_, __dir__ = lazy_names(__name__)
