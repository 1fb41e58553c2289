"""The one tier registry: each tier's name, config, model class and what the CLI says of it.

Light to import (the configs alone): the command line takes its ``--tier`` choices, their
help and the tiers' flags from here when it starts, before scikit-learn or torch load.
:data:`~tinyjudge.distill._load.TIERS` (name -> model class) is read off it. A new tier is
one module (its model; its config in ``_configs.py``) and one line here (its module also
on ``_load.py``'s static import line, for the import graph); what it can do beyond the
:class:`~tinyjudge.distill.RewardModel` contract it declares on its class
(``takes_eval_set``, ``top_terms``, ``linear_head``, ``drops_unweighted_rows``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from . import _configs as configs

if TYPE_CHECKING:
    from ._configured import Configured

__all__ = ["Tier", "TIER_REGISTRY", "DEFAULT_TIER", "FEW_LABELS_TIER", "chosen_tiers"]


@dataclass(frozen=True)
class Tier:
    """One tier.

    Attributes:
        config: its options (:class:`TierConfig` subclass; its fields are the tier's flags).
        model: where its model class lives, ``"module:Class"`` in this package, imported
            on first use (the probe and transformer tiers load torch).
        help: what ``--tier``'s help says of it.
        chosen: offered as a ``--tier`` choice; False for a saved directory's older name
            and for what distill makes itself (an ensemble).
    """

    config: type[configs.TierConfig]
    model: str
    help: str
    chosen: bool = True

    def model_class(self) -> type[Configured]:
        """The model class, imported now."""
        module, _, name = self.model.partition(":")
        cls: type[Configured] = getattr(importlib.import_module(module, __package__), name)
        return cls

    def takes(self, option: str) -> bool:
        """Whether the tier's config has a field ``option`` (``cache_dir``: it caches)."""
        return option in {f.name for f in fields(self.config)}


TIER_REGISTRY: dict[str, Tier] = {
    "linear": Tier(configs.LinearConfig, "._linear:LinearRM", ""),
    "probe": Tier(
        configs.ProbeConfig, "._probe:ProbeRM", "a frozen encoder beside the linear features"
    ),
    "transformer": Tier(
        configs.TransformerConfig,
        "._transformer:TransformerRM",
        "any encoder or decoder fine-tuned: --base",
    ),  # fmt: skip
    # the transformer tier's older name
    "encoder": Tier(configs.TransformerConfig, "._transformer:EncoderRM", "", chosen=False),
    "cross": Tier(
        configs.CrossConfig,
        "._cross:CrossRM",
        "an encoder reading the references and the request beside the answer",
    ),  # fmt: skip
    "ensemble": Tier(configs.EnsembleConfig, "._ensemble:EnsembleRM", "", chosen=False),
}
# distill's tier when none is named; the one that learns most from a few hundred labels
DEFAULT_TIER = "linear"
FEW_LABELS_TIER = "probe"


def chosen_tiers() -> dict[str, Tier]:
    """The tiers offered as ``--tier`` choices, in the registry's order."""
    return {name: t for name, t in TIER_REGISTRY.items() if t.chosen}
