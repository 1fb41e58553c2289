"""The calibrate stage's config, light to import: the command derives its flags from it when
the CLI starts, before anything loads scipy or scikit-learn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tinyjudge.config import Config, option
from tinyjudge.errors import UsageError

__all__ = ["CalibrateConfig", "METHODS", "check_calibration_method"]

# the calibrators' names (their classes are in _calibrators, which loads scipy)
METHODS = ("temperature", "vector", "platt", "isotonic")


@dataclass
class CalibrateConfig(Config):
    """Options of calibration against people (``tinyjudge calibrate``'s flags, one per field).

    >>> CalibrateConfig(method="platt", n_splits=3).n_splits
    3
    >>> CalibrateConfig(method="beta")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    tinyjudge.errors.UsageError: unknown calibration method 'beta' (method: choose one of [...])
    """

    method: str = option("temperature", "temperature, vector, platt or isotonic")
    n_splits: int = option(5, "cross-fitting folds", low=2)
    group_by: str | None = option(
        None, "cross-fitting never splits this item key, e.g. metadata.prompt_id"
    )
    n_boot: int = option(1000, "bootstrap resamples per interval", low=1, high=100_000)
    seed: int = option(0, "seed of the folds and the bootstrap")
    if_worse: Literal["identity", "refuse", "keep"] = option(
        "identity",
        "when the method makes held-out NLL or ECE worse than none: identity "
        "(apply none), refuse (exit 2) or keep",
    )

    def __post_init__(self) -> None:
        check_calibration_method(self.method)
        super().__post_init__()


def check_calibration_method(method: str, param: str = "method") -> None:
    """``method`` is a calibrator's name; the error names ``param`` (a config's field).

    Raises:
        UsageError: an unknown method, the allowed ones listed.
    """
    if method not in METHODS:
        raise UsageError(
            f"unknown calibration method {method!r} ({param}: choose one of {sorted(METHODS)})",
            param=param,
        )
