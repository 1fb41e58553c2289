"""Tinyjudge: judge agent trajectories, distill the judge, calibrate and audit.

The dozen names a notebook needs, one per step of the loop::

    items = read_items("items.jsonl")                 # or run_import("xstest", folder)
    labels = Judge("compliance", model="gpt-4o").run(items).labels
    model = distill(items, labels, "judge:gpt-4o", "compliance").model
    report = build_report(labels + human_labels, items, reference="human:final")
    rates = estimate_rates(labels + human_labels, items, cheap="judge:gpt-4o",
                           human="human:final")

Importing this package is cheap: the records, errors, rubrics and JSONL readers
load at once; the names that need scikit-learn, torch, transformers or openai
(``Judge``, ``distill``, ``load_model``, ``TemperatureScaling``, ...) load their
module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tinyjudge._faces import lazy_names
from tinyjudge.datasets.jsonl import read_items, read_labels, write_jsonl
from tinyjudge.errors import DataError, TinyjudgeError
from tinyjudge.records import Hint, Item, Label, Message
from tinyjudge.rubric import Rubric, load_rubric

if TYPE_CHECKING:
    from tinyjudge.audit import (
        bootstrap_ci,
        build_report,
        cohen_kappa,
        krippendorff_alpha,
        write_report,
    )
    from tinyjudge.calibrate import TemperatureScaling, VectorScaling
    from tinyjudge.cascade import CascadeConfig, cascade
    from tinyjudge.datasets.importers import run_import
    from tinyjudge.distill import distill, load_model
    from tinyjudge.estimate import estimate_rate, estimate_rates
    from tinyjudge.exploit import ExploitConfig, exploit, run_exploit
    from tinyjudge.judge import Judge

__version__ = "0.1.0"

# name -> the module that defines it; loaded on first attribute access (PEP 562)
_LAZY = {
    "run_import": "tinyjudge.datasets.importers",
    "Judge": "tinyjudge.judge",
    "distill": "tinyjudge.distill",
    "load_model": "tinyjudge.distill",
    "calibrate": "tinyjudge.calibrate",
    "audit": "tinyjudge.audit",
    "TemperatureScaling": "tinyjudge.calibrate",
    "VectorScaling": "tinyjudge.calibrate",
    "cohen_kappa": "tinyjudge.audit",
    "krippendorff_alpha": "tinyjudge.audit",
    "bootstrap_ci": "tinyjudge.audit",
    "build_report": "tinyjudge.audit",
    "write_report": "tinyjudge.audit",
    "estimate_rate": "tinyjudge.estimate",
    "estimate_rates": "tinyjudge.estimate",
    "cascade": "tinyjudge.cascade",  # callable packages: the package, called, runs its verb
    "CascadeConfig": "tinyjudge.cascade",
    "exploit": "tinyjudge.exploit",
    "run_exploit": "tinyjudge.exploit",
    "ExploitConfig": "tinyjudge.exploit",
}

__all__ = [
    # records and data
    "Item",
    "Label",
    "Message",
    "Hint",
    "read_items",
    "read_labels",
    "write_jsonl",
    "run_import",
    # rubrics and the judge
    "Rubric",
    "load_rubric",
    "Judge",
    # reward models and calibration
    "distill",
    "load_model",
    "TemperatureScaling",
    "VectorScaling",
    # the cascade: reward model first, the judge for the rest
    "cascade",
    "CascadeConfig",
    # audit and estimates
    "cohen_kappa",
    "krippendorff_alpha",
    "bootstrap_ci",
    "build_report",
    "write_report",
    "estimate_rate",
    "estimate_rates",
    # will RL hack the reward model? (``tinyjudge.exploit(model, items)`` calls run_exploit)
    "exploit",
    "run_exploit",
    "ExploitConfig",
    # errors
    "TinyjudgeError",
    "DataError",
    "__version__",
]


__getattr__, __dir__ = lazy_names(__name__, _LAZY)
