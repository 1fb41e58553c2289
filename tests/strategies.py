"""Hypothesis strategies for the property tests: JSON that looks like tinyjudge's inputs.

Records are drawn from the keys and shapes of the real formats (items, labels,
chat messages, chat.completion bodies) with values of any JSON type, so that a
run reaches the checks behind the first "missing field" rather than stopping
there; raw text and bytes cover what is not JSON at all.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Fast enough for `make test` on two cores (TINYJUDGE_EXAMPLES=5000 for a long hunt);
# the deadline is off: the first examples pay for imports, and a busy machine is no bug.
FAST = settings(
    max_examples=int(os.environ.get("TINYJUDGE_EXAMPLES", "80")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["user", "assistant", "tool", "system", "ok", "unscored", "x", "", "\ud800"])
)

JSON: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def record(keys: list[str], values: st.SearchStrategy[Any] = JSON) -> st.SearchStrategy[dict]:
    """Objects with some of ``keys`` (and now and then another) holding any values."""
    key = st.sampled_from(keys) | st.text(max_size=6)
    return st.dictionaries(key, values, max_size=len(keys) + 1)


ROLES = st.sampled_from(["user", "assistant", "system", "tool", "human", "gpt"])
MESSAGE = record(
    ["role", "content", "name", "tool_calls", "tool_call_id", "refusal", "extra"]
) | st.fixed_dictionaries({"role": ROLES, "content": JSON})
MESSAGES = st.lists(MESSAGE, max_size=4) | JSON

ITEM = record(
    ["id", "messages", "metadata", "context", "response_a", "response_b"]
) | st.fixed_dictionaries({"id": st.text(max_size=8) | JSON, "messages": MESSAGES})
LABEL = record(
    ["item_id", "rubric", "source", "status", "label", "probs", "score", "step", "reason", "raw"]
) | st.fixed_dictionaries(
    {
        "item_id": st.text(max_size=6),
        "rubric": st.just("compliance"),
        "source": st.sampled_from(["human:a", "judge:m", "rm:x", "bad source"]),
        "label": st.sampled_from(["full_compliance", "full_refusal", "maybe"]) | JSON,
        "probs": st.dictionaries(st.text(max_size=4), JSON, max_size=3) | JSON,
    }
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


def jsonl_lines(records: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    """A JSON Lines file's bytes: drawn records, and now and then a line that is not JSON."""
    encoded = records.map(lambda r: _dumps(r).encode("utf-8", "surrogatepass"))
    line = encoded | st.binary(max_size=30)
    return st.lists(line, min_size=1, max_size=5).map(lambda lines: b"\n".join(lines) + b"\n")
