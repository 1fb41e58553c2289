"""Agreement between label sources: accuracy, kappas, Krippendorff's alpha, rank correlations.

Every statistic is a pure function on array-likes returning a float; confidence
intervals come from :func:`bootstrap_ci`, clustered by a group key when items
share a prompt. :func:`pair_labels` lines up two sources' Label records by item.

>>> from tinyjudge.audit.agreement import cohen_kappa, krippendorff_alpha
>>> round(cohen_kappa(["a", "b", "b"], ["a", "b", "a"]), 4)
0.4
"""

from __future__ import annotations

from tinyjudge._stats import BootstrapCI, bootstrap_ci, bootstrap_many, cluster_indices
from tinyjudge.audit._alpha import (
    Level,
    alpha_from_confusion,
    alpha_from_value_counts,
    krippendorff_alpha,
)
from tinyjudge.audit._kappa import (
    ConfusionMatrix,
    Weights,
    accuracy,
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    fleiss_kappa_from_counts,
    kappa_from_confusion,
    kendall,
    spearman,
    weight_matrix,
)
from tinyjudge.audit._pairs import (
    PairedLabels,
    label_value,
    pair_labels,
    ratings_matrix,
)
from tinyjudge.records import index_labels

__all__ = [
    "accuracy",
    "cohen_kappa",
    "fleiss_kappa",
    "fleiss_kappa_from_counts",
    "krippendorff_alpha",
    "alpha_from_value_counts",
    "alpha_from_confusion",
    "kappa_from_confusion",
    "weight_matrix",
    "spearman",
    "kendall",
    "confusion_matrix",
    "ConfusionMatrix",
    "bootstrap_ci",
    "bootstrap_many",
    "BootstrapCI",
    "cluster_indices",
    "pair_labels",
    "PairedLabels",
    "index_labels",
    "label_value",
    "ratings_matrix",
    "Level",
    "Weights",
]
