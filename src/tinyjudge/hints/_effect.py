"""What a hint changes in the policy: per-token log-probabilities of the given answer
with and without the hint, the signal self-distillation (SDPO) distils.

The teacher is the policy shown the hint. As ``SDPOTrainer`` builds it, the hint goes
into the prompt's last user turn (``reprompt_template`` around ``feedback_template``,
TRL's defaults); the answer's tokens are the same in both contexts, so each token's
difference says how much more (or less) likely the hint makes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tinyjudge.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["HintEffect", "hint_effect", "teacher_prompt", "REPROMPT", "FEEDBACK"]

# TRL's SDPOConfig defaults (trl 1.16; a test checks they still agree)
REPROMPT = "{prompt}{solution}{feedback}\n\nCorrectly solve the original question.\n"
FEEDBACK = (
    "\nThe following is feedback from your unsuccessful earlier attempt:\n\n{feedback_raw}\n\n"
)


@dataclass(frozen=True)
class HintEffect:
    """One row's answer scored with and without its hint.

    Attributes:
        item_id: the row's item.
        step: the row's step.
        tokens: the answer's tokens, as text.
        with_hint: each token's log-probability given the hint.
        without_hint: the same without it.
    """

    item_id: str
    step: int | None
    tokens: list[str]
    with_hint: np.ndarray
    without_hint: np.ndarray

    @property
    def delta(self) -> np.ndarray:
        """Per-token ``log p(token | hint) - log p(token)``: > 0 where the hint helps."""
        return self.with_hint - self.without_hint

    @property
    def mean(self) -> float:
        """The mean per-token difference over the answer."""
        return float(self.delta.mean()) if len(self.tokens) else float("nan")


def teacher_prompt(
    prompt: list[dict[str, Any]], hint: str, reprompt: str = REPROMPT, feedback: str = FEEDBACK
) -> list[dict[str, Any]]:
    """The prompt the teacher sees: the hint put into the last user turn, as SDPO does."""
    if not prompt or prompt[-1].get("role") != "user":
        raise UsageError("a row's prompt must end on a user turn (hint_rows folds it so)")
    last = str(prompt[-1].get("content") or "")
    text = reprompt.format(prompt=last, solution="", feedback=feedback.format(feedback_raw=hint))
    return [*prompt[:-1], {"role": "user", "content": text}]


def _ids(tokenizer: Any, messages: list[dict[str, Any]], generation: bool) -> list[int]:
    out = tokenizer.apply_chat_template(
        messages, tokenize=True, add_generation_prompt=generation, return_dict=False
    )
    if isinstance(out, dict) or hasattr(out, "keys"):
        out = out["input_ids"]
    return [int(i) for i in out]


def _answer_ids(
    tokenizer: Any, prompt: list[dict[str, Any]], answer: list[dict[str, Any]]
) -> list[int]:
    """The answer's tokens as the chat template renders them after the prompt."""
    head = _ids(tokenizer, prompt, True)
    whole = _ids(tokenizer, [*prompt, *answer], False)
    if whole[: len(head)] == head and len(whole) > len(head):
        return whole[len(head) :]
    text = "".join(str(m.get("content") or "") for m in answer)
    return [int(i) for i in tokenizer(text, add_special_tokens=False)["input_ids"]]


def _logprobs(
    model: Any, context: list[int], answer: list[int], max_context: int | None
) -> np.ndarray:
    import numpy as np
    import torch

    if max_context is not None:
        context = context[-max_context:]  # keep the end, as SDPO keeps the prompt's end
    device = next(model.parameters()).device
    ids = torch.tensor([context + answer], device=device)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(context) - 1 : -1].float()
    logp = torch.log_softmax(logits, dim=-1)
    picked = logp.gather(1, torch.tensor(answer, device=device)[:, None])[:, 0]
    return picked.cpu().numpy().astype(np.float64)


def hint_effect(
    policy: Any,
    rows: Iterable[dict[str, Any]],
    *,
    tokenizer: Any = None,
    context: str = "sdpo",
    max_context: int | None = None,
) -> list[HintEffect]:
    """Score each row's given answer under ``policy`` with and without its hint.

    Args:
        policy: a causal LM (``transformers``), or a path to one (loaded with its tokenizer).
        rows: rows of :func:`hint_rows` (``prompt``, ``privileged_context``, ``completion``;
            ``hinted_prompt`` for ``context="message"``).
        tokenizer: the policy's tokenizer, with a chat template (needed for a model object).
        context: ``sdpo``: the hint in the last user turn as ``SDPOTrainer``'s teacher sees
            it; ``message``: the row's ``hinted_prompt`` (the hint as its own message).
        max_context: keep only the last this many context tokens (long trajectories on a
            model with a short window).

    Returns:
        One :class:`HintEffect` per row, in order.

    Raises:
        UsageError: an unknown ``context``, a model without a tokenizer, or a row
            without the fields it needs.
    """
    if context not in ("sdpo", "message"):
        raise UsageError(
            f"context must be one of 'sdpo', 'message', got {context!r}", param="context"
        )
    if isinstance(policy, str) or hasattr(policy, "__fspath__"):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        # data, never code: a policy directory that asks to run its own code is refused
        tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(policy), trust_remote_code=False)
        policy = AutoModelForCausalLM.from_pretrained(
            str(policy), trust_remote_code=False, use_safetensors=True
        )
    if tokenizer is None:
        raise UsageError(
            "hint_effect needs the policy's tokenizer (tokenizer=...)", param="tokenizer"
        )
    policy.eval()
    out = []
    for row in rows:
        need = ("prompt", "privileged_context", "completion") + (
            ("hinted_prompt",) if context == "message" else ()
        )
        missing = [k for k in need if k not in row]
        if missing:
            raise UsageError(
                f"a row lacks {missing[0]!r}; rows come from hint_rows(...)", param="rows"
            )
        prompt = list(row["prompt"])
        hinted = (
            list(row["hinted_prompt"])
            if context == "message"
            else teacher_prompt(prompt, str(row["privileged_context"]))
        )
        answer = _answer_ids(tokenizer, prompt, list(row["completion"]))
        plain = _logprobs(policy, _ids(tokenizer, prompt, True), answer, max_context)
        given = _logprobs(policy, _ids(tokenizer, hinted, True), answer, max_context)
        tokens = [tokenizer.decode([i]) for i in answer]
        out.append(HintEffect(str(row.get("item_id")), row.get("step"), tokens, given, plain))
    return out
