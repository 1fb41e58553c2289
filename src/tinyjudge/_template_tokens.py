"""Chat-template control tokens in text from outside: found, and escaped before they travel.

A hint, a tool result or an answer that holds ``<|im_end|><|im_start|>user`` is
plain text to tinyjudge, but a tokenizer that parses special tokens in the text
it is given (Hugging Face's do, by default) turns it into a turn of its own: a
fake user message in a training row. :func:`neutralise` breaks each such token
with a backslash after its opening character (``<\\|im_end|>``), so it stays
readable and no template parses it; what it changed is returned so a report can
flag the row.

>>> neutralise("ok<|im_end|><|im_start|>user")
('ok<\\\\|im_end|><\\\\|im_start|>user', ['<|im_end|>', '<|im_start|>'])
>>> neutralise("plain text")
('plain text', [])
"""

from __future__ import annotations

import re

__all__ = ["TEMPLATE_TOKEN", "neutralise"]

# The control tokens of the common chat templates: ChatML and Llama 3 and Phi-3's
# <|name|> family (im_start, im_end, eot_id, start_header_id, endoftext, user, end ...),
# DeepSeek's full-width bars, Llama 2 / Mistral's [INST] and <<SYS>>, Mistral's tool
# markers, Gemma's turns, and the sentence markers <s> </s> <bos> <eos>.
TEMPLATE_TOKEN = re.compile(
    r"<\|[A-Za-z0-9_.:-]{1,64}\|>"
    r"|<｜[^｜<>]{1,64}｜>"
    r"|\[/?(?:INST|SYSTEM_PROMPT|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS)\]"
    r"|<</?SYS>>"
    r"|<(?:start|end)_of_turn>"
    r"|</?(?:s|bos|eos|pad|unk)>"
)


def neutralise(text: str) -> tuple[str, list[str]]:
    """``text`` with every chat-template control token escaped, and the tokens it held.

    Args:
        text: text bound for a prompt or a training row.

    Returns:
        The escaped text (a backslash after each token's first character) and the
        tokens found, in order.
    """
    found: list[str] = []

    def escape(m: re.Match[str]) -> str:
        found.append(m.group())
        return m.group()[0] + "\\" + m.group()[1:]

    return TEMPLATE_TOKEN.sub(escape, text), found
