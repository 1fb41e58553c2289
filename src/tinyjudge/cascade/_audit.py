"""A live audit of a serving reward model: a random share of what it scores goes to the judge.

The sampler never delays a reward: :meth:`AuditSampler.offer` draws each scored
item with probability ``rate`` (one independent draw per item, so the sample is
uniform over the traffic whatever its bursts) and puts it on a bounded queue
without waiting (a full queue or a spent budget drops the draw and counts it); a
background thread sends what is queued to the judge and compares its verdicts
with the model's. The agreement and its interval are read at any time
(:meth:`AuditSampler.state`), beside what was asked (the rate) and what became of
the draws (drawn, judged, pending, dropped, failed). Items of one prompt,
question or dialogue are not independent: when they carry such a key the
interval is the Korn-Graubard one over those groups. At the end of each window of
judged items whose agreement interval lies wholly below the model's
calibration-time agreement, one warning line is logged.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import random
import threading
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from tinyjudge.config import Config, option
from tinyjudge.errors import UsageError
from tinyjudge.judge import JudgeConfig, JudgeLike
from tinyjudge.records import Item, Label
from tinyjudge.results import Interval, fields_dict

from ._bound import clopper_pearson
from ._cluster import korn_graubard_items

__all__ = ["AuditSamplerConfig", "AuditSampler", "AuditState", "audit_sampler", "card_agreement"]

# /health's audit: the traffic's counts, then the agreement and what it rests on
_JSON_ORDER = ("rate", "offered", "drawn", "judged", "pending", "dropped", "failed", "agreement",
               "groups", "group_by", "warnings", "baseline")  # fmt: skip

log = logging.getLogger("tinyjudge.audit_sampler")

# judge a list of items, one label each in order (a Judge's run, or any function)
JudgeFn = Callable[[list[Item]], Sequence[Label]]


@dataclass
class AuditSamplerConfig(Config):
    """The server's audit: its judge, and how much of the traffic goes to it.

    ``tinyjudge serve`` derives its ``--audit-*`` flags from these fields, the judge's
    under the same prefix (``--audit-model``, ``--audit-timeout``, ``--audit-rate``).
    Without ``judge`` there is no audit.
    """

    judge: JudgeConfig | None = option(None, "the judge of the drawn rollouts")
    rate: float = option(0.05, "share of rollouts audited (default 0.05)", low=0.0, high=1.0)
    budget: int | None = option(None, "most rollouts ever sent to the audit judge", low=0)


@dataclass(frozen=True)
class AuditState:
    """What the audit has seen so far.

    Attributes:
        judged: drawn items the judge gave a verdict on (compared).
        pending: drawn items waiting for the judge (queued or being judged).
        agreement: the model's agreement with the judge on the judged items, with
            its two-sided ``1 - delta`` interval: Korn-Graubard over ``groups`` when
            judged items share a group, else exact (Clopper-Pearson).
        drawn: items drawn into the sample (``drawn = judged + pending + dropped +
            failed``).
        dropped: items drawn but dropped (queue full or budget spent).
        failed: drawn items the judge gave no verdict on.
        warnings: windows that fell below the calibration-time agreement.
        baseline: the model's calibration-time agreement (``None``: unknown).
        rate: the share of scored items asked to be drawn.
        offered: scored items the sampler was offered (the traffic it drew from).
        groups: groups among the judged items (``judged`` when none shares one).
        group_by: the item key the groups came from (``None``: each item its own).
    """

    judged: int
    pending: int
    agreement: Interval
    drawn: int
    dropped: int
    failed: int
    warnings: int
    baseline: float | None
    rate: float = 0.0
    offered: int = 0
    groups: int = 0
    group_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``/health``'s ``audit``): the fields, the traffic's counts first,
        ``agreement`` as ``{"value", "low", "high"}``."""
        data = fields_dict(self)
        return {k: data[k] for k in _JSON_ORDER}

    def prometheus(self) -> str:
        """The same figures in Prometheus text format (``/metrics``)."""
        a = self.agreement
        rows = [
            ("tinyjudge_audit_rate", "gauge", self.rate),
            ("tinyjudge_audit_offered", "counter", self.offered),
            ("tinyjudge_audit_drawn", "counter", self.drawn),
            ("tinyjudge_audit_judged", "counter", self.judged),
            ("tinyjudge_audit_pending", "gauge", self.pending),
            ("tinyjudge_audit_groups", "gauge", self.groups),
            ("tinyjudge_audit_dropped", "counter", self.dropped),
            ("tinyjudge_audit_failed", "counter", self.failed),
            ("tinyjudge_audit_warnings", "counter", self.warnings),
            ("tinyjudge_audit_agreement", "gauge", a.value),
            ("tinyjudge_audit_agreement_low", "gauge", a.low if a.low is not None else math.nan),
            ("tinyjudge_audit_agreement_high", "gauge",
             a.high if a.high is not None else math.nan),
        ]  # fmt: skip
        lines = []
        for name, kind, value in rows:
            lines += [f"# TYPE {name} {kind}", f"{name} {float(value):g}"]
        return "\n".join(lines) + "\n"


class AuditSampler:
    """Send a random share of scored items to a judge in the background; report agreement.

    Use it as a callable in an in-process RL loop (``sampler(items, labels)`` after
    each scoring), or give it to the reward server (``create_app(..., audit=sampler)``).

    Args:
        judge: a judge (:class:`~tinyjudge.judge.JudgeLike`, e.g. from
            :func:`~tinyjudge.judge.open_judge`), or a function of a list of items
            returning one label each.
        rate: the chance that each scored item is drawn (independently of the others).
        budget: the most items ever sent to the judge (None: no limit).
        max_pending: the queue's bound; a draw that finds it full is dropped (generous:
            a burst is drawn whole and judged as the judge catches up).
        batch: the most items sent to the judge at once.
        window: judged items per window of the drift check.
        baseline: the model's calibration-time agreement with the judge (e.g. its
            card's validation accuracy); None turns the warning off.
        delta: the error rate of the intervals (two-sided ``1 - delta``).
        seed: the sampling seed.
        group_by: the item key of dependent items (e.g. ``metadata.dialogue_id``);
            ``None``: the first prompt, question or dialogue key an item has. An item
            without one is a group of its own.

    Raises:
        UsageError: a rate outside [0, 1], a budget below 0, a queue, batch or window below 1.
    """

    def __init__(
        self,
        judge: JudgeLike | JudgeFn,
        *,
        rate: float = 0.05,
        budget: int | None = None,
        max_pending: int = 2048,
        batch: int = 16,
        window: int = 100,
        baseline: float | None = None,
        delta: float = 0.1,
        seed: int | None = None,
        group_by: str | None = None,
    ) -> None:
        if not 0.0 <= rate <= 1.0 or math.isnan(rate):
            raise UsageError(f"rate must be in [0, 1], got {rate}", "rate")
        if budget is not None and budget < 0:
            raise UsageError(f"budget must be at least 0, got {budget}", "budget")
        for name, value in (("max_pending", max_pending), ("batch", batch), ("window", window)):
            if value < 1:
                raise UsageError(f"{name} must be at least 1, got {value}", name)
        self._judge: JudgeFn = judge.run if isinstance(judge, JudgeLike) else judge
        # what the judge holds open (a local model's server), closed with the sampler
        self._resources = ExitStack()
        self.rate, self.budget, self.batch, self.window = rate, budget, batch, window
        self.baseline, self.delta = baseline, delta
        self.group_by = group_by
        self._rng = random.Random(seed)
        self._queue: queue.Queue[tuple[Item, Label]] = queue.Queue(maxsize=max_pending)
        self._lock = threading.Lock()
        self._hits: list[bool] = []
        self._groups: list[str] = []  # the group of each judged item, beside its hit
        self._keys: set[str] = set()  # the keys the groups were read from
        self._recent: deque[bool] = deque(maxlen=window)
        self.offered = self.drawn = self.dropped = self.failed = self.warnings = 0
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._work, name="tinyjudge-audit", daemon=True)
        self._thread.start()

    def offer(self, items: Sequence[Item], labels: Sequence[Label]) -> int:
        """Draw the sample from scored items and queue it, without waiting; returns how many."""
        queued = 0
        for item, label in zip(items, labels, strict=True):
            if label.status != "ok":  # nothing to compare: not traffic the audit draws from
                continue
            with self._lock:
                self.offered += 1
            if self._rng.random() >= self.rate:
                continue
            with self._lock:
                self.drawn += 1
                spent = self.budget is not None and self.drawn > self.budget
            if spent or self._closed.is_set():
                self._drop()
                continue
            try:
                self._queue.put_nowait((item, label))
                queued += 1
            except queue.Full:
                self._drop()
        return queued

    __call__ = offer

    def _drop(self) -> None:
        with self._lock:
            self.dropped += 1

    def _take(self) -> list[tuple[Item, Label]]:
        try:
            first = self._queue.get(timeout=0.05)
        except queue.Empty:
            return []
        got = [first]
        while len(got) < self.batch:
            try:
                got.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return got

    def _work(self) -> None:
        while not (self._closed.is_set() and self._queue.empty()):
            got = self._take()
            if not got:
                continue
            try:
                verdicts = list(self._judge([item for item, _ in got]))
            except Exception as e:  # the judge failing must not stop the server
                log.warning("audit: the judge failed on %d items: %s", len(got), e)
                verdicts = []
            by_id = {v.item_id: v for v in verdicts}
            for item, label in got:
                v = by_id.get(item.id)
                if v is None or v.status != "ok":
                    with self._lock:
                        self.failed += 1
                    continue
                self._record(label.label == v.label, self._group_of(item))

    def _group_of(self, item: Item) -> str:
        from tinyjudge.distill import find_group_key

        key = self.group_by or find_group_key([item])
        value = item.get(key) if key is not None else None
        if key is None or value is None:
            return f"item:{item.id}"
        with self._lock:
            self._keys.add(key)
        return f"{key}={value}"

    def _record(self, hit: bool, group: str) -> None:
        with self._lock:
            self._hits.append(hit)
            self._groups.append(group)
            self._recent.append(hit)
            if len(self._hits) % self.window or self.baseline is None:
                return
            k, n = sum(self._recent), len(self._recent)
        low, high = clopper_pearson(k, n, self.delta)
        if high < self.baseline:
            with self._lock:
                self.warnings += 1
            log.warning(
                "audit: the reward model agrees with the judge on %d/%d of the last window "
                "(%.3f [%.3f, %.3f]), below its calibration-time %.3f: the policy may have "
                "drifted from where the model was trained",
                k, n, k / n, low, high, self.baseline,
            )  # fmt: skip

    def state(self) -> AuditState:
        """The audit's figures now."""
        with self._lock:
            hits, groups = list(self._hits), list(self._groups)
            # drawn, neither dropped nor answered: queued or with the judge now
            pending = self.drawn - self.dropped - len(hits) - self.failed
            counts = (self.drawn, self.dropped, self.failed, self.warnings)
            offered, keys = self.offered, sorted(self._keys)
        k, n = sum(hits), len(hits)
        names = sorted(set(groups))
        if n and len(names) < n:  # judged items share groups: the interval over groups
            low, high = korn_graubard_items(hits, groups, self.delta)
            agreement = Interval(k / n, low, high)
        elif n:
            low, high = clopper_pearson(k, n, self.delta)
            agreement = Interval(k / n, low, high)
        else:
            agreement = Interval(math.nan)
        key = self.group_by or (", ".join(keys) if keys else None)
        return AuditState(n, pending, agreement, *counts, self.baseline, self.rate, offered,
                          len(names), key)  # fmt: skip

    def join(self, timeout: float = 30.0) -> bool:
        """Wait until nothing is pending (at most ``timeout`` s); whether it emptied."""
        tick = threading.Event()
        waited = 0.0
        while self.state().pending and waited < timeout:
            tick.wait(0.02)
            waited += 0.02
        return self.state().pending == 0

    def close(self, timeout: float = 5.0) -> None:
        """Stop taking samples; let the worker finish what is queued (at most ``timeout`` s)."""
        self._closed.set()
        self._thread.join(timeout)
        self._resources.close()


def card_agreement(model: Any) -> float | None:
    """The model's agreement with its teacher on held-out items, from its card (or None)."""
    validation = (getattr(model, "card_", None) or {}).get("validation") or {}
    value = validation.get("accuracy")
    return float(value) if isinstance(value, int | float) else None


def audit_sampler(
    model: Any,
    judge: JudgeConfig | AuditSamplerConfig,
    *,
    cache: str | os.PathLike[str] | None = None,
    **options: Any,
) -> AuditSampler:
    """An :class:`AuditSampler` for ``model``: a judge under its rubric, its card's agreement.

    The judge is opened with :func:`~tinyjudge.judge.open_judge` (an endpoint, a
    local model or a panel; a replay needs the items in advance, which a server
    does not have) and stays open until the sampler is closed.

    Args:
        model: the served reward model.
        judge: the judge's options (model, base_url, timeout, max_retries, ...), or
            an :class:`AuditSamplerConfig` holding them with the rate and budget.
        cache: the judge's SQLite cache.
        **options: :class:`AuditSampler` options (``rate``, ``budget``, ...), over an
            :class:`AuditSamplerConfig`'s.

    Raises:
        UsageError: the judge's options name no model, or a replay; an
            :class:`AuditSamplerConfig` without a judge.
    """
    from tinyjudge.judge import open_judge

    if isinstance(judge, AuditSamplerConfig):
        if judge.judge is None:
            raise UsageError(
                "an audit needs a judge: give the AuditSamplerConfig one", param="judge"
            )
        options = {"rate": judge.rate, "budget": judge.budget, **options}
        judge = judge.judge
    resources = ExitStack()
    opened = resources.enter_context(open_judge(judge, model.rubric, cache=cache))
    options.setdefault("baseline", card_agreement(model))
    try:
        sampler = AuditSampler(opened, **options)
    except BaseException:
        resources.close()
        raise
    sampler._resources = resources
    return sampler
