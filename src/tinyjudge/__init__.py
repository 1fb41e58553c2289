"""Tinyjudge: judge agent trajectories, distill the judge, calibrate and audit.

The names a notebook needs, one per step of the loop, all in memory::

    import tinyjudge as tj

    items = tj.read_items("items.jsonl")               # or tj.run_import("xstest", folder)
    judged = tj.Judge("compliance", model="gpt-4o").run(items).labels
    rm = tj.distill(items, judged).model                # source and rubric read from the labels
    rm = tj.calibrate(rm, cal_items, people, human="human:final")   # rm.source ends "+cal"
    rm.save("runs/rm"); rm = tj.load_model("runs/rm")   # weights + calibration + card
    report = tj.audit(rm.score_items(items) + people, items, reference="human:final")
    print(report.pair(rm.source, "human:final").kappa)  # 0.718 [0.548, 0.865]
    rates = tj.estimate_rates(judged + people, items, cheap=judged[0].source,
                              human="human:final")

Each stage takes one config (``tj.LinearConfig(C=0.5)``, ``tj.JudgeConfig(...)``,
``tj.CalibrateConfig(...)``); keyword options are sugar for its fields, and the
command line's flags are derived from the same fields. The stages' other names are
on their packages (``tinyjudge.audit``, ``tinyjudge.calibrate``, ...); test servers
and fakes are in :mod:`tinyjudge.testing`.

Importing this package is cheap: the records, errors, rubrics and JSONL readers
load at once; the names that need scikit-learn, torch, transformers or openai load
their module on first use. ``distill``, ``calibrate``, ``audit``, ``cascade`` and
``exploit`` are their packages, and calling one runs its verb.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tinyjudge._faces import lazy_names
from tinyjudge.datasets.jsonl import read_items, read_labels, write_jsonl
from tinyjudge.errors import TinyjudgeError, UsageError
from tinyjudge.records import Item, Label, Message
from tinyjudge.results import Interval
from tinyjudge.rubric import Rubric, load_rubric

if TYPE_CHECKING:
    from tinyjudge.audit import audit
    from tinyjudge.calibrate import CalibrateConfig, calibrate
    from tinyjudge.cascade import cascade
    from tinyjudge.datasets.importers import run_import
    from tinyjudge.distill import (
        LinearConfig,
        ProbeConfig,
        TransformerConfig,
        distill,
        load_model,
    )
    from tinyjudge.estimate import estimate_rates
    from tinyjudge.exploit import exploit
    from tinyjudge.judge import Judge, JudgeConfig

__version__ = "0.1.0"

# name -> the module that defines it, loaded on first use; a stage named by its own
# package (``distill``) is that package, which runs its verb when called
_LAZY = {
    "run_import": "tinyjudge.datasets.importers",
    "Judge": "tinyjudge.judge",
    "JudgeConfig": "tinyjudge.judge",
    "distill": "tinyjudge.distill",
    "LinearConfig": "tinyjudge.distill",
    "ProbeConfig": "tinyjudge.distill",
    "TransformerConfig": "tinyjudge.distill",
    "load_model": "tinyjudge.distill",
    "calibrate": "tinyjudge.calibrate",
    "CalibrateConfig": "tinyjudge.calibrate",
    "audit": "tinyjudge.audit",
    "estimate_rates": "tinyjudge.estimate",
    "cascade": "tinyjudge.cascade",
    "exploit": "tinyjudge.exploit",
}

__all__ = [
    # records and data
    "Item",
    "Label",
    "Message",
    "read_items",
    "read_labels",
    "write_jsonl",
    "run_import",
    # rubrics and the judge
    "Rubric",
    "load_rubric",
    "Judge",
    "JudgeConfig",
    # reward models: distill, calibrate, save and load
    "distill",
    "LinearConfig",
    "ProbeConfig",
    "TransformerConfig",
    "calibrate",
    "CalibrateConfig",
    "load_model",
    # audit, rates, the cascade and the exploit audit
    "audit",
    "estimate_rates",
    "cascade",
    "exploit",
    # results and errors
    "Interval",
    "TinyjudgeError",
    "UsageError",
    "__version__",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY)
