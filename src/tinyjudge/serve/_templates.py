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

import json
import re
from typing import Any

from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import canonical

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
# End-of-sequence and padding tokens left at the end of a rollout's text.
_TRAILING_SPECIAL = re.compile(r"(?:\s*(?:<\|[a-z_]+\|>|</s>|<eos>|<pad>|<end_of_turn>))+\s*\Z")
_THINK = re.compile(r"<think>(.*?)</think>", re.S)
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_TOOL_RESPONSE = re.compile(r"<tool_response>\n?(.*?)\n?</tool_response>", re.S)
_QWEN_TOOLS = re.compile(r"\n*# Tools\n\nYou may call one or more functions.*\Z", re.S)
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
    raise TinyjudgeError(
        f"--chat-template {template!r}: give one of {sorted(CHAT_TEMPLATES)} or a pattern "
        r"with {role} and {content}, e.g. '<|im_start|>{role}\n{content}<|im_end|>'"
    )


def detect(text: str) -> str | None:
    """The built-in template whose markers ``text`` carries, or None."""
    return next((name for name, marker in _DETECT if marker in text), None)


def _turn_regex(pattern: str) -> re.Pattern[str]:
    before_role, rest = pattern.split("{role}", 1)
    between, end = rest.split("{content}", 1)
    start = re.escape(before_role)
    return re.compile(
        start + r"(?P<role>[A-Za-z_]+)" + re.escape(between)
        + r"(?P<content>.*?)(?:" + re.escape(end) + r"|(?=" + start + r"[A-Za-z_]+"
        + re.escape(between) + r")|\Z)",
        re.S,
    )  # fmt: skip


def parse_chat_text(text: str, template: str | None = None) -> list[dict[str, Any]] | None:
    """Messages from a rollout's text, or None when no chat template is found in it.

    Args:
        text: the prompt and completion as the policy saw them.
        template: a name of :data:`CHAT_TEMPLATES` or a pattern with ``{role}``
            and ``{content}``; None recognises the built-in ones by their markers.
    """
    name = template if template is not None else detect(text)
    if name is None:
        return None
    pattern = CHAT_TEMPLATES.get(name, name)
    turns = [(m["role"], m["content"]) for m in _turn_regex(pattern).finditer(text)]
    if not turns:
        return None
    last_role, last = turns[-1]
    turns[-1] = (last_role, _TRAILING_SPECIAL.sub("", last))
    messages: list[dict[str, Any]] = []
    for role, content in turns:
        messages += _read_turn(role.lower(), content, name)
    return canonical(messages)


def _read_turn(role: str, content: str, template: str) -> list[dict[str, Any]]:
    if template == "chatml":
        if role == "system":
            return [{"role": role, "content": _QWEN_TOOLS.sub("", content)}]
        if role == "user" and _TOOL_RESPONSE.search(content):
            outside = _TOOL_RESPONSE.sub("", content).strip()
            if not outside:  # Qwen writes a run of tool replies as one user turn
                return [{"role": "tool", "content": r} for r in _TOOL_RESPONSE.findall(content)]
        if role == "assistant":
            return [_chatml_assistant(content)]
    if template == "llama3":
        if role == "system":
            return [{"role": role, "content": _LLAMA_HEADER.sub("", content, count=1)}]
        if role == "user" and content.startswith(_LLAMA_TOOLS_IN_USER):
            return [{"role": role, "content": _strip_llama_tools(content)}]
        if role == "assistant":
            call = _json_call(content.replace("<|python_tag|>", "").strip())
            if call is not None:
                return [{"role": "assistant", "content": None, "tool_calls": [call]}]
    return [{"role": role, "content": content}]


def _chatml_assistant(content: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    thoughts = [t.strip() for t in _THINK.findall(content)]
    if thoughts:
        message["reasoning"] = "\n".join(thoughts)
        content = _THINK.sub("", content)
    calls = [c for c in (_json_call(block) for block in _TOOL_CALL.findall(content)) if c]
    if calls:
        message["tool_calls"] = calls
        content = _TOOL_CALL.sub("", content)
    message["content"] = content
    return message


def _json_call(text: str) -> dict[str, Any] | None:
    """A tool call written as ``{"name": ..., "arguments"|"parameters": ...}``, else None."""
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return None
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
        try:
            json.loads(para)
        except json.JSONDecodeError:
            break
        i += 1
    return "\n\n".join(paragraphs[i:])
