"""Stage configs: fields checked where they are made, flags derived from the fields."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import pytest
import typer
from typer.testing import CliRunner

from tinyjudge.cli import in_flags
from tinyjudge.commands._config_flags import config_flags, flag_of
from tinyjudge.config import Config, option
from tinyjudge.errors import UsageError
from tinyjudge.results import Interval


@dataclass
class Toy(Config):
    """A stage's options, as a stage declares them."""

    n_boot: int = option(1000, "bootstrap resamples", low=100, high=100_000)
    rate: float = option(0.05, "share sampled", low=0.0, high=1.0)
    where: Literal["all", "last"] = option("all", "which answers are edited")
    search: bool = option(True, "search for the strongest phrase")
    names: list[str] = option(help="edits to run", default_factory=list)
    target: str | None = option(None, "the label flipped to")


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("rate", math.nan, r"rate must be a finite number in \[0, 1\], got nan"),
        ("rate", math.inf, r"got inf"),
        ("rate", 1.5, r"in \[0, 1\], got 1.5"),
        ("n_boot", 10**9, r"n_boot must be a finite number in \[100, 100000\]"),
        ("n_boot", 5, r"got 5"),
        ("where", "first", r"where must be one of 'all', 'last', got 'first'"),
    ],
    ids=["nan", "inf", "above", "huge-int", "small-int", "literal"],
)
def test_a_config_refuses_a_bad_field_naming_it(field: str, value: object, match: str) -> None:
    with pytest.raises(UsageError, match=match) as caught:
        Toy(**{field: value})  # type: ignore[arg-type]
    assert caught.value.param == field


def test_options_over_a_config_and_unknown_ones() -> None:
    base = Toy(rate=0.2)
    assert Toy.from_options(base, n_boot=500) == Toy(rate=0.2, n_boot=500)
    assert Toy.from_options(None, rate=0.3).rate == 0.3
    with pytest.raises(UsageError, match=r"unknown option 'n_bot' for Toy; allowed: .*n_boot"):
        Toy.from_options(base, n_bot=3)


def _app() -> typer.Typer:
    app = typer.Typer()
    seen: list[Toy] = []

    @app.command()
    @config_flags(Toy, skip=("target",))
    def run(path: str = typer.Argument(...), *, config: Toy) -> None:
        seen.append(config)
        typer.echo(
            f"{path} {config.n_boot} {config.rate} {config.where} {config.search} {config.names}"
        )

    return app


def test_flags_come_from_the_fields() -> None:
    runner = CliRunner()
    got = runner.invoke(
        _app(),
        [
            "x",
            "--n-boot",
            "500",
            "--rate",
            "0.5",
            "--where",
            "last",
            "--no-search",
            "--names",
            "a",
            "--names",
            "b",
        ],
    )
    assert got.exit_code == 0, got.output
    assert got.output.strip() == "x 500 0.5 last False ['a', 'b']"
    defaults = runner.invoke(_app(), ["y"])
    assert defaults.output.strip() == "y 1000 0.05 all True []"
    help_text = runner.invoke(_app(), ["--help"]).output
    assert "--n-boot" in help_text and "bootstrap resamples" in help_text
    assert "--target" not in help_text


def test_a_bad_value_is_refused_by_the_parser_or_the_config() -> None:
    runner = CliRunner()
    assert runner.invoke(_app(), ["x", "--where", "first"]).exit_code == 2
    for value in ["2", "nan", "-inf"]:
        got = runner.invoke(_app(), ["x", "--rate", value])
        assert isinstance(got.exception, UsageError), got.output
        assert in_flags(got.exception).startswith("--rate must be a finite number in [0, 1], got")


def test_a_derived_field_reads_as_its_flag_in_messages() -> None:
    _app()
    assert flag_of("n_boot") == "--n-boot"
    error = UsageError("n_boot must be a finite number in [100, 100000], got 5", param="n_boot")
    assert in_flags(error).startswith("--n-boot must be")


@dataclass
class Needs(Config):
    """A config with a required field and a field taken by a second name."""

    source: str = option(help="the source read")
    raters: list[str] = option(default_factory=list, help="raters", aliases=("rater",))


def test_a_field_without_a_default_is_required_in_the_library_and_on_the_command_line() -> None:
    with pytest.raises(UsageError, match="^Needs needs source$") as caught:
        Needs.from_options(None, raters=["a"])
    assert caught.value.param == "source"
    assert Needs.from_options(None, source="s").raters == []

    app = typer.Typer()

    @app.command()
    @config_flags(Needs)
    def run(*, config: Needs) -> None:
        typer.echo(f"{config.source} {config.raters}")

    runner = CliRunner()
    missing = runner.invoke(app, [])
    assert missing.exit_code == 2 and "--source" in missing.output
    both = runner.invoke(app, ["--source", "s", "--raters", "a", "--rater", "b"])
    assert both.exit_code == 0, both.output
    assert both.output.strip() == "s ['a', 'b']"


def test_an_interval_prints_itself() -> None:
    k = Interval(0.71842, 0.54811, 0.86523)
    assert str(k) == "0.718 [0.548, 0.865]"
    assert f"{k:.2f}" == "0.72 [0.55, 0.87]"
    assert 0.6 in k and 0.9 not in k
    assert str(Interval(math.nan)) == "nan"
    assert Interval(0.5, 0.4, 0.7).to_dict() == {"value": 0.5, "low": 0.4, "high": 0.7}
