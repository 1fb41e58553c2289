"""Audit: agreement between label sources, bias probes, reports (rates: ``tinyjudge.estimate``).

The package is also the verb: ``tinyjudge.audit(labels, items, reference="human:final")``
is :func:`audit`, whose :class:`AuditReport` gives each comparison as a typed
:class:`PairRow` (``report.pair(a, b).kappa``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tinyjudge._faces import callable_package, lazy_names
from tinyjudge.audit._config import AuditConfig as AuditConfig

if TYPE_CHECKING:
    from tinyjudge.audit._report_data import Confusion as Confusion
    from tinyjudge.audit._report_data import PairRow as PairRow
    from tinyjudge.audit._report_data import with_exploit as with_exploit

    # agreement
    from tinyjudge.audit.agreement import BootstrapCI as BootstrapCI
    from tinyjudge.audit.agreement import PairedLabels as PairedLabels
    from tinyjudge.audit.agreement import accuracy as accuracy
    from tinyjudge.audit.agreement import bootstrap_ci as bootstrap_ci
    from tinyjudge.audit.agreement import cohen_kappa as cohen_kappa
    from tinyjudge.audit.agreement import confusion_matrix as confusion_matrix
    from tinyjudge.audit.agreement import fleiss_kappa as fleiss_kappa
    from tinyjudge.audit.agreement import kendall as kendall
    from tinyjudge.audit.agreement import krippendorff_alpha as krippendorff_alpha
    from tinyjudge.audit.agreement import pair_labels as pair_labels
    from tinyjudge.audit.agreement import spearman as spearman

    # bias
    from tinyjudge.audit.bias import bias_report as bias_report
    from tinyjudge.audit.bias import injection_flip_rate as injection_flip_rate
    from tinyjudge.audit.bias import position_bias as position_bias
    from tinyjudge.audit.bias import self_consistency as self_consistency
    from tinyjudge.audit.bias import verbosity_bias as verbosity_bias

    # report
    from tinyjudge.audit.report import AuditReport as AuditReport
    from tinyjudge.audit.report import audit as audit
    from tinyjudge.audit.report import write_report as write_report

__getattr__, __dir__ = lazy_names(__name__)
callable_package(__name__, "audit")
