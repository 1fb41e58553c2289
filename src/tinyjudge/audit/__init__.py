"""Audit: agreement between label sources, bias probes, reports (rates: ``tinyjudge.estimate``)."""

from __future__ import annotations

from tinyjudge.audit._report_data import with_exploit
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
from tinyjudge.audit.report import AuditReport, build_report, write_report

__all__: list[str] = [
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
    "build_report",
    "write_report",
    "AuditReport",
    "with_exploit",
]
