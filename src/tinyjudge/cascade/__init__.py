"""The cascade: the reward model keeps what it has earned, the judge the rest.

:func:`cascade` chooses a threshold on the reward model's confidence on
calibration items by fixed-sequence testing with an exact binomial bound
("Trust or Escalate", Jung et al., ICLR 2025), so that agreement with the
reference on the items it keeps is at least ``target`` with probability at least
``1 - delta``; the other items go to the judge (or to people). Items that share a
prompt, question or dialogue are tested as groups (:func:`korn_graubard_lower`, or
one item per group under the exact bound).
:class:`AuditSampler` watches a serving reward model: it sends a random share of
what it scores to the judge in the background and reports the agreement.
"""

from __future__ import annotations

from tinyjudge._faces import callable_package

from ._audit import AuditSampler, AuditSamplerConfig, audit_sampler
from ._bound import (
    MIN_GROUPS,
    ThresholdChoice,
    ThresholdStep,
    choose_threshold,
    clopper_pearson,
    fewest_to_pass,
)
from ._cluster import (
    ClusterCount,
    cluster_count,
    korn_graubard,
    korn_graubard_lower,
    one_per_group,
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
    "clopper_pearson",
    "korn_graubard",
    "korn_graubard_lower",
    "cluster_count",
    "ClusterCount",
    "one_per_group",
    "MIN_GROUPS",
    "AuditSamplerConfig",
    "AuditSampler",
    "audit_sampler",
]


callable_package(__name__, "cascade")
