"""clean for Jafka and MetaQ data dirs (spec jafka.md B6, metaq.md C5).

Per partition, oldest segment first, never the active (last) live segment, and only a *prefix*:
the first segment that does not qualify stops the partition's scan, so a deletion never leaves a
hole the loaders refuse (``validateSegments``).

| rule | broker | mqtool |
|---|---|---|
| Jafka time (``log.retention.hours`` 168, ``topic.log.retention.hours``) | ``now - mtime > retention``; every matching segment is collected but the *first N* are deleted (``SegmentList.trunc``): with uneven mtimes the wrong ones go | the same test as a prefix scan: exactly the matching prefix goes |
| Jafka size (``log.retention.size``, -1 = off) | ``diff = size - limit``, oldest first ``diff -= segment``, delete while ``diff >= 0``; ``Log.size()`` sums into an ``int``, so past 2 GiB the rule misfires | the same rule with 64-bit sizes (any limit, any partition size) |
| Jafka active segment | deleted too when everything expired (a new one is rolled first) | never deleted |
| MetaQ ``deletePolicy`` (``delete,168``) | every *immutable* segment with ``now - mtime > T`` (not a prefix: a middle one leaves a hole and the next start-up fails) | the same test as a prefix scan |
| MetaQ ``archive,T`` | rename ``NNN.meta`` -> ``NNN.meta.arc`` | the same (an existing ``.arc`` is never replaced: the scan stops there) |
| MetaQ ``archive,T,true`` | write ``NNN.meta.zip``, then delete ``NNN.meta`` in a ``finally`` -- even when writing the zip failed | the zip is written to a temporary name, fsynced, read back and checked (one entry ``NNN.meta``, size and CRC-32 of the segment, inflated in full) and only then renamed into place; the segment is deleted last |

Deletion is ``remove`` (no copy: retention is the point; the plan and the report list every file
with its size and offsets), ``.arc`` archiving is ``rename``, zipping is the ``archive`` action
of this module (``apply_custom``).  Every step is a single atomic change or ends with one, so a
run killed at any point leaves a loadable partition and a rerun finishes the job: a zip left
complete but not yet followed by the segment's deletion is recognised (and re-checked) by the
next plan, and a temporary ``.mqtool-tmp-NNN.meta.zip`` left by an interrupted run is removed.

Only recognised segment files inside the given root are touched; symbolic links are never
followed; anything else is left alone and listed in the plan's notes.
"""  # noqa: E501 -- a markdown table row cannot be wrapped (for a string ruff reads the noqa at its closing line)

from __future__ import annotations

import datetime as dt
import io
import os
import re
import time
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqtool.errors import CorruptDataError, MqError, PlanChangedError, StoreLayoutError, UnsupportedFormatError
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.ops.clean import HOUR_MS
from mqtool.ops.recover import ApplyContext, RecoverPlan, Step, observe, relative, resolve
from mqtool.store import jafka as sj
from mqtool.store import metaq as sm
from mqtool.store.files import copy_out, file_size
from mqtool.store.legacy import DataDir, Partition, Segment, ZipEntryReader
from mqtool.store.mutate import Mutator
from mqtool.store.quarantine import region_crc

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

#: Upstream defaults (``ServerConfig``: ``log.retention.hours``, ``log.retention.size``;
#: ``MetaConfig``/``TopicConfig``: ``deletePolicy``).
JAFKA_RETENTION_HOURS = 168.0
JAFKA_RETENTION_SIZE = -1
METAQ_DELETE_POLICY = "delete,168"

#: What an interrupted zip archiving leaves behind (``Mutator``'s temporary-file prefix).
TMP_PREFIX = ".mqtool-tmp-"
_LEFTOVER = {
    "jafka": re.compile(r"\.mqtool-tmp-[0-9]+\.jafka"),
    "metaq": re.compile(r"\.mqtool-tmp-[0-9]+\.meta(\.zip|\.arc)?"),
}
#: Compressed bytes gathered before each (fsynced) write of a zip being built.
_ZIP_WRITE_CHUNK = 4 << 20


@dataclass(frozen=True)
class CleanOptions:
    """Retention settings; None means the upstream default.  The Jafka fields and the MetaQ fields
    exclude each other (each plan function refuses the other layout's)."""

    policy: str = "safe"  # "safe" or "broker": the same rules here (the brokers' bugs are not reproduced)
    retention_hours: float | None = None  # Jafka log.retention.hours (168)
    retention_bytes: int | None = None  # Jafka log.retention.size per partition (-1: off)
    topic_retention_hours: Mapping[str, float] | None = None  # Jafka topic.log.retention.hours
    delete_policy: str | None = None  # MetaQ deletePolicy ("delete,168", "archive,72h,true")
    topic_delete_policies: Mapping[str, str] | None = None  # MetaQ [topic=NAME] deletePolicy
    max_delete: int | None = None  # at most this many segments deleted/archived per run

    def __post_init__(self) -> None:
        """Values a cron job must not run with are refused here (ValueError naming the setting):
        Jafka's retention hours are >= 1; a MetaQ policy must parse and keep files a while (a
        negative or zero time would make every closed segment expired)."""
        hours = [("log.retention.hours (--retention-hours)", self.retention_hours)]
        hours += [(f"topic.log.retention.hours of {t}", h) for t, h in (self.topic_retention_hours or {}).items()]
        for name, value in hours:
            if value is not None and not value > 0:
                raise ValueError(f"{name}: expected hours > 0 (Jafka's range is >= 1), found {value:g}")
        policies = [("deletePolicy (--delete-policy)", self.delete_policy)]
        policies += [(f"deletePolicy of topic {t}", p) for t, p in (self.topic_delete_policies or {}).items()]
        for name, text in policies:
            if text is None:
                continue
            try:
                policy = mq.parse_delete_policy(text)
            except MqError as exc:
                raise ValueError(f"{name}: expected {exc.expected}, found {exc.found}") from None
            if policy.max_reserved_time_ms <= 0:
                raise ValueError(f"{name}: expected a time > 0, found {text!r} (every closed segment would go)")


#: The options each layout reads (the others' are refused: exit 2).
LAYOUT_FIELDS = {
    "jafka": ("policy", "retention_hours", "retention_bytes", "topic_retention_hours", "max_delete"),
    "metaq": ("policy", "delete_policy", "topic_delete_policies", "max_delete"),
}


_JAFKA_FIELDS = ("retention_hours", "retention_bytes", "topic_retention_hours")
_METAQ_FIELDS = ("delete_policy", "topic_delete_policies")


def _refuse_foreign(options: CleanOptions, layout: str) -> None:
    foreign = _METAQ_FIELDS if layout == "jafka" else _JAFKA_FIELDS
    given = [name for name in foreign if getattr(options, name) is not None]
    if given:
        raise UnsupportedFormatError(
            f"{', '.join('--' + g.replace('_', '-') for g in given)} do not apply to the {layout} layout",
            expected="log.retention.hours / log.retention.size (jafka)" if layout == "jafka" else "deletePolicy (metaq)",
            found=", ".join(given),
        )


def _open(layout: str, path: str | Path) -> DataDir:
    data = sj.open_jafka(path) if layout == "jafka" else sm.open_metaq(path)
    if data.kind == "segment":
        raise StoreLayoutError(
            "`mqtool clean` applies retention to whole partitions: give the data dir or a partition directory",
            path=path,
            expected=f"a {layout} data dir or partition directory",
            found="a segment file",
        )
    return data


def _unresolved(root: Path, path: Path) -> str:
    """``path`` relative to ``root`` without resolving it (a symbolic link is named, not followed)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _mtime_ms(seg: Segment) -> int:
    """``File.lastModified()``: milliseconds."""
    return os.stat(seg.path).st_mtime_ns // 1_000_000


def _segment_details(part: Partition, seg: Segment, mtime_ms: int) -> dict[str, Any]:
    end = seg.start_offset + (seg.size or 0)
    return {
        "kind": "segment",
        "topic": part.topic,
        "partition": part.partition,
        "directory": part.name,
        "start_offset": seg.start_offset,
        "end_offset": end,
        "offsets": [seg.start_offset, end],
        "size": seg.size,
        "mtime_ms": mtime_ms,
    }


def _new_plan(layout: str, data: DataDir, options: CleanOptions, now_ms: int) -> RecoverPlan:
    if options.policy not in ("safe", "broker"):
        raise UnsupportedFormatError(expected="--policy safe or broker", found=repr(options.policy))
    plan = RecoverPlan(layout, str(data.root.absolute()), f"clean ({options.policy} policy)")
    plan.facts.update({"now_ms": now_ms, "kind": data.kind})
    if options.policy == "broker":
        plan.notes.append(
            f"--policy broker: the {layout} rules are the same as safe (a prefix of old segments, never the active one); "
            "the broker's own deviations (wrong segments, holes, int overflow) are not reproduced"
        )
    _note_ignored(plan, data, layout)
    return plan


def _names(paths: list[Path], root: Path) -> str:
    shown = [_unresolved(root, p) for p in paths[:5]]
    return ", ".join(shown) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def _note_ignored(plan: RecoverPlan, data: DataDir, layout: str) -> None:
    """Say what clean leaves alone: anything that is not a recognised segment."""
    root = data.root
    pattern = _LEFTOVER[layout]
    groups: list[tuple[str, list[Path]]] = [
        ("symbolic links (never followed)", list(data.links) + [p for part in data.partitions for p in part.links]),
        ("unrecognised files", list(data.unexpected) + [p for part in data.partitions for p in part.unexpected if not pattern.fullmatch(p.name)]),
        ("segment files whose name is not a number", [p for part in data.partitions for p in part.bad_names]),
        ("special files named like segments", [p for part in data.partitions for p, _ in part.irregular]),
        ("directories the broker does not load", [p for p, _ in data.bad_dirs] + [p for p in data.ignored_dirs if p.name != sm.TRANSACTIONS_DIR]),
    ]
    for what, paths in groups:
        if paths:
            plan.notes.append(f"ignored {len(paths)} {what}: {_names(paths, root)}")
    plan.facts["ignored"] = sum(len(paths) for _, paths in groups)


def _plan_leftovers(plan: RecoverPlan, part: Partition, layout: str, root: Path) -> None:
    """Temporary files an interrupted mqtool run left in a partition (never a segment: the
    broker ignores them, and they are removed before anything else of the partition)."""
    for leftover in part.unexpected:
        if _LEFTOVER[layout].fullmatch(leftover.name) and not leftover.is_symlink() and leftover.is_file():
            plan.add(
                Step(
                    "remove",
                    relative(root, leftover),
                    f"{part.name}: temporary file left by an interrupted mqtool run",
                    expect=observe(leftover),
                    details={"kind": "leftover", "topic": part.topic, "partition": part.partition, "directory": part.name, "size": leftover.stat().st_size},
                )
            )


class _Budget:
    """``--max-delete``: segments deleted or archived this run, across partitions."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit

    def take(self, plan: RecoverPlan) -> bool:
        if self.left is None:
            return True
        if self.left <= 0:
            if not any("--max-delete" in n for n in plan.notes):
                plan.notes.append("--max-delete reached: the remaining old segments go in a later run")
            return False
        self.left -= 1
        return True


# --- Jafka --------------------------------------------------------------------------------------------------


def plan_clean_jafka(path: str | Path, options: CleanOptions = CleanOptions(), *, now_ms: int | None = None) -> RecoverPlan:
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    _refuse_foreign(options, "jafka")
    hours = JAFKA_RETENTION_HOURS if options.retention_hours is None else float(options.retention_hours)
    limit = JAFKA_RETENTION_SIZE if options.retention_bytes is None else int(options.retention_bytes)
    topic_hours = dict(options.topic_retention_hours or {})
    for name, value in [("log.retention.hours", hours), *((f"topic.log.retention.hours {t}", h) for t, h in topic_hours.items())]:
        if not value > 0:
            raise CorruptDataError(expected=f"{name} > 0 hours (Jafka's range is >= 1)", found=str(value))
    data = _open("jafka", path)
    root = data.root
    plan = _new_plan("jafka", data, options, now_ms)
    plan.facts.update({"retention_hours": hours, "retention_bytes": limit, "topic_retention_hours": topic_hours})
    budget = _Budget(options.max_delete)
    for part in data.partitions:
        _plan_leftovers(plan, part, "jafka", root)
        segs = part.segments
        if len(segs) < 2:
            continue
        part_hours = topic_hours.get(part.topic or "", hours)
        retention_ms = int(part_hours * HOUR_MS)
        chosen: list[tuple[Segment, int, str]] = []
        # time rule: the expired prefix (the active segment is never a candidate)
        for seg in segs[:-1]:
            mtime = _mtime_ms(seg)
            age = now_ms - mtime
            if age <= retention_ms:
                break
            source = "topic.log.retention.hours" if (part.topic or "") in topic_hours else "log.retention.hours"
            chosen.append((seg, mtime, f"expired: last modified {age / HOUR_MS:.1f} h ago ({source} {part_hours:g})"))
        # size rule, on what the time rule leaves (64-bit sums: no 2 GiB overflow)
        if limit >= 0:
            remaining = segs[len(chosen) :]
            total = sum(s.size or 0 for s in remaining)
            if total >= limit:
                diff = total - limit
                for seg in remaining[:-1]:
                    diff -= seg.size or 0
                    if diff < 0:
                        break
                    chosen.append((seg, _mtime_ms(seg), f"partition holds {total} bytes, above log.retention.size {limit}"))
        for seg, mtime, why in chosen:
            if not budget.take(plan):
                break
            plan.add(
                Step(
                    "remove",
                    relative(root, seg.path),
                    f"{part.name}: {why}",
                    expect=observe(seg.path),
                    details=_segment_details(part, seg, mtime),
                )
            )
    return plan


# --- MetaQ --------------------------------------------------------------------------------------------------


def plan_clean_metaq(path: str | Path, options: CleanOptions = CleanOptions(), *, now_ms: int | None = None) -> RecoverPlan:
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    _refuse_foreign(options, "metaq")
    default_text = options.delete_policy or METAQ_DELETE_POLICY
    default = mq.parse_delete_policy(default_text)
    topics = {t: (text, mq.parse_delete_policy(text)) for t, text in (options.topic_delete_policies or {}).items()}
    data = _open("metaq", path)
    root = data.root
    plan = _new_plan("metaq", data, options, now_ms)
    plan.facts.update({"delete_policy": default_text, "topic_delete_policies": {t: v[0] for t, v in topics.items()}})
    budget = _Budget(options.max_delete)
    archived = [0, 0]  # count, bytes
    for part in data.partitions:
        _plan_leftovers(plan, part, "metaq", root)
        text, policy = topics.get(part.topic or "", (default_text, default))
        for seg in part.segments[:-1]:  # the active (last, mutable) segment is never processed
            mtime = _mtime_ms(seg)
            age = now_ms - mtime
            if age <= policy.max_reserved_time_ms:
                break
            why = f"{part.name}: expired: last modified {age / HOUR_MS:.1f} h ago (deletePolicy {text})"
            details = _segment_details(part, seg, mtime)
            if policy.name == "delete":
                if not budget.take(plan):
                    break
                plan.add(Step("remove", relative(root, seg.path), why, expect=observe(seg.path), details=details))
                continue
            target = seg.path.with_name(segnames.metaq_archive_name(seg.name, compress=policy.compress))
            target_rel = relative(root, target)
            expect = {**observe(seg.path), "files": {target_rel: observe(target)}}
            if os.path.lexists(target):
                if not (policy.compress and _zip_holds(target, seg)):
                    plan.notes.append(f"{part.name}: {target.name} already exists and is not this segment's archive: not replaced; the scan stops here")
                    break
                why += f"; {target.name} was written by an interrupted run and holds the segment: only the segment is left to delete"
            if not budget.take(plan):
                break
            details.update({"archive": "zip" if policy.compress else "arc", "to": target_rel})
            if policy.compress:
                details["entry"] = seg.name
                plan.add(Step("archive", relative(root, seg.path), why + f"; zipped to {target.name}", expect=expect, details=details))
            else:
                plan.add(Step("rename", relative(root, seg.path), why + f"; renamed to {target.name}", expect=expect, details=details))
            archived[0] += 1
            archived[1] += seg.size or 0
    if archived[0]:
        plan.notes.append(f"{archived[0]} segment(s) ({archived[1]} bytes) would be archived: they stay in the partition directories, ignored by the broker")
    plan.facts["archived"] = {"segments": archived[0], "bytes": archived[1]}
    return plan


# --- the archive action ------------------------------------------------------------------------------------------


def _source_crc(path: Path, size: int) -> int:
    """CRC-32 of the segment the plan saw (the quarantine's ``region_crc``), refused when its size changed."""
    found = file_size(path)
    if found != size:
        raise PlanChangedError(f"{path.name} changed since the plan was made; plan again", path=path, expected=f"size {size}", found=f"size {found}")
    return region_crc(path, 0, size)


def _check_zip(path: Path, entry: str, size: int, crc: int) -> None:
    """Raise unless ``path`` is a zip holding exactly ``entry`` of ``size`` bytes with CRC-32
    ``crc``, and the entry inflates to bytes matching it."""
    with ZipEntryReader(path, entry) as z:
        if z.entries != [entry]:
            raise CorruptDataError("archive check failed", path=path, expected=f"one entry {entry}", found=", ".join(z.entries[:5]))
        if z.size != size or z.crc != crc:
            raise CorruptDataError("archive check failed", path=path, expected=f"{size} bytes with CRC-32 0x{crc:08X}", found=f"{z.size} bytes with CRC-32 0x{z.crc:08X}")
        z.verify()


def _zip_holds(target: Path, seg: Segment) -> bool:
    """Whether an existing ``NNN.meta.zip`` already holds exactly this segment."""
    if os.path.islink(target) or not target.is_file():
        return False
    try:
        _check_zip(target, seg.name, seg.size or 0, _source_crc(seg.path, seg.size or 0))
    except MqError:
        return False
    return True


class _MutatorSink(io.RawIOBase):
    """A write-only, forward-only stream into an existing file, through the ``Mutator`` (each
    chunk a fsynced ``write_at``).  Not seekable, so ``zipfile`` writes a data descriptor as
    ``java.util.zip.ZipOutputStream`` does."""

    def __init__(self, mutator: Mutator, path: Path) -> None:
        super().__init__()
        self.mutator = mutator
        self.path = path
        self.position = 0
        self.buffer = bytearray()

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        return self.position + len(self.buffer)

    def write(self, data: ReadableBuffer, /) -> int:
        view = memoryview(data)  # ``zipfile`` writes bytes; the count is of bytes, as ``RawIOBase.write`` says
        self.buffer += view
        if len(self.buffer) >= _ZIP_WRITE_CHUNK:
            self.flush()
        return view.nbytes

    def flush(self) -> None:
        if self.buffer:
            self.mutator.write_at(self.path, self.position, bytes(self.buffer))
            self.position += len(self.buffer)
            self.buffer = bytearray()


def _zip_time(mtime_ms: int) -> tuple[int, int, int, int, int, int]:
    """The entry time: the segment's own mtime (UTC; clamped to zip's 1980-2107 range), so the
    archive's bytes depend only on the segment."""
    t = dt.datetime.fromtimestamp(mtime_ms / 1000, dt.timezone.utc)
    t = min(max(t, dt.datetime(1980, 1, 1, tzinfo=dt.timezone.utc)), dt.datetime(2107, 12, 31, 23, 59, 58, tzinfo=dt.timezone.utc))
    return (t.year, t.month, t.day, t.hour, t.minute, t.second)


def _write_zip(mutator: Mutator, source: Path, tmp: Path, entry: str, size: int, mtime_ms: int) -> int:
    """Write the archive of ``source`` to ``tmp``; returns the CRC-32 of the bytes read."""
    mutator.create_file(tmp, b"")
    sink = _MutatorSink(mutator, tmp)
    info = zipfile.ZipInfo(entry, _zip_time(mtime_ms))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    info.file_size = size
    with zipfile.ZipFile(sink, "w") as archive, archive.open(info, "w") as out:
        crc = copy_out(source, size, out.write)
    sink.flush()
    return crc


def apply_custom(step: Step, ctx: ApplyContext) -> None:
    """``archive``: zip a MetaQ segment to ``NNN.meta.zip``, check the archive, then delete the
    segment.  A zip already in place (an interrupted run) is checked and kept."""
    if step.action != "archive":
        raise StoreLayoutError(f"unknown clean action {step.action!r}", path=resolve(ctx.root, step.path))
    source = resolve(ctx.root, step.path)
    target = resolve(ctx.root, step.details["to"])
    entry = step.details["entry"]
    size = step.details["size"] or 0
    if os.path.lexists(target):
        try:
            _check_zip(target, entry, size, _source_crc(source, size))
        except MqError:
            raise PlanChangedError(f"{target.name} appeared since the plan was made and does not hold {source.name}; plan again", path=target) from None
    else:
        tmp = target.with_name(TMP_PREFIX + target.name)
        crc = _write_zip(ctx.mutator, source, tmp, entry, size, step.details.get("mtime_ms") or 0)
        try:
            _check_zip(tmp, entry, size, crc)
        except MqError as exc:
            ctx.mutator.delete(tmp)
            raise CorruptDataError(f"the archive written for {source.name} does not read back as the segment; the segment is kept", path=tmp, found=str(exc)) from None
        ctx.mutator.rename(tmp, target)
    ctx.mutator.delete(source)


__all__ = [
    "JAFKA_RETENTION_HOURS",
    "JAFKA_RETENTION_SIZE",
    "METAQ_DELETE_POLICY",
    "CleanOptions",
    "apply_custom",
    "plan_clean_jafka",
    "plan_clean_metaq",
]
