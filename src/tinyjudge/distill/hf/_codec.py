"""How a view becomes model input: a pair codec for encoders, a chat codec for decoders.

Both build the same window: the first segment is the view's ``references``
followed by its context, the second is the reply. The reply keeps its start
(where its verdict shows) and gets at least three quarters of the window when it
needs it; the references come next, and the context gets what is left, keeping
its end (the request nearest the reply) or its start when the view says so.
Tokens cut are counted, not hidden.

The special tokens come from the tokenizer, never from a model family's
conventions: the pair codec reads where the tokenizer puts its specials around
a sentence pair, the chat codec renders the tokenizer's chat template around
two slots. Which codec a model gets follows its config (:func:`is_decoder`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from tinyjudge.errors import ModelDirError

from .._text import View

if TYPE_CHECKING:
    from transformers import PretrainedConfig

__all__ = ["Encoded", "PairCodec", "ChatCodec", "Codec", "codec_for", "is_decoder", "budget"]

# Private-use characters: no real text holds them, so they mark the template's slots.
_CONTEXT_SLOT, _REPLY_SLOT = "\ue000", "\ue001"
# Between the references and the context inside the first segment.
_REFERENCES_END = "\n\n"
# The plain rendering a decoder without a chat template reads.
_PLAIN_REPLY_HEADER = "\n\nassistant: "


class Encoded(NamedTuple):
    """Token ids of encoded views (and token types, where the model has them)."""

    ids: list[list[int]]
    types: list[list[int]] | None
    dropped: int


def budget(n_ref: int, n_ctx: int, n_rsp: int, body: int) -> tuple[int, int, int]:
    """Tokens kept of (references, context, reply) within ``body`` tokens.

    >>> budget(10, 100, 100, 80)
    (10, 10, 60)
    >>> budget(0, 5, 100, 80)
    (0, 5, 75)
    """
    n_r = min(n_rsp, max(body - n_ref - n_ctx, (3 * body) // 4))
    n_f = min(n_ref, body - n_r)
    return n_f, min(n_ctx, body - n_r - n_f), n_r


def _kept(ids: list[int], n: int, keep: Literal["end", "start"]) -> list[int]:
    return ids[:n] if keep == "start" else ids[len(ids) - n :]


class _Pieces(NamedTuple):
    refs: list[list[int]]
    contexts: list[list[int]]
    replies: list[list[int]]


def quiet_length_warning(tokenizer: Any) -> None:
    """Silence the tokenizer's "sequence length is longer than the specified maximum"
    warning: every codec cuts (or chunks) what it tokenizes to the model's window itself,
    so a long text is never fed whole and the warning would mislead."""
    warned = getattr(tokenizer, "deprecation_warnings", None)
    if isinstance(warned, dict):
        warned["sequence-length-is-longer-than-the-specified-maximum"] = True


def _tokenize(tokenizer: Any, views: list[View]) -> _Pieces:
    def ids(texts: list[str]) -> list[list[int]]:
        return list(tokenizer(texts, add_special_tokens=False)["input_ids"]) if texts else []

    refs = [v.references + _REFERENCES_END if v.references else "" for v in views]
    return _Pieces(ids(refs), ids([v.context for v in views]), ids([v.response for v in views]))


def _window(
    pieces: _Pieces, views: list[View], body: int
) -> tuple[list[tuple[list[int], list[int]]], int]:
    """Each view's (first segment, reply) cut to ``body`` tokens, and the tokens cut."""
    out, dropped = [], 0
    for f, c, r, v in zip(pieces.refs, pieces.contexts, pieces.replies, views, strict=True):
        n_f, n_c, n_r = budget(len(f), len(c), len(r), body)
        dropped += len(f) - n_f + len(c) - n_c + len(r) - n_r
        out.append((f[:n_f] + _kept(c, n_c, v.keep_context), r[:n_r]))
    return out, dropped


class _Layout(NamedTuple):
    """Where a tokenizer puts its special tokens: ids, or -1/-2 for the first/second text."""

    ids: list[int]
    types: list[int]


def _layout(tokenizer: Any, pair: bool) -> _Layout:
    """The tokenizer's own special-token layout for one text or a pair, read off a probe."""
    if not getattr(tokenizer, "is_fast", False):
        raise ModelDirError(
            f"{type(tokenizer).__name__}: the pair codec needs a fast (Rust) tokenizer, "
            "as AutoTokenizer gives for encoder models"
        )
    enc = tokenizer(*(("a", "b") if pair else ("a",)), return_token_type_ids=True)
    ids, types = [], []
    previous = None
    for tok, seq, typ in zip(
        enc["input_ids"], enc.sequence_ids(0), enc["token_type_ids"], strict=True
    ):
        if seq is None:
            ids.append(tok)
        elif seq == previous:
            continue  # the probe text took several tokens: one slot
        else:
            ids.append(-1 - seq)
        types.append(typ)
        previous = seq
    return _Layout(ids, types)


class PairCodec:
    """An encoder's input: references and context as the first text, the reply as the second.

    Args:
        tokenizer: a fast tokenizer; its own specials (``[CLS]``/``[SEP]``, ``<s>``/``</s>``)
            go where it puts them for a sentence pair.
        token_types: emit ``token_type_ids`` (the model's config has token types).
    """

    kind = "pair"

    def __init__(self, tokenizer: Any, token_types: bool):
        self.tokenizer = tokenizer
        quiet_length_warning(tokenizer)
        self.token_types = token_types
        self._pair = _layout(tokenizer, pair=True)
        self._single = _layout(tokenizer, pair=False)

    @property
    def n_special_single(self) -> int:
        """Special tokens around one text (what a chunk of :meth:`wrap` adds)."""
        return sum(1 for t in self._single.ids if t >= 0)

    def _fill(self, layout: _Layout, parts: list[list[int]]) -> tuple[list[int], list[int]]:
        ids: list[int] = []
        types: list[int] = []
        for tok, typ in zip(layout.ids, layout.types, strict=True):
            part = parts[-1 - tok] if tok < 0 else [tok]
            ids += part
            types += [typ] * len(part)
        return ids, types

    def wrap(self, ids: list[int]) -> list[int]:
        """One text's token ids with the tokenizer's specials around it."""
        return self._fill(self._single, [ids])[0]

    def encode(self, views: list[View], max_length: int) -> Encoded:
        """Token ids of each view within ``max_length`` tokens, specials included."""
        body = max_length - (len(self._pair.ids) - 2)
        windows, dropped = _window(_tokenize(self.tokenizer, views), views, body)
        filled = [self._fill(self._pair, [first, reply]) for first, reply in windows]
        types = [t for _, t in filled] if self.token_types else None
        return Encoded([i for i, _ in filled], types, dropped)


class ChatCodec:
    """A decoder's input: the chat template (or a plain rendering) with the reply last.

    The first segment is the user turn, the reply the assistant turn. The
    sequence-classification head reads the last non-pad token, so the reply's
    end is what the score sees; the context is cut from its start.

    Args:
        tokenizer: the decoder's tokenizer; its ``chat_template`` is used when it has one.
    """

    kind = "chat"
    token_types = False

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        quiet_length_warning(tokenizer)
        pre, mid, post = self._frame(tokenizer)

        def ids(text: str) -> list[int]:
            return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []

        self._pre, self._mid, self._post = ids(pre), ids(mid), ids(post)
        if not getattr(tokenizer, "chat_template", None):
            bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
            self._pre = ([bos] if bos is not None else []) + self._pre
            self._post = self._post + ([eos] if eos is not None else [])
        self.uses_chat_template = bool(getattr(tokenizer, "chat_template", None))

    @staticmethod
    def _frame(tokenizer: Any) -> tuple[str, str, str]:
        """The text before the user turn, between it and the reply, and after the reply."""
        if getattr(tokenizer, "chat_template", None):
            text = tokenizer.apply_chat_template(
                [
                    {"role": "user", "content": _CONTEXT_SLOT},
                    {"role": "assistant", "content": _REPLY_SLOT},
                ],
                tokenize=False,
            )
            if text.count(_CONTEXT_SLOT) == 1 and text.count(_REPLY_SLOT) == 1:
                pre, rest = text.split(_CONTEXT_SLOT)
                mid, post = rest.split(_REPLY_SLOT)
                if text.index(_CONTEXT_SLOT) < text.index(_REPLY_SLOT):
                    return pre, mid, post
            raise ModelDirError(
                f"{type(tokenizer).__name__}: its chat template does not render a user turn "
                "followed by an assistant turn with their content as given"
            )
        return "", _PLAIN_REPLY_HEADER, ""

    def encode(self, views: list[View], max_length: int) -> Encoded:
        """Token ids of each view within ``max_length`` tokens, template included."""
        frame = len(self._pre) + len(self._mid) + len(self._post)
        if max_length <= frame:
            raise ModelDirError(
                f"max_length={max_length} leaves no room for text: the chat template "
                f"alone takes {frame} tokens"
            )
        windows, dropped = _window(_tokenize(self.tokenizer, views), views, max_length - frame)
        ids = [self._pre + first + self._mid + reply + self._post for first, reply in windows]
        return Encoded(ids, None, dropped)


Codec = PairCodec | ChatCodec

_DECODER_ARCHITECTURE_ENDS = ("ForCausalLM", "LMHeadModel")


def is_decoder(config: PretrainedConfig) -> bool:
    """Whether a model reads text left to right (a decoder), from its config alone.

    ``is_decoder``, then the architectures it was saved as (``...ForCausalLM``),
    then its ``model_type``: a type with a masked-LM head is an encoder, one
    with only a causal-LM head a decoder.
    """
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    if getattr(config, "is_decoder", False):
        return True
    if any(
        a.endswith(_DECODER_ARCHITECTURE_ENDS) for a in getattr(config, "architectures", None) or []
    ):
        return True
    model_type = getattr(config, "model_type", "")
    if model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return False
    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES


def codec_for(config: PretrainedConfig, tokenizer: Any) -> Codec:
    """The codec a model with ``config`` reads its input through."""
    if is_decoder(config):
        return ChatCodec(tokenizer)
    has_types = "token_type_ids" in getattr(tokenizer, "model_input_names", [])
    return PairCodec(tokenizer, has_types and getattr(config, "type_vocab_size", 2) > 1)
