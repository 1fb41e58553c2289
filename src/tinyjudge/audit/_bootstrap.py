"""The bootstrap lives in :mod:`tinyjudge._stats`; these names stay importable from here."""

from __future__ import annotations

from tinyjudge._stats import BootstrapCI, bootstrap_ci, bootstrap_many, cluster_indices

__all__ = ["BootstrapCI", "bootstrap_ci", "bootstrap_many", "cluster_indices"]
