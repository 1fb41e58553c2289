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

from tinyjudge._faces import callable_package, lazy_names

from ._audit import AuditSampler as AuditSampler
from ._audit import AuditSamplerConfig as AuditSamplerConfig
from ._audit import audit_sampler as audit_sampler
from ._bound import MIN_GROUPS as MIN_GROUPS
from ._bound import ThresholdChoice as ThresholdChoice
from ._bound import ThresholdStep as ThresholdStep
from ._bound import choose_threshold as choose_threshold
from ._bound import clopper_pearson as clopper_pearson
from ._bound import fewest_to_pass as fewest_to_pass
from ._cluster import ClusterCount as ClusterCount
from ._cluster import cluster_count as cluster_count
from ._cluster import korn_graubard as korn_graubard
from ._cluster import korn_graubard_lower as korn_graubard_lower
from ._cluster import one_per_group as one_per_group
from ._result import CascadeConfig as CascadeConfig
from ._result import CascadeResult as CascadeResult
from ._result import StageResult as StageResult
from ._run import cascade as cascade

_, __dir__ = lazy_names(__name__)
callable_package(__name__, "cascade")
