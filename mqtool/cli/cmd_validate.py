"""``mqtool validate``: every inconsistency a store can have, as findings with stable codes."""

import contextlib
import enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mqtool.cli.common import broker_settings, pick_format, report_metrics
from mqtool.cli.completion import complete_check_families, complete_finding_code
from mqtool.cli.exit_codes import ExitCode
from mqtool.cli.options import (
    INT,
    BrokerConfigOpt,
    BrokerVersionOpt,
    IndexNumOpt,
    IndexSlotsOpt,
    JsonlOpt,
    JsonOpt,
    LayoutOpt,
    MetricsFileOpt,
    OutputFormat,
    StorePathArg,
    flag,
)
from mqtool.cli.render import Column, Renderer, dumps, paged, render_findings_by_cause, short_path, styled
from mqtool.findings import FAMILIES, Severity

if TYPE_CHECKING:
    from rich.console import Console

    from mqtool.findings import Finding
    from mqtool.ops.validate import ValidationReport


class ValidateFormat(str, enum.Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    junit = "junit"
    html = "html"
    openmetrics = "openmetrics"


FINDING_COLUMNS = [
    Column("severity", "SEVERITY", 8),
    Column("code", "CODE", 24),
    Column("where", "WHERE", 60),
    Column("message", "MESSAGE"),
]


def _article(word: str) -> str:
    """'an' before a vowel, else 'a'."""
    return "an" if word[:1] in "aeiou" and word else "a"


def _parse_checks(value: str | None) -> frozenset[str]:
    if not value:
        return frozenset(FAMILIES)
    chosen = {v.strip() for v in value.split(",") if v.strip()}
    unknown = chosen - set(FAMILIES)
    if unknown:
        raise typer.BadParameter(f"unknown check family {sorted(unknown)}; choose from {', '.join(FAMILIES)}", param_hint="--checks")
    return frozenset(chosen)


def validate(
    path: StorePathArg,
    layout: LayoutOpt = None,
    checks: Annotated[
        str | None,
        typer.Option("--checks", autocompletion=complete_check_families, help=f"Comma-separated check families (default all): {', '.join(FAMILIES)}."),
    ] = None,
    fail_on: Annotated[Severity, typer.Option("--fail-on", help="Exit 1 when a finding has at least this severity.")] = Severity.error,
    max_findings: Annotated[int | None, typer.Option("--max-findings", min=0, metavar=INT, help="Keep at most this many findings (counts stay exact).")] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, metavar=INT, help="Parallel processes (default: the number of cores).")] = None,
    commitlog_file_size: Annotated[
        int | None, typer.Option("--commitlog-file-size", min=1, metavar=INT, help="CommitLog file size, when not the one detected from the files.")
    ] = None,
    cq_file_size: Annotated[int | None, typer.Option("--cq-file-size", min=20, metavar=INT, help="ConsumeQueue file size, when not the one detected.")] = None,
    index_slots: IndexSlotsOpt = None,
    index_num: IndexNumOpt = None,
    config: BrokerConfigOpt = None,
    broker_version: BrokerVersionOpt = None,
    deep: Annotated[
        bool,
        flag(
            "--deep",
            help="Kafka: also decode every record (varint framing, record count, offset/timestamp deltas, decompression, inner messages).",
        ),
    ] = False,
    fmt: Annotated[
        ValidateFormat, typer.Option("--format", "-f", metavar="<format>", help="table, json (one document), jsonl (findings), junit (XML), html (report), openmetrics.")
    ] = ValidateFormat.table,
    metrics_file: MetricsFileOpt = None,
    all_files: Annotated[bool, flag("--all", help="List every file in the table, not only those with findings.")] = False,
    ignore: Annotated[
        list[str] | None,
        typer.Option(
            "--ignore",
            metavar="<code>...",
            autocompletion=complete_finding_code,
            help="Leave findings of this code out of the report and the verdict (repeatable; counted under 'ignored').",
        ),
    ] = None,
    as_json: JsonOpt = False,
    as_jsonl: JsonlOpt = False,
) -> int:
    """Check segment continuity, every checksum and every cross-file reference of a store.

    Exit 0 when no finding reaches --fail-on, 1 when one does, 3 when PATH is not a store."""
    from mqtool.findings import layout_families
    from mqtool.layouts import detect_layout
    from mqtool.ops.validate import ValidateOptions, default_jobs, validate_path

    fmt = pick_format(fmt, as_json, as_jsonl)
    if fmt is ValidateFormat.html:
        from mqtool.ops.report.html import require

        require()  # before the work: exit 4 naming mqtool[report] when it is not installed
    detected = detect_layout(path, layout)
    chosen = _parse_checks(checks)
    if checks:
        foreign = sorted(chosen - set(layout_families(detected)))
        if foreign:  # they would check nothing and report the store OK
            raise typer.BadParameter(
                f"{', '.join(foreign)}: no such check for a {detected} store (its families: {', '.join(layout_families(detected))})",
                param_hint="--checks",
            )
    rocketmq_only = {"--commitlog-file-size": commitlog_file_size, "--cq-file-size": cq_file_size, "--index-hash-slots": index_slots, "--index-num": index_num}
    given = [flag for flag, value in rocketmq_only.items() if value is not None]
    if given and detected != "rocketmq":  # accepted and ignored, they read as if they had been applied
        raise typer.BadParameter(f"{', '.join(given)} apply to RocketMQ stores, not to a {detected} store")
    if broker_version is not None and detected not in ("rocketmq", "kafka"):
        raise typer.BadParameter(f"--broker-version models a RocketMQ or Kafka broker, not a {detected} store's")
    if deep and detected != "kafka":
        raise typer.BadParameter(f"--deep decodes Kafka records; a {detected} store's records are always decoded")
    cfg = broker_settings(config)
    if detected == "rocketmq":
        commitlog_file_size = commitlog_file_size or cfg.commitlog_file_size
        cq_file_size = cq_file_size or cfg.cq_file_size
        index_slots = index_slots or cfg.index_hash_slot_num
        index_num = index_num or cfg.index_num
    from mqtool.findings import CODES
    from mqtool.ops.report import stats_rows

    unknown = sorted({code for code in ignore or () if code not in CODES})
    if unknown:
        raise typer.BadParameter(f"expected finding codes (see the findings reference), found {', '.join(unknown)}", param_hint="--ignore")
    options = ValidateOptions(
        ignore=frozenset(ignore or ()),
        checks=chosen,
        fail_on=fail_on,
        max_findings=max_findings,
        jobs=jobs or default_jobs(),
        commitlog_file_size=commitlog_file_size,
        cq_file_size=cq_file_size,
        index_hash_slot_num=index_slots,
        index_num=index_num,
        deep=deep,
        broker_version=broker_version,
        version_hints=cfg.version_hints,
        config_path=str(config) if config is not None else None,
        timer_precision_ms=cfg.timer_precision_ms if detected == "rocketmq" else None,
        message_index_enable=cfg.message_index_enable if detected == "rocketmq" else None,
        rows=stats_rows(str(detected)) if fmt is ValidateFormat.html else None,  # the page's stats: from this reading
    )
    out = Renderer(
        OutputFormat.table
        if fmt in (ValidateFormat.table, ValidateFormat.junit, ValidateFormat.html)
        else OutputFormat.json
        if fmt is ValidateFormat.openmetrics
        else OutputFormat(fmt.value)
    )
    commitlog = Path(path) / "commitlog"
    total = sum(p.stat().st_size for p in commitlog.glob("*") if p.is_file()) if detected == "rocketmq" and commitlog.is_dir() else 0
    if detected == "kafka" and fmt is ValidateFormat.table:
        from mqtool.store.kafka import open_kafka, total_log_bytes

        total = total_log_bytes(open_kafka(path))
    # --format html: the page's recover and clean plans, stats and lag take this validation's
    # reading of each log file (``ops.report.one_judgement``), as ``report`` does
    judging: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if fmt is ValidateFormat.html:
        from mqtool.ops.report import one_judgement

        judging = one_judgement(str(detected))
    with judging:
        with out.progress(total if fmt is ValidateFormat.table else 0, "validate") as advance:
            report = validate_path(path, options, detected, advance)
        with out.whole_answer():  # a reader closing stdout early leaves the verdict its exit code
            if fmt is ValidateFormat.json:
                out.out.write(dumps(report.to_dict(), indent=2) + "\n")
            elif fmt is ValidateFormat.jsonl:
                out.stream((f.to_dict() for f in report.findings), FINDING_COLUMNS)
            elif fmt is ValidateFormat.junit:
                out.out.write(render_junit(report))
            elif fmt is ValidateFormat.html:
                from mqtool.cli import settings
                from mqtool.ops.report import gather
                from mqtool.ops.report.html import render_html

                out.out.write(render_html(gather(path, str(detected), fail_on=fail_on, jobs=options.jobs, validation=report), utc=settings.utc()))
            elif fmt is ValidateFormat.table:
                paged(out.console, lambda console: render_table(console, report, all_files=all_files))
            out.out.flush()
    if report.truncated:
        out.warn(f"only the first {options.max_findings} findings are listed; counts include all of them")
    code = ExitCode.FINDINGS if report.failed else ExitCode.OK
    report_metrics("validate", report.to_dict(), code, to_stdout=fmt is ValidateFormat.openmetrics, metrics_file=metrics_file)
    return code


def render_table(console: "Console", report: "ValidationReport", *, all_files: bool = False) -> None:
    """The verdict and counts first; then what is wrong, grouped by cause (a knock-on finding --
    one whose ``cause`` names another finding of the report -- is folded under its cause, with
    its count by code); then the files with findings (every file with ``all_files``).
    Identifiers (file names, codes, positions) are never broken: messages wrap, and the file
    table drops its least useful columns when the terminal is narrow."""
    import humanize
    from rich import box
    from rich.table import Table
    from rich.text import Text

    c = report.counts
    verdict = "FAILED" if report.failed else "OK"
    checked = humanize.naturalsize(report.bytes_checked, binary=True)
    console.print(
        Text.assemble(
            (verdict, "bold red" if report.failed else "bold green"),
            f": {c['error']} error(s), {c['warning']} warning(s), {c['info']} info; {len(report.files)} files, {checked} of "
            f"{'CommitLog' if report.layout == 'rocketmq' else 'log data'} checked (fail on {report.options.fail_on.value})",
        )
    )
    console.print(Text(f"{report.layout} store {report.root}", style="dim"))
    broker = report.facts.get("broker")
    if broker and report.layout == "kafka":  # the Kafka whose load the findings speak of
        console.print(
            Text(
                f"broker modelled: Kafka {broker['broker_version']} ({broker['source']}); "
                f"its next start runs {_article(broker['recovery'])} {broker['recovery']} recovery",
                style="dim",
            ),
            overflow="fold",
        )
    elif broker:  # RocketMQ: the broker whose recovery the findings speak of
        start = broker.get("recovery_starts_at") or {}
        console.print(
            Text(
                f"broker modelled: RocketMQ {broker['broker_version']} ({broker['source']}); its {broker['recovery']} recovery starts at {start.get('file', '-')}",
                style="dim",
            ),
            overflow="fold",
        )
    if report.ignored:
        ignored = ", ".join(f"{code} x{n}" for code, n in sorted(report.ignored.items()))
        console.print(Text(f"ignored (--ignore): {ignored}", style="dim"), overflow="fold")
    render_findings_by_cause(console, report.findings, report.root, heading=None if report.failed or c["warning"] else "notes")
    rows = [s for s in report.files if all_files or s.errors or s.warnings]
    if not rows:
        if not all_files and report.files:
            console.print(Text(f"every one of the {len(report.files)} files is clean (--all lists them)", style="dim"))
        return
    console.print()
    width = max(len(_short(s.path, report.root)) for s in rows)
    # file, status, findings always; then records, size, valid bytes as the width allows
    optional = [("records", 9), ("size", 10), ("valid bytes", 13)]
    room = console.width - (width + 2) - 9 - 9
    keep = []
    for name, need in optional:
        if room >= need:
            keep.append(name)
            room -= need
    files = Table(box=box.SIMPLE_HEAD, pad_edge=False, title="files with findings" if not all_files else "files", title_justify="left")
    files.add_column("file", no_wrap=True, min_width=width)
    files.add_column("status", no_wrap=True)
    for name in ("records", "valid bytes", "size"):
        if name in keep:
            files.add_column(name, justify="right", no_wrap=True)
    files.add_column("findings", justify="right", no_wrap=True)
    for s in rows:
        style = {"error": "red", "warning": "yellow"}.get(s.status, "green")
        n = s.errors + s.warnings + s.infos
        cells: list[str | Text] = [_short(s.path, report.root), styled(s.status, style)]
        if "records" in keep:
            cells.append(humanize.intcomma(s.records))
        if "valid bytes" in keep:
            cells.append(humanize.intcomma(s.valid_bytes) if s.valid_bytes is not None else "-")
        if "size" in keep:
            cells.append(humanize.naturalsize(s.size, binary=True))
        cells.append(str(n) if n else "")
        files.add_row(*cells)
    console.print(files)


_short = short_path


def render_junit(report: "ValidationReport") -> str:
    """One testsuite per check family, one testcase per file and family; findings at or above
    --fail-on are failures, the rest go to system-out."""
    from xml.sax.saxutils import escape, quoteattr

    by_case: dict[tuple[str, str], list[Finding]] = {}
    for s in report.files:
        by_case.setdefault((s.family if s.family in FAMILIES else "files", s.path), [])
    for f in report.findings:
        by_case.setdefault((f.family, f.path), []).append(f)
    rank = report.options.fail_on.rank
    suites = []
    for family in FAMILIES:
        cases = [(path, items) for (fam, path), items in sorted(by_case.items()) if fam == family]
        if not cases:
            continue
        failures = sum(1 for _, items in cases if any(i.level.rank >= rank for i in items))
        body = []
        for path, items in cases:
            bad = [i for i in items if i.level.rank >= rank]
            other = [i for i in items if i.level.rank < rank]
            case = f"    <testcase classname={quoteattr('mqtool.validate.' + family)} name={quoteattr(_short(path, report.root) or path)}>"
            if bad:
                text = "\n".join(f"{i.code} {i.path}:{i.position if i.position is not None else '-'}: {i.message}" for i in bad)
                case += f"\n      <failure type={quoteattr(bad[0].code)} message={quoteattr(bad[0].message[:200])}>{escape(text)}</failure>"
            if other:
                case += "\n      <system-out>" + escape("\n".join(f"{i.level.value} {i.code}: {i.message}" for i in other)) + "</system-out>"
            case += "\n    </testcase>"
            body.append(case)
        suites.append(
            f'  <testsuite name={quoteattr("mqtool.validate." + family)} tests="{len(cases)}" failures="{failures}" errors="0">\n' + "\n".join(body) + "\n  </testsuite>"
        )
    return '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="mqtool validate">\n' + "\n".join(suites) + "\n</testsuites>\n"
