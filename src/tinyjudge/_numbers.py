"""One check for a number a user gave: finite, of the right kind, inside its range.

``nan`` passes every comparison's negation (``not nan > 0`` is true, but so is
``not nan <= 0``), and ``inf`` passes ``> 0``: a check written as one comparison
lets one of them through, to fail later as a traceback or to print ``cost $nan``.
Every option that is a number goes through :func:`check_number` where it is
taken in, and the message gives the range.
"""

from __future__ import annotations

import math
from typing import Any

from tinyjudge.errors import UsageError

__all__ = ["check_number"]


def check_number(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    whole: bool = False,
    unit: str = "",
) -> None:
    """Refuse ``value`` unless it is a finite number in ``[low, high]`` (``(low, high]``).

    Args:
        name: the parameter, as the library names it (the CLI shows its flag).
        value: what was given.
        low: the least allowed value (None: no bound).
        high: the largest allowed value (None: no bound).
        low_open: ``low`` itself is not allowed.
        whole: the value must be a whole number.
        unit: shown after the range (``" seconds"``).

    Raises:
        UsageError: naming ``name``, the value and the allowed range.

    >>> check_number("temperature", 0.5, 0, 2)
    >>> check_number("temperature", float("nan"), 0, 2)
    Traceback (most recent call last):
    ...
    tinyjudge.errors.UsageError: temperature must be a finite number in [0, 2], got nan
    >>> check_number("n_boot", 10**9, 1, 100_000, whole=True)
    Traceback (most recent call last):
    ...
    tinyjudge.errors.UsageError: n_boot must be <= 100000, got 1000000000; allowed: [1, 100000]
    """
    kind = "a whole number" if whole else "a finite number"
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    allowed = f"{'(' if low_open else '['}{lo}, {hi}{')' if high is None else ']'}{unit}"
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and not isinstance(value, int):
        number = math.isfinite(value) and (not whole or float(value).is_integer())
    if not number:
        raise UsageError(f"{name} must be {kind} in {allowed}, got {value!r}", param=name)
    if low is not None and (value <= low if low_open else value < low):
        bound = f"{'>' if low_open else '>='} {lo}"
    elif high is not None and value > high:
        bound = f"<= {hi}"
    else:
        return
    raise UsageError(f"{name} must be {bound}, got {value!r}; allowed: {allowed}", param=name)
