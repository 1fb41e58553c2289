"""The notebooks in notebooks/ run end to end in this venv's kernel, and are committed clean.

Each notebook is executed with nbclient in a kernel started from this interpreter
(an explicit kernelspec pointing at ``sys.executable``, so that a ``python3``
kernel registered elsewhere on the machine can never be picked up instead). A
cell that raises fails the test with that cell's error. The notebooks write
their files under ``TINYJUDGE_RUNS`` (here a temporary folder), and read
``TINYJUDGE_SHARED_DATA`` as ``tests/conftest.py`` does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbclient
import nbformat
import pytest
from support import REPO, SHARED_DATA

# As in tests/conftest.py.
NOTEBOOK_DIR = REPO / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
KERNEL = "tinyjudge-test"
# Notebooks that read ../shared/data; each must also run, skipping what is absent, without it.
USES_SHARED_DATA = ("02_audit_a_judge.ipynb", "03_cheap_scoring.ipynb", "06_hints.ipynb")
# Committed with the outputs of a full run (``make notebooks`` refreshes them), so that a
# reader on GitHub sees what each step gives; the others are committed clean.
WITH_OUTPUTS = ("04_your_agent_transcripts.ipynb",)
CLEAN = [p for p in NOTEBOOKS if p.name not in WITH_OUTPUTS]


@pytest.fixture
def kernel_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A kernelspec for this interpreter, and a scratch folder for the notebooks' files."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel_json = {"argv": argv, "display_name": "tinyjudge test", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel_json))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    runs = tmp_path / "runs"
    monkeypatch.setenv("TINYJUDGE_RUNS", str(runs))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    return runs


def execute(path: Path) -> nbformat.NotebookNode:
    """Run every cell of ``path`` in the test kernel; fail with the first cell error."""
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=300,
        resources={"metadata": {"path": str(path.parent)}},
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:
        pytest.fail(f"{path.name}: a cell raised\n{e}", pytrace=False)
    return nb


def outputs(nb: nbformat.NotebookNode, kind: str) -> list[str]:
    """The text of every output of one kind (``stream`` text or a MIME type) in the notebook."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if kind == "stream" and out["output_type"] == "stream":
                found.append(out["text"])
            elif kind in out.get("data", {}):
                found.append(out["data"][kind])
    return found


def test_the_notebooks_are_these() -> None:
    assert [p.name for p in NOTEBOOKS] == [
        "01_quickstart.ipynb",
        "02_audit_a_judge.ipynb",
        "03_cheap_scoring.ipynb",
        "04_your_agent_transcripts.ipynb",
        "05_exploits.ipynb",
        "06_hints.ipynb",
    ]


@pytest.mark.parametrize("name", WITH_OUTPUTS)
def test_committed_outputs_are_one_whole_run(name: str) -> None:
    nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), (
        f"{name}: run it top to bottom (make notebooks) before committing"
    )
    assert all(c.outputs for c in code), f"{name}: a code cell has no output"
    assert not [o for c in code for o in c.outputs if o["output_type"] == "error"]
    assert outputs(nb, "image/png") and outputs(nb, "text/html")
    shown = json.dumps([c.outputs for c in code])
    assert "/tmp/" not in shown and str(REPO) not in shown, "outputs name this machine's paths"
    assert nb.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", CLEAN, ids=[p.stem for p in CLEAN])
def test_committed_notebook_has_no_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, f"{path.name} has no code cells"
    dirty = [i for i, c in enumerate(code) if c.outputs or c.execution_count is not None]
    assert not dirty, f"{path.name}: code cells {dirty} carry outputs; strip them before committing"
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_kernel_runs_this_interpreter(kernel_env: Path, tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.executable)"))
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    ran = execute(path)
    assert outputs(ran, "stream") == [sys.executable + "\n"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(
    path: Path, kernel_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each notebook runs; one that reads ../shared/data also runs without it (where it is
    absent, that is the one run), each section that needs the data saying where it looked."""
    absent = tmp_path / "absent"
    data_settings: list[Path | None] = [None]
    if path.name in USES_SHARED_DATA:
        data_settings = [None, absent] if SHARED_DATA.is_dir() else [absent]
    for data in data_settings:
        if data is not None:
            monkeypatch.setenv("TINYJUDGE_SHARED_DATA", str(data))
        nb = execute(path)
        assert outputs(nb, "image/png"), f"{path.name} drew no plot"
        assert outputs(nb, "text/html"), f"{path.name} showed no table"
        assert kernel_env.is_dir() and any(kernel_env.iterdir()), (
            "it wrote nothing under TINYJUDGE_RUNS"
        )
        if data is not None:
            text = "".join(outputs(nb, "stream"))
            assert f"not present at {data}" in text, text[-2000:]
