"""Audit: agreement between label sources, bias probes, reports (rates: ``tinyjudge.estimate``).

The package is also the verb: ``tinyjudge.audit(labels, items, reference="human:final")``
is :func:`audit`, whose :class:`AuditReport` gives each comparison as a typed
:class:`PairRow` (``report.pair(a, b).kappa``).
"""

from __future__ import annotations

from tinyjudge._faces import callable_package
from tinyjudge.audit._config import AuditConfig
from tinyjudge.audit._report_data import Confusion, PairRow, with_exploit
from tinyjudge.audit.agreement import (
    BootstrapCI,
    PairedLabels,
    accuracy,
    bootstrap_ci,
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    kendall,
    krippendorff_alpha,
    pair_labels,
    spearman,
)
from tinyjudge.audit.bias import (
    bias_report,
    injection_flip_rate,
    position_bias,
    self_consistency,
    verbosity_bias,
)
from tinyjudge.audit.report import AuditReport, audit, write_report

__all__: list[str] = [
    "AuditConfig",
    # agreement
    "accuracy",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "spearman",
    "kendall",
    "confusion_matrix",
    "bootstrap_ci",
    "BootstrapCI",
    "pair_labels",
    "PairedLabels",
    # bias
    "position_bias",
    "verbosity_bias",
    "self_consistency",
    "injection_flip_rate",
    "bias_report",
    # report
    "audit",
    "write_report",
    "AuditReport",
    "PairRow",
    "Confusion",
    "with_exploit",
]


callable_package(__name__, "audit")
