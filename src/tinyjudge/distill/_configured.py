"""How a model holds its tier's config: its options, scikit-learn's parameters."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, ClassVar

from tinyjudge.errors import UsageError
from tinyjudge.rubric import Rubric

from ._base import RewardModel, init_common
from ._configs import TierConfig

__all__ = ["Configured"]


class Configured(RewardModel):
    """A model whose options are its config's fields (scikit-learn parameters too).

    ``Model(rubric, name, config=..., **options)``: keyword options over the
    config's fields. ``get_params``/``set_params`` see the fields, and each is
    an attribute (``model.epochs``), as scikit-learn has it; ``clone`` works.
    """

    config_class: ClassVar[type[TierConfig]] = TierConfig
    config: TierConfig

    def __init__(
        self,
        rubric: Rubric | str = "compliance",
        name: str | None = None,
        config: TierConfig | None = None,
        **options: Any,
    ) -> None:
        init_common(self, rubric, name)
        self._configure(config, options)

    def _configure(self, config: TierConfig | None, options: dict[str, Any]) -> None:
        if config is not None and not isinstance(config, self.config_class):
            raise UsageError(
                f"the {self.config_class.tier} tier takes a {self.config_class.__name__}, "
                f"got a {type(config).__name__}",
                param="config",
            )
        self.config = self.config_class.options(config, **options)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {"rubric": self.rubric, "name": self.name, **self._meta_params()}

    def set_params(self, **params: Any) -> Any:
        for key in ("rubric", "name"):
            if key in params:
                setattr(self, key, params.pop(key))
        self.config = self.config_class.options(self.config, **params)
        return self

    def __getattr__(self, name: str) -> Any:
        # scikit-learn's convention, every parameter an attribute: model.epochs
        config = self.__dict__.get("config")
        if config is not None and name in {f.name for f in fields(config)}:
            return getattr(config, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _meta_params(self) -> dict[str, Any]:
        return {f.name: getattr(self.config, f.name) for f in fields(self.config)}
