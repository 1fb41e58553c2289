"""Optional extras: a verb that needs one says which, in one line, before it writes anything."""

from __future__ import annotations

import importlib

from tinyjudge.errors import UsageError

__all__ = ["EXTRAS", "require_extra"]

# extra -> the modules it installs that tinyjudge imports
EXTRAS = {
    "serve": ("fastapi", "uvicorn", "jinja2"),
    "ray": ("ray",),
    "rl": ("trl",),
}


def require_extra(extra: str, verb: str) -> None:
    """Raise a one-line error naming the extra when one of its modules is missing.

    Args:
        extra: a key of :data:`EXTRAS`.
        verb: what needs it, e.g. ``tinyjudge serve``.

    Raises:
        TinyjudgeError: ``tinyjudge serve needs the "serve" extra (fastapi is not
            installed): pip install "tinyjudge[serve]"``.
    """
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            raise UsageError(
                f'{verb} needs the "{extra}" extra ({module} is not installed): '
                f'pip install "tinyjudge[{extra}]"'
            ) from None
