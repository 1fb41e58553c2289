"""Reliability diagrams as PNG bytes (matplotlib's Agg canvas; no display, no global state)."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import numpy as np

from tinyjudge.calibrate._metrics import Strategy, expected_calibration_error, reliability_curve

__all__ = ["reliability_diagram"]


def reliability_diagram(
    y: Any,
    probs: dict[str, Any] | Any,
    path: str | os.PathLike[str] | None = None,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    title: str = "Reliability diagram",
) -> bytes:
    """Plot accuracy against confidence for one or more probability sets on the same items.

    Args:
        y: true class indices, shape (n,).
        probs: an (n, k) array, or ``{"before": P0, "after": P1, ...}`` to overlay several.
        path: also write the PNG here.
        n_bins: bins of top-label confidence.
        strategy: "uniform" or "quantile" bins.
        title: the figure title.

    Returns:
        The PNG file's bytes.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    series = probs if isinstance(probs, dict) else {"source": probs}
    fig = Figure(figsize=(5.2, 6.0), dpi=100)
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, height_ratios=[3, 1], sharex=True)
    top.plot([0, 1], [0, 1], ls="--", color="0.6", lw=1, label="perfectly calibrated")
    markers = "osD^v"
    for i, (name, P) in enumerate(series.items()):
        P = np.asarray(P, dtype=float)
        curve = reliability_curve(y, P, n_bins, strategy)
        ece = expected_calibration_error(y, P, n_bins, strategy)
        sizes = 20 + 180 * curve.n / curve.n.max()
        top.plot(curve.confidence, curve.accuracy, lw=1.2, color=f"C{i}")
        top.scatter(
            curve.confidence, curve.accuracy, s=sizes, marker=markers[i % len(markers)],
            color=f"C{i}", alpha=0.8, label=f"{name} (ECE {ece:.3f})",
        )  # fmt: skip
        bottom.hist(
            P.max(axis=1), bins=np.linspace(0, 1, n_bins + 1), color=f"C{i}",
            alpha=0.45, label=name,
        )  # fmt: skip
    top.set_xlim(0, 1)
    top.set_ylim(0, 1.02)
    top.set_ylabel("accuracy (share correct)")
    top.set_title(title, fontsize=10)
    top.legend(loc="upper left", fontsize=8)
    top.grid(alpha=0.3)
    bottom.set_xlabel("confidence (top-class probability); marker size = items in bin")
    bottom.set_ylabel("items")
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(png)
    return png
