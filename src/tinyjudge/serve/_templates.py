"""Chat-template text back into messages, so a reward does not depend on how a rollout arrives.

An RL loop such as OpenRLHF sends the rollout as the text the policy saw: its
chat template applied to the messages. Scored as one flat string, that text is
not what the reward model learned from (messages), and the reward shifts. Here
the common templates are turned back into messages: ChatML as Qwen writes it
(``<tool_call>`` blocks, ``<tool_response>`` turns, ``<think>``), Llama 3
(``ipython`` tool turns, JSON tool calls), Gemma and Phi-3; any other template
is given as a pattern with ``{role}`` and ``{content}``.

What a template adds on its own (Qwen's default system prompt, its tools
preamble, Llama 3's knowledge-date header) is dropped, and
:func:`tinyjudge.records.canonical` applies the same normalisation to messages
that arrive as messages (and to every item ``import chat`` reads), so both ways
give the same item.
"""

from __future__ import annotations

import re
from typing import Any

from tinyjudge.errors import UsageError
from tinyjudge.records import canonical

from ._scan import cut_from, read_json, strip_trailing_tokens, tagged_blocks, turns

__all__ = ["CHAT_TEMPLATES", "parse_chat_text", "check_template"]

CHAT_TEMPLATES = {
    "chatml": "<|im_start|>{role}\n{content}<|im_end|>",
    "llama3": "<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>",
    "gemma": "<start_of_turn>{role}\n{content}<end_of_turn>",
    "phi3": "<|{role}|>\n{content}<|end|>",
}
# A template is recognised by a marker only it writes.
_DETECT = [
    ("chatml", "<|im_start|>"),
    ("llama3", "<|start_header_id|>"),
    ("gemma", "<start_of_turn>"),
    ("phi3", "<|user|>"),
    ("phi3", "<|assistant|>"),
]
# What Qwen's template appends to the system prompt when tools are offered.
_QWEN_TOOLS = "# Tools\n\nYou may call one or more functions"
_LLAMA_HEADER = re.compile(
    r"\A(?:Environment: ipython\n)?(?:Tools: [^\n]*\n)?(?:Cutting Knowledge Date: [^\n]*\n)?"
    r"(?:Today Date: [^\n]*\n)?\n?"
)
_LLAMA_TOOLS_IN_USER = (
    "Given the following functions, please respond with a JSON for a function call"
)


def check_template(template: str) -> str:
    """A built-in name or a ``{role}``/``{content}`` pattern, else a one-line error."""
    if template in CHAT_TEMPLATES or ("{role}" in template and "{content}" in template):
        return template
    raise UsageError(
        f"chat_template {template!r}: give one of {sorted(CHAT_TEMPLATES)} or a pattern "
        r"with {role} and {content}, e.g. '<|im_start|>{role}\n{content}<|im_end|>'",
        param="chat_template",
    )


def detect(text: str) -> str | None:
    """The built-in template whose markers ``text`` carries, or None."""
    return next((name for name, marker in _DETECT if marker in text), None)


def parse_chat_text(text: str, template: str | None = None) -> list[dict[str, Any]] | None:
    """Messages from a rollout's text, or None when no chat template is found in it.

    Args:
        text: the prompt and completion as the policy saw them.
        template: a name of :data:`CHAT_TEMPLATES` or a pattern with ``{role}``
            and ``{content}``; None recognises the built-in ones by their markers.

    Time grows in proportion to the text's length, whatever it holds.

    Raises:
        DataError: a tool call whose JSON nests or counts beyond any real call
            (see :func:`~tinyjudge.serve._scan.read_json`).
    """
    name = template if template is not None else detect(text)
    if name is None:
        return None
    pattern = CHAT_TEMPLATES.get(name, name)
    before, rest = pattern.split("{role}", 1)
    between, end = rest.split("{content}", 1)
    found = list(turns(text, before, between, end))
    if not found:
        return None
    last_role, last = found[-1]
    found[-1] = (last_role, strip_trailing_tokens(last))
    messages: list[dict[str, Any]] = []
    for role, content in found:
        messages += _read_turn(role.lower(), content, name)
    return canonical(messages)


def _read_turn(role: str, content: str, template: str) -> list[dict[str, Any]]:
    if template == "chatml":
        if role == "system":
            return [{"role": role, "content": cut_from(content, _QWEN_TOOLS)}]
        replies, outside = tagged_blocks(content, "<tool_response>", "</tool_response>")
        if role == "user" and replies and not outside.strip():
            # Qwen writes a run of tool replies as one user turn
            return [{"role": "tool", "content": _one_newline_off(r)} for r in replies]
        if role == "assistant":
            return [_chatml_assistant(content)]
    if template == "llama3":
        if role == "system":
            header = _LLAMA_HEADER.match(content)
            return [{"role": role, "content": content[header.end() if header else 0 :]}]
        if role == "user" and content.startswith(_LLAMA_TOOLS_IN_USER):
            return [{"role": role, "content": _strip_llama_tools(content)}]
        if role == "assistant":
            call = _json_call(content.replace("<|python_tag|>", "").strip())
            if call is not None:
                return [{"role": "assistant", "content": None, "tool_calls": [call]}]
    return [{"role": role, "content": content}]


def _chatml_assistant(content: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    thoughts, outside = tagged_blocks(content, "<think>", "</think>")
    if thoughts:
        message["reasoning"] = "\n".join(t.strip() for t in thoughts)
        content = outside
    blocks, outside = tagged_blocks(content, "<tool_call>", "</tool_call>")
    calls = [c for c in (_json_call(block.strip()) for block in blocks) if c]
    if calls:
        message["tool_calls"] = calls
        content = outside
    message["content"] = content
    return message


def _one_newline_off(text: str) -> str:
    """A tool reply without the newline Qwen's template writes on each side of it."""
    text = text[1:] if text.startswith("\n") else text
    return text[:-1] if text.endswith("\n") else text


def _json_call(text: str) -> dict[str, Any] | None:
    """A tool call written as ``{"name": ..., "arguments"|"parameters": ...}``, else None."""
    if not text.startswith("{"):
        return None
    obj = read_json(text)
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    return {"type": "function", "function": {"name": obj["name"], "arguments": args}}


def _strip_llama_tools(content: str) -> str:
    """The user's words after Llama 3's tools preamble (instructions, then one JSON per tool)."""
    paragraphs = content.split("\n\n")
    i = 0
    while i < len(paragraphs):
        para = paragraphs[i].strip()
        if para.startswith(_LLAMA_TOOLS_IN_USER) or para.startswith("Respond in the format"):
            i += 1
            continue
        if read_json(para) is None and para != "null":
            break
        i += 1
    return "\n\n".join(paragraphs[i:])
