"""Tinyjudge: judge agent trajectories, distill the judge, calibrate and audit.

The names a notebook needs, one per step of the loop, all in memory::

    import tinyjudge as tj

    items = tj.read_items("items.jsonl")               # or tj.run_import("xstest", folder)
    judged = tj.run_judge(items, "compliance", model="gpt-4o").labels
    rm = tj.distill(items, judged).model                # source and rubric read from the labels
    rm = tj.calibrate(rm, cal_items, people, human="human:final")   # rm.source ends "+cal"
    rm.save("runs/rm"); rm = tj.load_model("runs/rm")   # weights + calibration + card
    report = tj.audit(rm.score_items(items) + people, items, reference="human:final")
    print(report.pair(rm.source, "human:final").kappa)  # 0.718 [0.548, 0.865]
    rates = tj.estimate_rates(judged + people, items, cheap=judged[0].source,
                              human="human:final")

Each stage takes one config (``tj.JudgeConfig(...)``, ``tj.LinearConfig(C=0.5)``,
``tj.CalibrateConfig(...)``, ``tj.AuditConfig(...)``, ``tj.EstimateConfig(...)``); keyword
options are sugar for its fields, and the command line's flags are derived from the same
fields. The stages' other names are on their packages (``tinyjudge.audit``,
``tinyjudge.calibrate``, ...); test servers and fakes are in :mod:`tinyjudge.testing`.

Importing this package is cheap: the records, errors, rubrics and JSONL readers
load at once; the names that need scikit-learn, torch, transformers or openai load
their module on first use. ``distill``, ``calibrate``, ``audit``, ``cascade`` and
``exploit`` are their packages, and calling one runs its verb.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tinyjudge._faces import lazy_names

# Each public name once, as ``name as name`` (the re-export form static tools read): these
# load with the package, those under TYPE_CHECKING on first use (_faces.lazy_names). A
# stage named by its own package (``distill``) is that package, which runs its verb when called.
from tinyjudge.datasets.jsonl import read_items as read_items
from tinyjudge.datasets.jsonl import read_labels as read_labels
from tinyjudge.datasets.jsonl import write_jsonl as write_jsonl
from tinyjudge.errors import TinyjudgeError as TinyjudgeError
from tinyjudge.errors import UsageError as UsageError
from tinyjudge.records import Item as Item
from tinyjudge.records import Label as Label
from tinyjudge.records import Message as Message
from tinyjudge.results import Interval as Interval
from tinyjudge.rubric import Rubric as Rubric
from tinyjudge.rubric import load_rubric as load_rubric

if TYPE_CHECKING:
    from tinyjudge.audit import AuditConfig as AuditConfig
    from tinyjudge.audit import audit as audit
    from tinyjudge.calibrate import CalibrateConfig as CalibrateConfig
    from tinyjudge.calibrate import calibrate as calibrate
    from tinyjudge.cascade import cascade as cascade
    from tinyjudge.datasets.importers import run_import as run_import
    from tinyjudge.distill import LinearConfig as LinearConfig
    from tinyjudge.distill import ProbeConfig as ProbeConfig
    from tinyjudge.distill import TransformerConfig as TransformerConfig
    from tinyjudge.distill import distill as distill
    from tinyjudge.distill import load_model as load_model
    from tinyjudge.estimate import EstimateConfig as EstimateConfig
    from tinyjudge.estimate import estimate_rates as estimate_rates
    from tinyjudge.exploit import exploit as exploit
    from tinyjudge.judge import Judge as Judge
    from tinyjudge.judge import JudgeConfig as JudgeConfig
    from tinyjudge.judge import run_judge as run_judge

__version__ = "0.1.0"

__getattr__, __dir__ = lazy_names(__name__)
