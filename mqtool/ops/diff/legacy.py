"""diff of two Jafka or MetaQ data dirs (or partitions): each side read once, by the store model's reading.

A side is read as validate reads it (``store.model.legacy.read_store``: every live segment's
messages and how the partition's last segment ends) for the findings diff states; that reading
is watched (``store.files.observe_reads``) and its bytes kept as block digests
(``ops.diff.digest``), which the comparison (``ops.diff.bytelog``) compares instead of reading the
partitions again.  Where a partition's data ends is the model's valid end of its last segment: a
torn tail there (the model's ``*-TORN-TAIL``) is the end, noted; an error there is damage, and
the log then goes on to the file's last non-zero byte, so the damaged bytes are compared too.
Only what the comparison looks at closer is read again: differing blocks, the messages there,
and the messages one side holds past the other's end (the model's ``read_messages``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqtool.findings import Finding, Severity, finding_location
from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats.data_end import DataEnd
from mqtool.ops.diff.bytelog import ByteLog, Seg
from mqtool.ops.diff.digest import ReadDigests
from mqtool.ops.diff.report import torn_note
from mqtool.store.files import nonzero_extent, observe_reads
from mqtool.store.legacy import DataDir, Framing, Segment, SegmentReader
from mqtool.store.model import legacy as lm


def _is_segment(path: str) -> bool:
    return path.endswith((".jafka", ".meta"))


@dataclass(frozen=True)
class _Layout:
    name: str
    open: Callable[[Path], DataDir]
    open_segment: Callable[[Segment], SegmentReader]
    framing: Framing


def _layout(name: str) -> _Layout:
    if name == "jafka":
        from mqtool.store import jafka

        return _Layout(name, jafka.open_jafka, jafka.open_segment, jafka.FRAMING)
    from mqtool.store import metaq

    return _Layout(name, metaq.open_metaq, metaq.open_segment, metaq.FRAMING)


def _opener(lay: _Layout, seg: Segment) -> Callable[[], SegmentReader]:
    return lambda: lay.open_segment(seg)


def legacy_logs(path: Path, layout: str, problems: list[str], progress: Callable[[int], object] | None = None) -> tuple[dict[str, ByteLog], list[Finding]]:
    """A byte log per partition, ending where its data ends (the module docstring), and the
    side's findings as a reader states them (``ops.log_findings.select``), from one reading."""
    from mqtool.ops import log_findings

    lay = _layout(layout)
    data = lay.open(path)
    digests = ReadDigests(_is_segment, progress)
    found: list[Finding] = []
    results: dict[str, lm.SegmentResult] = {}
    with observe_reads(digests.observe):
        for item in lm.read_store(data, layout):
            if isinstance(item, lm.SegmentRead):
                results[item.task.path] = item.result
                found.extend(item.result.findings)
            else:
                found.extend(item)
    logs = {}
    for part in data.partitions:
        segs = list(part.segments)
        valid: list[Seg] = []
        damage: tuple[Path, int, int, str] | None = None
        note = None
        for i, seg in enumerate(segs):
            size = seg.size or 0
            res = results.get(str(seg.path))
            if i == len(segs) - 1 and res is not None and res.opened:
                size = res.valid_end
                if size < res.size:
                    with lay.open_segment(seg) as reader:
                        extent = nonzero_extent(reader, size)
                    # a message starts there (its length bytes are not all zero): torn or broken
                    if extent is not None and extent[0] < size + lay.framing.header_size:
                        # the model's first word there, in its order: a torn tail, else the broken message
                        after = [f for f in res.findings if f.position is not None and f.position >= size and f.level is not Severity.info]
                        torn = next((f for f in after if f.code.endswith("-TORN-TAIL")), None)
                        broken = next((f for f in after if f.level is Severity.error), None)
                        if torn is not None:
                            note = torn_note(seg.path, size, f"a message starts here but not all of its bytes were written ({res.size - size} bytes left)")
                        elif broken is not None:
                            problems.append(finding_location(broken))
                            damage = (seg.path, size, seg.start_offset + size, finding_location(broken))
                            size = max(size + 1, extent[1])
            valid.append(Seg(seg.start_offset, size, seg.path, _opener(lay, seg)))
        log = logs[part.name] = ByteLog(part.name, valid, _describer(lay), _walker(lay), digests)
        if damage is not None:
            log.add_damage(*damage)
        if note is not None:
            log.notes.append(note)
    return logs, log_findings.select(found)


def _describer(lay: _Layout) -> Callable[[ByteLog, int], tuple[int, dict[str, Any] | None, tuple[int, int] | None]]:
    def describe(log: ByteLog, offset: int) -> tuple[int, dict[str, Any] | None, tuple[int, int] | None]:
        seg = log.segment_for(offset)
        if seg is None:
            return offset, None, None
        reader = seg.opener()
        try:
            assert isinstance(reader, SegmentReader)
            for event in lm.read_messages(reader, lay.framing):
                if isinstance(event, DataEnd):
                    break
                pos, message, size = event.position, event.message, event.size
                if seg.base + pos + size > offset:
                    info: dict[str, Any] = {"offset": seg.base + pos, "file": str(seg.path), "position": pos, "size": size}
                    if isinstance(message, mq.Message):
                        info.update(id=message.id, flag=message.flag, checksum=message.checksum)
                    elif isinstance(message, jf.Message):
                        info.update(magic=message.magic, crc=message.crc)
                    return seg.base + pos, info, None
            assert isinstance(event, DataEnd)  # the stream ends with one
            where = seg.base + event.position
            if event.error is not None:
                log.add_damage(seg.path, event.position, where, event.error)
            return where, {"offset": where, "file": str(seg.path), "position": event.position, "error": str(event.error) if event.error else "no valid message"}, None
        finally:
            reader.close()

    return describe


def _walker(lay: _Layout) -> Callable[[ByteLog, int], Iterator[tuple[int, int]]]:
    def walk_from(log: ByteLog, offset: int) -> Iterator[tuple[int, int]]:
        pos = offset
        while True:
            seg = log.segment_for(pos)
            if seg is None:
                return
            reader = seg.opener()
            try:
                assert isinstance(reader, SegmentReader)
                stop: DataEnd[str] | None = None
                for event in lm.read_messages(reader, lay.framing, pos - seg.base):
                    if isinstance(event, DataEnd):
                        stop = event
                        break
                    if event.position >= seg.size:
                        return
                    yield seg.base + event.position, event.size
            finally:
                reader.close()
            if stop is not None and stop.error is not None and stop.position < seg.size:
                log.add_damage(seg.path, stop.position, seg.base + stop.position, stop.error)  # inside the data this side holds
                return
            pos = seg.base + seg.size

    return walk_from
