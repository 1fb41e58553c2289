"""The cascade: the reward model keeps what it has earned, the judge the rest.

:func:`cascade` chooses a threshold on the reward model's confidence on
calibration items by fixed-sequence testing with an exact binomial bound
("Trust or Escalate", Jung et al., ICLR 2025), so that agreement with the
reference on the items it keeps is at least ``target`` with probability at least
``1 - delta``; the other items go to the judge (or to people).
:class:`AuditSampler` watches a serving reward model: it sends a random share of
what it scores to the judge in the background and reports the agreement.
"""

from __future__ import annotations

from tinyjudge._faces import callable_package

from ._audit import AuditSampler, audit_sampler
from ._bound import (
    ThresholdChoice,
    ThresholdStep,
    choose_threshold,
    fewest_to_pass,
)
from ._result import CascadeConfig, CascadeResult, StageResult
from ._run import cascade

__all__ = [
    "cascade",
    "CascadeConfig",
    "CascadeResult",
    "StageResult",
    "choose_threshold",
    "ThresholdChoice",
    "ThresholdStep",
    "fewest_to_pass",
    "AuditSampler",
    "audit_sampler",
]


callable_package(__name__, "cascade")
