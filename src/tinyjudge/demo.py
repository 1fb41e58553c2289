"""``tinyjudge demo``: the loop on the bundled XSTest sample."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

__all__ = ["run_demo", "bundled_sample"]


def bundled_sample() -> Path:
    """The XSTest sample shipped in the repository's ``data/`` folder."""
    return Path(__file__).resolve().parents[2] / "data" / "xstest_sample"


def run_demo(data: Path | None, out_dir: Path, console: Console | None = None) -> None:
    """Import the sample and report what it holds and how each source agrees with people."""
    from sklearn.metrics import cohen_kappa_score

    from tinyjudge.datasets.importers import run_import
    from tinyjudge.datasets.jsonl import write_jsonl

    console = console or Console()
    src = data or bundled_sample()
    imported = run_import("xstest", src)
    write_jsonl(out_dir / "items.jsonl", imported.items)
    write_jsonl(out_dir / "labels.jsonl", imported.labels)
    console.print(f"imported {len(imported.items)} items, {len(imported.labels)} labels from {src}")

    reference = "human:final"
    ref = {lab.item_id: lab.label for lab in imported.labels if lab.source == reference}
    table = Table(title=f"agreement with {reference}")
    for col in ("source", "labels", "unscored", "n", "accuracy", "kappa"):
        table.add_column(col, justify="left" if col == "source" else "right")
    for source, count in imported.sources().items():
        mine = [lab for lab in imported.labels if lab.source == source]
        unscored = sum(lab.status != "ok" for lab in mine)
        pairs = [
            (ref[lab.item_id], lab.label)
            for lab in mine
            if lab.status == "ok" and ref.get(lab.item_id) is not None
        ]
        a = [p[0] for p in pairs]
        b = [p[1] for p in pairs]
        acc = sum(x == y for x, y in pairs) / len(pairs) if pairs else float("nan")
        kappa = cohen_kappa_score(a, b) if pairs else float("nan")
        table.add_row(
            source, str(count), str(unscored), str(len(pairs)), f"{acc:.3f}", f"{kappa:.3f}"
        )
    console.print(table)
    console.print(f"wrote {out_dir}/items.jsonl and {out_dir}/labels.jsonl")
