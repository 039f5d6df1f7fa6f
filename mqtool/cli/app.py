"""The ``mqtool`` command: typer app, global options, and the one place errors become exit codes.

The user never sees a traceback unless ``--debug`` is given (or ``MQTOOL_DEBUG=1``): every
``MqError`` is printed as ``mqtool: error: path:position: expected X, found Y``.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from typing import Annotated

import typer

try:  # typer < 0.26 depends on click; newer releases vendor it
    from click.exceptions import ClickException
except ImportError:  # pragma: no cover - depends on the installed typer
    from typer._click.exceptions import ClickException  # type: ignore[no-redef]

from mqtool import __version__
from mqtool.cli.exit_codes import ExitCode, exit_code_for
from mqtool.cli.render import OutputClosed
from mqtool.errors import MqError

app = typer.Typer(
    name="mqtool",
    help="Offline operations toolkit for message-queue store directories (RocketMQ, Kafka, Jafka, MetaQ).\n\n"
    "Exit codes: 0 clean, 1 findings (or a plan with work to do), 2 usage, 3 I/O error or not a store, "
    "4 unsupported, 70 internal error, 75 busy (another run holds the lock), 130 interrupted.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_state = {"debug": False}
_command_cache: dict[str, object] = {}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mqtool {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show Python tracebacks on errors.")] = False,
    version: Annotated[
        bool | None, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = None,
) -> None:
    """Offline operations toolkit for message-queue store directories.

    Exit codes: 0 clean, 1 findings (or a plan with work to do), 2 usage, 3 I/O error or not a
    store, 4 unsupported, 70 internal error, 75 busy (another run holds the lock), 130 interrupted.
    """
    if debug:
        _state["debug"] = True


def _register_commands() -> None:
    # Imported here so each command module registers itself on ``app``.
    from mqtool.cli import (  # noqa: F401
        cmd_bench,
        cmd_clean,
        cmd_diff,
        cmd_dump,
        cmd_dump_kafka,
        cmd_dump_legacy,
        cmd_info,
        cmd_lag,
        cmd_query,
        cmd_recover,
        cmd_scan,
        cmd_stats,
        cmd_validate,
    )


_register_commands()


def _debug_requested(argv: list[str]) -> bool:
    return _state["debug"] or "--debug" in argv or os.environ.get("MQTOOL_DEBUG") == "1"


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    code = run(args)
    sys.exit(int(code))


def run(args: list[str]) -> int:
    """Run the CLI with ``args``; return the exit code (never raises, never prints a traceback
    unless debugging)."""
    _state["debug"] = False  # per run: in-process callers (tests, fuzzing) run many commands
    command = _click_command()
    try:
        result = command.main(args=args, prog_name="mqtool", standalone_mode=False)
        return int(result) if isinstance(result, int) else ExitCode.OK
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        sys.stderr.write("mqtool: interrupted\n")
        return ExitCode.INTERRUPTED
    except ClickException as exc:
        exc.show()
        return ExitCode.USAGE
    except (OutputClosed, BrokenPipeError):
        _silence_stdout()
        return ExitCode.OK
    except KeyboardInterrupt:
        sys.stderr.write("mqtool: interrupted\n")
        return ExitCode.INTERRUPTED
    except MqError as exc:
        if _debug_requested(args):
            traceback.print_exc()
        _report(f"{exc}")
        return exit_code_for(exc)
    except OSError as exc:
        if _debug_requested(args):
            traceback.print_exc()
        where = f"{exc.filename}: " if exc.filename else ""
        _report(f"{where}{exc.strerror or exc}")
        return ExitCode.IO
    except Exception as exc:  # the last line of defence: a bug in mqtool
        if _debug_requested(args):
            traceback.print_exc()
        _report(f"internal error ({type(exc).__name__}: {exc}); rerun with --debug for the traceback and report it")
        return ExitCode.INTERNAL


def _click_command():
    """The click command typer builds from ``app`` (built once: building it inspects the type
    hints of every command, ~70 ms, which in-process callers would otherwise pay per run)."""
    command = _command_cache.get("root")
    if command is None:
        command = _command_cache["root"] = typer.main.get_command(app)
        _tidy_option_types(command)
        _reflow_help(command)
    return command


def _reflow_help(command) -> None:
    """Docstrings are wrapped at ~100 columns in the source; rich keeps those line breaks, so
    ``--help`` on a narrower terminal showed ragged half-lines.  Join the lines of each paragraph
    (paragraphs stay apart) and let rich wrap to the terminal."""
    if command.help:
        paragraphs = re.split(r"\n\s*\n", command.help.strip())
        command.help = "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)
    for sub in getattr(command, "commands", {}).values():
        _reflow_help(sub)


_LIST_TYPE = re.compile(r"^<list\[(.*)\]>$")


def _tidy_option_types(command) -> None:
    """typer's help shows a type beside every option: ``<bool>`` on flags (which take no
    value), ``<list[str]>`` on repeatable options, ``<int range>`` before the range it prints
    anyway.  That column squeezes the help text on an 80-column terminal to a few words a line.
    Flags show no type, repeatable options their item type with ``...``, ranges the number type."""
    ctx = command.context_class(command)
    help_option = command.get_help_option

    def get_help_option(context):
        option = help_option(context)
        if option is not None and option.metavar is None:
            option.metavar = ""
        return option

    command.get_help_option = get_help_option
    for param in command.params:
        kind = getattr(param, "param_type_name", None)
        if kind == "argument" and hasattr(param, "display_type_rich"):
            listed = _LIST_TYPE.match(param.display_type_rich(ctx) or "")
            if listed:  # an argument's metavar names it in the usage line: change only the type shown
                shown = f"<{listed.group(1)}>..."
                param.display_type_rich = lambda ctx=None, shown=shown: shown
            continue
        if kind != "option" or param.metavar is not None:
            continue
        if getattr(param, "is_flag", False):
            param.metavar = ""
            continue
        display = getattr(param, "display_type_rich", None)  # typer >= 0.2x; older ones show TEXT, PATH
        shown = display(ctx) if display else None
        if not shown:
            continue
        listed = _LIST_TYPE.match(shown)
        if listed:
            param.metavar = f"<{listed.group(1)}>..."
        elif shown.endswith(" range>"):
            param.metavar = shown[: -len(" range>")] + ">"
    for sub in getattr(command, "commands", {}).values():
        _tidy_option_types(sub)


def _report(message: str) -> None:
    try:
        sys.stderr.write(f"mqtool: error: {message}\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
