"""The transformer tier: any encoder or decoder fine-tuned with a classification head.

Trains on the teacher's distribution when it gives one (cross-entropy against
soft targets, i.e. KL distillation), else on hard labels, with balanced class
weights. Pairwise items train one scalar reward with a Bradley-Terry loss on
(chosen, rejected). Encoders read a sentence pair, decoders their chat template
with the score at the last non-pad token (:mod:`tinyjudge.distill.hf`). The
saved directory is a plain Hugging Face model
(``AutoModelForSequenceClassification.from_pretrained(dir)`` loads it without
tinyjudge) plus ``tinyjudge.json`` and the model card.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from tinyjudge.errors import RubricError, UsageError
from tinyjudge.records import Item, Label

from ._base import class_balance, model_rubric
from ._configs import TransformerConfig
from ._configured import Configured
from ._shapes import padded_batch
from ._text import View, as_pair
from .hf import (
    ADAPTER_CONFIG,
    SAFE_LOAD,
    Codec,
    Encoded,
    Task,
    TrainPlan,
    bf16_default,
    bradley_terry,
    check_hf_dir,
    check_vocab,
    codec_for,
    feeds,
    hf_call,
    load_classifier,
    load_lora,
    resolve_device,
    soft_ce,
    train,
    with_lora,
)

__all__ = [
    "TransformerConfig",
    "TransformerRM",
    "EncoderRM",
    "soft_ce",
    "bradley_terry",
    "feeds",
]


class TransformerRM(Configured):
    """A fine-tuned transformer (encoder or decoder) with a classification head.

    Pairwise rubrics train a scalar Bradley-Terry reward instead. Options are the
    fields of :class:`TransformerConfig`, given as keyword options or as a config.

    Args:
        rubric: the rubric (or its name) whose labels are the classes.
        name: the model's name; labels get source ``rm:<name>``.
        config: a :class:`TransformerConfig`; keyword options override its fields.
        **options: fields of :class:`TransformerConfig` (``base``, ``epochs``, ...).
    """

    tier: ClassVar[str] = "transformer"
    config_class = TransformerConfig
    config: TransformerConfig
    takes_eval_set = True  # scores the validation split after each epoch, keeps the best
    drops_unweighted_rows = True

    @property
    def pairwise(self) -> bool:
        return self.rubric.type == "pairwise"

    # -- fitting ---------------------------------------------------------------

    def fit(
        self,
        items: Any,
        y: Any,
        sample_weight: Any = None,
        eval_set: tuple[Sequence[Item], Any] | None = None,
    ) -> TransformerRM:
        """Fit as :meth:`RewardModel.fit`; ``eval_set`` (items, labels) is scored each epoch.

        With ``eval_set`` and ``best_epoch``, the weights kept are those of the
        epoch whose probabilities give the eval labels the highest mean
        log-likelihood.
        """
        self._eval_set = eval_set
        try:
            super().fit(items, y, sample_weight)
        finally:
            del self._eval_set
        self.card_.update(self.train_report_.card())
        self.card_["tokens_dropped_at_max_length"] = int(self.tokens_dropped_)
        self.card_["max_length"] = self.config.max_length
        self.card_["codec"] = self.codec_.kind
        if self.pairwise:
            self.card_["reward_reference"] = self.reward_reference_
        return self

    def _fit(self, items: list[Item], Y: np.ndarray, sample_weight: np.ndarray) -> None:
        import torch

        if any(it.is_pairwise for it in items) != self.pairwise or (
            self.pairwise and not all(it.is_pairwise for it in items)
        ):
            raise UsageError(
                f"rubric {self.rubric.id!r} is {self.rubric.type}: "
                + (
                    "every item must be a pair"
                    if self.pairwise
                    else "pairwise items need a pairwise rubric"
                ),
                param="items",
            )
        torch.manual_seed(self.config.seed)
        self.setup_model()
        if self.pairwise:
            if not np.allclose(sample_weight, sample_weight[0]):
                raise UsageError(
                    "sample weights are not supported for pairwise items", param="sample_weight"
                )
            task = self._pair_task(items, Y)
        else:
            task = self._class_task(items, Y, sample_weight)
        self.train_report_ = train(self.model_, [task], self.train_plan(), self._evaluator())
        if self.pairwise:  # what a single rollout's reward is read against (reward_labels)
            self.reward_reference_ = float(np.mean(self.logits(self.__dict__.pop("_pair_views"))))

    def setup_model(self) -> None:
        """Load the base with a fresh head sized for the rubric (and its codec)."""
        names = self.rubric.label_names
        labels = {0: "reward"} if self.pairwise else dict(enumerate(names))
        self.model_, self.tokenizer_ = load_classifier(self.config.base, labels)
        self.codec_: Codec = codec_for(self.model_.config, self.tokenizer_)
        c = self.config
        if c.lora_r > 0:
            self.model_ = with_lora(
                self.model_, c.lora_r, c.lora_alpha, c.lora_dropout, c.lora_target_modules
            )

    def train_plan(self) -> TrainPlan:
        """The trainer's plan from this model's options."""
        c = self.config
        device = resolve_device(c.device)
        bf16 = bf16_default(device) if c.train_bf16 is None else c.train_bf16
        return TrainPlan.from_config(c, device=device, bf16=bf16)

    def _evaluator(self) -> Any:
        if self._eval_set is None or not self.config.best_epoch:
            return None
        items, y = list(self._eval_set[0]), self._eval_set[1]
        if not items:
            return None
        Y = self._targets(items, y)

        def log_likelihood() -> float:
            return float(np.mean((Y * np.log(self.predict_proba(items))).sum(axis=1)))

        return log_likelihood

    def class_task(self, items: list[Item], Y: np.ndarray, sample_weight: np.ndarray) -> Any:
        """The soft-target cross-entropy task over single items, and its encoding."""
        import torch

        enc = self._encode(self.views_of(items))
        targets = torch.tensor(Y, dtype=torch.float32)
        weights = torch.tensor(class_balance(Y, sample_weight), dtype=torch.float32)
        pad = self.tokenizer_.pad_token_id

        def loss(module: Any, idx: np.ndarray, device: Any) -> Any:
            logits = module(**feeds(enc, idx, pad, device)).logits
            return soft_ce(logits, targets[idx].to(device), weights[idx].to(device))

        return enc, loss

    def _class_task(self, items: list[Item], Y: np.ndarray, sample_weight: np.ndarray) -> Task:
        enc, loss = self.class_task(items, Y, sample_weight)
        self.tokens_dropped_ = enc.dropped
        return Task(len(items), loss)

    def _pair_task(self, items: list[Item], Y: np.ndarray) -> Task:
        names = self.rubric.label_names
        if "a" not in names or "b" not in names:
            raise RubricError(f"a pairwise rubric needs labels 'a' and 'b', got {names}")
        ia, ib = names.index("a"), names.index("b")
        keep = [i for i in range(len(items)) if Y[i, ia] != Y[i, ib]]  # ties carry no order
        if not keep:
            raise UsageError(
                "every pair is a tie: a Bradley-Terry model needs preferences", param="y"
            )
        views = [self.item_views(items[i]) for i in keep]
        chosen = [v[0] if Y[i, ia] > Y[i, ib] else v[1] for v, i in zip(views, keep, strict=True)]
        rejected = [v[1] if Y[i, ia] > Y[i, ib] else v[0] for v, i in zip(views, keep, strict=True)]
        # One encoding, chosen then rejected: one forward pass per step (as DDP needs).
        enc = self._encode(chosen + rejected)
        self._pair_views = chosen + rejected
        n, pad = len(keep), self.tokenizer_.pad_token_id
        self.tokens_dropped_ = enc.dropped

        def loss(module: Any, idx: np.ndarray, device: Any) -> Any:
            both = np.concatenate([idx, idx + n])
            r = module(**feeds(enc, both, pad, device)).logits[:, 0]
            return bradley_terry(r[: len(idx)], r[len(idx) :])

        return Task(n, loss)

    # -- inference -------------------------------------------------------------

    def _bf16(self) -> bool:
        p = self.config.precision
        return p == "bf16" or (p == "auto" and bf16_default(self._device()))

    def _device(self) -> Any:
        return next(self.model_.parameters()).device

    def _encode(self, views: list[View]) -> Encoded:
        lock = self.__dict__.setdefault("_tok_lock", threading.Lock())
        with lock:  # the fast tokenizer's padding/truncation state is shared
            return self.codec_.encode(views, self.config.max_length)

    def logits(self, views: list[View]) -> np.ndarray:
        """Raw head outputs (n, n_out) for (context, response) views, in batches."""
        enc = self._encode(views)
        order = np.argsort([len(r) for r in enc.ids], kind="stable")
        n_out = 1 if self.pairwise else len(self.classes_)
        out = np.zeros((len(views), n_out), dtype=np.float32)
        for s in range(0, len(order), self.config.batch_items):
            idx = order[s : s + self.config.batch_items]
            rows = [enc.ids[i] for i in idx]
            out[idx] = self._forward(
                rows, None if enc.types is None else [enc.types[i] for i in idx]
            )
        return out

    def _forward(self, rows: list[list[int]], types: list[list[int]] | None) -> np.ndarray:
        batch = padded_batch(
            rows,
            self.tokenizer_.pad_token_id,
            types,
            max_width=getattr(self.model_.config, "max_position_embeddings", None),
        )
        if self.config.runtime != "torch":
            return self._onnx_session().run(["logits"], batch)[0][: len(rows)]
        import torch

        device = self._device()
        with (
            torch.inference_mode(),
            torch.autocast(device.type, torch.bfloat16, enabled=self._bf16()),
        ):
            logits = self.model_(
                **{k: torch.from_numpy(v).to(device) for k, v in batch.items()}
            ).logits
        return logits.float().cpu().numpy()[: len(rows)]

    def _onnx_session(self) -> Any:
        sess = self.__dict__.get("_ort")
        if sess is None:
            from ._ort import ort_session

            sess = self._ort = ort_session(self.model_dir_, int8=self.config.runtime == "onnx-int8")
        return sess

    def _proba_views(self, views: list[View]) -> np.ndarray:
        z = self.logits(views).astype(np.float64)
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def _proba(self, items: list[Item]) -> np.ndarray:
        if not self.pairwise:
            return self._proba_views(self.views_of(items))
        single = next((it.id for it in items if not it.is_pairwise), None)
        if single is not None:
            raise UsageError(
                f"item {single!r} is a single rollout: a pairwise model's probabilities are of "
                "pairs; score_items gives each single rollout its reward (reward_labels)",
                param="items",
            )
        views = [v for it in items for v in self.item_views(it)]
        r = self.logits(views)[:, 0].astype(np.float64)
        p_a = 1.0 / (1.0 + np.exp(-(r[0::2] - r[1::2])))
        # A Bradley-Terry model has no tie: its mass stays 0.
        P = np.zeros((len(items), len(self.classes_)))
        P[:, self.classes_.index("a")] = p_a
        P[:, self.classes_.index("b")] = 1.0 - p_a
        return P

    def reward_labels(self, items: list[Item]) -> list[Label]:
        """Single rollouts scored on their own by a pairwise (Bradley-Terry) model.

        Each is read as one side of a pair (:func:`as_pair`), as the model read every
        response in training, so a pair's ``P(a)`` is ``sigmoid(r_a - r_b)`` of its two
        sides scored alone. ``raw`` holds the model's scalar reward ``r``; ``score`` is
        ``sigmoid(r - r_ref)``, where ``r_ref`` (the card's ``reward_reference``) is
        the mean reward of the responses it was trained on: the probability, under the
        model, that the rollout is preferred over a typical training response. A
        model saved before the card had it uses ``r_ref = 0``. ``label`` and
        ``probs`` are left empty: ``a``, ``b`` and ``tie`` are verdicts on pairs.
        """
        views = [self.item_views(as_pair(it))[0] for it in items]
        r = self.logits(views)[:, 0].astype(np.float64)
        ref = float(getattr(self, "card_", {}).get("reward_reference", 0.0))
        score = 1.0 / (1.0 + np.exp(-(r - ref)))
        return [
            Label(item_id=it.id, rubric=self.rubric.id, rubric_hash=self.rubric.hash,
                  source=self.source, score=float(s), raw={"reward": float(x)})
            for it, s, x in zip(items, score, r, strict=True)
        ]  # fmt: skip

    # -- saving ----------------------------------------------------------------

    def _save_files(self, model_dir: Path) -> None:
        # Whatever save_pretrained writes (shards, adapter files) is listed and hashed.
        self.model_.save_pretrained(model_dir)
        self.tokenizer_.save_pretrained(model_dir)
        self.model_dir_ = model_dir

    def _usage(self, model_dir: Path) -> str:
        reads = (
            "the chat template: the request as the user turn, the reply as the assistant "
            "turn; the score is read at the last token"
            if self.codec_.kind == "chat"
            else "the request and the reply as a sentence pair: tok(request, reply)"
        )
        return (
            "```python\nfrom tinyjudge.distill import load_model\n"
            f'rm = load_model("{model_dir.name}")\nlabels = rm.score_items(items)\n\n'
            f"# or without tinyjudge (input: {reads}):\n"
            "from transformers import AutoModelForSequenceClassification, AutoTokenizer\n"
            f'model = AutoModelForSequenceClassification.from_pretrained("{model_dir.name}")\n'
            f'tok = AutoTokenizer.from_pretrained("{model_dir.name}")\n```'
        )

    @classmethod
    def _load(cls, model_dir: Path, meta: dict[str, Any]) -> TransformerRM:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        model = cls(model_rubric(model_dir, meta), meta["name"], **meta["params"])
        adapter = (model_dir / ADAPTER_CONFIG).is_file()
        # Data, never code: refused before transformers reads a byte of it.
        check_hf_dir(model_dir, adapter=adapter)
        who = f"{model_dir}: cannot be loaded"
        tokenizer = hf_call(
            who, lambda: AutoTokenizer.from_pretrained(model_dir, trust_remote_code=False)
        )
        if adapter:
            # An adapter directory: the base with the saved tokenizer, then adapter and head.
            labels = dict(enumerate(["reward"] if model.pairwise else meta["classes"]))
            net = load_lora(load_classifier(model.config.base, labels, tokenizer)[0], model_dir)
        else:
            net = hf_call(
                who,
                lambda: AutoModelForSequenceClassification.from_pretrained(
                    model_dir, **SAFE_LOAD
                ).eval(),
            )
            check_vocab(tokenizer, net, model_dir)
        if model.config.runtime == "torch":
            net = net.to(resolve_device(model.config.device))
        model.model_ = net
        model.tokenizer_ = tokenizer
        model.codec_ = codec_for(net.config, model.tokenizer_)
        model.classes_ = list(meta["classes"])
        model.card_ = meta.get("card", {})
        model.model_dir_ = model_dir
        return model


class EncoderRM(TransformerRM):
    """The transformer tier under its first name, ``encoder``.

    Kept so that model directories saved as tier ``encoder``, commands that say
    ``--tier encoder`` and code that names ``EncoderRM`` keep working; it is the
    same model as :class:`TransformerRM` (any encoder or decoder base).
    """

    tier: ClassVar[str] = "encoder"
