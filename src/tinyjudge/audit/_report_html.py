"""Render an audit report as one self-contained HTML page (plots inlined as base64 PNG).

The page is the Jinja2 templates in ``audit/templates`` with autoescape on, so
every piece of text from the data (source names, labels, slice values, reasons)
is HTML-escaped; the page loads nothing from anywhere. The templates read the typed
:class:`~tinyjudge.audit.AuditReport` (its rows' :class:`~tinyjudge.results.Interval`
statistics); the sections it keeps as JSON (calibration, bias, estimates, an
exploit audit) hold intervals as ``{"value", "low", "high"}``, and the filters
take either form.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tinyjudge.results import Interval

if TYPE_CHECKING:
    from tinyjudge.audit._report_data import AuditReport, PairRow

__all__ = ["render_html", "forest_plot"]

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;
margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.92em}
th,td{border:1px solid #ccc;padding:.25em .55em;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}
td.diag{background:#e3f2e3;font-weight:600}
.how{background:#f7f9fc;border-left:4px solid #7a9cc6;padding:.5em .9em;margin:.6em 0;
font-size:.93em}
.ci{color:#666;font-size:.88em}.bad{color:#a33}.good{color:#262}.muted{color:#777}
.figs img{max-width:520px;margin:.4em 1em .4em 0;border:1px solid #eee}
code{background:#f3f3f3;padding:0 .25em}
"""

_TEMPLATES = Path(__file__).resolve().parent / "templates"
# a figure that is an interval (``{"value", "low", "high"}``) shows its bounds beside it
BIAS_COLUMNS = {
    "position": [
        ("pairs", "n"),
        ("flip rate", "flip_rate"),
        ("flips", "n_flips"),
        ("first-position share", "first_share"),
        ("unscored", "n_unscored"),
    ],
    "verbosity": [
        ("pairs", "n"),
        ("longer wins", "longer_win_rate"),
        ("reference", "reference_rate"),
        ("excess", "excess"),
        ("pairs compared", "n_paired"),
    ],
    "self_consistency": [
        ("items", "n"),
        ("samples per item", "mean_samples"),
        ("agreement", "agreement"),
        ("unanimous", "unanimous"),
        ("Fleiss' kappa", "kappa"),
        ("unparsed", "n_unparsed"),
    ],
}


def _value(x: Any) -> Any:
    """An interval's value (an :class:`Interval` or its JSON form; None where it could not
    be computed); any other figure as it is."""
    if isinstance(x, Interval):
        return None if math.isnan(x.value) else x.value
    return x.get("value") if isinstance(x, Mapping) else x


def _f(x: Any, digits: int = 3) -> str:
    """A figure (or an interval's value) to ``digits`` places; a dash for none."""
    x = _value(x)
    return "–" if x is None or _undefined(x) else f"{x:.{digits}f}"


def _pct(x: Any, digits: int = 0) -> str:
    return f"{_value(x):.{digits}%}"


def _ci(ci: Any, digits: int = 3) -> Any:
    """An interval's (or a ``[low, high]`` pair's) `` [low, high]`` in a grey span; nothing
    when there is no interval."""
    from markupsafe import Markup

    if isinstance(ci, Interval):
        ci = [ci.low, ci.high]
    elif isinstance(ci, Mapping):
        ci = [ci.get("low"), ci.get("high")]
    if not isinstance(ci, list | tuple) or not ci or ci[0] is None:
        return ""  # a plain figure, or an interval without bounds
    return Markup(f' <span class="ci">[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]</span>')


def _cell(value: Any) -> str:
    value = _value(value)
    if isinstance(value, float):
        return _f(value)
    return "–" if value is None else str(value)


def _kappa_class(k: Any) -> str:
    k = _value(k)
    if k is None:
        return "muted"
    return "good" if k >= 0.8 else "bad" if k < 0.4 else ""


def _img(png: bytes, alt: str) -> Any:
    from markupsafe import Markup, escape

    data = base64.b64encode(png).decode("ascii")
    return Markup(f'<img src="data:image/png;base64,{data}" alt="{escape(alt)}">')


def _undefined(x: Any) -> bool:
    import jinja2

    return isinstance(x, jinja2.Undefined)


def forest_plot(rows: Sequence[PairRow], title: str) -> bytes | None:
    """Kappa with its interval per source, one line each; None when nothing to plot."""
    rows = [r for r in rows if not math.isnan(r.kappa.value)]
    if not rows:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 0.9 + 0.45 * len(rows)), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for y, r in enumerate(reversed(rows)):
        low, high = r.kappa.low, r.kappa.high
        if low is not None and high is not None:
            ax.plot([low, high], [y, y], color="C0", lw=2)
        ax.plot([r.kappa.value], [y], "o", color="C0")
    ax.set_yticks(range(len(rows)), [r.b for r in reversed(rows)], fontsize=9)
    for x, name in ((0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        ax.axvline(x, color="0.85", lw=1, zorder=0)
        ax.text(x, len(rows) - 0.4, name, fontsize=7, color="0.5", ha="right")
    ax.axvline(0, color="0.6", lw=1, ls="--")
    ax.set_xlim(min(-0.05, *(r.kappa.low or 0 for r in rows)), 1.0)
    ax.set_ylim(-0.6, len(rows) - 0.2)
    ax.set_xlabel("Cohen's kappa with its confidence interval")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,  # every template, whatever its name: labels and names are untrusted
        extensions=["jinja2.ext.do"],
    )
    env.filters.update(
        f=_f, ci=_ci, pct=_pct, cell=_cell, kappa_class=_kappa_class, img=_img, value=_value
    )
    return env


def _weakest_slices(report: AuditReport) -> dict[str, tuple[float, str, str, int]]:
    """Per source, its lowest-kappa slice among those of at least 20 items."""
    worst: dict[str, tuple[float, str, str, int]] = {}
    for key, values in report.slices.items():
        for value, rows in values.items():
            for row in rows:
                if not math.isnan(row.kappa.value) and row.n >= 20:
                    got = (row.kappa.value, key, value, row.n)
                    worst[row.b] = min(worst.get(row.b, got), got)
    return worst


def render_html(report: AuditReport) -> str:
    """The whole page for an :class:`~tinyjudge.audit.report.AuditReport`."""
    from tinyjudge.calibrate import METRIC_NAMES

    ref = report.meta["reference"]
    vs_ref = [r for r in report.pairs if r.a == ref]
    return (
        _environment()
        .get_template("report.html")
        .render(
            report=report,
            figures=report.figures,
            css=CSS,
            vs_ref=vs_ref,
            between=[r for r in report.pairs if r.a != ref],
            forest=forest_plot(vs_ref, f"agreement with {ref}"),
            weakest=_weakest_slices(report),
            metric_names=METRIC_NAMES,
            bias_columns=BIAS_COLUMNS,
        )
    )
