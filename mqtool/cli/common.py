"""What commands share when they run: the output format chosen (``--format`` and its shorthands),
the renderer, and the end of every ``dump``.  The options themselves are in ``options.py``."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from mqtool.cli.exit_codes import ExitCode, exit_code_for
from mqtool.cli.options import MetricsFormat, OutputFormat
from mqtool.cli.render import Renderer

if TYPE_CHECKING:
    from mqtool.store.broker_config import BrokerSettings


FormatT = TypeVar("FormatT", bound=enum.Enum)


def pick_format(fmt: FormatT, as_json: bool, as_jsonl: bool) -> FormatT:
    """``--format`` with the ``--json``/``--jsonl`` shorthands applied (any format enum with
    ``table``, ``json`` and ``jsonl`` members); two different choices are a usage error."""
    if as_json and as_jsonl:
        raise typer.BadParameter("--json and --jsonl exclude each other")
    kind = type(fmt)
    shorthand = kind("json") if as_json else kind("jsonl") if as_jsonl else None
    if shorthand is not None and fmt not in (kind("table"), shorthand):
        raise typer.BadParameter(f"--format {fmt.value} and --{shorthand.value} exclude each other")
    return shorthand or fmt


def renderer(fmt: OutputFormat, as_json: bool, as_jsonl: bool, *, quiet: bool = False) -> Renderer:
    return Renderer(pick_format(fmt, as_json, as_jsonl), quiet=quiet)


def metrics_renderer(fmt: MetricsFormat, as_json: bool, as_jsonl: bool, *, quiet: bool = False) -> tuple[Renderer, bool]:
    """The renderer of a command that can report metrics, and whether ``--format openmetrics``
    was chosen (its output is then the metrics alone: ``report_metrics`` prints them)."""
    chosen = pick_format(fmt, as_json, as_jsonl)
    if chosen is MetricsFormat.openmetrics:
        return Renderer(OutputFormat.json, quiet=quiet), True
    return Renderer(OutputFormat(chosen.value), quiet=quiet), False


MAX_LISTED_PROBLEMS = 20


DAMAGE_HINT = "the data stops being valid at the position(s) above; `mqtool validate` explains the damage"


def finish_dump(out: Renderer, problems: Sequence[object], *, notes: Sequence[str] = (), extra_failures: int = 0, hint: str = DAMAGE_HINT) -> int:
    """The end of every ``dump``: notes and problems to stderr (at most 20 listed), then the exit
    code: 3 when a file could not be read (an I/O error is not damage), else 1 when the data is
    damaged (or ``extra_failures``, e.g. index entries that disagree with the log), else 0."""
    for note in notes:
        out.warn(note)
    for problem in problems[:MAX_LISTED_PROBLEMS]:
        out.error(str(problem))
    if len(problems) > MAX_LISTED_PROBLEMS:
        out.error(f"... and {len(problems) - MAX_LISTED_PROBLEMS} more problem(s)")
    codes = {exit_code_for(p) for p in problems}
    if ExitCode.FINDINGS in codes or extra_failures:
        out.warn(hint)
    if codes - {ExitCode.FINDINGS}:
        return max(codes - {ExitCode.FINDINGS})
    return ExitCode.FINDINGS if problems or extra_failures else ExitCode.OK


def report_metrics(command: str, doc: dict[str, Any], exit_status: int, *, to_stdout: bool, metrics_file: Path | None, store: str | None = None) -> None:
    """``doc``'s metrics (``mqtool.cli.metrics``): printed as OpenMetrics (``--format
    openmetrics``) and/or written to ``--metrics-file``; nothing when neither was asked for."""
    if not to_stdout and metrics_file is None:
        return
    import sys

    from mqtool.cli import metrics

    registry = metrics.build(command, doc, int(exit_status), store=store)
    if to_stdout:
        try:
            sys.stdout.write(metrics.openmetrics(registry))
            sys.stdout.flush()
        except BrokenPipeError:  # the reader closed stdout: the run keeps its exit status
            from mqtool.cli.render import silence_stdout

            silence_stdout(sys.stdout)
    if metrics_file is not None:
        metrics.write_file(metrics_file, registry)


def broker_settings(config: Path | None) -> BrokerSettings:
    """The settings of ``--config`` (every field None without it)."""
    from mqtool.store.broker_config import BrokerSettings, read_broker_settings

    return read_broker_settings(config) if config is not None else BrokerSettings("")


def choose_columns(out: Renderer, columns: str | None) -> None:
    """``--columns``: the streamed table shows these row keys (a usage error when none is given)."""
    if columns is None:
        return
    keys = [k.strip() for k in columns.split(",") if k.strip()]
    if not keys:
        raise typer.BadParameter("expected row keys separated by commas", param_hint="--columns")
    out.columns = keys
