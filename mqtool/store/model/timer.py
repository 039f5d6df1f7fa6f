"""The RocketMQ 5.x timer store in the store model: ``timerwheel``, ``timerlog/``, ``config/timercheck``
and ``config/timermetrics`` read once, for every command, as typed items and findings.

* The TimerLog (``TimerLog``, a ``MappedFileQueue``) is walked file by file in pieces
  (``store.files.piece_size``, 8 MiB by default): a unit a piece cuts, or a stop fewer than 52
  bytes before a piece's end (a unit, a BLANK head or a zero run not yet whole), is read again from
  its start with the next piece, so no answer depends on where a piece ends.  Each file's walk stops
  where ``TimerMessageStore.recoverAndRevise`` stops in it: a BLANK record (the file is full), the
  zeros of its unwritten tail, or a unit recovery refuses (``RMQ-TIMER-LOG-UNIT``: its size is not
  52 or its magic fails ``isMagicOK``; recovery truncates the TimerLog there).  A BLANK of the
  wrong size is ``RMQ-TIMER-LOG-BLANK``; a file before the last that stops without a BLANK is
  ``RMQ-TIMER-LOG-NO-BLANK`` (recovery stops there and cuts every later file); bytes that are not
  zero after the valid end of the last file are ``RMQ-TIMER-LOG-GARBAGE``.  The file names and sizes
  follow the CommitLog's rules (``store.model.rocketmq.segment_findings``).  The TimerLog's valid
  end is where recovery stops.
* The wheel (``TimerWheel``) is read in pieces of whole slots; its size must be
  ``slotsTotal * 2 * 32`` (``RMQ-TIMER-WHEEL-SIZE``: the broker refuses to start otherwise) and
  every used slot must hold a time of its own number, ``0 <= firstPos <= lastPos`` and magic 0
  (``RMQ-TIMER-SLOT``).
* ``timercheck`` decodes (``RMQ-TIMER-CHECKPOINT-FORMAT`` when it is shorter than its four longs);
  ``timermetrics`` is a config JSON file (``RMQ-CONFIG-PARSE``, as the other config files).

What ties them together (slots to units, units to CommitLog records, the checkpoint to the files)
is checked by ``store.model.timer_check`` from what this module reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from mqtool.errors import CorruptDataError, MqError, StoreLayoutError
from mqtool.findings import Finding
from mqtool.findings import code_ids as ids
from mqtool.formats import data_end as de
from mqtool.formats import segment_names as segnames
from mqtool.formats.rocketmq import timer as tf
from mqtool.store import rocketmq as rmq
from mqtool.store.files import ReadOnlyFile, check_path, is_directory, is_regular_file, piece_size, read_small_file
from mqtool.store.model import rocketmq as model
from mqtool.store.rocketmq import TimerPaths as TimerPaths  # where the files are: the store layer's
from mqtool.store.root_rocketmq import is_rocketmq_root


def timer_family(path: Path) -> str | None:
    """The ``dump`` family of a timer file by its name (``timercheck``, ``timermetrics`` and its
    ``.bak``, ``timerwheel``, a file of ``timerlog/`` or the directory), or None for another file."""
    name = path.name
    if name in ("timercheck", "timerwheel", "timerlog"):
        return name
    if name in ("timermetrics", "timermetrics.bak"):
        return "timermetrics"
    if path.parent.name == "timerlog" and segnames.ROCKETMQ_FILE_NAME.match(name):
        return "timerlog"
    return None


def _root_of(path: Path) -> Path | None:
    return next((p for p in [path, *path.parents][:3] if is_rocketmq_root(p)), None)


def resolve(path: Path, family: str) -> Path:
    """The file (or ``timerlog/`` directory) of ``family`` that ``path`` names: the path itself, or
    the family's place in the store root ``path`` is; a clear error for a file of another family."""
    path = Path(path)
    check_path(path)
    if is_directory(path) and is_rocketmq_root(path):
        paths = TimerPaths(path)
        target = {"timerwheel": paths.wheel, "timerlog": paths.timerlog_dir, "timercheck": paths.checkpoint, "timermetrics": paths.metrics}[family]
        if not target.exists():
            raise StoreLayoutError(expected=f"the store's {family} ({target.relative_to(path)})", found="none (the timer store writes it once it is used)", path=path)
        return target
    found = timer_family(path)
    if found is not None and found != family:
        raise StoreLayoutError(expected=f"a {family} file", found=f"the {found} of the timer store: read it with `mqtool dump {found}`", path=path)
    return path


# --- timerlog ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitAt:
    """A TimerLog unit and where it is: its file, its position there, its TimerLog offset."""

    path: Path
    position: int
    offset: int
    unit: tf.TimerUnit


@dataclass(frozen=True)
class TimerLogFileRead:
    """One TimerLog file's walk: how many units it held, and ``data_end``, where its valid units
    stop (a file position) and why -- a clean stop (``end``: the ``tf.TimerLogEnd`` kinds) or a
    unit recovery refuses (kind ``broken``, its located ``error``)."""

    path: Path
    units: int
    data_end: de.DataEnd[str]

    @property
    def end(self) -> tf.TimerLogEnd | None:
        """The clean stop (None at a unit recovery refuses)."""
        return cast("tf.TimerLogEnd", self.data_end) if self.data_end.kind != "broken" else None

    @property
    def error(self) -> MqError | None:
        return self.data_end.error


def timerlog_files(path: Path) -> tuple[Path, list[rmq.Segment]]:
    """The TimerLog directory and files for PATH: a store root, the ``timerlog/`` dir, or one file."""
    path = Path(path)
    if is_regular_file(path):
        st = path.stat()
        base = int(path.name) if segnames.ROCKETMQ_FILE_NAME.match(path.name) else 0
        return path.parent, [rmq.Segment(path, base, st.st_size, st.st_mtime)]
    directory = path / "timerlog" if is_rocketmq_root(path) else path
    if not is_directory(directory):
        raise StoreLayoutError(expected="a store root, a timerlog/ directory or a TimerLog file", found="none of them", path=path)
    return directory, rmq.list_segments(directory)


@dataclass
class TimerLogWalk:
    """Every unit of the TimerLog files ``segments`` in order (``__iter__``), with the findings
    about them (``findings``, in file and position order), how each file ended (``ends``) and the
    TimerLog offset where recovery stops (``valid_end``).  ``directory`` given: its files'
    continuity (names, sizes, gaps) comes first among the findings."""

    segments: list[rmq.Segment]
    directory: Path | None = None
    file_size: int | None = None
    findings: list[Finding] = field(default_factory=list)
    ends: list[TimerLogFileRead] = field(default_factory=list)
    valid_end: int | None = None
    units: int = 0

    def __post_init__(self) -> None:
        if self.file_size is None:
            self.file_size = rmq.detect_file_size(self.segments)

    @property
    def start(self) -> int:
        """The TimerLog's first offset (older files are deleted once the CommitLog no longer holds their messages)."""
        return self.segments[0].base if self.segments else 0

    def __iter__(self) -> Iterator[UnitAt]:
        if self.directory is not None:
            self.findings.extend(model.segment_findings(self.directory, self.segments, self.file_size, "timerlog"))
        data_files = [i for i, s in enumerate(self.segments) if s.size > 0]
        last = data_files[-1] if data_files else -1
        # the last file holding a unit: files after it are pre-created (all zeros)
        for i, seg in enumerate(self.segments):
            if seg.size == 0:
                continue
            with ReadOnlyFile(seg.path) as f:
                yield from self._walk_file(f, seg, is_last=i == last)
        if self.valid_end is None:  # every file ends in a BLANK: the data ends at the last one's
            tail = self.ends[-1].end if self.ends else None
            self.valid_end = self.segments[last].base + tail.position if tail is not None and last >= 0 else self.start

    def _walk_file(self, f: ReadOnlyFile, seg: rmq.Segment, *, is_last: bool) -> Iterator[UnitAt]:
        piece = max(piece_size(), 2 * tf.UNIT_SIZE)
        offset = 0
        count = 0
        path = str(seg.path)
        end: tf.TimerLogEnd | None = None
        error: MqError | None = None
        broken_at = 0
        while True:
            data = f.pread(offset, piece)
            more = offset + len(data) < f.size
            walk = tf.walk_units(data, 0, rest=f.size - offset)
            try:
                for pos, unit in walk:
                    count += 1
                    yield UnitAt(seg.path, offset + pos, seg.base + offset + pos, unit)
            except CorruptDataError as exc:
                error = exc.at(seg.path, offset)
                at = broken_at = offset + walk.stopped_at
                # a BLANK head (its magic) whose size is not the rest of the file, or a unit
                blank = tf.is_blank_head(data, walk.stopped_at)
                self.findings.append(
                    Finding(
                        ids.RMQ_TIMER_LOG_BLANK if blank else ids.RMQ_TIMER_LOG_UNIT,
                        path,
                        error.position,
                        f"{error.reason}: recovery stops here and truncates the TimerLog",
                        length=tf.MIN_BLANK_LEN if blank else tf.UNIT_SIZE,
                    )
                )
                self._stop(seg.base + at)
                break
            stop = walk.end
            assert stop is not None
            if more and (stop.kind == "eof" or len(data) - stop.position < tf.UNIT_SIZE):
                offset += stop.position
                continue
            end = tf.TimerLogEnd(stop.kind, offset + stop.position)
            self._file_end(f, seg, end, is_last)
            break
        self.units += count
        if end is not None:
            self.ends.append(TimerLogFileRead(seg.path, count, cast("de.DataEnd[str]", end)))
        else:
            assert error is not None
            self.ends.append(TimerLogFileRead(seg.path, count, de.DataEnd("broken", broken_at, error=error)))

    def _stop(self, at: int) -> None:
        if self.valid_end is None:
            self.valid_end = at

    def _file_end(self, f: ReadOnlyFile, seg: rmq.Segment, end: tf.TimerLogEnd, is_last: bool) -> None:
        path = str(seg.path)
        if end.kind == "blank":
            return
        if end.kind == "partial":
            self.findings.append(
                Finding(
                    ids.RMQ_TIMER_LOG_UNIT,
                    path,
                    end.position,
                    f"expected a {tf.UNIT_SIZE}-byte TimerLog unit, a BLANK record or zeros, found {f.size - end.position} byte(s) cut by the end of the file",
                    length=f.size - end.position,
                )
            )
            self._stop(seg.base + end.position)
            return
        # zeros or the end of the file: the unwritten tail
        if not is_last:
            self.findings.append(
                Finding(
                    ids.RMQ_TIMER_LOG_NO_BLANK,
                    path,
                    end.position,
                    "expected a BLANK record ending a TimerLog file before the last one, found the units stopping: "
                    "recovery stops here and deletes every later TimerLog file",
                )
            )
            self._stop(seg.base + end.position)
            return
        self._stop(seg.base + end.position)
        garbage = model.zero_tail_finding(f, ids.RMQ_TIMER_LOG_GARBAGE, end.position, "the TimerLog's valid end")
        if garbage is not None:
            self.findings.append(garbage)


# --- timerwheel -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlotAt:
    """A used wheel slot: its number, its position in the file, what it holds."""

    index: int
    position: int
    slot: tf.Slot


def slot_problem(index: int, slot: tf.Slot, slots: int = tf.WHEEL_SLOTS) -> str | None:
    """What is wrong with a used slot by itself, or None."""
    if not slot.belongs_at(index, slots):
        return f"expected a slot time whose slot number is {index}, found time {slot.time} (slot {slot.time % slots})"
    if not 0 <= slot.first_pos <= slot.last_pos:
        return f"expected 0 <= firstPos <= lastPos, found firstPos {slot.first_pos}, lastPos {slot.last_pos}"
    if slot.magic != 0:
        return f"expected slot magic 0 (unused), found {slot.magic}"
    return None


@dataclass
class WheelWalk:
    """The used slots of a wheel file, in order, read in pieces of whole slots; ``findings``: its
    size (``RMQ-TIMER-WHEEL-SIZE``) and the slots wrong by themselves (``RMQ-TIMER-SLOT``)."""

    path: Path
    findings: list[Finding] = field(default_factory=list)
    size: int = 0

    def __iter__(self) -> Iterator[SlotAt]:
        with ReadOnlyFile(self.path) as f:
            self.size = f.size
            if f.size not in (0, tf.WHEEL_SIZE):
                self.findings.append(
                    Finding(
                        ids.RMQ_TIMER_WHEEL_SIZE,
                        str(self.path),
                        None,
                        f"expected a timer wheel of {tf.WHEEL_SIZE} bytes ({tf.WHEEL_SLOTS} slots of {tf.SLOT_SIZE}), found {f.size} bytes: "
                        "the broker refuses to start (Timer wheel length != expected)",
                    )
                )
            stop = min(f.size, tf.WHEEL_SIZE) // tf.SLOT_SIZE * tf.SLOT_SIZE
            piece = max(piece_size() // tf.SLOT_SIZE, 2) * tf.SLOT_SIZE
            offset = 0
            while offset < stop:
                data = f.pread(offset, min(piece, stop - offset))
                for index, slot in tf.used_slots(data, offset // tf.SLOT_SIZE):
                    at = SlotAt(index, tf.slot_position(index), slot)
                    problem = slot_problem(index, slot)
                    if problem is not None:
                        self.findings.append(Finding(ids.RMQ_TIMER_SLOT, str(self.path), at.position, problem, length=tf.SLOT_SIZE))
                    yield at
                offset += len(data)


# --- timercheck and timermetrics --------------------------------------------------------------


def read_timer_checkpoint(path: Path) -> tf.TimerCheckpoint:
    """The timer checkpoint file decoded; its errors located in it."""
    try:
        return tf.decode_timer_checkpoint(read_small_file(path, 1 << 20))
    except MqError as exc:
        raise exc.at(path) from None


def timer_checkpoint_finding(path: Path) -> tuple[tf.TimerCheckpoint | None, Finding | None]:
    """The checkpoint, or the finding that it cannot be read (``RMQ-TIMER-CHECKPOINT-FORMAT``)."""
    try:
        return read_timer_checkpoint(path), None
    except MqError as exc:
        return None, Finding(ids.RMQ_TIMER_CHECKPOINT_FORMAT, str(path), exc.position, exc.reason)


def read_timer_metrics(path: Path) -> tf.TimerMetrics:
    """``timermetrics`` parsed; its errors located in it."""
    try:
        return tf.parse_timer_metrics(read_small_file(path, 256 << 20))
    except MqError as exc:
        raise exc.at(path) from None


# --- pending timer messages -------------------------------------------------------------------

#: ``TimerMetrics.timerDist``: the due-time buckets the broker's metrics use (seconds ahead).
DUE_BUCKETS_S = (5, 60, 300, 900, 3600, 14400, 28800, 86400)


@dataclass
class TimerPending:
    """The timer messages a store holds that are not delivered yet, by due time.

    A unit is pending when it is due at or after the checkpoint's ``lastReadTimeMs`` (where the
    dequeue resumes; without a checkpoint, the newest unit's enqueue time); delete marks
    (``MAGIC_DELETE``) are counted apart; rolled units (``MAGIC_ROLL``, re-enqueued at their roll
    time) are pending until then, as the broker holds them.  Only the units recovery keeps (before
    the TimerLog's valid end) count; ``findings`` are the store model's findings on the TimerLog."""

    read_time_ms: int
    read_time_source: str
    pending: int = 0
    deletes: int = 0
    rolled: int = 0
    first_due_ms: int | None = None
    last_due_ms: int | None = None
    #: counts by due time ahead of ``read_time_ms``: within each of ``DUE_BUCKETS_S``, then beyond
    by_due: list[int] = field(default_factory=lambda: [0] * (len(DUE_BUCKETS_S) + 1))
    findings: list[Finding] = field(default_factory=list)

    def add(self, unit: tf.TimerUnit) -> None:
        due = unit.delayed_time
        if due < self.read_time_ms:
            return
        if unit.is_delete:
            self.deletes += 1
            return
        self.pending += 1
        self.rolled += unit.is_roll
        self.first_due_ms = due if self.first_due_ms is None else min(self.first_due_ms, due)
        self.last_due_ms = due if self.last_due_ms is None else max(self.last_due_ms, due)
        ahead = (due - self.read_time_ms) / 1000
        self.by_due[next((i for i, limit in enumerate(DUE_BUCKETS_S) if ahead < limit), len(DUE_BUCKETS_S))] += 1

    def to_dict(self) -> dict[str, object]:
        return {
            "read_time_ms": self.read_time_ms,
            "read_time_source": self.read_time_source,
            "pending": self.pending,
            "rolled": self.rolled,
            "deletes": self.deletes,
            "first_due_ms": self.first_due_ms,
            "last_due_ms": self.last_due_ms,
            "by_due": [{"due_within_s": limit, "count": n} for limit, n in zip((*DUE_BUCKETS_S, None), self.by_due, strict=True)],
        }


def timer_pending(root: Path) -> TimerPending | None:
    """The pending timer messages of the store at ``root`` (None when it has no TimerLog)."""
    paths = TimerPaths(root)
    if not is_directory(paths.timerlog_dir):
        return None
    cp = None
    if is_regular_file(paths.checkpoint):
        try:
            cp = read_timer_checkpoint(paths.checkpoint)
        except MqError:
            cp = None  # validate states RMQ-TIMER-CHECKPOINT-FORMAT; the units still count
    walk = TimerLogWalk(rmq.list_segments(paths.timerlog_dir), directory=paths.timerlog_dir)
    kept = (at.unit for at in walk if walk.valid_end is None or at.offset < walk.valid_end)  # what recovery keeps
    if cp is not None:
        out = TimerPending(cp.last_read_time_ms, "timercheck lastReadTimeMs")
        for unit in kept:
            out.add(unit)
    else:
        units = list(kept)
        out = TimerPending(max((u.curr_write_time for u in units), default=0), "the newest unit's enqueue time (no timercheck)")
        for unit in units:
            out.add(unit)
    out.findings = walk.findings
    return out


__all__ = [
    "DUE_BUCKETS_S",
    "TimerPending",
    "timer_pending",
    "TimerPaths",
    "timer_family",
    "resolve",
    "UnitAt",
    "TimerLogFileRead",
    "timerlog_files",
    "TimerLogWalk",
    "SlotAt",
    "slot_problem",
    "WheelWalk",
    "read_timer_checkpoint",
    "timer_checkpoint_finding",
    "read_timer_metrics",
]
