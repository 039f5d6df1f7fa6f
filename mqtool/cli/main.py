"""The ``mqtool`` command: the typer app, where every command is registered, the global options,
and the one place errors become exit codes.

Registration goes one way: this module imports the command modules and registers their functions
(``COMMANDS``); a command module imports neither this module nor another command module.  Command
modules import typer, the shared options and the standard library at the top, and everything
heavy (the layout registry, ``ops``, ``store``, numpy, rich tables, humanize) inside the command
that needs it, so ``mqtool --help`` loads none of it (``bench/startup.py`` measures it,
``tests/cli/test_startup.py`` holds it).

The user never sees a traceback unless ``--debug`` is given (or ``MQTOOL_DEBUG=1``): every
``MqError`` is printed as ``mqtool: error: path:position: expected X, found Y``.
"""

import inspect
import os
import re
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from mqtool import __version__
from mqtool.cli import (
    cmd_bench,
    cmd_clean,
    cmd_diff,
    cmd_dump,
    cmd_dump_compaction,
    cmd_dump_kafka,
    cmd_dump_legacy,
    cmd_dump_timer,
    cmd_info,
    cmd_lag,
    cmd_query,
    cmd_recover,
    cmd_report,
    cmd_scan,
    cmd_stats,
    cmd_validate,
    completion,
)
from mqtool.cli.exit_codes import ExitCode, exit_code_for
from mqtool.cli.options import flag
from mqtool.cli.render import OutputClosed, silence_stdout
from mqtool.errors import MqError

if TYPE_CHECKING:
    from typer._click.core import Context as ClickContext

try:  # typer >= 0.26 vendors click (and raises its own ClickException); older releases depend on click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - depends on the installed typer
    # where typer vendors click, click itself is usually absent: the import is only followed on an older typer
    from click.exceptions import ClickException  # type: ignore[import-not-found, no-redef, unused-ignore]

HELP = (
    "Offline operations toolkit for message-queue store directories (RocketMQ, Kafka, Jafka, MetaQ).\n\n"
    "Exit codes: 0 clean, 1 findings (or a plan with work to do), 2 usage, 3 I/O error or not a store, "
    "4 unsupported, 5 the broker is running (it holds its lock), 70 internal error, 75 busy (another mqtool run holds "
    "the lock), 130 interrupted."
)

#: ``(group, name, function, help)``: every command, in the order ``--help`` lists them (a group's
#: commands are listed after the top-level ones); ``help`` None takes the function's docstring
COMMANDS: tuple[tuple[str | None, str, Callable[..., Any], str | None], ...] = (
    (None, "clean", cmd_clean.clean, None),
    (None, "diff", cmd_diff.diff, None),
    (None, "info", cmd_info.info, None),
    (None, "lag", cmd_lag.lag, None),
    (None, "query", cmd_query.query, None),
    (None, "recover", cmd_recover.recover, None),
    (None, "report", cmd_report.report, None),
    (None, "scan", cmd_scan.scan, None),
    (None, "stats", cmd_stats.stats, None),
    (None, "validate", cmd_validate.validate, None),
    ("bench", "flush", cmd_bench.bench_flush, cmd_bench.FLUSH_HELP),
    ("dump", "commitlog", cmd_dump.dump_commitlog, None),
    ("dump", "consumequeue", cmd_dump.dump_consumequeue, None),
    ("dump", "index", cmd_dump.dump_index, None),
    ("dump", "checkpoint", cmd_dump.dump_checkpoint, None),
    ("dump", "config", cmd_dump.dump_config, None),
    ("dump", "timerlog", cmd_dump_timer.dump_timerlog, None),
    ("dump", "timerwheel", cmd_dump_timer.dump_timerwheel, None),
    ("dump", "timercheck", cmd_dump_timer.dump_timercheck, None),
    ("dump", "timermetrics", cmd_dump_timer.dump_timermetrics, None),
    ("dump", "compactionlog", cmd_dump_compaction.dump_compactionlog, None),
    ("dump", "compactioncq", cmd_dump_compaction.dump_compactioncq, None),
    ("dump", "kafka-log", cmd_dump_kafka.dump_kafka_log, None),
    ("dump", "kafka-index", cmd_dump_kafka.dump_kafka_index, None),
    ("dump", "kafka-timeindex", cmd_dump_kafka.dump_kafka_timeindex, None),
    ("dump", "kafka-txnindex", cmd_dump_kafka.dump_kafka_txnindex, None),
    ("dump", "kafka-snapshot", cmd_dump_kafka.dump_kafka_snapshot, None),
    ("dump", "kafka-checkpoint", cmd_dump_kafka.dump_kafka_checkpoint, None),
    ("dump", "jafka", cmd_dump_legacy.dump_jafka, None),
    ("dump", "metaq", cmd_dump_legacy.dump_metaq, None),
)
GROUPS = {
    "bench": "Benchmarks run on this machine's disk.",
    "dump": "Dump the records of a file family (streaming; every field in JSON).",
}


def _as_flag(option: TyperOption | None) -> TyperOption | None:
    """``--help`` as the other flags: no type beside it in the help (typer shows ``<bool>``), and
    False when not given (typer leaves it None, and coerces a None through pydantic, ~70 ms to
    import, for every group a ``mqtool dump kafka-log --help`` passes through)."""
    if option is not None:
        option.metavar = ""
        option.default = False
    return option


class Command(TyperCommand):
    """A command whose ``--help`` is a flag like the others (``_as_flag``)."""

    def get_help_option(self, ctx: "ClickContext") -> TyperOption | None:
        return _as_flag(super().get_help_option(ctx))


class Group(TyperGroup):
    """A group whose ``--help`` is a flag like the others (``_as_flag``)."""

    def get_help_option(self, ctx: "ClickContext") -> TyperOption | None:
        return _as_flag(super().get_help_option(ctx))


def reflowed(text: str) -> str:
    """Docstrings are wrapped at ~100 columns in the source; rich keeps those line breaks, so
    ``--help`` on a narrower terminal showed ragged half-lines.  Join the lines of each paragraph
    (paragraphs stay apart) and let rich wrap to the terminal."""
    paragraphs = re.split(r"\n\s*\n", inspect.cleandoc(text).strip())
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


_state = {"debug": False}
_command_cache: dict[str, Any] = {}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mqtool {__version__}")
        raise typer.Exit(0)


SHELL_METAVAR = "[<shell>]"  # optional: `run` reads a shell name given after the flag


def _root(
    debug: Annotated[bool, flag("--debug", help="Show Python tracebacks on errors.")] = False,
    # every root option is a flag defaulting to False: typer coerces any other value through pydantic
    # (~70 ms to import) before it runs the command, even for `mqtool info --help`
    version: Annotated[bool, flag("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
    install_completion: Annotated[
        bool,
        flag(
            "--install-completion",
            metavar=SHELL_METAVAR,
            callback=completion.install_completion,
            is_eager=True,
            expose_value=False,
            help="Install shell completion for bash, zsh or fish (default: the shell running mqtool).",
        ),
    ] = False,
    show_completion: Annotated[
        bool,
        flag(
            "--show-completion",
            metavar=SHELL_METAVAR,
            callback=completion.show_completion,
            is_eager=True,
            expose_value=False,
            help="Print the completion script for bash, zsh or fish, to source it or install it by hand.",
        ),
    ] = False,
) -> None:
    if debug:
        _state["debug"] = True


#: The options every command takes (``settings``): added to each command's signature by
#: ``with_common_options`` unless the command has its own of that name.
COMMON_OPTIONS: dict[str, Any] = {
    "quiet": Annotated[bool, flag("--quiet", "-q", help="Print nothing but the data and errors: no warnings, notes or progress.")],
    "verbose": Annotated[bool, flag("--verbose", "-v", help="Also print the steps taken and diagnostics (query's index lookups, scan's JVM log).")],
    "utc": Annotated[bool, flag("--utc", help="Print times in UTC, and read a time given without a zone as UTC.")],
}


def with_common_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with ``--quiet``, ``--verbose`` and ``--utc`` added to its options; they set
    ``settings`` for the run, and an option of the command's own with one of those names (clean's
    ``--quiet``, scan's ``--verbose``) is both the command's and the setting."""
    import functools

    sig = inspect.signature(function)
    added = [name for name in COMMON_OPTIONS if name not in sig.parameters]

    @functools.wraps(function)
    def command(*args: Any, **kwargs: Any) -> Any:
        from mqtool.cli import settings

        for name in COMMON_OPTIONS:
            value = kwargs.pop(name) if name in added else kwargs.get(name)
            settings.SETTINGS[name] = bool(value)
        return function(*args, **kwargs)

    extra = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=False, annotation=COMMON_OPTIONS[name]) for name in added]
    params = list(sig.parameters.values())
    command.__signature__ = sig.replace(parameters=params + extra)  # type: ignore[attr-defined]
    command.__annotations__ = {**function.__annotations__, **{name: COMMON_OPTIONS[name] for name in added}}
    return command


def build_app() -> typer.Typer:
    """The typer app with every command of ``COMMANDS`` registered."""
    root = typer.Typer(
        name="mqtool",
        help=HELP,
        cls=Group,
        no_args_is_help=True,
        add_completion=False,  # the root's own --show-completion/--install-completion take the shell
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # click's plain help: rich's help panels load ~60 ms of modules (Markdown, tracebacks)
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    root.callback()(_root)
    groups = {name: typer.Typer(help=text, cls=Group, no_args_is_help=True, rich_markup_mode=None) for name, text in GROUPS.items()}
    for group, name, function, help_text in COMMANDS:
        target = root if group is None else groups[group]
        target.command(name, cls=Command, help=reflowed(help_text or function.__doc__ or ""))(with_common_options(function))
    for name, sub in groups.items():
        root.add_typer(sub, name=name)
    return root


app = build_app()


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
    from mqtool.cli import settings

    settings.reset()
    if completion.shell_complete_requested():  # the shell asks for completions: answer, exit
        try:
            _click_command().main(args=args, prog_name=completion.PROG, complete_var=completion.COMPLETE_VAR)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else ExitCode.OK
        return ExitCode.OK
    command = _click_command()
    try:
        requested = completion.shell_option(args)  # `--show-completion bash`: click has no optional values
        if requested is not None:
            return completion.answer(*requested)
        result = command.main(args=args, prog_name=completion.PROG, standalone_mode=False)
        if result == ExitCode.INTERRUPTED:  # typer returns Ctrl-C in a command as 130, silently
            sys.stderr.write("mqtool: interrupted\n")
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
        silence_stdout()
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


def _click_command() -> Any:
    """The click command typer builds from ``app`` (built once: building it inspects the type
    hints of every command, which in-process callers would otherwise pay per run)."""
    command = _command_cache.get("root")
    if command is None:
        command = _command_cache["root"] = typer.main.get_command(app)
    return command


def _report(message: str) -> None:
    try:
        sys.stderr.write(f"mqtool: error: {message}\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass
