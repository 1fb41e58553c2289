"""Every script in bench/ runs, at a tiny size, and writes its figures where it is told.

Each bench is run as a user runs it (``python bench/NAME.py --smoke ...``) in a fresh
process, with its results sent to a temporary folder: ``bench/results/`` is left as it
was. A bench that reads public sets reads ``../shared/data`` when every set it needs is
there, else the bundled slices in ``tests/fixtures/data``; one whose sets are in
neither is skipped, saying where it looked. The figures of a smoke run mean nothing;
that the script runs to the end and writes them is what is tested.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support import DATA_SLICES, REPO, SHARED_DATA

BENCH = REPO / "bench"
RESULTS = BENCH / "results"

# name -> (arguments; {data} is the data root, {out} the temporary folder), the sets it
# reads, and the file (under {out}) it must write.
PLAN: dict[str, tuple[list[str], tuple[str, ...], str]] = {
    "agent_fidelity": (
        ["--data", "{data}", "--out", "{out}/agent_fidelity.json"], ("sycon",),
        "agent_fidelity.json",
    ),
    "audit_calibrate": (
        ["--data", "{data}", "--out", "{out}/audit_calibrate.json"], ("xstest", "llmbar"),
        "audit_calibrate.json",
    ),
    "cascade": (
        ["--data", "{data}", "--out", "{out}/cascade.json", "--png", "{out}/cascade.png"],
        ("xstest", "sycon"), "cascade.json",
    ),
    "distill_fidelity": (
        ["--data", "{data}/xstest", "--out", "{out}/distill_fidelity.json"], ("xstest",),
        "distill_fidelity.json",
    ),
    "exploit": (
        ["--data", "{data}", "--out", "{out}/exploit.json"], ("sycon", "xstest"), "exploit.json",
    ),
    "gpu_check": (
        ["--data", "{data}", "--out", "{out}/gpu_check.json"], ("sycon",), "gpu_check.json",
    ),
    "distill_speed": (
        ["--tier", "linear", "--data", "{data}/xstest", "--out", "{out}/distill_speed.json"],
        ("xstest",), "distill_speed.json",
    ),
    "estimate_validity": (
        ["--data", "{data}", "--out", "{out}/estimate_validity.json"], ("xstest", "sycon"),
        "estimate_validity.json",
    ),
    "hints": (
        ["--data", "{data}", "--out", "{out}/hints.json"], ("tau_bench", "who_and_when"),
        "hints.json",
    ),
    "hostile_text": (["--out", "{out}/hostile_text.json"], (), "hostile_text.json"),
    "judge_throughput": (
        ["--port", "{port}", "--out", "{out}/judge_throughput.json"], (), "judge_throughput.json"
    ),
    "label_page": (["--out", "{out}/label_page.json"], (), "label_page.json"),
    "linear_baseline": (
        ["--data", "{data}", "--out", "{out}/linear_baseline.json"], ("xstest", "sycon", "in3"),
        "linear_baseline.json",
    ),
    "local_judge": (
        ["--data", "{data}", "--cache", "{out}/local.sqlite", "--out", "{out}/local_judge.json"],
        ("xstest",), "local_judge.json",
    ),
    "model_dir_update": (["--out", "{out}/model_dir_update.json"], (), "model_dir_update.json"),
    "people": (
        ["--data", "{data}/xstest", "--out", "{out}/people.json", "--png", "{out}/people.png"],
        ("xstest",), "people.json",
    ),
    "people_fidelity": (
        ["--data", "{data}/xstest", "--out", "{out}"], ("xstest",), "people_fidelity.json"
    ),
    "reward_paths": (
        ["--data", "{data}", "--out", "{out}/reward_paths.json"], ("sycon",), "reward_paths.json"
    ),
    "reward_references": (
        ["--data", "{data}", "--out", "{out}/reward_references.json"], ("sycon", "xstest"),
        "reward_references.json",
    ),
    "rollout_length": (
        ["--data", "{data}", "--out", "{out}/rollout_length.json"], ("sycon",),
        "rollout_length.json",
    ),
    "serve_load": (["--out", "{out}/serve_load.json"], (), "serve_load.json"),
    "substance": (
        ["--data", "{data}", "--out", "{out}/substance.json"], ("sycon", "xstest"),
        "substance.json",
    ),
    "step_baselines": (
        ["--data", "{data}", "--out", "{out}/step_baselines.json"], ("who_and_when",),
        "step_baselines.json",
    ),
    "teach": (["--data", "{data}/xstest", "--out", "{out}/teach.json"], ("xstest",), "teach.json"),
    "trajectory_lengths": (
        ["--data", "{data}", "--out", "{out}"], ("sycon", "who_and_when", "tau_bench"),
        "trajectory_lengths.json",
    ),
    "transcript_shapes": (
        ["--data", "{data}", "--out", "{out}/transcript_shapes.json"], ("tau_bench",),
        "transcript_shapes.json",
    ),
}  # fmt: skip


def _needs_extra(name: str) -> str | None:
    """Why a bench cannot run in this environment (an optional part missing), else None."""
    if name == "serve_load" and importlib.util.find_spec("fastapi") is None:
        return "serve_load needs the serve extra (fastapi, uvicorn)"
    if name == "local_judge":
        if importlib.util.find_spec("llama_cpp") is None:
            return "local_judge needs the local extra (llama-cpp-python)"
        from tinyjudge.errors import TinyjudgeError
        from tinyjudge.judge.local import _model
        from tinyjudge.judge.local._model import INSTALL_HINT

        try:
            _model.default_gguf()
        except TinyjudgeError:
            return f"local_judge needs the model chunks: {INSTALL_HINT}"
        if os.environ.get("TINYJUDGE_BENCH_LOCAL") != "1":
            # Its prompt is the full compliance rubric and an XSTest item (about 1,000
            # tokens): two judgments took over 170 s on 2 shared cores.
            return "local_judge --smoke takes minutes on a CPU; TINYJUDGE_BENCH_LOCAL=1 runs it"
    return None


def _data_root(sets: tuple[str, ...]) -> Path | None:
    for root in (SHARED_DATA, DATA_SLICES):
        if all((root / name).is_dir() for name in sets):
            return root
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _results_state() -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in RESULTS.iterdir()}


def test_every_bench_script_has_a_smoke_run() -> None:
    assert sorted(p.stem for p in BENCH.glob("*.py")) == sorted(PLAN)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLAN), ids=sorted(PLAN))
def test_bench_runs_at_a_tiny_size(name: str, tmp_path: Path) -> None:
    args, sets, written = PLAN[name]
    missing = _needs_extra(name)
    if missing:
        pytest.skip(missing)
    data = _data_root(sets)
    if data is None:
        pytest.skip(f"{name} reads {', '.join(sets)}: not present at {SHARED_DATA} nor in "
                    f"{DATA_SLICES}")  # fmt: skip
    fill = {"data": str(data), "out": str(tmp_path), "port": str(_free_port())}
    before = _results_state()
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), "--smoke", *(a.format(**fill) for a in args)],
        capture_output=True,
        text=True,
        timeout=170,
        cwd=tmp_path,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    figures = json.loads((tmp_path / written).read_text())
    assert figures, f"{name} wrote an empty {written}"
    assert _results_state() == before, f"{name} wrote into bench/results/"
