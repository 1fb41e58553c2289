"""``tinyjudge demo``: the whole loop on the bundled XSTest sample.

import -> judge (recorded GPT-4 verdicts replayed through a real local
OpenAI-compatible server, so the judge path is the live one) -> distill (probe
tier) -> calibrate on a human-labelled split -> audit (with CIs, HTML report)
-> estimate each answering model's refusal rate with PPI.

Prompts are split three ways so every figure is honest: the reward model
learns from the judge on the *train* prompts, is calibrated on people's labels
of the *calibration* prompts, and is audited on the *evaluation* prompts it
never saw. Running the demo again reuses the judge cache and the embeddings.
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from rich.console import Console
from rich.table import Table

from tinyjudge._present import format_interval, show_model_calibration
from tinyjudge.distill import FEW_LABELS_TIER, TIER_REGISTRY
from tinyjudge.records import Item, Label

if TYPE_CHECKING:
    from tinyjudge.audit import AuditReport, PairRow
    from tinyjudge.estimate import RateReport

__all__ = ["run_demo", "bundled_sample", "split_of", "limit_items"]

RUBRIC = "compliance"
TEACHER = "judge:gpt-4"
HUMAN = "human:final"
GROUP = "metadata.prompt_id"
SLICE = "metadata.answering_model"
SPLITS = (("train", 0.5), ("calibration", 0.2), ("evaluation", 0.3))
# Per-class scale and bias: the judge almost never says partial_refusal while people
# do, a prior shift that one temperature cannot fix (it only flattens everything).
CALIBRATION = "vector"


class _TierParams(TypedDict, total=False):
    """The tier's own options passed through ``distill`` (the probe's embedding cache)."""

    cache_dir: str


def bundled_sample() -> Path:
    """The XSTest sample shipped in the repository's ``data/`` folder."""
    here = Path(__file__).resolve().parent
    checkout = here.parents[1] / "data" / "xstest_sample"
    return checkout if checkout.is_dir() else here / "_shipped" / "xstest_sample"


def split_of(key: str, seed: str = "tinyjudge-demo") -> str:
    """A stable split for a group key: the same prompt always lands in the same split."""
    u = int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:8], 16) / 0x1_0000_0000
    edge = 0.0
    for name, share in SPLITS:
        edge += share
        if u < edge:
            return name
    return SPLITS[-1][0]


@contextmanager
def _stage(console: Console, title: str, timings: dict[str, float]) -> Iterator[None]:
    console.rule(f"[bold]{title}")
    start = time.perf_counter()
    yield
    timings[title] = time.perf_counter() - start
    console.print(f"[dim]{title}: {timings[title]:.1f} s[/]")


def _fmt_ci(x: float | None, ci: Sequence[float | None] | None) -> str:
    return format_interval(x, ci, missing="n/a")


def limit_items(items: list[Item], split: dict[str, str], limit: int | None) -> list[Item]:
    """The first ``limit`` items taken in turn from each split (the loop needs all three)."""
    if limit is None or limit >= len(items):
        return items
    queues = [[it for it in items if split[it.id] == name] for name, _ in SPLITS]
    keep: set[str] = set()
    for row in range(max(len(q) for q in queues)):
        for q in queues:
            if row < len(q) and len(keep) < limit:
                keep.add(q[row].id)
    return [it for it in items if it.id in keep]


def run_demo(
    data: Path | None,
    out_dir: Path,
    console: Console | None = None,
    tier: str = FEW_LABELS_TIER,
    judge: str = "replay",
    limit: int | None = None,
    name_of: Callable[[str], str] = str,
) -> dict[str, Any]:
    """Run the loop and write ``OUT/report.html``; returns the summary figures.

    Args:
        data: an XSTest-shaped folder; None uses the bundled sample.
        out_dir: where every artifact goes (``runs/demo`` by default).
        console: where progress and tables are printed.
        tier: the reward-model tier to distill (``probe`` by default).
        judge: ``replay`` (recorded GPT-4 verdicts served over HTTP) or ``local``
            (the live local model behind llama.cpp; needs ``tinyjudge[local]``).
        limit: run the loop on this many items, taken in turn from each split.
        name_of: how the printed advice names a parameter: as Python does by
            default (``raise limit``); the command passes its flag derivation
            (``raise --limit``), the one every CLI error goes through.
    """
    from tinyjudge.errors import UsageError

    if judge not in ("replay", "local"):
        raise UsageError(f"judge {judge!r} is not one of ['replay', 'local']", param="judge")
    if limit is not None and limit < 3:
        raise UsageError(
            f"limit must be at least 3 (one item per split), got {limit}", param="limit"
        )
    from tinyjudge.audit import audit, write_report
    from tinyjudge.calibrate import CalibrationWarning, calibrate, save_model_calibration
    from tinyjudge.datasets.importers import run_import
    from tinyjudge.datasets.jsonl import write_jsonl
    from tinyjudge.distill import SplitWarning, distill, load_model
    from tinyjudge.estimate import estimate_rates
    from tinyjudge.judge import JudgeConfig, open_judge

    console = console or Console()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    src = data or bundled_sample()

    with _stage(console, "1. import", timings):
        imported = run_import("xstest", src)
        split = {it.id: split_of(str(it.get(GROUP))) for it in imported.items}
        items = limit_items(imported.items, split, limit)
        kept = {it.id for it in items}
        recorded = [lab for lab in imported.labels if lab.item_id in kept]
        split = {i: s for i, s in split.items() if i in kept}
        write_jsonl(out_dir / "items.jsonl", items)
        write_jsonl(out_dir / "recorded_labels.jsonl", recorded)
        counts = {name: sum(s == name for s in split.values()) for name, _ in SPLITS}
        console.print(
            f"{len(items)} items from {src}; {len(recorded)} recorded labels from "
            f"{len(imported.sources())} sources; prompts split {counts} (items)"
        )

    if judge == "local":
        from tinyjudge.judge.local import local_judge

        with _stage(console, "2. judge (the live local model behind llama.cpp)", timings):
            with local_judge(RUBRIC, cache=out_dir / "judge_local.sqlite") as live:
                judged = live.run(items, progress=console)
    else:
        with _stage(console, "2. judge (recorded GPT-4 verdicts, replayed over HTTP)", timings):
            replay = JudgeConfig(
                model="gpt-4",
                replay=out_dir / "recorded_labels.jsonl",
                replay_source=TEACHER,
                concurrency=16,
            )
            with open_judge(replay, RUBRIC, cache=out_dir / "judge.sqlite", items=items) as jd:
                judged = jd.run(items)
    write_jsonl(out_dir / "judge_labels.jsonl", judged.labels)
    for line in judged.summary.lines():
        console.print(f"  {line}")

    _quiet_transformers()
    with _stage(console, f"3. distill the judge into a reward model ({tier} tier)", timings):
        train = [it for it in items if split[it.id] == "train"]
        caches = TIER_REGISTRY[tier].takes("cache_dir") if tier in TIER_REGISTRY else False
        params: _TierParams = {"cache_dir": str(out_dir / "embeddings")} if caches else {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SplitWarning)
            result = distill(
                train,
                judged.labels,
                source=judged.source,
                rubric=RUBRIC,
                tier=tier,
                group_by=GROUP,
                **params,
            )
        for w in caught:  # a limited run holds out few items: said in the demo's words
            if isinstance(w.message, SplitWarning):
                advice = w.message.describe(name_of("limit"), name_of("group_by"))
                console.print(f"  warning: {advice}")
        model_dir = out_dir / "rm"
        result.model.save(model_dir)
        v = result.validation
        console.print(
            f"trained on {result.n_train} items, validated on {result.n_val} held-out prompts' "
            f"items: agreement with the judge {_fmt_ci(v.get('accuracy'), None)} accuracy, "
            f"kappa {_fmt_ci(v.get('cohen_kappa'), None)}; saved {model_dir}"
        )

    with _stage(console, "4. calibrate on people's labels (calibration prompts)", timings):
        calib_items = [it for it in items if split[it.id] == "calibration"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)  # shown below, with the figures
            calibrated = calibrate(
                load_model(model_dir, calibrated=False),
                calib_items,
                recorded,
                human=HUMAN,
                method=CALIBRATION,
                group_by=GROUP,
            )
        fitted = calibrated.calibration_
        save_model_calibration(fitted, model_dir)
        show_model_calibration(console, fitted, model_dir, HUMAN, model_dir)
        calibration = fitted.summary()

    with _stage(console, "5. score every item with the calibrated reward model", timings):
        rm = load_model(model_dir)
        start = time.perf_counter()
        scored = rm.score_items(items, batch_size=32)
        rate = len(items) / (time.perf_counter() - start)
        write_jsonl(out_dir / "rm_labels.jsonl", scored)
        console.print(f"{len(scored)} items scored by {scored[0].source} ({rate:.0f} items/s)")

    with _stage(
        console, "6. audit on the evaluation prompts (never trained or calibrated on)", timings
    ):
        evaluation = {it.id for it in items if split[it.id] == "evaluation"}
        audit_labels = _without_recorded_teacher(recorded, judged.labels, scored, evaluation)
        report = audit(
            audit_labels,
            [it for it in items if it.id in evaluation],
            reference=HUMAN,
            group_by=GROUP,
            slice_by=[SLICE],
            rubric=RUBRIC,
            n_boot=500,
        )
        write_report(report, out_dir / "report.html", out_dir / "report.json")
        pairs = _key_pairs(report, judged.source, scored[0].source)
        console.print(f"wrote {out_dir / 'report.html'} and {out_dir / 'report.json'}")

    with _stage(console, "7. estimate refusal rates with PPI (cheap: reward model)", timings):
        human_eval = [lab for lab in recorded if lab.source == HUMAN and lab.item_id in evaluation]
        rates = estimate_rates(
            [*scored, *human_eval],
            items,
            cheap=scored[0].source,
            human=HUMAN,
            rubric=RUBRIC,
            by=SLICE,
        )
        truth = _human_rates(recorded, items)

    summary = {
        "items": len(items),
        "splits": counts,
        "judge": {"source": judged.source, **judged.summary.as_dict()},
        "distill": {"tier": tier, "validation": v, "n_train": result.n_train},
        "calibration": calibration,
        "agreement": [_agreement(a, b, row) for a, b, row in pairs],
        "rates": rates.to_dict(),
        "all_human_rates": truth,
        "timings_s": {k: round(t, 2) for k, t in timings.items()},
    }
    write_jsonl(out_dir / "summary.jsonl", [summary])
    _print_summary(console, pairs, rates, truth, timings, out_dir)
    return summary


def _quiet_transformers() -> None:
    """No per-load weight progress bars in the demo's output."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def _without_recorded_teacher(
    recorded: list[Label], judged: list[Label], scored: list[Label], keep: set[str]
) -> list[Label]:
    """Audit labels: people, the string-match classifier, the (replayed) judge and the RM.

    The recorded GPT-4 labels are what the replayed judge re-derived through the
    live judge path, so only the judged ones are kept under that source name.
    """
    judge_sources = {lab.source for lab in judged}
    out = [lab for lab in recorded if lab.source not in judge_sources]
    return [lab for lab in [*out, *judged, *scored] if lab.item_id in keep]


def _key_pairs(report: AuditReport, judge: str, rm: str) -> list[tuple[str, str, PairRow]]:
    """The comparisons the summary shows, as ``(a, b, row)``; one the report lacks is left out."""
    wanted = [(judge, HUMAN), (rm, judge), (rm, HUMAN), ("classifier:string-match", HUMAN)]
    present = set(report.meta["sources"])
    return [(a, b, report.pair(a, b)) for a, b in wanted if a in present and b in present]


def _agreement(a: str, b: str, row: PairRow) -> dict[str, Any]:
    """A comparison in ``summary.jsonl``: the row's figures as ``report.json`` writes them."""
    figures = row.to_dict()
    return {
        "a": a,
        "b": b,
        **{k: figures[k] for k in ("n", "accuracy", "kappa", "alpha")},
    }


def _human_rates(recorded: list[Label], items: list[Item]) -> dict[str, float]:
    """The refusal rate from every human label: the truth the estimates are checked against."""
    from tinyjudge.rubric import load_rubric

    positive = set(load_rubric(RUBRIC).positive)  # the behaviour, as the estimates define it
    model_of = {it.id: str(it.get(SLICE)) for it in items}
    refusals: dict[str, list[int]] = {}
    for lab in recorded:
        if lab.source == HUMAN and lab.status == "ok":
            y = int(lab.label in positive)
            refusals.setdefault(model_of[lab.item_id], []).append(y)
            refusals.setdefault("all", []).append(y)
    return {k: sum(v) / len(v) for k, v in sorted(refusals.items())}


def _print_summary(
    console: Console,
    pairs: list[tuple[str, str, PairRow]],
    rates: RateReport,
    truth: dict[str, float],
    timings: dict[str, float],
    out_dir: Path,
) -> None:
    console.rule("[bold]summary")
    t = Table(title="agreement on the evaluation prompts (95% CI, clustered by prompt)")
    for col in ("source", "vs", "n", "accuracy", "Cohen's kappa"):
        t.add_column(col, justify="left" if col in ("source", "vs") else "right")
    for a, b, row in pairs:
        acc, kappa = row.accuracy.shown("n/a", bounds=False), row.kappa.shown("n/a")
        t.add_row(a, b, str(row.n), acc, kappa)
    console.print(t)
    r = Table(
        title=f"refusal rate by answering model, 90% CI: PPI = {rates.cheap} on all "
        f"{rates.overall.n_items} items + {HUMAN} on the evaluation prompts"
    )
    for col in ("model", "PPI", "PPI CI", "human-only CI", "n human", "truth*"):
        r.add_column(col, justify="left" if col == "model" else "right")
    for name, est in [("all", rates.overall), *sorted(rates.groups.items())]:
        ppi, alone = est.rate, est.human_only
        r.add_row(
            name,
            f"{ppi.value:.3f}",
            f"{ppi.low:.2f}-{ppi.high:.2f}",
            f"{alone.low:.2f}-{alone.high:.2f}",
            str(est.n_human),
            f"{truth.get(name, float('nan')):.3f}",
        )
    console.print(r)
    console.print(f"* truth: the rate from {HUMAN} on every item, which a user would not have")
    console.print(f"total {sum(timings.values()):.1f} s; report: {out_dir / 'report.html'}")
