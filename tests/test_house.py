"""The house rules that a reader picking the project up relies on.

The library speaks Python: its messages name parameters, and ``commands/``
alone speaks in flags. A flag is its parameter's derived spelling (``group_by`` ->
``--group-by``, ``commands/_config_flags.flag_of``), and the CLI shows the
parameters an error names by that same derivation (``cli.in_flags``): no table.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

import tinyjudge
from tinyjudge.cli import in_flags
from tinyjudge.commands._config_flags import flag_of
from tinyjudge.commands.distill import tier_options
from tinyjudge.errors import DataError, RubricError, TinyjudgeError, UsageError

SRC = Path(tinyjudge.__file__).parent
FLAG = re.compile(r"--[a-z][a-z-]+")
MOST_FLAG_LITERALS = 5


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def flag_literals() -> dict[str, int]:
    """String constants naming a CLI flag, per file outside ``commands/`` and ``cli.py``.

    Docstrings are prose about the command line (``tinyjudge import chat PATH --out
    DIR``), not messages, so they are not counted.
    """
    counts: dict[str, int] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "commands" or rel.as_posix() == "cli.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        n = sum(
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docs
            and FLAG.search(node.value) is not None
            for node in ast.walk(tree)
        )
        if n:
            counts[rel.as_posix()] = n
    return counts


def test_the_flag_count_sees_a_flag_in_a_message() -> None:
    # the walk itself: a message with a flag counts, a docstring and a bare "--" do not
    tree = ast.parse('"""Run ``x --out``."""\nraise E(f"pass --items {p}")\nARGV = [f"--{k}"]\n')
    docs = _docstrings(tree)
    hits = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
        if FLAG.search(n.value)
    ]
    assert hits == ["pass --items "]


# Two stay: judge/local/_model.py's install hint (a pip command line, `pip install
# --no-deps ...`) and serve/__init__.py's log line for a server run open on purpose.
def test_at_most_five_string_literals_outside_commands_name_a_flag() -> None:
    counts = flag_literals()
    assert sum(counts.values()) <= MOST_FLAG_LITERALS, counts


# A library message, and the line the CLI shows for it.
@pytest.mark.parametrize(
    ("error", "shown"),
    [
        (
            UsageError("group_by and slice_by read item metadata: pass items", param="items",
                       also=("group_by", "slice_by")),
            "--group-by and --slice-by read item metadata: pass --items",
        ),
        (
            UsageError("max_reply_mb=0 holds no reply; max_reply_mb must be > 0",
                       param="max_reply_mb"),
            "--max-reply-mb=0 holds no reply; --max-reply-mb must be > 0",
        ),
        (
            UsageError("grouping by 'metadata.group_by' needs the items: pass items", "items"),
            "grouping by 'metadata.group_by' needs the items: pass --items",
        ),
        (
            UsageError("comparing two groups needs a grouping key: pass by", param="by"),
            "comparing two groups needs a grouping key: pass --by",
        ),
        (
            UsageError("the items name no rubric: pass rubric", param="rubric"),
            "the items name no rubric: pass --rubric",
        ),
        (
            UsageError("--param expects KEY=VALUE, got 'C'", param="param"),
            "--param expects KEY=VALUE, got 'C'",
        ),
        (
            UsageError("unknown option(s) ['human_weight_x'] for the linear tier"),
            "unknown option(s) ['human_weight_x'] for the linear tier",
        ),
        (
            DataError("labels.jsonl", 3, "group_by is not a field"),
            "labels.jsonl:3: group_by is not a field",
        ),
        (
            RubricError("rubric x: pass items"),
            "rubric x: pass items",
        ),
        (
            UsageError("label_field needs rubric and source (e.g. human:final)",
                       param="label_field", also=("rubric", "source")),
            "--label-field needs --rubric and --source (e.g. human:final)",
        ),
        (
            UsageError("host 0.0.0.0 lets other machines in: pass token (or set T), "
                       "e.g. secrets.token_urlsafe(), or insecure_no_token to run open",
                       param="token", also=("host", "insecure_no_token")),
            "--host 0.0.0.0 lets other machines in: pass --token (or set T), "
            "e.g. secrets.token_urlsafe(), or --insecure-no-token to run open",
        ),
        (
            UsageError("choose another reviewer name", param="reviewer"),
            "choose another --reviewer name",
        ),
        (
            UsageError("slice_by needs the items: pass items", param="items"),
            "slice_by needs the items: pass --items",
        ),
    ],
    ids=[
        "two-params-and-the-one-at-fault", "underscore-name-everywhere",
        "key-and-quoted-value-kept", "one-word-param", "param-word-only-where-named",
        "already-a-flag", "quoted-value", "data-error", "other-kind", "also-named-params",
        "also-named-and-a-flag-that-holds-the-word", "param-named-mid-sentence",
        "only-the-names-the-error-gives",
    ],
)  # fmt: skip
def test_the_cli_shows_a_library_message_in_flags(error: TinyjudgeError, shown: str) -> None:
    assert in_flags(error) == shown


def test_a_flag_is_its_parameter_derived() -> None:
    assert flag_of("group_by") == "--group-by" and flag_of("items") == "--items"


def _command_options() -> dict[str, set[str]]:
    """Each parameter of every verb (nested ones too) -> the flags it is given as."""
    import typer

    from tinyjudge.cli import app

    found: dict[str, set[str]] = {}

    def walk(command: Any) -> None:
        for sub in getattr(command, "commands", {}).values():
            walk(sub)
        for param in getattr(command, "params", []):
            flags = {o for o in param.opts if o.startswith("--")}
            if flags:
                found.setdefault(param.name, set()).update(flags)

    walk(typer.main.get_command(app))
    return found


def _named_params() -> set[str]:
    """Every parameter a library ``UsageError`` names (``param``, second argument, ``also``)."""
    named: set[str] = set()
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "commands" or rel.as_posix() == "cli.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = getattr(node, "func", None)
            if not isinstance(node, ast.Call) or getattr(func, "id", None) != "UsageError":
                continue
            given = [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "param")]
            for k in node.keywords:
                if k.arg == "also" and isinstance(k.value, ast.Tuple):
                    given += k.value.elts
            named |= {g.value for g in given if isinstance(g, ast.Constant)}
    return named


def test_every_parameter_a_command_takes_is_given_as_its_derived_flag() -> None:
    options = _command_options()
    named = _named_params()
    assert {"items", "group_by", "token", "reviewer"} <= named  # the walk finds them
    # a parameter the library names, where a command takes it, is its derived flag there
    differ = {p: sorted(options[p]) for p in named if p in options and flag_of(p) not in options[p]}
    assert differ == {}


def test_a_library_usage_error_reaches_the_cli_user_as_flags(tmp_path: Path) -> None:
    from support import run_tinyjudge

    from tinyjudge.datasets.importers import run_import
    from tinyjudge.datasets.jsonl import write_jsonl
    from tinyjudge.demo import bundled_sample

    labels = tmp_path / "labels.jsonl"
    write_jsonl(labels, run_import("xstest", bundled_sample()).labels)
    done = run_tinyjudge(
        "audit", labels, "--reference", "human:final", "--group-by", "x.y",
        "--json", tmp_path / "report.json",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    line = " ".join(done.stderr.split())
    assert "--group-by and --slice-by read item metadata: pass --items" in line
    assert "Traceback" not in done.stderr


def test_import_chat_names_the_flags_it_needs_on_the_cli(tmp_path: Path) -> None:
    from support import run_tinyjudge

    from tinyjudge.datasets.jsonl import write_jsonl

    rows = tmp_path / "chats.jsonl"
    write_jsonl(rows, [{"id": "c1", "messages": [{"role": "user", "content": "hi"},
                                                 {"role": "assistant", "content": "hello"}],
                        "y": "full_compliance"}])  # fmt: skip
    done = run_tinyjudge("import", "chat", rows, "--label-field", "y", "--out", tmp_path / "o")
    assert done.returncode == 2, done.stderr
    line = " ".join(done.stderr.split())
    assert "--label-field needs --rubric and --source (e.g. human:final)" in line
    assert "Traceback" not in done.stderr


def test_the_library_names_the_parameter_not_the_flag() -> None:
    from tinyjudge.audit import audit
    from tinyjudge.datasets.importers import run_import
    from tinyjudge.demo import bundled_sample

    labels = run_import("xstest", bundled_sample()).labels
    with pytest.raises(UsageError, match="^group_by and slice_by read item metadata") as caught:
        audit(labels, None, reference="human:final", group_by="metadata.prompt_id")
    assert caught.value.param == "items"
    assert "--" not in str(caught.value)


@pytest.mark.parametrize(
    ("tier", "pairs", "params"),
    [
        ("transformer", ["epochs=3", "lr=5e-5", "base=tiny"],
         {"epochs": 3, "lr": 5e-5, "base": "tiny"}),
        ("transformer", ["grad_checkpointing=TRUE", "best_epoch=false", "train_bf16=None"],
         {"grad_checkpointing": True, "best_epoch": False, "train_bf16": None}),
        ("linear", [" C = 2"], {"C": 2.0}),
        ("transformer", ["base=a=b"], {"base": "a=b"}),
        ("transformer", ["epochs=1", "epochs=2"], {"epochs": 2}),
        ("transformer", ["base=123", "lora_alpha=16"], {"base": "123", "lora_alpha": 16}),
        ("linear", [], {}),
    ],
    ids=["numbers-and-text", "constants-any-case", "key-stripped", "first-equals", "last-wins",
         "declared-type-not-guessed", "none"],
)  # fmt: skip
def test_param_pairs_read_values_as_their_fields_declare(
    tier: str, pairs: list[str], params: dict[str, Any]
) -> None:
    got = tier_options(tier, {}, pairs)
    assert got == params
    assert [type(v) for v in got.values()] == [type(v) for v in params.values()]


@pytest.mark.parametrize("pair", ["C", "=3", " =3"], ids=["no-equals", "no-key", "blank-key"])
def test_param_pairs_refuse_a_pair_without_a_key(pair: str) -> None:
    with pytest.raises(UsageError, match=r"^param expects KEY=VALUE, got") as caught:
        tier_options("linear", {}, [pair])
    assert caught.value.param == "param"
    assert in_flags(caught.value).startswith("--param expects KEY=VALUE, got")  # the CLI's words


def test_parse_params_is_not_in_the_library() -> None:
    import importlib

    # the package itself: tinyjudge.distill may name the function once it was looked up
    face = importlib.import_module("tinyjudge.distill").__all__
    assert "parse_params" not in face and "tier_options" not in face
