"""The ``tinyjudge`` command line: the table of verbs, and how errors end a run.

Each verb lives in :mod:`tinyjudge.commands` (one module per verb, its options
written once in its signature or in its stage's config). A user's mistake (bad
file, bad record, unknown name) prints one line and exits 2; only a bug in
tinyjudge shows a traceback.

The library's messages name Python parameters, and a
:class:`~tinyjudge.errors.UsageError` says which: ``param`` (the one at fault) and
``also`` (others it names as the fix). The CLI shows those names as their flags, by
the one derivation every flag is made by (``group_by`` -> ``--group-by``):
:func:`in_flags`. A command's flag for a parameter is that parameter's derived
flag, so no table maps one to the other.
"""

from __future__ import annotations

import re
import signal
import sys
import threading
from importlib import import_module
from types import FrameType

import typer
from rich.markup import escape

from tinyjudge.commands import err, flag_of
from tinyjudge.errors import TinyjudgeError, UsageError, one_line

__all__ = ["app", "main", "VERBS", "in_flags"]

app = typer.Typer(
    name="tinyjudge",
    help="Judge agent trajectories with an LLM, distill the judge into a small reward model, "
    "calibrate it against people, and audit how far to trust both.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from tinyjudge import __version__

        typer.echo(f"tinyjudge {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="print the version and exit"
    ),
) -> None:
    pass


# verb -> module in tinyjudge.commands, in the order `tinyjudge --help` lists them
VERBS = {
    "import": "import_",
    "judge": "judge",
    "local-server": "local_server",
    "distill": "distill",
    "score": "score",
    "export": "export",
    "calibrate": "calibrate",
    "audit": "audit",
    "estimate": "estimate",
    "cascade": "cascade",
    "exploit": "exploit",
    "serve": "serve",
    "hints": "hints",
    "label": "label",
    "schema": "schema",
    "demo": "demo",
}
for _verb, _module in VERBS.items():
    _mod = import_module(f"tinyjudge.commands.{_module}")
    if hasattr(_mod, "build_app"):  # a verb with verbs of its own (import chat, import xstest)
        app.add_typer(_mod.build_app(), name=_verb, help=(_mod.build_app.__doc__ or "").strip())
    else:
        app.command(_verb)(_mod.command)


def _name(param: str) -> re.Pattern[str]:
    # the bare word: not part of a key (metadata.group_by), a quoted value or a flag
    return re.compile(rf"(?<![\w.'\"`/-]){re.escape(param)}(?![\w'\"`/-])")


def in_flags(error: TinyjudgeError) -> str:
    """The error's one-line message, the parameters it names shown as their flags.

    Only a :class:`UsageError`'s own ``param`` and ``also`` are shown so, each as
    :func:`~tinyjudge.commands._config_flags.flag_of` derives it: a name with an
    underscore wherever the message has it (it reads as nothing else), a one-word
    name where the message names it last (``needs the items: pass items``: a
    one-word name is also a plain word). Other errors are shown as written.
    """
    message = str(error)
    if not isinstance(error, UsageError):
        return message
    for param in dict.fromkeys([*([error.param] if error.param else []), *error.also]):
        named = list(_name(param).finditer(message))
        for at in reversed(named if "_" in param else named[-1:]):
            message = message[: at.start()] + flag_of(param) + message[at.end() :]
    return message


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so cleanup runs as on Ctrl-C (temporary
    files removed, servers stopped); a BaseException, so no ``except Exception`` eats it."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    signal.signal(signum, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated


def main() -> None:
    """Entry point: run the app, turning user errors into one line and exit 2."""
    previous = signal.getsignal(signal.SIGTERM)
    own = previous == signal.SIG_DFL and threading.current_thread() is threading.main_thread()
    if own:
        signal.signal(signal.SIGTERM, _terminate)
    try:
        _run()
    finally:
        if own:
            signal.signal(signal.SIGTERM, previous)


def _run() -> None:
    try:
        rc = app(standalone_mode=False)
    except TinyjudgeError as e:
        err.print(f"[bold red]error:[/] {escape(in_flags(e))}", markup=True, soft_wrap=True)
        sys.exit(e.exit_code)
    except OSError as e:
        # A path the user gave that cannot be read or written (permissions, a
        # file where a folder is needed, a full disk): their fix, not our bug.
        where = f"{e.filename}: " if e.filename else ""
        err.print(f"[bold red]error:[/] {escape(where + (e.strerror or str(e)))}", soft_wrap=True)
        sys.exit(2)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        err.print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        err.print("interrupted; finished work is kept")
        sys.exit(130)
    except Terminated:
        err.print("terminated; finished work is kept")
        sys.exit(143)
    except Exception as e:
        # Usage errors (missing argument, bad option). Matched by name because
        # typer >= 0.20 ships its own copy of click, not the `click` package.
        kinds = {c.__name__ for c in type(e).__mro__}
        if "ClickException" in kinds:
            code = getattr(e, "exit_code", 2) or 2
            if "NoArgsIsHelpError" in kinds:  # a bare `tinyjudge import`: the help is the answer
                e.show()  # type: ignore[attr-defined]
                sys.exit(code)
            # One line like every other bad input, naming where the options are listed.
            ctx = getattr(e, "ctx", None)
            hint = f"; see `{ctx.command_path} --help`" if ctx is not None else ""
            message = one_line(e.format_message()) + hint  # type: ignore[attr-defined]
            err.print(f"[bold red]error:[/] {escape(message)}", markup=True, soft_wrap=True)
            sys.exit(code)
        raise
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
