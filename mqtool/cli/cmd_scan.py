"""``mqtool scan``: the data pipeline on Apache Spark (PySpark), for stores that outgrow one machine.

pyspark and pyarrow are imported only when the command runs (through ``mqtool.pipeline``), so
``mqtool --help`` and every other command start without them and work without Java.
"""

import importlib.util
import os
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from mqtool.cli.completion import complete_layout
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import OutputFormat, check_layout, flag
from mqtool.cli.render import Renderer, dumps, styled
from mqtool.errors import StoreLayoutError
from mqtool.findings import Finding, Severity

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

    from mqtool.pipeline.jobs import ScanConfig, ScanResult


def _parse_conf(values: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, found {value!r}", param_hint="--conf")
        pairs.append((key.strip(), val))
    return pairs


def split_label(arg: str) -> tuple[str | None, str]:
    """``LABEL=PATH`` → (LABEL, PATH); a plain path (or a URI) has no label."""
    label, sep, path = arg.partition("=")
    if sep and label and "/" not in label and ":" not in label and path:
        return label, path
    return None, arg


def parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    value = text.strip().lower().removesuffix("ib").removesuffix("b")
    mult = units.get(value[-1:], 1)
    digits = value[:-1] if value[-1:] in units else value
    if not digits.isdigit() or int(digits) <= 0:
        raise typer.BadParameter(f"expected a positive size like 134217728, 128m or 1g, found {text!r}", param_hint="--split-size")
    return int(digits) * mult


def scan(
    paths: Annotated[
        list[str],
        typer.Argument(help="Store roots, Kafka log dirs, Jafka/MetaQ data dirs (globs and URIs pyarrow opens); LABEL=PATH names a source."),
    ],
    out: Annotated[str, typer.Option("--out", "-o", help="Output directory for the Parquet datasets and report.json (local or a URI).")],
    master: Annotated[str | None, typer.Option("--master", help="Spark master URL (default local[*]; spark://, yarn, k8s://...).")] = None,
    conf: Annotated[list[str], typer.Option("--conf", metavar="<str>...", help="Spark setting KEY=VALUE, passed through (repeatable).")] = [],  # noqa: B006
    layout: Annotated[
        str | None,
        typer.Option("--layout", callback=check_layout, autocompletion=complete_layout, help="Force the layout of every PATH: rocketmq, kafka, jafka, metaq."),
    ] = None,
    topic: Annotated[list[str], typer.Option("--topic", metavar="<str>...", help="Only this topic (repeatable; pushed down to the readers).")] = [],  # noqa: B006
    with_body: Annotated[bool, flag("--with-body", help="Keep bodies, values and payloads in the datasets.")] = False,
    split_size: Annotated[str, typer.Option("--split-size", help="Bytes per input partition (a bigger file is read as byte ranges).")] = "128m",
    fail_on: Annotated[Severity, typer.Option("--fail-on", help="Exit 1 when a finding has at least this severity.")] = Severity.error,
    fmt: Annotated[OutputFormat, typer.Option("--format", "-f", metavar="<format>", help="table or json (the report document).")] = OutputFormat.table,
    as_json: Annotated[bool, flag("--json", help="Shorthand for --format json.")] = False,
    overwrite: Annotated[
        bool,
        flag("--overwrite", help="Write into a non-empty --out, replacing an earlier scan's datasets and report.json there (other files are left alone)."),
    ] = False,
    verbose: Annotated[bool, flag("--verbose", "-v", help="Also show Spark's and the JVM's own log on stderr (quiet by default).")] = False,
) -> int:
    """Scan stores on Spark: Parquet datasets of every record, unit and entry, and an integrity report.

    Writes OUT/messages, queue_units, index_entries (RocketMQ), kafka_records, jafka_messages,
    metaq_messages (partitioned by source and topic) and OUT/findings, then OUT/report.json.
    Findings use validate's codes; exit 0 when none reaches --fail-on, 1 when one does, 2 when
    --out is not empty (without --overwrite), 3 when a PATH is not a store, 4 when pyspark or
    Java is missing.  On a terminal stderr shows the stage and the store files read so far."""
    if as_json:
        fmt = OutputFormat.json
    if fmt is OutputFormat.jsonl:
        raise typer.BadParameter("scan prints one report: use table or json", param_hint="--format")
    spark_conf = _parse_conf(conf)
    size = parse_size(split_size)
    local_out = _local_path(out)
    if local_out is not None:
        check_out(out, _local_entries(local_out), overwrite)
    renderer = Renderer(fmt)
    if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("pyarrow") is None:
        renderer.error("mqtool scan needs pyspark and pyarrow: pip install 'mqtool[spark]'")
        return ExitCode.UNSUPPORTED

    import mqtool.pipeline as pipeline
    from mqtool.pipeline import jobs
    from mqtool.pipeline.files import expand

    inputs = []
    for arg in paths:
        label, pattern = split_label(arg)
        matches = expand(pattern)
        if not matches:
            raise StoreLayoutError("no such file or directory", path=pattern)
        for path in matches:
            name = label if label and len(matches) == 1 else (f"{label}:{path}" if label else path)
            inputs.append(jobs.ScanInput(name, path, layout or jobs.detect_layout(path)))
    cfg = jobs.ScanConfig(tuple(inputs), out, with_body=with_body, split_size=size, topics=tuple(topic) or None)
    display = _progress(renderer)
    display.begin([STARTING, *jobs.stage_names(cfg)])
    with display:
        display.stage(STARTING)
        with pipeline.session(master, spark_conf, verbose=verbose) as spark:
            if local_out is None:  # a URI: only Spark's filesystems can look
                check_out(out, jobs.list_out(spark, out), overwrite)
            if overwrite:
                jobs.clear_out(spark, out)
            result = jobs.run(spark, cfg, display if isinstance(display, _Display) else None)
    report = build_report(cfg, result, fail_on)
    jobs.write_text(f"{out.rstrip('/')}/report.json", dumps(report, indent=2) + "\n")
    renderer.document(report, lambda console: render_table(console, report))
    return ExitCode.FINDINGS if not report["ok"] else ExitCode.OK


def _local_path(out: str) -> str | None:
    """``--out`` as a local path (a ``file:`` URI included), or None for another filesystem's URI."""
    from urllib.parse import unquote, urlparse

    from mqtool.pipeline.files import is_uri

    if not is_uri(out) and not out.startswith("file:"):
        return out
    parsed = urlparse(out)
    return unquote(parsed.path) if parsed.scheme == "file" and parsed.netloc in ("", "localhost") else None


def _local_entries(path: str) -> list[str] | None:
    """The names in directory ``path`` (``[]``: absent or empty; None: not a directory)."""
    if not os.path.lexists(path):
        return []
    if not os.path.isdir(path):
        return None
    return sorted(os.listdir(path))


def check_out(out: str, entries: list[str] | None, overwrite: bool) -> None:
    """``--out`` is written into only when it is empty or absent, or with ``--overwrite``: an
    earlier scan's results, or a directory given by mistake, are never replaced unasked."""
    if entries is None:
        raise typer.BadParameter(f"{out} is a file: --out names a directory", param_hint="--out")
    if entries and not overwrite:
        shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
        raise typer.BadParameter(
            f"{out} is not empty ({shown}): give --overwrite to replace an earlier scan's datasets and report.json there, or name another directory",
            param_hint="--out",
        )


#: The first stage the progress display shows (the job's own follow: ``jobs.stage_names``).
STARTING = "starting Spark"


class _Display:
    """The scan's progress on a terminal (stderr), gone when the scan ends: the stage (3/8) with
    its name, and while store files are read, a bar of the files done.  Spark's own console
    progress bar stays off (``spark.ui.showConsoleProgress``)."""

    def __init__(self, console: "Console") -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.fields[step]}", markup=False),
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            TextColumn("{task.fields[files]}", markup=False),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._stages = 0
        self._index = 0
        self._task = self._bar.add_task("", total=None, step="", files="")

    def __enter__(self) -> "_Display":
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def begin(self, stages: "Sequence[str]") -> None:
        self._stages = len(stages)

    def stage(self, name: str) -> None:
        self._index += 1
        step = f"{self._index}/{max(self._stages, self._index)}"
        self._bar.update(self._task, description=name, step=step, completed=0, total=None, files="")

    def files(self, done: int, total: int) -> None:
        self._bar.update(self._task, completed=done, total=max(total, 1), files=f"{done:,}/{total:,} files")
        if done >= total:  # draw the finished count now: the next stage's update may come before the next refresh
            self._bar.refresh()


class _NoDisplay:
    """No progress shown: stderr is not a terminal (a pipe, a file, cron), or ``--quiet``."""

    def __enter__(self) -> "_NoDisplay":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def begin(self, stages: "Sequence[str]") -> None:
        pass

    def stage(self, name: str) -> None:
        pass

    def files(self, done: int, total: int) -> None:
        pass


def _progress(renderer: Renderer) -> "_Display | _NoDisplay":
    """A display when a person watches stderr (a terminal) and did not ask for ``--quiet``; in
    either output format, since the report is printed only after the display is gone."""
    try:
        terminal = renderer.err.isatty()
    except (AttributeError, ValueError):
        terminal = False
    return _Display(renderer.err_console) if terminal and not renderer.quiet else _NoDisplay()


def build_report(cfg: "ScanConfig", result: "ScanResult", fail_on: Severity) -> dict[str, Any]:
    """The report document: validate's finding model (codes, severities, counts) plus the
    datasets, per-topic statistics, UNIQ_KEY duplicates and Kafka offsets."""
    counts = {"error": 0, "warning": 0, "info": 0}
    findings = []
    for row in result.findings:
        level = row.get("severity")  # null: the code's default
        finding = Finding(row["code"], row["path"], row["position"], row["message"], length=row["length"], severity=Severity(level) if level else None)
        counts[finding.level.value] += 1
        findings.append({"source": row["source"], **finding.to_dict()})
    failed = any(n for level, n in counts.items() if Severity(level).rank >= fail_on.rank)
    return {
        "command": "scan",
        "ok": not failed,
        "fail_on": fail_on.value,
        "counts": counts,
        "inputs": [{"source": i.source, "path": i.path, "layout": i.layout} for i in cfg.inputs],
        "out": cfg.out,
        "datasets": result.datasets,
        "rows": result.rows,
        "facts": result.facts,
        "topics": result.topics,
        "uniq_key_duplicates": result.duplicates,
        "kafka_offsets": result.kafka_offsets,
        "findings": findings,
    }


def render_table(console: "Console", report: dict[str, Any]) -> None:
    """The report as tables.  Every cell and line is a ``Text``, never a string rich would parse:
    topics, paths and finding messages are data, and the renderer's consoles (``markup=False``)
    would print a markup tag in one as those characters -- so would any other console's."""
    import humanize
    from rich.table import Table
    from rich.text import Text

    topics = Table(title=Text(f"scan → {report['out']}"), title_justify="left")
    columns: tuple[tuple[str, Literal["left", "right"]], ...] = (
        ("source", "left"),
        ("layout", "left"),
        ("topic", "left"),
        ("messages", "right"),
        ("bytes", "right"),
        ("queues", "right"),
        ("first", "left"),
        ("last", "left"),
    )
    for col, just in columns:
        topics.add_column(col, justify=just, overflow="fold")
    for t in report["topics"]:
        cells = (
            t["source"],
            t["layout"],
            str(t["topic"]),
            humanize.intcomma(t["messages"]),
            humanize.naturalsize(t["bytes"] or 0, binary=True),
            str(t["queues"]),
            _ms(t["first_timestamp"]),
            _ms(t["last_timestamp"]),
        )
        topics.add_row(*(Text(str(cell)) for cell in cells))
    console.print(topics)
    dups = report["uniq_key_duplicates"]
    if dups.get("keys"):
        console.print(Text(f"UNIQ_KEY duplicates: {dups['keys']} key(s) stored {dups['copies']} times in all"))
    if report["findings"]:
        table = Table(title=Text("findings"), title_justify="left")
        for col in ("severity", "code", "where", "message"):
            table.add_column(col, overflow="fold")
        for f in report["findings"]:
            style = {"error": "red", "warning": "yellow"}.get(f["severity"], "cyan")
            where = f["path"] + (f":{f['position']}" if f["position"] is not None else "")
            table.add_row(styled(f["severity"], style), Text(f["code"]), Text(where), Text(f["message"]))
        console.print(table)
    c = report["counts"]
    rows = ", ".join(f"{humanize.intcomma(n)} {name}" for name, n in report["rows"].items())
    console.print(
        Text(
            f"{'OK' if report['ok'] else 'FAILED'}: {c['error']} error(s), {c['warning']} warning(s), {c['info']} info; "
            f"{rows}; datasets and report.json in {report['out']} (fail on {report['fail_on']})"
        )
    )


def _ms(value: int | None) -> str:
    """A millisecond timestamp as ISO-8601 with its zone (local, or UTC with ``--utc``), as every
    other command prints times."""
    from mqtool.cli.times import iso_ms

    return "-" if value is None else str(iso_ms(value, timespec="seconds"))
