"""Render an audit report as one self-contained HTML page (plots inlined as base64 PNG).

Every piece of text from the data (source names, labels, slice values, reasons)
is HTML-escaped; the page loads nothing from anywhere.
"""

from __future__ import annotations

import base64
import io
from html import escape
from typing import Any

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

METRIC_NAMES = {
    "ece": "ECE (equal-width bins)",
    "ece_mass": "ECE (equal-mass bins)",
    "mce": "MCE",
    "brier": "Brier score",
    "nll": "NLL",
}


def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _ci(ci: list[float | None] | None, digits: int = 3) -> str:
    if not ci or ci[0] is None:
        return ""
    return f' <span class="ci">[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]</span>'


def _kappa_class(k: float | None) -> str:
    if k is None:
        return "muted"
    return "good" if k >= 0.8 else "bad" if k < 0.4 else ""


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{escape(alt)}">'


def forest_plot(rows: list[dict[str, Any]], title: str) -> bytes | None:
    """Kappa with its interval per source, one line each; None when nothing to plot."""
    rows = [r for r in rows if r.get("kappa") is not None]
    if not rows:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 0.9 + 0.45 * len(rows)), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for y, r in enumerate(reversed(rows)):
        lo, hi = r["kappa_ci"]
        if lo is not None:
            ax.plot([lo, hi], [y, y], color="C0", lw=2)
        ax.plot([r["kappa"]], [y], "o", color="C0")
    ax.set_yticks(range(len(rows)), [r["b"] for r in reversed(rows)], fontsize=9)
    for x, name in ((0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        ax.axvline(x, color="0.85", lw=1, zorder=0)
        ax.text(x, len(rows) - 0.4, name, fontsize=7, color="0.5", ha="right")
    ax.axvline(0, color="0.6", lw=1, ls="--")
    ax.set_xlim(min(-0.05, *(r["kappa_ci"][0] or 0 for r in rows)), 1.0)
    ax.set_ylim(-0.6, len(rows) - 0.2)
    ax.set_xlabel("Cohen's kappa with its confidence interval")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _pair_table(rows: list[dict[str, Any]], first: str = "b", show_a: bool = False) -> str:
    ordinal = any("kappa_quadratic" in r for r in rows)
    scores = any("spearman" in r for r in rows)
    head = (["source a"] if show_a else []) + ["source" if not show_a else "source b"]
    head += ["n", "unscored", "accuracy", "Cohen's kappa", "Krippendorff's alpha"]
    head += ["quadratic kappa", "ordinal alpha"] if ordinal else []
    head += ["Spearman", "Kendall"] if scores else []
    out = [
        "<table><tr>"
        + "".join(
            f'<th class="l">{h}</th>' if i < 1 + show_a else f"<th>{h}</th>"
            for i, h in enumerate(head)
        )
        + "</tr>"
    ]
    for r in rows:
        cells = [f'<td class="l">{escape(r["a"])}</td>'] if show_a else []
        cells.append(f'<td class="l">{escape(r[first])}</td>')
        unscored = r["unscored"]
        detail = f" ({r['unscored_a']} / {r['unscored_b']})" if unscored else ""
        cells += [f"<td>{r['n']}</td>", f"<td>{unscored}{detail}</td>"]
        cells.append(f"<td>{_f(r['accuracy'])}{_ci(r['accuracy_ci'])}</td>")
        cells.append(
            f'<td class="{_kappa_class(r["kappa"])}">{_f(r["kappa"])}{_ci(r["kappa_ci"])}</td>'
        )
        cells.append(f"<td>{_f(r['alpha'])}{_ci(r['alpha_ci'])}</td>")
        if ordinal:
            cells.append(
                f"<td>{_f(r.get('kappa_quadratic'))}{_ci(r.get('kappa_quadratic_ci'))}</td>"
            )
            cells.append(f"<td>{_f(r.get('alpha_ordinal'))}{_ci(r.get('alpha_ordinal_ci'))}</td>")
        if scores:
            cells += [f"<td>{_f(r.get('spearman'))}</td>", f"<td>{_f(r.get('kendall'))}</td>"]
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(out) + "</table>"


def _slice_summary(key: str, values: dict[str, list[dict[str, Any]]]) -> str:
    """One row per slice value, one column per source: kappa [CI] and n."""
    sources = list(dict.fromkeys(r["b"] for rows in values.values() for r in rows))
    head = "".join(f"<th>{escape(s)}</th>" for s in sources)
    out = [
        f"<h3>Cohen's kappa by <code>{escape(key)}</code></h3>",
        f'<table><tr><th class="l">{escape(key)}</th>{head}</tr>',
    ]
    for value, rows in values.items():
        by = {r["b"]: r for r in rows}
        cells = []
        for s in sources:
            r = by.get(s)
            if r is None:
                cells.append("<td class='muted'>–</td>")
                continue
            cells.append(
                f'<td class="{_kappa_class(r["kappa"])}">{_f(r["kappa"])}'
                f'{_ci(r["kappa_ci"], 2)} <span class="ci">n={r["n"]}</span></td>'
            )
        out.append(f'<tr><td class="l">{escape(value)}</td>{"".join(cells)}</tr>')
    return "\n".join(out) + "</table>"


def _confusion(row: dict[str, Any]) -> str:
    labels = row["confusion"]["labels"]
    counts = row["confusion"]["counts"]
    keep = [i for i in range(len(labels)) if sum(counts[i]) or sum(c[i] for c in counts)]
    head = "".join(f"<th>{escape(labels[j])}</th>" for j in keep)
    out = [
        f"<h3>{escape(row['a'])} (rows) × {escape(row['b'])} (columns), n = {row['n']}</h3>",
        f'<table><tr><th class="l"></th>{head}<th>total</th></tr>',
    ]
    for i in keep:
        cells = "".join(f'<td class="{"diag" if i == j else ""}">{counts[i][j]}</td>' for j in keep)
        out.append(
            f'<tr><th class="l">{escape(labels[i])}</th>{cells}<td>{sum(counts[i])}</td></tr>'
        )
    return "\n".join(out) + "</table>"


HOW = {
    "top": "This page compares what several sources (people, an LLM judge, a classifier, a "
    "reward model) said about the same items. Each source is compared with the reference, "
    "which is treated as the truth, and then with each other. <b>n</b> counts the items where "
    "both sources gave a usable label; items where either could not be scored (for example a "
    "judge's unparseable answer) are counted under <b>unscored</b> and left out of every "
    "figure, never guessed. Numbers in grey brackets are {level:.0%} bootstrap confidence "
    "intervals{cluster}: if the items were drawn again, the figure would usually land inside.",
    "pairs": "<b>Accuracy</b> is the share of items where the two sources give the same label. "
    "<b>Cohen's kappa</b> corrects that for the agreement two sources would reach by chance "
    "given how often each uses each label: 1 is perfect, 0 is chance level, below 0 is worse "
    "than chance. A common reading: below 0.4 weak (red), 0.4–0.6 moderate, 0.6–0.8 "
    "substantial, above 0.8 strong (green). <b>Krippendorff's alpha</b> is a similar "
    "chance-corrected measure that pools both sources' label use; values of 0.8 and above "
    "are usually needed before one source can stand in for the other. <i>unscored (a / b)</i> "
    "says which side was unscored.",
    "raters": "Agreement among several sources at once, by Krippendorff's alpha (items that "
    "some sources did not rate still count through the sources that did); Fleiss' kappa uses "
    "only the items every source rated.",
    "confusion": "Each table counts items by the reference's label (row) and the source's label "
    "(column). The green diagonal is agreement; a large off-diagonal cell shows which mistake "
    "a source makes most, e.g. calling partial refusals full compliance.",
    "slices": "The same comparison within each slice of the items. A source that agrees well "
    "overall can fail badly on one slice; small slices have wide intervals, so look at n "
    "before drawing conclusions.",
    "calibration": "A source that gives probabilities is calibrated when, among the items it "
    "labels with confidence 0.8, about 80% agree with the reference. <b>ECE</b> is the "
    "average gap between confidence and accuracy (0 is perfect), <b>MCE</b> the largest gap "
    "in any confidence bin, the <b>Brier score</b> the mean squared error of the "
    "probabilities (0 to 2), <b>NLL</b> the mean negative log-probability of the reference "
    "label; lower is better for all. The cross-fitted column shows what calibration would "
    "give on items it was not fitted on (fitted on the other folds{cluster_short}). A source "
    "whose probabilities are all 0 or 1 (one-hot) has no reliability plot: all its "
    "predictions sit in the top bin. ECE is biased upwards on small samples, so when it is "
    "near 0 its interval can lie above the estimate.",
}


def _calibration(data: dict[str, Any], figures: dict[str, bytes]) -> str:
    calib = data["calibration"]
    notes = "".join(f"<li>{escape(n)}</li>" for n in data.get("calibration_notes") or [])
    notes = f"<ul class='muted'>{notes}</ul>" if notes else ""
    if not calib:
        return "<p class='muted'>No source gave graded probabilities.</p>" + notes
    out = [notes] if notes else []
    for source, c in calib.items():
        cf = c.get("cross_fitted")
        kind = "one-hot" if c["one_hot"] else "graded"
        out.append(f"<h3>{escape(source)} <span class='muted'>(n = {c['n']}, {kind})</span></h3>")
        head = "<th>as given</th>" + (
            f"<th>after {escape(cf['method'])} scaling, held out</th>" if cf else ""
        )
        out.append(f'<table><tr><th class="l">metric</th>{head}</tr>')
        for m, v in c["metrics"].items():
            after = ""
            if cf:
                a = cf["metrics"][m]
                after = f"<td>{_f(a['value'])}{_ci(a['ci'])}</td>"
            out.append(
                f'<tr><td class="l">{METRIC_NAMES.get(m, escape(m))}</td>'
                f"<td>{_f(v['value'])}{_ci(v['ci'])}</td>{after}</tr>"
            )
        out.append("</table>")
        png = figures.get(f"reliability:{source}")
        if png:
            out.append(f'<div class="figs">{_img(png, f"reliability diagram of {source}")}</div>')
    return "\n".join(out)


BIAS_HOW = {
    "position": "A pairwise judge is asked twice, with the two responses swapped. The "
    "<b>flip rate</b> is the share of pairs where its two verdicts disagree (0 for a judge "
    "blind to position). Among flips between a and b, the <b>first-position share</b> says "
    "how often each order picked the response shown first: 0.5 is no direction, above 0.5 a "
    "preference for whatever is shown first.",
    "verbosity": "Among pairs with a verdict and responses of different length, how often "
    "the <b>longer</b> response won, beside the same share for the reference on the same "
    "pairs; the <b>excess</b> is the length preference beyond the reference's.",
    "self_consistency": "How often two samples of the judge on the same item agree "
    "(<b>agreement</b>), the share of items where all samples agree, and Fleiss' kappa "
    "across samples. A judge that disagrees with itself cannot agree well with anyone.",
}
BIAS_COLUMNS = {
    "position": [
        ("pairs", "n", None),
        ("flip rate", "flip_rate", "ci"),
        ("flips", "n_flips", None),
        ("first-position share", "first_share", "first_ci"),
        ("unscored", "n_unscored", None),
    ],
    "verbosity": [
        ("pairs", "n", None),
        ("longer wins", "longer_win_rate", "ci"),
        ("reference", "reference_rate", None),
        ("excess", "excess", "excess_ci"),
        ("pairs compared", "n_paired", None),
    ],
    "self_consistency": [
        ("items", "n", None),
        ("samples per item", "mean_samples", None),
        ("agreement", "agreement", "ci"),
        ("unanimous", "unanimous", None),
        ("Fleiss' kappa", "kappa", None),
        ("unparsed", "n_unparsed", None),
    ],
}


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return _f(value)
    return "–" if value is None else escape(str(value))


def _bias(bias: dict[str, Any]) -> str:
    out = []
    for probe, columns in BIAS_COLUMNS.items():
        per_source = bias.get(probe) or {}
        if not per_source:
            continue
        title = probe.replace("_", "-").capitalize()
        out.append(
            f"<h3>{title} bias</h3>" if probe != "self_consistency" else "<h3>Self-consistency</h3>"
        )
        out.append(f"<div class='how'>{BIAS_HOW[probe]}</div>")
        head = "".join(f"<th>{name}</th>" for name, _, _ in columns)
        out.append(f"<table><tr><th class='l'>source</th>{head}</tr>")
        for source, fig in per_source.items():
            cells = "".join(
                f"<td>{_cell(fig.get(key))}{_ci(fig.get(ci)) if ci else ''}</td>"
                for _, key, ci in columns
            )
            out.append(f"<tr><td class='l'>{escape(source)}</td>{cells}</tr>")
        out.append("</table>")
    if not out:
        out.append(
            "<p class='muted'>No probe applies to these labels: position bias needs "
            "pairwise labels judged in both orders, verbosity bias pairwise items, "
            "self-consistency several samples per item.</p>"
        )
    notes = bias.get("notes") or ([bias["note"]] if bias.get("note") else [])
    if notes:
        out.append(
            "<ul class='muted'>" + "".join(f"<li>{escape(str(n))}</li>" for n in notes) + "</ul>"
        )
    return "\n".join(out)


def _estimates(est: dict[str, Any]) -> str:
    sources = est.get("sources") or {}
    out = []
    if sources:
        first = next(iter(sources.values()))
        out.append(
            "<div class='how'>How often the rubric's behaviour occurs (its <i>positive</i> "
            f"labels), estimated two ways at {first['level']:.0%} confidence: from the "
            "reference labels alone, and by prediction-powered inference (PPI), which adds a "
            "cheap source's labels on every item and corrects them with the reference labels, "
            "so its interval stays valid however biased the cheap source is. <b>Blind</b> is "
            "the rate the cheap source alone would report; <b>gain</b> is how many times more "
            "reference labels the reference-only interval would need to be as narrow.</div>"
        )
        out.append(
            "<table><tr><th class='l'>cheap source</th><th>items</th><th>reference labels</th>"
            "<th>PPI rate</th><th>reference only</th><th>blind</th><th>gain</th></tr>"
        )
        for source, r in sources.items():
            o = r["overall"]
            out.append(
                f"<tr><td class='l'>{escape(source)}</td><td>{o['n_items']}</td>"
                f"<td>{o['n_human']}</td><td>{_f(o['rate'])}{_ci(o['ci'])}</td>"
                f"<td>{_f(o['human_only'])}{_ci(o['human_only_ci'])}</td>"
                f"<td>{_f(o['cheap_mean'])}</td><td>{_f(o.get('gain'), 2)}</td></tr>"
            )
        out.append("</table>")
        if est.get("by"):
            groups = list(dict.fromkeys(g for r in sources.values() for g in r["groups"]))
            head = "".join(f"<th>{escape(s)}</th>" for s in sources)
            out.append(
                f"<h3>PPI rate by <code>{escape(est['by'])}</code> (reference only in "
                f"brackets below)</h3><table><tr><th class='l'>{escape(est['by'])}</th>{head}</tr>"
            )
            for g in groups:
                cells = []
                for r in sources.values():
                    x = r["groups"].get(g)
                    cells.append(
                        "<td>–</td>"
                        if x is None
                        else f"<td>{_f(x['rate'])}{_ci(x['ci'], 2)}<br><span class='ci'>"
                        f"{_f(x['human_only'])}{_ci(x['human_only_ci'], 2)}</span></td>"
                    )
                out.append(f"<tr><td class='l'>{escape(g)}</td>{''.join(cells)}</tr>")
            out.append("</table>")
    else:
        out.append("<p class='muted'>No cheap source to estimate with.</p>")
    if est.get("notes"):
        out.append(
            "<ul class='muted'>" + "".join(f"<li>{escape(n)}</li>" for n in est["notes"]) + "</ul>"
        )
    return "\n".join(out)


def _summary(data: dict[str, Any]) -> str:
    """A few sentences with the headline figures, for readers who stop here."""
    ref = data["meta"]["reference"]
    items = []
    for r in data["pairs"]:
        if r["a"] != ref:
            continue
        if r["accuracy"] is None:
            items.append(f"<b>{escape(r['b'])}</b> shares no scored item with {escape(ref)}.")
            continue
        lo, hi = r["kappa_ci"]
        ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None else ""
        text = (
            f"<b>{escape(r['b'])}</b> gives the same label as {escape(ref)} on "
            f"{r['accuracy']:.1%} of {r['n']} items (kappa {_f(r['kappa'], 2)}{ci})"
        )
        if r["unscored"]:
            text += f"; {r['unscored']} more items had an unscored label and are left out"
        worst = []
        for key, values in data["slices"].items():
            for value, rows in values.items():
                for row in rows:
                    if row["b"] == r["b"] and row["kappa"] is not None and row["n"] >= 20:
                        worst.append((row["kappa"], key, value, row["n"]))
        if worst:
            k, key, value, n = min(worst)
            text += (
                f"; its weakest slice is <code>{escape(key)}</code> = {escape(value)} "
                f"(kappa {k:.2f}, n = {n})"
            )
        cal = data["calibration"].get(r["b"], {})
        if cal.get("cross_fitted"):
            before = cal["metrics"]["ece"]["value"]
            after = cal["cross_fitted"]["metrics"]["ece"]["value"]
            method = escape(cal["cross_fitted"]["method"])
            text += (
                f"; its probabilities are off by {before:.2f} on average (ECE), "
                f"{after:.2f} after {method} scaling on held-out items"
            )
        items.append(text + ".")
    return "<h2>Summary</h2><ul>" + "".join(f"<li>{t}</li>" for t in items) + "</ul>"


def render_html(report: Any) -> str:
    """The whole page for an :class:`~tinyjudge.audit.report.AuditReport`."""
    data, figures = report.data, report.figures
    meta = data["meta"]
    ref = meta["reference"]
    cluster = ", resampling items"
    if meta["group_by"]:
        cluster = (
            f", resampling whole groups of <code>{escape(meta['group_by'])}</code> so that "
            "items sharing it count once"
        )
    short = (
        f", never splitting a <code>{escape(meta['group_by'])}</code>" if meta["group_by"] else ""
    )
    vs_ref = [r for r in data["pairs"] if r["a"] == ref]
    between = [r for r in data["pairs"] if r["a"] != ref]
    h: list[str] = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>tinyjudge audit: {escape(ref)}</title><style>{CSS}</style></head><body>",
        f"<h1>Agreement audit against <code>{escape(ref)}</code></h1>",
        f"<p class='muted'>Labels: {', '.join(escape(x) for x in meta['labels'])}. "
        f"Rubric: {escape(', '.join(meta['rubrics']))}. "
        f"{meta['n_boot']} bootstrap resamples, seed {meta['seed']}. "
        f"Generated {escape(meta['created'])}.</p>",
        f"<div class='how'>{HOW['top'].format(level=meta['level'], cluster=cluster)}</div>",
        _summary(data),
        "<h2>Sources</h2><table><tr><th class='l'>source</th><th>labels</th><th>scored</th>"
        "<th>unscored</th><th class='l'>labels given</th><th class='l'>why unscored</th></tr>",
    ]
    for s in data["sources"]:
        dist = ", ".join(f"{escape(k)} {v}" for k, v in s["distribution"].items())
        why = "; ".join(f"{escape(k)} ({v})" for k, v in s["unscored_reasons"].items())
        h.append(
            f"<tr><td class='l'>{escape(s['source'])}</td><td>{s['labels']}</td>"
            f"<td>{s['scored']}</td><td>{s['unscored']}</td><td class='l'>{dist}</td>"
            f"<td class='l'>{why}</td></tr>"
        )
    h.append("</table>")
    h.append(f"<h2>Agreement with {escape(ref)}</h2><div class='how'>{HOW['pairs']}</div>")
    h.append(_pair_table(vs_ref))
    png = forest_plot(vs_ref, f"agreement with {ref}")
    if png:
        h.append(f"<div class='figs'>{_img(png, 'kappa of each source with its interval')}</div>")
    if between:
        h.append("<h2>Between the other sources</h2>" + _pair_table(between, show_a=True))
    if data.get("raters"):
        h.append(
            f"<h2>Several raters at once</h2><div class='how'>{HOW['raters']}</div><table>"
            "<tr><th class='l'>raters</th><th>items</th><th>Krippendorff's alpha</th>"
            "<th>Fleiss' kappa (items all rated)</th></tr>"
        )
        for r in data["raters"]:
            fk = f"{_f(r.get('fleiss_kappa'))} (n = {r.get('n_items_all_raters', 0)})"
            names = escape(", ".join(r["sources"]))
            h.append(
                f"<tr><td class='l'>{escape(r['name'])}: {names}</td>"
                f"<td>{r['n_items']}</td><td>{_f(r['alpha'])}{_ci(r['alpha_ci'])}</td>"
                f"<td>{fk}</td></tr>"
            )
        h.append("</table>")
    h.append(f"<h2>Confusion matrices</h2><div class='how'>{HOW['confusion']}</div>")
    h += [_confusion(r) for r in vs_ref if r.get("confusion")]
    if data["slices"]:
        h.append(f"<h2>By slice</h2><div class='how'>{HOW['slices']}</div>")
        for key, values in data["slices"].items():
            h.append(_slice_summary(key, values))
            h.append("<details><summary>every figure, slice by slice</summary>")
            for value, rows in values.items():
                h.append(f"<h4><code>{escape(key)}</code> = {escape(value)}</h4>")
                h.append(_pair_table(rows))
            h.append("</details>")
    h.append("<h2>Calibration</h2>")
    h.append(f"<div class='how'>{HOW['calibration'].format(cluster_short=short)}</div>")
    h.append(_calibration(data, figures))
    h.append("<h2>Bias probes</h2>" + _bias(data.get("bias") or {}))
    if data.get("estimates"):
        h.append("<h2>Behaviour rates</h2>" + _estimates(data["estimates"]))
    h.append(
        "<p class='muted'>The same figures, for machines, are in the JSON written beside "
        "this page (<code>tinyjudge audit --json</code>).</p></body></html>"
    )
    return "\n".join(h)
