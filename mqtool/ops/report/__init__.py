"""The store report (``mqtool report``, ``mqtool validate --format html``): one plain data model
gathered from the ops every other command uses -- validate (verdict, findings with their causes,
files), the recover plan and the clean plan (planned only, never applied), stats (topics, bytes
written, disk-full forecast) and lag -- and nothing judged from bytes here.

The model is layout-independent: each file belongs to a *log* (RocketMQ ``commitlog``,
``consumequeue/<topic>/<queue>``, ``index``; Kafka, Jafka and MetaQ ``<topic>-<partition>``) and
is placed along that log's axis by the cumulative size of the files before it, as percentages
the HTML template draws (``mqtool.ops.report.html``)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtool.findings.code_ids import JAFKA_SEGMENT_GAP, KAFKA_OFFSET_GAP, KAFKA_SEGMENT_MISSING, METAQ_SEGMENT_GAP, RMQ_CL_VALID_END
from mqtool.formats.segment_names import KAFKA07_SUFFIX, jafka_file_name, kafka07_file_name, kafka_file_name, metaq_file_name, rocketmq_file_name

DAY_MS = 86_400_000

#: Finding marks drawn per file at most; the rest are counted in a "+N more" mark.
MARKS_PER_FILE = 20

#: The log the files at the store root are drawn under.
ROOT_LOG = "(root)"

END_KINDS = ("healthy", "zeros", "in-progress", "torn", "garbage", "missing", "unreadable")


@dataclass
class Mark:
    n: int
    code: str
    path: str
    position: int | None  # None: a finding about the whole file (a gap before it), drawn at its start
    message: str
    left: float
    root_cause: bool


@dataclass
class Cut:
    kind: str  # "recover" or "clean"
    path: str
    action: str
    position: int | None
    length: int | None
    left: float
    width: float


@dataclass
class Segment:
    path: str
    size: int
    start: int
    end_kind: str
    left: float = 0.0
    width: float = 0.0
    marks: list[Mark] = field(default_factory=list)
    more_marks: int = 0
    cuts: list[Cut] = field(default_factory=list)
    #: a file ending in pre-allocated zeros: the share of it that holds data (drawn as such)
    data_pct: float | None = None


@dataclass
class Consumer:
    group: str
    log: str
    offset: int
    left: float


@dataclass
class Log:
    name: str
    segments: list[Segment] = field(default_factory=list)
    consumers: list[Consumer] = field(default_factory=list)
    total: int = 0


@dataclass
class Report:
    layout: str
    root: str
    generated_ms: int
    verdict: str
    exit_code: int
    counts: dict[str, int]
    files: int
    bytes_checked: int
    logs: list[Log]
    groups: list[dict[str, Any]]
    recover: list[dict[str, Any]]
    recover_totals: dict[str, Any]
    clean: list[dict[str, Any]]
    clean_notes: list[str]
    clean_totals: dict[str, Any]
    topics: list[dict[str, Any]]
    hourly: list[tuple[int, int]]  # (bucket start ms, bytes written) over the store's lifetime
    bucket_ms: int
    time_source: str
    forecast: dict[str, Any]
    lag: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    #: what the modelled broker's restart would do (the recover plan's ``facts["restart"]``, the
    #: object ``info --json`` gives as ``restart``) as rows of its table; empty when the layout's
    #: plan has no preview
    restart: list[tuple[str, str]] = field(default_factory=list)
    #: RocketMQ 5.x: the timer messages not delivered yet, by due time, as ``stats`` gives them
    #: (``store.model.timer.TimerPending.to_dict``); None for a store without a timer store
    timer: dict[str, Any] | None = None


def relative(path: str, root: str) -> str:
    """``path`` relative to the store root (as the DOM's ``data-path``)."""
    p = Path(path)
    try:
        return p.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return path[len(root) :].lstrip("/") if path.startswith(root) else path


def log_name(rel: str, layout: str) -> str:
    """The log a file belongs to: its directory (RocketMQ's ``commitlog``, ``index``,
    ``consumequeue/<topic>/<queue>``; a Kafka / Jafka / MetaQ partition ``<topic>-<partition>``)."""
    parent = Path(rel).parent.as_posix()
    if parent == ".":  # a file at the root (checkpoints, meta.properties, RocketMQ's lock)
        return ROOT_LOG
    if layout == "rocketmq":
        return parent
    return Path(rel).parent.name


def end_kind(codes: set[str]) -> str:
    """The end kind of a file from its findings' stable codes: the finding vocabulary's rule
    (``mqtool.findings.end_kind``); a file none of them speaks for ends healthy (its other
    findings are drawn as marks, not as its end)."""
    from mqtool.findings import end_kind as said

    return said(codes) or "healthy"


def _took(seconds: float | None) -> str:
    if seconds is None:
        return "unknown (the disk's read speed could not be measured)"
    return "under a second at this disk's read speed" if seconds < 1 else f"about {round(seconds)} s at this disk's read speed"


#: the restart preview's fields, in the order of its table, with their row titles; fields a
#: layout's preview does not have are left out, fields not named here follow under their own name
RESTART_ROWS = (
    ("broker_version", "broker modelled"),
    ("source", "why this version"),
    ("recovery", "recovery"),
    ("starts_at", "starts at"),
    ("scan_bytes", "bytes it scans"),
    ("valid_end", "valid end (commitlog offset)"),
    ("stops_at", "stops at"),
    ("drops", "drops"),
    ("rebuilds", "rebuilds"),
    ("refuses_to_start", "refuses to start on"),
    ("estimated_seconds", "takes"),
)
#: fields of the preview that only explain another one (shown through it, not as rows)
_RESTART_HIDDEN = {"broker_model", "evidence", "read_bytes_per_second"}


def restart_rows(restart: dict[str, Any]) -> list[tuple[str, str]]:
    """The restart preview (``facts["restart"]`` of a recover plan: what the modelled broker's
    restart would do) as the rows of the report's table: a title and a text per field, nested
    objects as ``key: value`` pairs, empty lists as "none"."""
    if not restart:
        return []
    rows: list[tuple[str, str]] = []
    named = dict(RESTART_ROWS)
    order = [k for k, _ in RESTART_ROWS if k in restart] + [k for k in restart if k not in named and k not in _RESTART_HIDDEN]
    for key in order:
        value = restart[key]
        if key == "estimated_seconds":
            rows.append((named[key], _took(value)))
        elif key == "starts_at" and isinstance(value, list):
            rows.append((named[key], _starts(value)))
        else:
            rows.append((named.get(key, key.replace("_", " ")), _text(value)))
    return rows


def _starts(starts: list[Any]) -> str:
    """Where a recovery of several logs starts (Kafka: one entry per partition): the logs it
    reads, each as its fields, and how many it does not read at all (no ``file``)."""
    read = [s for s in starts if not isinstance(s, dict) or s.get("file") is not None]
    idle = len(starts) - len(read)
    parts = [_text(s) for s in read]
    if idle:
        parts.append(f"{idle} other log(s): nothing to recover")
    return ", ".join(parts) or "none"


def _text(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k.replace('_', ' ')}: {_text(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value) if value else "none"
    if value is None:
        return "-"
    return str(value)


#: inside a ``one_judgement`` already (``validate --format html`` enters it around its validation)
_JUDGING: ContextVar[bool] = ContextVar("mqtool_report_judging", default=False)


@contextlib.contextmanager
def one_judgement(layout: str) -> Iterator[None]:
    """Inside the block the store model keeps each log segment's judgement for the next verb that
    judges the same unchanged file (Kafka: ``store.model.kafka.shared_reading``; Jafka and MetaQ:
    ``store.model.legacy.shared_reading``), so the report's validate, recover plan, clean plan and
    stats judge each segment once.  Jafka and MetaQ: validate's reading also counts each live
    segment for stats (``ops.stats.legacy.counter``), which then reads no message again.  Kafka:
    validate's reading also counts each segment for stats (``ops.stats.kafka.KafkaStatsFold``), and
    its kept segments serve lag's offsets and clean's timestamps.  RocketMQ: validate's reading of
    each CommitLog file serves recover's plan (``store.model.queue_offsets.shared_reading``; of a
    damaged file, what the broker's recovery reads of it).
    Inside a block of its own it adds nothing: the outer block's readings serve."""
    if _JUDGING.get():
        yield
        return
    token = _JUDGING.set(True)
    try:
        with _shared(layout):
            yield
    finally:
        _JUDGING.reset(token)


@contextlib.contextmanager
def _shared(layout: str) -> Iterator[None]:
    """The store model's shared reading of ``layout`` (see :func:`one_judgement`)."""
    if layout in ("jafka", "metaq"):
        from mqtool.ops.stats.legacy import counter
        from mqtool.store.model.legacy import shared_reading as legacy_reading

        with legacy_reading(fold=counter):
            yield
        return
    if layout == "kafka":
        from mqtool.ops.stats import StatsOptions
        from mqtool.ops.stats.kafka import KafkaStatsFold
        from mqtool.store.model.kafka import shared_reading

        defaults = StatsOptions()  # the report's stats count with the defaults
        with shared_reading(fold=KafkaStatsFold(defaults.top, defaults.check_crc)):
            yield
        return
    if layout == "rocketmq":
        from mqtool.store.model import queue_offsets

        with queue_offsets.shared_reading():
            yield
        return
    yield


def stats_rows(layout: str) -> Callable[[], Any] | None:
    """What validate's reading counts for the report's stats (``ValidateOptions.rows``): RocketMQ's
    CommitLog records (``ops.stats.rocketmq.record_count``, with stats' defaults), so that stats
    takes its counts from validate's reading of each file instead of reading it again."""
    if layout != "rocketmq":
        return None
    from mqtool.ops.stats import StatsOptions
    from mqtool.ops.stats.rocketmq import record_count

    return record_count(StatsOptions())


def gather(path: str | Path, layout: str, **options: Any) -> Report:
    """The report of the store at ``path`` (see :func:`_gather`), its verbs sharing one judgement
    of each log segment (:func:`one_judgement`)."""
    with one_judgement(layout):
        return _gather(path, layout, **options)


def _gather(
    path: str | Path,
    layout: str,
    *,
    fail_on: Any = None,
    jobs: int = 1,
    now_ms: int | None = None,
    validation: Any = None,
    sizes: dict[str, int | None] | None = None,
    broker: dict[str, Any] | None = None,
) -> Report:
    """Run validate (unless ``validation`` is validate's report already made), the recover and
    clean plans, stats and lag on the store at ``path``; ``sizes`` are RocketMQ's file sizes and
    index geometry (``commitlog_file_size``, ``cq_file_size``, ``index_hash_slot_num``,
    ``index_num``) when not the detected ones (``--config``); ``broker``: RocketMQ's broker
    modelled (``broker_version``, ``version_hints``, ``config_path``) for validate and the recover
    plan, whose restart preview the report shows (``restart_rows``)."""
    from mqtool.errors import MqError, UnsupportedFormatError
    from mqtool.findings import Severity
    from mqtool.ops.clean import cleaner
    from mqtool.ops.lag import store_lag
    from mqtool.ops.recover import recoverer
    from mqtool.ops.stats import store_stats
    from mqtool.ops.validate import ValidateOptions, validate_path

    now = now_ms if now_ms is not None else int(time.time() * 1000)
    options = ValidateOptions(fail_on=fail_on or Severity.error, jobs=jobs, rows=stats_rows(layout), **(sizes or {}), **(broker or {}))  # type: ignore[arg-type]
    vr = validation if validation is not None else validate_path(path, options, layout)
    root = vr.root
    notes: list[str] = []

    # logs and segments, in file order, placed by cumulative size
    by_file: dict[str, list[Any]] = {}
    for f in vr.findings:
        by_file.setdefault(relative(f.path, root), []).append(f)
    logs: dict[str, Log] = {}
    segs: dict[str, Segment] = {}
    for s in sorted(vr.files, key=lambda s: relative(s.path, root)):
        rel = relative(s.path, root)
        log = logs.setdefault(log_name(rel, layout), Log(log_name(rel, layout)))
        codes = {f.code for f in by_file.get(rel, [])}
        seg = Segment(rel, s.size, log.total, end_kind(codes))
        log.total += max(s.size, 1)
        log.segments.append(seg)
        segs[rel] = seg
    if layout == "rocketmq" and "commitlog" in logs:
        _place_by_offset(logs["commitlog"])
    elif layout != "rocketmq":
        for f in vr.findings:
            _insert_gap(logs, f, relative(f.path, root), layout)
    known = {f.ref for f in vr.findings}
    for n, f in enumerate(vr.findings):
        rel = relative(f.path, root)
        found = segs.get(rel)
        if found is None:
            continue
        seg = found
        if len(seg.marks) >= MARKS_PER_FILE:
            seg.more_marks += 1
            continue
        root_cause = not (f.cause is not None and f.cause in known and f.cause != f.ref)
        seg.marks.append(Mark(n, f.code, rel, f.position, f.message, _pct(f.position or 0, seg.size), root_cause))

    # findings grouped by cause, knock-ons folded
    groups: list[dict[str, Any]] = []
    index: dict[Any, dict[str, Any]] = {}
    entries = [(n, f) for n, f in enumerate(vr.findings)]
    for n, f in entries:
        if not (f.cause is not None and f.cause in known and f.cause != f.ref):
            g = {"n": n, "code": f.code, "level": f.level.value, "path": relative(f.path, root), "position": f.position, "message": f.message, "knock_ons": []}
            groups.append(g)
            index[f.ref] = g
    for n, f in entries:
        if f.cause is not None and f.cause in index and f.cause != f.ref:
            index[f.cause]["knock_ons"].append({"n": n, "code": f.code, "path": relative(f.path, root), "position": f.position, "message": f.message})

    # the recover plan (never applied)
    plan_fn, _apply, recover_options = recoverer(layout)
    try:
        rplan = plan_fn(path, recover_options(**(broker or {})))
    except UnsupportedFormatError as exc:  # a store recover does not plan for (a RocksDB ConsumeQueue): the page says so
        from mqtool.ops.recover import RecoverPlan

        notes.append(f"no recover plan: {exc.reason}")
        rplan = RecoverPlan(layout, root, "recover")
    restart = restart_rows(rplan.facts.get("restart") or {})
    recover = [_step(st, root, "recover", segs, logs) for st in rplan.steps]
    for seg in segs.values():  # a log file whose tail the recover plan cuts past its valid end is torn
        ends = {f.code for f in by_file.get(seg.path, []) if f.code.endswith("-VALID-END")}
        if seg.end_kind == "healthy" and ends and any(c.action == "cut" for c in seg.cuts):
            seg.end_kind = "torn"
    # the last CommitLog file ends in the zeros the broker pre-allocates after its valid end
    for f in vr.findings:
        last = segs.get(relative(f.path, root))
        if f.code == RMQ_CL_VALID_END and last is not None and last.end_kind == "healthy" and f.position is not None and f.position < last.size:
            last.end_kind, last.data_pct = "zeros", _pct(f.position, last.size)
    recover_totals = {"steps": len(rplan.steps), "bytes_cut": rplan.bytes_cut, "files_deleted": rplan.files_deleted, "records_dropped": rplan.records_dropped}

    # the clean plan with its defaults (never applied)
    clean_fn, clean_options = cleaner(layout)
    cplan = clean_fn(path, clean_options(), now_ms=now)
    # every clean step takes its file away (delete, remove, rename to .deleted, archive): one cut a file
    clean: list[dict[str, Any]] = []
    cleaned: set[str] = set()
    for st in cplan.steps:
        rel = relative(st.path, root) if st.path.startswith("/") else st.path
        if rel not in cleaned:
            cleaned.add(rel)
            clean.append(_step(st, root, "clean", segs))
    clean_totals = {"files": len(clean), "bytes": sum(c["bytes"] or 0 for c in clean)}

    # stats: topics, bytes per hour, forecast
    stats = store_stats(path, layout, validation=vr)
    topics = [{k: v for k, v in t.items() if not k.startswith("_")} for t in stats.topics()]
    # bytes written over the store's whole lifetime: hourly, daily when that is over 60 days of hours
    lifetime = stats.recent.lifetime
    bucket_ms = lifetime.bucket_ms
    buckets = dict(lifetime.buckets)
    if bucket_ms < DAY_MS and len(buckets) > 60 * 24:
        widen = DAY_MS // bucket_ms
        merged: dict[int, int] = {}
        for k, b in buckets.items():
            merged[k // widen] = merged.get(k // widen, 0) + b
        buckets, bucket_ms = merged, bucket_ms * widen
    hourly = sorted((k * bucket_ms, b) for k, b in buckets.items())
    forecast = stats.forecast()

    # lag and consumer marks
    lag: list[dict[str, Any]] = []
    try:
        lr = store_lag(path, layout)
    except MqError as exc:  # Jafka / MetaQ keep offsets in ZooKeeper (unsupported): the page says so
        notes.append(f"lag: {exc}")
        lr = None
    if lr is not None:
        for r in lr.rows:
            lag.append(
                {
                    "group": r.group,
                    "topic": r.topic,
                    "queue": r.queue,
                    "committed": r.committed_offset,
                    "log_end": r.log_end_offset,
                    "lag_messages": r.lag_messages,
                    "lag_bytes": r.lag_bytes,
                    "oldest": r.oldest_unconsumed_timestamp,
                }
            )
            name = f"consumequeue/{r.topic}/{r.queue}" if layout == "rocketmq" else f"{r.topic}-{r.queue}"
            target = logs.get(name)
            if target is not None:
                end = r.log_end_offset or 0
                start = r.log_start_offset or 0
                span = max(end - start, 1)
                target.consumers.append(Consumer(r.group, name, r.committed_offset, _pct(r.committed_offset - start, span)))

    for log in logs.values():
        for seg in log.segments:
            seg.left = _pct(seg.start, log.total)
            seg.width = max(_pct(max(seg.size, 1), log.total), 0.2)
    verdict = "FAILED" if vr.failed else "OK"
    return Report(
        layout=layout,
        root=root,
        generated_ms=now,
        verdict=verdict,
        exit_code=1 if vr.failed else 0,
        counts=dict(vr.counts),
        files=len(vr.files),
        bytes_checked=vr.bytes_checked,
        logs=_ordered(list(logs.values())),
        groups=groups,
        recover=recover,
        recover_totals=recover_totals,
        clean=clean,
        clean_notes=list(cplan.notes),
        clean_totals=clean_totals,
        topics=topics,
        hourly=hourly,
        bucket_ms=bucket_ms,
        time_source=stats.time_source,
        forecast=forecast,
        lag=lag,
        notes=notes,
        restart=restart,
        timer=stats.timer,
    )


#: the findings that say a log's files skip offsets (a missing file), with ``details``
#: ``missing_from`` / ``missing_to``: the report draws a ``missing`` segment there
GAP_CODES = {KAFKA_OFFSET_GAP: "kafka", KAFKA_SEGMENT_MISSING: "kafka", JAFKA_SEGMENT_GAP: "jafka", METAQ_SEGMENT_GAP: "metaq"}


def _insert_gap(logs: dict[str, Log], finding: Any, rel: str, layout: str) -> None:
    """A ``missing`` segment before the file a gap finding names (Kafka, Jafka, MetaQ), named as
    the broker would have named the file that held ``missing_from``; its size is the gap's bytes
    (Jafka and MetaQ offsets are byte positions) or, for Kafka, whose offsets count records, the
    mean size of the log's other segment files."""
    if GAP_CODES.get(finding.code) != layout or not finding.details:
        return
    start, stop = finding.details.get("missing_from"), finding.details.get("missing_to")
    log = logs.get(log_name(rel, layout))
    if not isinstance(start, int) or not isinstance(stop, int) or log is None:
        return
    at = next((i for i, s in enumerate(log.segments) if s.path == rel), None)
    if at is None:
        return
    suffix = Path(rel).suffix
    if layout == "kafka":
        name = kafka_file_name(start, suffix.lstrip("."))
        same = [s.size for s in log.segments if s.path.endswith(suffix) and s.end_kind != "missing"]
        size = max(sum(same) // max(len(same), 1), 1)
    else:
        if layout == "jafka":  # a Kafka 0.7 log (the kafka07 variant) names its segments .kafka
            name = kafka07_file_name(start) if suffix == KAFKA07_SUFFIX else jafka_file_name(start)
        else:
            name = metaq_file_name(start)
        size = max(stop - start, 1)
    gap = Segment((Path(rel).parent / name).as_posix(), size, 0, "missing")
    log.segments.insert(at, gap)
    total = 0
    for seg in log.segments:  # placed again by cumulative size
        seg.start = total
        total += max(seg.size, 1)
    log.total = total


def _place_by_offset(log: Log) -> None:
    """A CommitLog file is named by its first offset: place each at its offset, and draw a
    ``missing`` segment where the offsets jump over a file (RocketMQ ``MappedFileQueue``)."""
    named = [s for s in log.segments if Path(s.path).name.isdigit()]
    if len(named) != len(log.segments) or not named:
        return
    base = int(Path(named[0].path).name)
    out: list[Segment] = []
    for seg in named:
        start = int(Path(seg.path).name)
        if out:
            prev = out[-1]
            expected = base + prev.start + prev.size
            while prev.size > 0 and expected < start:
                name = (Path(prev.path).parent / rocketmq_file_name(expected)).as_posix()
                gap = Segment(name, min(prev.size, start - expected), expected - base, "missing")
                out.append(gap)
                expected += gap.size
        seg.start = start - base
        out.append(seg)
    log.segments = out
    log.total = max(s.start + max(s.size, 1) for s in out)


def _ordered(logs: list[Log]) -> list[Log]:
    """commitlog first, then the consume queues, then index; others by name."""
    rank = {"commitlog": 0, "index": 2, ROOT_LOG: 3}
    return sorted(logs, key=lambda lg: (rank.get(lg.name, 1), lg.name))


def _pct(part: int, whole: int) -> float:
    return round(100.0 * max(0, min(part, whole)) / whole, 3) if whole > 0 else 0.0


def _step(step: Any, root: str, kind: str, segs: dict[str, Segment], logs: dict[str, Log] | None = None) -> dict[str, Any]:
    """A plan step as a row of its table, and as a cut on the file it acts on; a step on a
    directory that is a log (``rebuild-index`` on ``index``, a ConsumeQueue rebuilt from the
    CommitLog) is drawn over every file of that log."""
    rel = relative(step.path, root) if step.path.startswith("/") else step.path
    seg = segs.get(rel)
    whole = logs.get(rel.rstrip("/")) if logs is not None and seg is None else None
    if whole is not None:
        for each in whole.segments:
            if each.end_kind != "missing":
                each.cuts.append(Cut(kind, each.path, step.action, None, None, 0.0, 100.0))
        return {"action": step.action, "path": rel, "position": step.position, "bytes": step.length, "reason": step.reason}
    size = seg.size if seg is not None else 0
    pos = step.position if step.position is not None else 0
    length = step.length if step.length is not None else max(size - pos, 0)
    if seg is not None:
        cut = Cut(kind, rel, step.action, step.position, step.length, _pct(pos, size), max(_pct(length, size), 0.5) if size else 100.0)
        seg.cuts.append(cut)
    return {"action": step.action, "path": rel, "position": step.position, "bytes": length, "reason": step.reason}
