"""Prometheus text-format metrics for the reward server, with no extra dependency."""

from __future__ import annotations

import bisect
import threading
from collections import defaultdict

__all__ = ["Metrics", "CLIENT_CLOSED"]

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_MAX_UNREAD = 100  # distinct names of unread parts kept; the rest count as "other"


class _Histogram:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.total += value
        self.n += 1

    def lines(self, name: str, labels: str = "") -> list[str]:
        out, cum = [], 0
        sep = "," if labels else ""
        for bound, count in zip(self.buckets, self.counts, strict=False):
            cum += count
            out.append(f'{name}_bucket{{{labels}{sep}le="{bound:g}"}} {cum}')
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.n}')
        brace = f"{{{labels}}}" if labels else ""
        out += [f"{name}_sum{brace} {self.total:.6f}", f"{name}_count{brace} {self.n}"]
        return out


# The status recorded for a request whose client went away before an answer (nginx's
# convention): counted apart, since it is not the server's error.
CLIENT_CLOSED = 499


def _label_value(text: str) -> str:
    """Text as a Prometheus label value: backslash, quote and newline escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Requests and errors by endpoint, request latency, and forward-pass batch sizes.

    Requests whose client disconnected before the answer are recorded with
    status 499 and counted in ``tinyjudge_client_disconnects_total``, not as errors.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = defaultdict(int)
        self.latency: dict[str, _Histogram] = {}
        self.batch = _Histogram(BATCH_BUCKETS)
        self.items_scored = 0
        self.unread: dict[str, int] = defaultdict(int)

    def observe_request(self, path: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(path, status)] += 1
            self.latency.setdefault(path, _Histogram(LATENCY_BUCKETS)).observe(seconds)

    def observe_batch(self, size: int) -> None:
        with self._lock:
            self.batch.observe(size)
            self.items_scored += size

    def observe_unread(self, unread: dict[str, int]) -> None:
        """Count the parts and records of requests that no message reader knew, by name."""
        with self._lock:
            for name, n in unread.items():
                # names come from clients: their number is bounded, as a label's must be
                key = name if name in self.unread or len(self.unread) < _MAX_UNREAD else "other"
                self.unread[key[:120]] += n

    def render(self) -> str:
        """The metrics in Prometheus' text exposition format (version 0.0.4)."""
        with self._lock:
            lines = [
                "# HELP tinyjudge_requests_total HTTP requests by path and status code.",
                "# TYPE tinyjudge_requests_total counter",
            ]
            for (path, status), n in sorted(self.requests.items()):
                lines.append(f'tinyjudge_requests_total{{path="{path}",code="{status}"}} {n}')
            errors = sum(
                n for (_, s), n in self.requests.items() if s >= 400 and s != CLIENT_CLOSED
            )
            gone = sum(n for (_, s), n in self.requests.items() if s == CLIENT_CLOSED)
            lines += [
                "# HELP tinyjudge_errors_total HTTP requests answered with a 4xx or 5xx code "
                "(not 499, client gone: tinyjudge_client_disconnects_total).",
                "# TYPE tinyjudge_errors_total counter",
                f"tinyjudge_errors_total {errors}",
                "# HELP tinyjudge_client_disconnects_total Requests whose client left first.",
                "# TYPE tinyjudge_client_disconnects_total counter",
                f"tinyjudge_client_disconnects_total {gone}",
                "# HELP tinyjudge_request_seconds Request latency in seconds.",
                "# TYPE tinyjudge_request_seconds histogram",
            ]
            for path, hist in sorted(self.latency.items()):
                lines += hist.lines("tinyjudge_request_seconds", f'path="{path}"')
            lines += [
                "# HELP tinyjudge_batch_size Items per model forward pass.",
                "# TYPE tinyjudge_batch_size histogram",
                *self.batch.lines("tinyjudge_batch_size"),
                "# HELP tinyjudge_items_scored_total Items scored by the model.",
                "# TYPE tinyjudge_items_scored_total counter",
                f"tinyjudge_items_scored_total {self.items_scored}",
                "# HELP tinyjudge_unread_parts_total Content parts and records of requests "
                "that no message reader knew, by what they were.",
                "# TYPE tinyjudge_unread_parts_total counter",
            ]
            for name, n in sorted(self.unread.items()):
                lines.append(f'tinyjudge_unread_parts_total{{part="{_label_value(name)}"}} {n}')
        return "\n".join(lines) + "\n"
