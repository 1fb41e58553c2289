"""A live audit of a serving reward model: a random share of what it scores goes to the judge.

The sampler never delays a reward: :meth:`AuditSampler.offer` draws the sample and
puts it on a bounded queue without waiting (a full queue or a spent budget drops
the draw and counts it); a background thread sends what is queued to the judge
and compares its verdicts with the model's. The agreement, with its exact
interval, is read at any time (:meth:`AuditSampler.state`); at the end of each
window of judged items whose agreement interval lies wholly below the model's
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

from tinyjudge.errors import UsageError
from tinyjudge.judge import JudgeConfig, JudgeLike
from tinyjudge.records import Item, Label
from tinyjudge.results import Interval

from ._bound import clopper_pearson

__all__ = ["AuditSampler", "AuditState", "audit_sampler", "card_agreement"]

log = logging.getLogger("tinyjudge.audit_sampler")

# judge a list of items, one label each in order (a Judge's run, or any function)
JudgeFn = Callable[[list[Item]], Sequence[Label]]


@dataclass(frozen=True)
class AuditState:
    """What the audit has seen so far.

    Attributes:
        judged: sampled items the judge gave a verdict on (compared).
        pending: sampled items waiting for the judge.
        agreement: the model's agreement with the judge on the judged items, with
            the exact two-sided ``1 - delta`` interval.
        sampled: items drawn into the sample.
        dropped: items drawn but dropped (queue full or budget spent).
        failed: sampled items the judge gave no verdict on.
        warnings: windows that fell below the calibration-time agreement.
        baseline: the model's calibration-time agreement (``None``: unknown).
    """

    judged: int
    pending: int
    agreement: Interval
    sampled: int
    dropped: int
    failed: int
    warnings: int
    baseline: float | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``/health``'s ``audit``)."""
        nan = math.isnan(self.agreement.value)
        return {
            "judged": self.judged,
            "pending": self.pending,
            "agreement": None if nan else self.agreement.value,
            "interval": None if nan else [self.agreement.low, self.agreement.high],
            "sampled": self.sampled,
            "dropped": self.dropped,
            "failed": self.failed,
            "warnings": self.warnings,
            "baseline": self.baseline,
        }

    def prometheus(self) -> str:
        """The same figures in Prometheus text format (``/metrics``)."""
        a = self.agreement
        rows = [
            ("tinyjudge_audit_judged", "counter", self.judged),
            ("tinyjudge_audit_pending", "gauge", self.pending),
            ("tinyjudge_audit_sampled", "counter", self.sampled),
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
        rate: the share of scored items sampled.
        budget: the most items ever sent to the judge (None: no limit).
        max_pending: the queue's bound; a draw that finds it full is dropped.
        batch: the most items sent to the judge at once.
        window: judged items per window of the drift check.
        baseline: the model's calibration-time agreement with the judge (e.g. its
            card's validation accuracy); None turns the warning off.
        delta: the error rate of the intervals (two-sided ``1 - delta``).
        seed: the sampling seed.

    Raises:
        UsageError: a rate outside [0, 1], a budget below 0, a queue, batch or window below 1.
    """

    def __init__(
        self,
        judge: JudgeLike | JudgeFn,
        *,
        rate: float = 0.05,
        budget: int | None = None,
        max_pending: int = 256,
        batch: int = 16,
        window: int = 100,
        baseline: float | None = None,
        delta: float = 0.1,
        seed: int | None = None,
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
        self._rng = random.Random(seed)
        self._queue: queue.Queue[tuple[Item, Label]] = queue.Queue(maxsize=max_pending)
        self._lock = threading.Lock()
        self._hits: list[bool] = []
        self._recent: deque[bool] = deque(maxlen=window)
        self.sampled = self.dropped = self.failed = self.warnings = 0
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._work, name="tinyjudge-audit", daemon=True)
        self._thread.start()

    def offer(self, items: Sequence[Item], labels: Sequence[Label]) -> int:
        """Draw the sample from scored items and queue it, without waiting; returns how many."""
        queued = 0
        for item, label in zip(items, labels, strict=True):
            if label.status != "ok" or self._rng.random() >= self.rate:
                continue
            with self._lock:
                self.sampled += 1
                spent = self.budget is not None and self.sampled > self.budget
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
                self._record(label.label == v.label)

    def _record(self, hit: bool) -> None:
        with self._lock:
            self._hits.append(hit)
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
            k, n = sum(self._hits), len(self._hits)
            # drawn, neither dropped nor answered: queued or with the judge now
            pending = self.sampled - self.dropped - n - self.failed
            counts = (self.sampled, self.dropped, self.failed, self.warnings)
        if n:
            low, high = clopper_pearson(k, n, self.delta)
            agreement = Interval(k / n, low, high)
        else:
            agreement = Interval(math.nan)
        return AuditState(n, pending, agreement, *counts, self.baseline)

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
    judge: JudgeConfig,
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
        judge: the judge's options (model, base_url, timeout, max_retries, ...).
        cache: the judge's SQLite cache.
        **options: :class:`AuditSampler` options (``rate``, ``budget``, ...).

    Raises:
        UsageError: the judge's options name no model, or a replay.
    """
    from tinyjudge.judge import open_judge

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
