"""The one renderer: tables for humans, JSON documents and JSON lines for machines.

* stdout carries data, stderr diagnostics and progress.
* JSON is written with ``json.dumps`` (never through rich): one document for report commands,
  one object per line for streaming commands.  ``--format json`` on a streaming command writes
  one JSON array, streamed element by element (memory stays flat).
* Tables go through rich, which drops colour when ``NO_COLOR`` is set or stdout is not a TTY.
  Streaming tables are written as aligned plain lines so a million rows cost no memory.
"""

from __future__ import annotations

import base64
import codecs
import enum
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from mqtool.cli.options import BodyDecode, OutputFormat

if TYPE_CHECKING:
    from mqtool.findings import Finding

__all__ = ["BodyDecode", "Column", "OutputClosed", "OutputFormat", "Renderer", "dumps", "encode_bytes", "markup", "render_generic", "styled"]


class _Console(Console):
    """rich's Console answers a closed pipe (``mqtool info | head -1``) with SystemExit(1), which
    bypassed the exit-code mapping: a reader that stopped early is not a failure.  Raise the
    BrokenPipeError again so the renderer turns it into OutputClosed like every other write."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError()


class OutputClosed(Exception):
    """stdout was closed by the reader (``mqtool dump ... | head``): stop quietly."""


def encode_bytes(data: bytes | None, mode: BodyDecode | str = BodyDecode.base64) -> str | None:
    """Bytes for JSON/table output.  ``utf8`` falls back to ``\\x`` escapes for invalid bytes."""
    if data is None:
        return None
    mode = BodyDecode(mode)
    if mode is BodyDecode.none:
        return None
    if mode is BodyDecode.hex:
        return data.hex()
    if mode is BodyDecode.utf8:
        return data.decode("utf-8", "backslashreplace")
    return base64.b64encode(data).decode("ascii")


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    width: int = 0  # 0: the last, free-width column
    align: str = "<"
    fit: int = 0  # the free last column: the line width to shorten it to (0: LAST_COLUMN_WIDTH)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, default=_json_default)


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """JSON text; one reused encoder for single lines (``json.dumps`` with options builds a new
    encoder on every call, which showed up as a third of ``dump --jsonl``)."""
    if indent is None:
        return _LINE_ENCODER.encode(obj)
    return json.dumps(obj, default=_json_default, ensure_ascii=False, indent=indent)


class Renderer:
    def __init__(
        self,
        fmt: OutputFormat | str = OutputFormat.table,
        *,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        quiet: bool = False,
    ) -> None:
        self.fmt = OutputFormat(fmt)
        #: ``--columns``: the row keys a streamed table shows (None: the table's own choice)
        self.columns: list[str] | None = None
        self.out = stdout or sys.stdout
        self.err = stderr or sys.stderr
        from mqtool.cli import settings

        self.quiet = quiet or settings.quiet()
        # markup=False: strings come from the data (topics, keys, paths, finding messages) and
        # a "[/x]" in one must print as is, not be parsed as rich markup (or raise MarkupError);
        # deliberate styling goes through ``styled`` / ``markup`` below.  emoji=False likewise: a
        # topic "orders:smile:" printed as "orders😄".
        self.console = _Console(file=self.out, highlight=False, soft_wrap=False, markup=False, emoji=False)
        self.err_console = _Console(file=self.err, highlight=False, stderr=True, markup=False, emoji=False)

    # --- documents (report commands) ---------------------------------------------------
    def document(self, doc: Any, table: Callable[[Console], None]) -> None:
        """Write the command's whole answer (its verdict is known by now): see :meth:`whole_answer`."""
        with self.whole_answer():
            self._document(doc, table)

    @contextmanager
    def whole_answer(self) -> Iterator[None]:
        """Around the output of a command whose verdict is known before it writes: a reader that
        closes stdout early (``mqtool validate ... | head``) silences the rest of it, and the
        command still returns its verdict's exit code (streamed output -- ``dump`` -- stops
        instead: ``OutputClosed`` ends the command with exit 0)."""
        try:
            yield
        except (BrokenPipeError, OutputClosed):
            silence_stdout(self.out)

    def _document(self, doc: Any, table: Callable[[Console], None]) -> None:
        if self.fmt is OutputFormat.json:
            self.out.write(dumps(doc, indent=2) + "\n")
        elif self.fmt is OutputFormat.jsonl:
            self.out.write(dumps(doc) + "\n")
        else:
            table(self.console)
        self.out.flush()

    # --- streams (dump, query, findings) ------------------------------------------------
    def stream(self, rows: Iterable[Mapping[str, object]], columns: list[Column]) -> int:
        """Write rows as they come; returns how many were written."""
        try:
            return self._stream(rows, columns)
        except BrokenPipeError:
            raise OutputClosed() from None

    def _stream(self, rows: Iterable[Mapping[str, object]], columns: list[Column]) -> int:
        count = 0
        write = self.out.write
        if self.fmt is OutputFormat.jsonl:
            encode = _LINE_ENCODER.encode
            for row in rows:
                write(encode(row) + "\n")
                count += 1
        elif self.fmt is OutputFormat.json:
            write("[")
            for row in rows:
                write(",\n " if count else "\n ")
                write(dumps(row))
                count += 1
            write("\n]\n" if count else "]\n")
        else:
            columns = self.chosen_columns(columns)
            if self.columns:  # chosen keys: each column as wide as the first rows need
                import itertools

                rows = iter(rows)
                head = list(itertools.islice(rows, 100))
                columns = [replace(c, width=max([len(c.header), *(len(_cell(r.get(c.key))) for r in head)])) if c.width else c for c in columns]
                rows = itertools.chain(head, rows)
            width = terminal_width(self.out)
            if width is not None:
                columns = fit_columns(columns, width, drop=not self.columns)
            header_done = False
            for row in rows:
                if not header_done:
                    write(_line({c.key: c.header for c in columns}, columns) + "\n")
                    header_done = True
                write(_line(row, columns) + "\n")
                count += 1
        self.out.flush()
        return count

    def stream_encoded(self, batches: Iterable[bytes]) -> None:
        """Write JSON lines already encoded (UTF-8, each line ending in a newline), a batch per
        write: as JSON lines, or (``--format json``) as the elements of one array, exactly as
        :meth:`stream` writes the same rows.  The bytes go to the binary stream under stdout when
        it encodes UTF-8 (no decode and encode again of every row); otherwise through it."""
        if self.fmt not in (OutputFormat.jsonl, OutputFormat.json):
            raise ValueError("a table is streamed from rows (stream), not from JSON text")
        stream = self.out
        binary = getattr(stream, "buffer", None)
        encoding = getattr(stream, "encoding", None)
        try:
            if binary is not None and encoding and codecs.lookup(encoding).name == "utf-8":
                stream.flush()
                _write_batches(self.fmt, batches, binary.write)
                binary.flush()
            else:
                _write_batches(self.fmt, batches, lambda data: stream.write(data.decode("utf-8", "surrogateescape")))
            stream.flush()
        except BrokenPipeError:
            raise OutputClosed() from None

    def chosen_columns(self, columns: list[Column]) -> list[Column]:
        """``--columns`` (``self.columns``: row keys, in the order given) or the table's own."""
        if not self.columns:
            return columns
        known = {c.key: c for c in columns}
        picked = [known.get(key) or Column(key, key.upper().replace("_", " "), max(12, len(key))) for key in self.columns]
        return [replace(c, width=c.width or max(12, len(c.key))) for c in picked[:-1]] + [replace(picked[-1], width=0)]

    # --- diagnostics ---------------------------------------------------------------------
    def warn(self, message: str) -> None:
        if not self.quiet:
            self.err.write(f"mqtool: {message}\n")
            self.err.flush()

    def error(self, message: str) -> None:
        self.err.write(f"mqtool: error: {message}\n")
        self.err.flush()

    def findings(self, findings: Iterable[Finding]) -> int:
        """Findings on stderr, one line each: ``CODE path:position: message`` (errors as errors,
        warnings as warnings, infos not shown).  Returns how many are errors (exit 1)."""
        from mqtool.findings import Severity, finding_text

        errors = 0
        for finding in findings:
            if finding.level is Severity.error:
                self.error(finding_text(finding))
                errors += 1
            elif finding.level is Severity.warning:
                self.warn(finding_text(finding))
        return errors

    @contextmanager
    def progress(self, total: int, description: str, *, streaming: bool = False) -> Iterator[Callable[[int], None]]:
        """A byte progress bar on stderr when a person is watching, else a no-op.

        Shown only when stderr is a TTY and (for streaming commands) stdout is not the same
        terminal, and never in JSON modes of report commands.
        """
        enabled = not self.quiet and _isatty(self.err) and (not streaming or not _isatty(self.out)) and (streaming or self.fmt is OutputFormat.table) and total > 0
        if not enabled:
            yield lambda n: None
            return
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=self.err_console,
            transient=True,
        ) as bar:
            task = bar.add_task(description, total=total)
            yield lambda n: bar.advance(task, n)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


#: The free last column of a streamed table is cut here so one row stays one line.
LAST_COLUMN_WIDTH = 100
_CONTROL = {i: f"\\x{i:02x}" for i in range(32)} | {0x7F: "\\x7f", 0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        text = ",".join(f"{k}={v}" for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        text = ",".join(str(v) for v in value)
    else:
        text = str(value)
    return text.translate(_CONTROL)


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The width a streamed table is laid out for: ``$COLUMNS``, else the terminal's when
    ``stream`` is one; None (every column, whole) when piped with no ``$COLUMNS``, as ``ls``."""
    import shutil

    if os.environ.get("COLUMNS", "").isdigit() or _isatty(stream or sys.stdout):
        return max(40, shutil.get_terminal_size((80, 24)).columns)
    return None


def fit_columns(columns: list[Column], width: int, *, drop: bool = True) -> list[Column]:
    """The leading columns that fit ``width`` with at least 16 characters left for the last,
    free-width one (when the table has one; it is kept, the columns before it are dropped from
    the right).  Every kept fixed column keeps its whole width: an identifier or a number is
    never cut; only the free last column is shortened (``…``) to the room left.  ``drop``
    False (columns the user chose): every column is kept, however wide the line."""
    free = columns[-1] if columns and not columns[-1].width else None
    fixed = columns[:-1] if free is not None else list(columns)
    keep: list[Column] = []
    used = 0
    for col in fixed:
        need = col.width + (2 if keep else 0)
        if drop and keep and used + need + (18 if free is not None else 0) > width:
            break
        keep.append(col)
        used += need
    if free is not None:
        keep.append(replace(free, width=0, fit=width))
    return keep


def _line(row: Mapping[str, object], columns: list[Column]) -> str:
    parts: list[str] = []
    used = 0
    for col in columns:
        text = _cell(row.get(col.key))
        if col.width:
            text = f"{text:{col.align}{col.width}}"  # never cut: a longer value pushes the rest right
        else:
            room = max(8, col.fit - used - 2 * bool(parts)) if col.fit else LAST_COLUMN_WIDTH
            if len(text) > room:
                text = text[: room - 1] + "…"
        parts.append(text)
        used += len(text) + 2 * (len(parts) > 1)
    return "  ".join(parts).rstrip()


def styled(text: str, style: str) -> Text:
    """``text`` (data: never parsed as markup) in ``style``."""
    return Text(str(text), style=style)


def markup(template: str, *data: object) -> Text:
    """``template`` (mqtool's own rich markup) with ``{}`` fields filled by escaped ``data``."""
    return Text.from_markup(template.format(*(escape(str(d)) for d in data)), emoji=False)


def render_generic(console: Console, doc: Mapping[str, object], title: str | None = None) -> None:
    """Any layout's info document: scalars as facts, lists of records as tables, nested
    documents recursively.  Byte sizes (keys ending in ``size``/``bytes``) and ``*_timestamp``
    values are humanized (the table of ``info`` on Kafka, Jafka and MetaQ, and of ``dump
    kafka-checkpoint``)."""
    from rich.table import Table

    facts = Table(show_header=False, box=None, pad_edge=False, title=title, title_justify="left")
    facts.add_column(style="bold")
    facts.add_column()
    nested: list[tuple[str, Mapping[str, object] | list[Mapping[str, object]]]] = []
    for key, value in doc.items():
        if isinstance(value, dict):
            nested.append((key, value))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            nested.append((key, value))
        else:
            facts.add_row(key.replace("_", " "), _human(key, value))
    console.print(facts)
    for key, value in nested:
        if isinstance(value, Mapping):
            render_generic(console, value, key.replace("_", " "))
            continue
        columns = list(dict.fromkeys(k for row in value for k in row))
        fit_table(console, key.replace("_", " "), [c.replace("_", " ") for c in columns], [[_human(c, row.get(c)) for c in columns] for row in value])


def fit_table(console: Console, title: str, headers: list[str], rows: list[list[str]], *, justify: list[str] | None = None) -> None:
    """A table whose cells are never broken (names, offsets, numbers, times): headers wrap at
    their spaces only; when the columns do not fit the terminal, the last ones are left out and
    named under the table (``--json`` has them all), and when fewer than three would be left,
    each row is printed as a block of ``header: value`` lines instead.  Only a first-column name
    longer than the room left (at least 24 characters) is folded."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    def natural(i: int) -> int:
        head = max(len(word) for word in headers[i].split()) if headers[i].strip() else 1
        return max([head, *(len(r[i]) for r in rows)])

    widths = [natural(i) for i in range(len(headers))]

    def total(keep: int, first: int) -> int:  # padding either side, a divider between, the edges
        return first + sum(widths[1:keep]) + 3 * keep + 1

    # the first column (the row's name) may give way down to 24 characters: a name longer than
    # the room left is folded, every other cell stays whole
    first_min = min(widths[0], 24)
    keep = len(headers)
    while keep > 1 and total(keep, first_min) > console.width:
        keep -= 1
    widths[0] = max(first_min, min(widths[0], console.width - total(keep, 0)))
    if keep < min(3, len(headers)):
        console.print(Text(title, style="bold"))
        label = max(len(h) for h in headers)
        for row in rows:
            for h, cell in zip(headers, row):
                console.print(Text.assemble((f"  {h:<{label}}  ", "dim"), cell), overflow="fold")
            console.print()
        return
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for i in range(keep):
        table.add_column(headers[i], width=widths[i], overflow="fold", justify=justify[i] if justify else "left")  # type: ignore[arg-type]
    for row in rows:
        table.add_row(Text(row[0], overflow="fold"), *(Text(cell, no_wrap=True) for cell in row[1:keep]))
    console.print(table)
    if keep < len(headers):
        hidden = ", ".join(headers[keep:])
        console.print(Text(f"(not shown at this width: {hidden}; widen the terminal or use --json)", style="dim"), overflow="fold")


def _human(key: str, value: Any) -> str:
    import humanize

    from mqtool.cli.times import iso_ms

    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and (key.endswith("size") or key.endswith("bytes")):
        return humanize.naturalsize(value, binary=True)
    if isinstance(value, int) and key.endswith("timestamp") and value > 0:
        return f"{iso_ms(value)}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
    return str(value)


def paged(console: Console, draw: Callable[[Console], None]) -> None:
    """``draw(console)``, through a pager (``$PAGER``, as ``pydoc`` picks it) when the console is
    a terminal and the output is taller than it; straight out when piped or short."""
    if not console.is_terminal:
        draw(console)
        return
    with console.capture() as captured:
        draw(console)
    text = captured.get()
    if text.count("\n") < console.height:
        console.file.write(text)
        console.file.flush()
        return
    with console.pager(styles=True):
        draw(console)


#: a store with at most this many rows (files, queues, partitions) lists every row; a larger one
#: only the rows with something to say, unless ``--all``
ALL_ROWS_UP_TO = 20


def rows_to_show(rows: list[Any], interesting: Callable[[Any], bool], *, all_rows: bool) -> list[Any]:
    """Every row with ``--all`` or when there are at most ``ALL_ROWS_UP_TO``; otherwise only
    those ``interesting`` says have something to say (findings, damage, an unhealthy end)."""
    if all_rows or len(rows) <= ALL_ROWS_UP_TO:
        return rows
    return [r for r in rows if interesting(r)]


def rows_left_out(console: Console, shown: int, total: int, what: str) -> None:
    """The one dim line saying how many healthy rows a table left out (``--all`` lists them)."""
    if shown < total:
        console.print(Text(f"{total - shown} of the {total} {what} have nothing to report (--all lists them)", style="dim"), overflow="fold")


def short_path(path: str, root: str) -> str:
    """``path`` relative to the store ``root`` when it lies under it."""
    return path[len(root) :].lstrip("/") if root and path.startswith(root) else path


def render_findings_by_cause(console: Console, findings: Iterable[Finding], root: str | tuple[str, ...], *, heading: str | None = None) -> int:
    """What is wrong, grouped by cause: one block per finding that is not a knock-on (a knock-on
    finding -- one whose ``cause`` names another finding of the list -- is folded under its
    cause, counted by code).  Infos are shown only when there is nothing worse.  Paths are shown
    relative to ``root`` (or to the first of several roots they lie under).  Identifiers
    (paths, codes, positions) are folded, never cut.  Returns how many blocks were printed."""
    from rich.padding import Padding

    every = list(findings)
    shown = [f for f in every if f.level.value != "info"] or every
    known = {f.ref for f in shown}

    def folded_under(f: Finding) -> bool:
        return f.cause is not None and f.cause in known and f.cause != f.ref

    knock_ons: dict[object, list[Finding]] = {}
    for f in shown:
        if folded_under(f):
            knock_ons.setdefault(f.cause, []).append(f)
    causes = [f for f in shown if not folded_under(f)]
    if not causes:
        return 0
    console.print()
    bad = any(f.level.value != "info" for f in causes)
    console.print(Text(heading or ("what is wrong" if bad else "notes"), style="bold"))
    for f in causes:
        style = {"error": "red", "warning": "yellow"}.get(f.level.value, "cyan")
        roots = (root,) if isinstance(root, str) else root
        path = next((short_path(f.path, r) for r in roots if r and f.path.startswith(r)), f.path)
        where = path + (f":{f.position}" if f.position is not None else "")
        head = Text.assemble((f"{f.level.value:<8}", style), (f.code, "bold"), "  ", where)
        head.no_wrap = False
        console.print(head, overflow="fold")
        console.print(Padding(Text(f.message), (0, 0, 0, 8), expand=False), overflow="fold")
        under = knock_ons.get(f.ref, [])
        if under:
            by_code: dict[str, int] = {}
            for k in under:
                by_code[k.code] = by_code.get(k.code, 0) + 1
            detail = ", ".join(f"{code} x{n}" for code, n in sorted(by_code.items(), key=lambda kv: -kv[1]))
            console.print(Padding(Text(f"+ {len(under)} knock-on finding(s) caused by it: {detail}", style="dim"), (0, 0, 0, 8), expand=False), overflow="fold")
    return len(causes)


def finding_from_dict(d: dict[str, Any]) -> Finding:
    """A finding an ops document holds as a dict (``Finding.to_dict``), back as a ``Finding``
    for ``render_findings_by_cause``."""
    from mqtool.findings import Finding, FindingRef, Severity

    cause = d.get("cause")
    return Finding(
        code=str(d["code"]),
        path=str(d["path"]),
        position=d.get("position"),
        message=str(d.get("message", "")),
        severity=Severity(d["severity"]) if d.get("severity") else None,
        cause=FindingRef(str(cause["code"]), str(cause["path"]), cause.get("position")) if isinstance(cause, dict) else None,
    )


#: how a log's data may end in a healthy store (anything else: torn, partial, corrupt, unreadable)
HEALTHY_ENDS = frozenset({"eof", "zeros", "blank", "in-progress", None})  # in-progress: a live writer's tail, not damage


def _write_batches(fmt: OutputFormat, batches: Iterable[bytes], write: Callable[[bytes], object]) -> None:
    """``Renderer.stream_encoded``'s writes: JSON lines as they are, or ``--format json``'s array
    (a JSON text holds no raw newline: each line's newline is where a separator goes)."""
    if fmt is OutputFormat.jsonl:
        for batch in batches:
            write(batch)
        return
    count = 0
    write(b"[")
    for batch in batches:
        if batch:
            write(b",\n " if count else b"\n ")
            write(batch[:-1].replace(b"\n", b",\n "))
            count += 1
    write(b"\n]\n" if count else b"]\n")


def silence_stdout(stream: Any = None) -> None:
    """After EPIPE, point stdout at /dev/null so later writes and the interpreter's final flush
    stay quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, (stream or sys.stdout).fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
