"""``tinyjudge export``: a transformer-tier model to ONNX (checked against torch), or a
LoRA adapter merged into a plain model directory."""

from __future__ import annotations

from pathlib import Path

import typer

from ._io import fail, out

__all__ = ["command"]


def command(
    model_dir: Path = typer.Argument(..., help="an encoder-tier model directory"),
    onnx: bool = typer.Option(False, "--onnx", help="write MODEL_DIR/model.onnx"),
    int8: bool = typer.Option(False, "--int8", help="also write a dynamic-int8 model_int8.onnx"),
    merge: bool = typer.Option(
        False, "--merge", help="a LoRA model: write its adapter merged into the base to --out"
    ),
    out_dir: Path = typer.Option(None, "--out", help="--merge: the plain model directory"),
) -> None:
    """Export a transformer-tier reward model (ONNX, checked against torch; or --merge LoRA)."""
    from tinyjudge.distill import export_merged, export_onnx

    if merge:
        if out_dir is None:
            fail("--merge writes a new model directory: give it with --out DIR")
        written = export_merged(model_dir, out_dir)
        out.print(f"{written}: the LoRA adapter merged into its base (plain transformers)")
        return
    if not onnx:
        fail("choose a format: --onnx or --merge")
    report = export_onnx(model_dir, int8=int8)
    out.print(
        f"{report.path}: max |logit difference| vs torch {report.max_abs_diff:.2e} "
        f"on {report.n_checked} items",
        soft_wrap=True,
    )
    if report.int8_path is not None:
        out.print(
            f"{report.int8_path}: dynamic int8, max |logit difference| "
            f"{report.int8_max_abs_diff:.2e}",
            soft_wrap=True,
        )
