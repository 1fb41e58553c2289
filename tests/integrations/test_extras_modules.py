"""The TRL adapter's URL path runs with only what ``pip install "tinyjudge[rl]"`` installs.

The test process has every extra (dev included), so a module the adapter needs but no
extra declares (``httpx``, which ``openai`` and ``huggingface_hub`` no longer pull in)
would pass unnoticed here and fail for a user. So the URL path runs in a fresh
interpreter that may import only the standard library and the modules of the
distributions that the core dependencies and one extra declare, followed through their
own requirements; the reward server it calls runs in this process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support import REPO

from tinyjudge.distill import load_model
from tinyjudge.serve import create_app

from ..serve.conftest import running
from .test_adapters import COMPLETIONS, PROMPT, _expected

tomllib = pytest.importorskip("tomllib")  # Python 3.11+: pyproject.toml is read as data

GUARD = textwrap.dedent(
    """
    import importlib.abc, json, os, sys

    ALLOWED = set(json.loads(os.environ["ALLOWED_MODULES"]))


    class OnlyDeclared(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            top = name.split(".")[0]
            if top in ALLOWED or top in sys.stdlib_module_names or top.startswith("_"):
                return None
            raise ModuleNotFoundError(f"No module named {top!r} (not declared)", name=top)


    sys.meta_path.insert(0, OnlyDeclared())
    """
)


def _declared(extra: str | None) -> set[str]:
    """The distributions of the core dependencies and ``extra``, with their requirements."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"][extra] if extra else []
    todo = [Requirement(r) for r in [*project["dependencies"], *extras]]
    todo = [r for r in todo if r.marker is None or r.marker.evaluate({"extra": ""})]
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req = todo.pop()
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in done:
            continue
        done.add(key)
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue  # declared but not installed here: nothing of it can be imported
        for text in requires:
            r = Requirement(text)
            if r.marker is None or any(r.marker.evaluate({"extra": x}) for x in ("", *req.extras)):
                todo.append(r)
    return {name for name, _ in done}


def _modules(distributions: set[str]) -> list[str]:
    return sorted(
        top
        for top, dists in metadata.packages_distributions().items()
        if any(canonicalize_name(d) in distributions for d in dists)
    )


def _run_guarded(extra: str | None, code: str) -> subprocess.CompletedProcess[str]:
    allowed = [*_modules(_declared(extra)), "tinyjudge"]
    return subprocess.run(
        [sys.executable, "-c", GUARD + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "ALLOWED_MODULES": json.dumps(allowed),
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(REPO / "src"),
        },  # fmt: skip
    )


def test_the_guard_refuses_a_module_no_extra_declares() -> None:
    done = _run_guarded("rl", "import hypothesis")
    assert done.returncode == 1
    assert "No module named 'hypothesis' (not declared)" in done.stderr


def test_without_an_extra_a_url_says_which_to_install() -> None:
    done = _run_guarded(None, """
        from tinyjudge.errors import TinyjudgeError
        from tinyjudge.integrations.trl import reward_func
        try:
            reward_func("http://127.0.0.1:9/get_reward")
        except TinyjudgeError as e:
            print(e)
        """)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert 'needs httpx: pip install "tinyjudge[rl]"' in done.stdout


@pytest.mark.parametrize("extra", ["rl", "serve"], ids=["rl", "serve"])
def test_trl_adapter_over_a_url_with_only_an_extra(extra: str, rm_dir: Path) -> None:
    with running(create_app(load_model(rm_dir))) as url:
        done = _run_guarded(
            extra,
            f"""
            import json
            from tinyjudge.integrations.trl import reward_func

            f = reward_func({url!r})
            print(json.dumps(f(prompts=[{PROMPT!r}] * 2, completions={COMPLETIONS!r})))
            """,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == pytest.approx(_expected(rm_dir), abs=1e-12)
