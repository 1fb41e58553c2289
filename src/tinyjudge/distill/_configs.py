"""The tiers' options, one config dataclass per tier, and how a model holds its config.

Each tier's options are the fields of a :class:`TierConfig` subclass
(:class:`LinearConfig`, :class:`ProbeConfig`, :class:`TransformerConfig`,
:class:`CrossConfig`, :class:`EnsembleConfig`), declared once with :func:`~tinyjudge.config.option`:
``distill(items, labels, config=LinearConfig(C=0.5))`` takes one, the models
take one (``LinearRM(rubric, config=...)``, or its fields as keyword options),
and the command line derives its flags from the same fields (``--lora-r 16``).

Making a config checks every field where it is made: its kind (a whole number
for a count, a number for a rate), that a number is finite and in its range, a
``Literal`` field one of its choices. A list field also takes a comma-separated
string (``lora_target_modules="q_proj,v_proj"``), as a rubric's
``reward_model.params`` or the command line give it.

>>> LinearConfig(C=0.5).C
0.5
>>> LinearConfig(C=-1)
Traceback (most recent call last):
...
tinyjudge.errors.UsageError: C must be > 0, got -1; allowed: (0, 1e+09]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal, TypeVar, get_origin

from tinyjudge._numbers import check_number
from tinyjudge.config import Config, choices_of, field_range, field_types, option, plain_type
from tinyjudge.errors import RubricError, UsageError
from tinyjudge.rubric import Rubric

from .hf import MINILM, Device

__all__ = [
    "TierConfig",
    "LinearConfig",
    "ProbeConfig",
    "TransformerConfig",
    "CrossConfig",
    "EnsembleConfig",
    "Precision",
    "Runtime",
    "PROBE_VIEWS",
]

Precision = Literal["auto", "bf16", "fp32"]
Runtime = Literal["torch", "onnx", "onnx-int8"]
PROBE_VIEWS = ("opening", "response", "closing", "context")
T = TypeVar("T", bound="TierConfig")


def is_list(tp: Any) -> bool:
    """Whether a field's type is a list (also inside ``X | None``)."""
    return get_origin(plain_type(tp)[0]) is list


_KINDS: dict[Any, tuple[tuple[type, ...], str]] = {
    bool: ((bool,), "true or false"),
    int: ((int,), "a whole number"),
    float: ((int, float), "a number"),
    str: ((str,), "text"),
}


_TRUTH = {"true": True, "false": False, "yes": True, "no": False, "1": True, "0": False}


@dataclass
class TierConfig(Config):
    """Base of the tiers' configs: each field checked for its kind and range on creation."""

    tier: ClassVar[str] = ""
    # fields whose lower bound is itself refused (a learning rate of 0 learns nothing)
    open_low: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        for name, tp in field_types(type(self)).items():
            value = getattr(self, name, None)
            if is_list(tp) and isinstance(value, str | list) and _texts(value):
                # "q_proj,v_proj", or a flag given twice and once with a comma
                parts = [value] if isinstance(value, str) else value
                split = [p.strip() for part in parts for p in part.split(",")]
                setattr(self, name, [p for p in split if p])
        super().__post_init__()

    def _check_field(self, f: dataclasses.Field[Any], value: Any, tp: Any) -> None:
        kind, optional = plain_type(tp)
        if value is None and optional:
            return
        if choices_of(kind) is not None:
            super()._check_field(f, value, tp)
            return
        accepted, said = _KINDS.get(kind, ((object,), ""))
        if get_origin(kind) is list:
            accepted, said = (list,), "a list of text (or a comma-separated string)"
            if isinstance(value, list) and not all(isinstance(v, str) for v in value):
                accepted = ()
        if not isinstance(value, accepted) or (isinstance(value, bool) and kind is not bool):
            raise UsageError(
                f"{f.name} must be {said} for the {self.tier} tier, got {value!r} "
                f"(the default is {_default(f)!r})",
                param=f.name,
            )
        if kind in (int, float) and not isinstance(value, bool):
            low, high = field_range(f)
            if low is not None or high is not None or kind is float:
                check_number(
                    f.name, value, low, high, low_open=f.name in self.open_low, whole=kind is int
                )

    @classmethod
    def from_text(cls, name: str, text: str) -> Any:
        """A field's value from text a user typed (``lora_r=16``), read as its declared type.

        ``none`` is None where the field may be unset; a list field keeps its
        comma-separated text (the config splits it). Text that is not of the type
        (``C=abc``), or names no field, is passed on as it is: making the config
        then refuses it, naming the field.
        """
        tp = field_types(cls).get(name)
        kind, optional = plain_type(tp)
        if tp is None or (optional and text.strip().lower() == "none"):
            return text if tp is None else None
        if kind is bool:
            return _TRUTH.get(text.strip().lower(), text)
        if kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                return text
        return text

    @classmethod
    def from_pairs(cls, pairs: Sequence[str]) -> dict[str, Any]:
        """Options from ``KEY=VALUE`` text (``["lora_r=16", "epochs=3"]``), by :meth:`from_text`.

        The last of a key wins; only the first ``=`` splits.

        Raises:
            UsageError: a pair without ``=`` or without a key (``param`` ``param``).
        """
        options: dict[str, Any] = {}
        for pair in pairs:
            key, sep, text = pair.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"param expects KEY=VALUE, got {pair!r}", param="param")
            options[key.strip()] = cls.from_text(key.strip(), text)
        return options

    @classmethod
    def over_rubric(cls: type[T], rubric: Rubric, tiers: list[str], **options: Any) -> T:
        """This tier's config: ``options`` over the rubric's ``reward_model.params``.

        ``tiers`` names the tier's entries in the rubric, last wins (the
        transformer tier reads its first name's, ``encoder``, then its own).

        Raises:
            RubricError: an unknown option, or a value of the wrong kind or out of
                range, in the rubric's params (the message names the rubric).
            UsageError: the same in ``options`` (``param`` names the field).
        """
        defaults: dict[str, Any] = {}
        for name in tiers:
            defaults.update(rubric.reward_model.params.get(name, {}))
        try:
            base = cls.options(**defaults)
        except UsageError as e:
            where = f"rubric {rubric.id}'s reward_model.params"
            raise RubricError(f"{e} (in {where}; fix or drop it there)") from None
        return cls.options(base, **options)

    @classmethod
    def options(cls: type[T], config: T | None = None, **options: Any) -> T:
        """``config`` with keyword options over it (or a new one), naming the tier.

        Raises:
            UsageError: an option that is not one of this tier's (``param`` names it).
        """
        names = sorted(f.name for f in fields(cls))
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise UsageError(
                f"unknown option {unknown[0]!r} for the {cls.tier} tier; options: "
                + ", ".join(names),
                param=unknown[0],
            )
        return cls.from_options(config, **options)


def _texts(value: str | list[Any]) -> bool:
    return isinstance(value, str) or all(isinstance(v, str) for v in value)


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


@dataclass
class LinearConfig(TierConfig):
    """The linear tier: TF-IDF word and character n-grams, logistic regression."""

    tier: ClassVar[str] = "linear"
    open_low: ClassVar[frozenset[str]] = frozenset({"C"})

    C: float = option(10.0, "inverse regularisation strength", low=0, high=1e9)
    opening_chars: int = option(
        150, "characters of the reply's start given character n-grams", low=0, high=1_000_000
    )
    max_features: int = option(50000, "vocabulary cap per view", low=1, high=100_000_000)
    balanced: bool = option(True, "weight classes to equal total mass (rare labels count)")


@dataclass
class ProbeConfig(TierConfig):
    """The probe tier: a frozen encoder's embeddings beside the linear tier's features."""

    tier: ClassVar[str] = "probe"
    open_low: ClassVar[frozenset[str]] = frozenset({"C"})

    encoder: str = option(MINILM, "local path or hub id of the frozen encoder")
    C: float = option(3.0, "inverse regularisation strength of the head", low=0, high=1e9)
    opening_chars: int = option(
        150, "characters of the reply's start embedded on their own", low=0, high=1_000_000
    )
    emb_weight: float = option(
        0.7, "scale of the embedding blocks against the TF-IDF blocks", low=0, high=1e6
    )
    text_features: bool = option(True, "include the linear tier's TF-IDF features")
    views: str = option(
        "opening,response", "texts embedded: a comma-separated subset of " + ",".join(PROBE_VIEWS)
    )
    max_length: int = option(256, "tokens per encoder chunk", low=8, high=1_048_576)
    batch_size: int = option(32, "chunks per encoder forward pass", low=1, high=1_000_000)
    bf16: bool | None = option(None, "bfloat16 autocast for the encoder (unset: when faster)")
    cache_dir: str | None = option(None, "embedding cache folder (unset: $TINYJUDGE_CACHE)")

    def __post_init__(self) -> None:
        super().__post_init__()
        names = [v.strip() for v in self.views.split(",") if v.strip()]
        if not names or set(names) - set(PROBE_VIEWS):
            raise UsageError(
                f"views {self.views!r}: expected a comma-separated subset of "
                + ",".join(PROBE_VIEWS),
                param="views",
            )


@dataclass
class TransformerConfig(TierConfig):
    """The transformer tier: any encoder or decoder fine-tuned with a classification head.

    Typed as TRL's ``RewardConfig``. ``lora_r`` > 0 trains LoRA adapters through
    peft (the classification head is trained whole and saved with them);
    ``best_epoch`` keeps, with a validation split, the epoch whose probabilities
    gave the teacher's labels the highest log-likelihood; ``precision`` ``auto``
    is bfloat16 autocast where it is faster (a GPU with bf16, a CPU where it
    measures faster).
    """

    tier: ClassVar[str] = "transformer"
    open_low: ClassVar[frozenset[str]] = frozenset({"lr", "lora_alpha"})

    base: str = option(MINILM, "model to fine-tune: a local directory or hub id")
    max_length: int = option(256, "tokens per item", low=8, high=1_048_576)
    epochs: int = option(3, "passes over the training items", low=1, high=100_000)
    lr: float = option(5e-5, "peak learning rate (warm-up, then linear decay)", low=0, high=10)
    batch_size: int = option(16, "items per micro-batch (per process)", low=1, high=1_000_000)
    grad_accum: int = option(1, "micro-batches per optimizer step", low=1, high=1_000_000)
    grad_checkpointing: bool = option(False, "recompute activations backward (less memory)")
    best_epoch: bool = option(True, "keep the epoch that scored the validation split best")
    device: Device = option("auto", "auto (CUDA, MPS, then CPU), cpu, cuda or mps")
    seed: int = option(0, "initialisation and shuffling seed")
    precision: Precision = option("auto", "inference precision")
    train_bf16: bool | None = option(None, "bfloat16 autocast in training (unset: as precision)")
    runtime: Runtime = option("torch", "torch, or onnx / onnx-int8 once exported to ONNX")
    batch_items: int = option(32, "items per forward pass at inference", low=1, high=1_000_000)
    lora_r: int = option(0, "LoRA rank (0: fine-tune every weight)", low=0, high=65_536)
    lora_alpha: int | None = option(None, "LoRA scaling (unset: twice lora_r)", low=0, high=1e9)
    lora_dropout: float = option(0.0, "dropout on the LoRA path", low=0, high=1)
    lora_target_modules: list[str] | None = option(
        None, "modules given adapters (unset: the attention projections)"
    )


@dataclass
class CrossConfig(TransformerConfig):
    """The cross tier: an encoder fine-tuned over (references and request, answer) pairs.

    Every :class:`TransformerConfig` option, and how training takes the answer's
    surface away from the label. ``reference_labels`` reads each item's
    references as answers of a label (``correct_information=holds``: text that
    asserts the correction holds), one example per distinct item context that no
    answering model wrote; ``request_label`` does the same with the user's own
    request (a push-back asserts the premise). ``counterfactual`` copies that
    share of the training answers with the opening of an answer of another label
    put in front, the label kept, so no opening tells the labels apart.
    """

    tier: ClassVar[str] = "cross"

    reference_labels: list[str] | None = option(
        None,
        "references read as answers of a label, NAME=LABEL (e.g. correct_information=holds)",
    )
    request_label: str | None = option(
        None, "the label of the user's request read as an answer (a push-back: the negative)"
    )
    counterfactual: float = option(
        0.5,
        "share of training answers copied with another label's opening in front",
        low=0,
        high=1,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        bad = [p for p in self.reference_labels or [] if p.count("=") != 1 or p.startswith("=")]
        if bad or any(p.endswith("=") for p in self.reference_labels or []):
            raise UsageError(
                f"reference_labels expects NAME=LABEL pairs, got {bad or self.reference_labels!r} "
                "(e.g. correct_information=holds,false_premise=caves)",
                param="reference_labels",
            )

    @property
    def reference_label_map(self) -> dict[str, str]:
        """``reference_labels`` as ``{reference name: label}``."""
        return dict(p.split("=", 1) for p in self.reference_labels or [])  # type: ignore[misc]


@dataclass
class EnsembleConfig(TierConfig):
    """An ensemble of one tier's models: ``distill(..., ensemble=EnsembleConfig(k=5))``.

    Every option of an ensemble is here: how many members, how each is drawn, and
    how far the served score sits below their mean (``risk`` spreads).
    ``k`` 1 fits a single model.
    """

    tier: ClassVar[str] = "ensemble"

    k: int = option(5, "reward models in the ensemble (1: a single model)", low=1, high=32)
    mode: Literal["bootstrap", "seed"] = option(
        "bootstrap", "bootstrap: each member on a resample of the training items; seed: seeds"
    )
    risk: float = option(
        0.0, "the served score is the members' mean minus this many spreads", low=0, high=10
    )
    seed: int = option(0, "seed of the members' resamples and orders")
