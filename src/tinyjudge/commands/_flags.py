"""The one mapping from the library's parameter names to the command line's flags.

The library's messages name Python parameters (``group_by and slice_by read
item metadata: pass items``); a :class:`~tinyjudge.errors.UsageError` carries
the parameter at fault in ``param``. When such an error ends a command, the
CLI shows the same message in its own terms (``--group-by and --slice-by read
item metadata: pass --items``), so a user reads the flag they would type.
"""

from __future__ import annotations

import re

from tinyjudge.errors import TinyjudgeError, UsageError

from ._config_flags import DERIVED, flag_of

__all__ = ["FLAGS", "flag_for", "in_flags"]

# parameter (as the library and the commands' signatures name it) -> flag
FLAGS: dict[str, str] = {
    "aggregate": "--aggregate",
    "budget": "--budget",
    "by": "--by",
    "chat_template": "--chat-template",
    "cheap": "--cheap",
    "cluster": "--cluster",
    "compare": "--compare",
    "concurrency": "--concurrency",
    "gguf": "--gguf",
    "group_by": "--group-by",
    "host": "--host",
    "human": "--human",
    "human_fraction": "--human-fraction",
    "human_method": "--human-method",
    "human_weight": "--human-weight",
    "if_worse": "--if-worse",
    "insecure_no_token": "--insecure-no-token",
    "items": "--items",
    "judge": "--judge",
    "label_field": "--label-field",
    "label_fields": "--label-field",
    "limit": "--limit",
    "max_body_mb": "--max-body-mb",
    "max_reply_mb": "--max-reply-mb",
    "max_retries": "--max-retries",
    "max_tokens": "--max-tokens",
    "method": "--method",
    "n_boot": "--n-boot",
    "n_splits": "--folds",
    "order": "--order",
    "out_dir": "--out",
    "param": "--param",
    "port": "--port",
    "price_in": "--price-in",
    "price_out": "--price-out",
    "rater_field": "--rater-field",
    "raters": "--rater",
    "reference": "--reference",
    "replace_labels": "--replace-labels",
    "response_format": "--response-format",
    "reviewer": "--as",
    "rubric": "--rubric",
    "samples": "--samples",
    "select": "--select",
    "slice_by": "--slice-by",
    "source": "--source",
    "threads": "--threads",
    "temperature": "--temperature",
    "tier": "--tier",
    "timeout": "--timeout",
    "token": "--token",
    "val_fraction": "--val-fraction",
}


def flag_for(param: str) -> str | None:
    """The flag a user types for a library parameter; None where no command has one.

    A stage's config field that a command shows (``commands/_config_flags.py``) is
    its derived flag (``n_boot`` -> ``--n-boot``).
    """
    if param in FLAGS:
        return FLAGS[param]
    return flag_of(param) if param in DERIVED else None


def _name(param: str) -> re.Pattern[str]:
    # the bare word: not part of a key (metadata.group_by), a quoted value or a flag
    return re.compile(rf"(?<![\w.'\"`/-]){re.escape(param)}(?![\w'\"`/-])")


def in_flags(error: TinyjudgeError) -> str:
    """The error's one-line message, with parameter names given as the CLI's flags.

    For a :class:`UsageError`, every mapped parameter with an underscore in its
    name (unambiguous in prose) becomes its flag, and so does the error's own
    ``param`` where the message names it last (``needs the items: pass items``:
    a one-word name is also a plain word), and so does each of its ``also``.
    Other errors are shown as written.
    """
    message = str(error)
    if not isinstance(error, UsageError):
        return message
    for param in sorted({p for p in [*FLAGS, *DERIVED] if "_" in p}, key=len, reverse=True):
        message = _name(param).sub(flag_for(param) or param, message)
    for param in dict.fromkeys([*([error.param] if error.param else []), *error.also]):
        flag = flag_for(param)
        named = list(_name(param).finditer(message)) if flag else []
        if flag and named:
            last = named[-1]
            message = message[: last.start()] + flag + message[last.end() :]
    return message
