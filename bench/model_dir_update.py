"""What a whole-directory change costs on a real-sized model: calibrate and export stage hard links.

Saves an encoder-tier model on all-MiniLM-L6-v2 (90 MB of weights, sharded into
``--shard-mb`` pieces) and times, on this machine: the save; the check that
loading does (list the directory, hash every file); one in-place calibrate
(``save_model_calibration``: stage, write calibration.json, the plot and the
card section, hash, swap); and, for comparison, copying the directory, which
is what staging would cost without hard links. It also reports the bytes the
staging wrote and whether the weights after the calibrate are the same inodes
as before (not copied). Figures go to ``bench/results/model_dir_update.json``
(``--out``). ``--smoke`` runs it at a tiny size (a 2-layer BERT with MiniLM's tokenizer in
1 MB shards, 16 training items, one repeat), so the test suite checks that it runs.

    nice -n 10 .venv/bin/python bench/model_dir_update.py
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "model_dir_update.json"


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shard-mb", type=int, default=20, help="largest shard, in MB")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument(
        "--smoke", action="store_true", help="a 2-layer BERT, 16 items, one repeat (a test)"
    )
    args = ap.parse_args()
    n_items, n_boot, base = 48, 20, None
    if args.smoke:
        args.shard_mb, args.repeats, n_items, n_boot = 1, 1, 16, 5

    from tinyjudge._model_dir import check
    from tinyjudge.calibrate import calibrate_model, save_model_calibration
    from tinyjudge.datasets.importers import run_import
    from tinyjudge.demo import bundled_sample
    from tinyjudge.distill import EncoderRM, load_model

    class ShardedEncoderRM(EncoderRM):
        def _save_files(self, model_dir: Path) -> None:
            self.model_.save_pretrained(model_dir, max_shard_size=f"{args.shard_mb}MB")
            self.tokenizer_.save_pretrained(model_dir)
            self.model_dir_ = model_dir

    xs = run_import("xstest", Path(bundled_sample()))
    gpt4 = {lab.item_id: lab.label for lab in xs.labels if lab.source == "judge:gpt-4"}
    items = [it for it in xs.items if gpt4.get(it.id)][:n_items]

    work = Path(tempfile.mkdtemp(prefix="model_dir_bench."))
    try:
        if args.smoke:
            from gpu_check import _tiny_bert

            base = _tiny_bert(work / "bert")
        options = {"base": base} if base else {}
        model = ShardedEncoderRM("compliance", max_length=16, epochs=1, batch_size=16, **options)
        model.fit(items, [gpt4[it.id] for it in items])
        d = work / "rm"
        start = time.perf_counter()
        model.save(d)
        save_s = time.perf_counter() - start
        n_files = sum(1 for p in d.rglob("*") if p.is_file())
        size = _size(d)
        inodes = {p.name: p.stat().st_ino for p in d.rglob("*") if p.is_file()}
        shards = sorted(d.glob("model-*.safetensors"))

        def timed(fn) -> float:
            best = float("inf")
            for _ in range(args.repeats):
                t = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t)
            return best

        check_s = timed(lambda: check(d))
        done = calibrate_model(
            load_model(d, calibrated=False), xs.items, xs.labels, human="human:final",
            n_boot=n_boot, if_worse="keep",
        )  # fmt: skip
        calibrate_s = timed(lambda: save_model_calibration(done, d))
        same = all(p.stat().st_ino == inodes[p.name] for p in shards)
        # what the calibrate wrote: files that are not the inodes the save left
        written = sum(
            p.stat().st_size
            for p in d.rglob("*")
            if p.is_file() and inodes.get(p.name) != p.stat().st_ino
        )

        def copy() -> None:
            shutil.rmtree(work / "copy", ignore_errors=True)
            shutil.copytree(d, work / "copy")

        copy_s = timed(copy)
        load_model(d)  # still a whole, calibrated model
    finally:
        shutil.rmtree(work, ignore_errors=True)

    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "model": "2-layer BERT (smoke)" if args.smoke else "all-MiniLM-L6-v2 encoder tier",
        "files": n_files,
        "shards": len(shards),
        "directory_mb": round(size / 1e6, 1),
        "save_s": round(save_s, 3),
        "check_s_best": round(check_s, 3),
        "calibrate_in_place_s_best": round(calibrate_s, 3),
        "copy_directory_s_best": round(copy_s, 3),
        "weights_same_inodes_after_calibrate": same,
        "bytes_written_by_calibrate": written,
        "repeats": args.repeats,
        **({"smoke": True} if args.smoke else {}),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
