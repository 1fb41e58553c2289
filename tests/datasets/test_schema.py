"""The printed JSON Schemas accept what tinyjudge reads and refuse what it refuses."""

from __future__ import annotations

import json

import pytest
from openai.types.chat import ChatCompletionMessage

from tinyjudge.datasets.schema import record_schema
from tinyjudge.errors import TinyjudgeError

jsonschema = pytest.importorskip("jsonschema")


def test_items_schema_accepts_sdk_dumps_and_refuses_unknown_top_level_fields() -> None:
    schema = record_schema("items")
    jsonschema.Draft202012Validator.check_schema(schema)
    sdk = ChatCompletionMessage(role="assistant", content="ok", reasoning_content="r").model_dump()
    item = {"id": "a", "messages": [{"role": "user", "content": "q"}, sdk], "metadata": {"k": 1}}
    jsonschema.validate(json.loads(json.dumps(item)), schema)
    with pytest.raises(jsonschema.ValidationError, match="Additional properties"):
        jsonschema.validate({**item, "weight": 1}, schema)


def test_labels_schema() -> None:
    schema = record_schema("labels")
    label = {"item_id": "a", "rubric": "compliance", "source": "human:final", "label": "x"}
    jsonschema.validate(label, schema)
    with pytest.raises(jsonschema.ValidationError, match="'item_id' is a required property"):
        jsonschema.validate({"rubric": "compliance", "source": "s"}, schema)


def test_unknown_schema() -> None:
    with pytest.raises(
        TinyjudgeError, match=r"unknown schema 'item'; choose one of \['items', 'labels'\]"
    ):
        record_schema("item")
