"""Damage kit of the Kafka / Jafka / MetaQ consistency matrix (issue 18, tests/test_consistency_matrix_logs.py).

The entries of a fixture are read once through the store layer's own walks (``LogFileWalk`` for
a Kafka ``.log``, ``SegmentWalk`` for a Jafka/MetaQ segment); each damage kind damages a copy of
the fixture at positions a ``pick(lo, hi)`` chooses (hypothesis draws them in the matrix) and
returns the ``Target`` whose read crosses the damage (``query``'s question), or None when no
single read does.  ``first_finding`` is validate's verdict on the damaged copy: its first error,
else its first warning, with the exit code validate gives.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mqtool.formats.kafka import checkpoint_file as cpf
from mqtool.ops.validate import ValidateOptions, validate_path
from mqtool.store import jafka as sj
from mqtool.store import kafka as ks
from mqtool.store import metaq as sm
from mqtool.store.files import ReadOnlyFile
from mqtool.store.legacy import SegmentWalk
from tests.conftest import FIXTURES

Pick = Callable[[int, int], int]  # an integer in [lo, hi]


@dataclass(frozen=True)
class Entry:
    """One batch / message of the fixture: where it is and the offset a reader asks it by."""

    part: str  # partition directory name
    topic: str
    partition: int
    file: str  # segment file name
    position: int
    size: int
    offset: int  # Kafka: base offset; Jafka/MetaQ: the byte offset (segment start + position)
    crc_from: int  # first byte (relative to the entry) its checksum covers


@dataclass(frozen=True)
class Target:
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class Layout:
    name: str
    fixture: Path
    #: partitions damaged (each with at least three live segments, the last one non-empty)
    partitions: tuple[str, ...]
    entries: dict[str, list[list[Entry]]]  # partition -> live segments -> entries

    def segments(self, part: str) -> list[list[Entry]]:
        return self.entries[part]


def _kafka_entries(root: Path, part: str) -> list[list[Entry]]:
    topic, _, number = part.rpartition("-")
    out = []
    for seg in ks.list_partition(root / part).log_segments():
        rows = []
        with ReadOnlyFile(seg.log) as f:
            for pos, entry in ks.LogFileWalk(f, mode="header"):
                # v2: the CRC-32C covers the batch from its attributes (byte 21) on
                rows.append(Entry(part, topic, int(number), seg.log.name, pos, entry.size, entry.offset, 21))
        out.append(rows)
    return out


def _legacy_entries(root: Path, part: str, store) -> list[list[Entry]]:
    topic, _, number = part.rpartition("-")
    data = store.open(root)
    (partition,) = [p for p in data.partitions if p.path.name == part]
    out = []
    for seg in partition.segments:  # live segments only (archives are never rewritten by a broker)
        rows = []
        with store.open_segment(seg) as reader:
            walk = SegmentWalk(reader, store.FRAMING)
            positions = [pos for pos, _ in walk]
            ends = positions[1:] + [walk.valid_end]
        for pos, end in zip(positions, ends):
            rows.append(Entry(part, topic, int(number), seg.path.name, pos, end - pos, seg.start_offset + pos, store.crc_from))
        out.append(rows)
    return out


@dataclass(frozen=True)
class _Legacy:
    open: Callable
    open_segment: Callable
    FRAMING: object
    crc_from: int


# Jafka: LENGTH(4) MAGIC(1) ATTRIBUTE(1) CRC(4) payload -- the CRC covers the payload (byte 10 on)
_JAFKA = _Legacy(sj.open_jafka, sj.open_segment, sj.FRAMING, 10)
# MetaQ: msgLen(4) checksum(4) id(8) flag(4) data -- the checksum covers the data (byte 20 on)
_METAQ = _Legacy(sm.open_metaq, sm.open_segment, sm.FRAMING, 20)


def kafka() -> Layout:
    root = FIXTURES / "kafka-logs"
    parts = ("orders-0", "orders-1")
    return Layout("kafka", root, parts, {p: _kafka_entries(root, p) for p in parts})


def jafka() -> Layout:
    root = FIXTURES / "jafka-data"
    parts = ("orders-0",)
    return Layout("jafka", root, parts, {p: _legacy_entries(root, p, _JAFKA) for p in parts})


def metaq() -> Layout:
    root = FIXTURES / "metaq-data"
    # trade-0's last live segment is empty (its torn tail / garbage cases use trade-1's)
    parts = ("trade-0", "trade-1")
    return Layout("metaq", root, parts, {p: _legacy_entries(root, p, _METAQ) for p in parts})


# --- byte surgery -------------------------------------------------------------------------------------


def zero(path: Path, start: int, length: int) -> None:
    with open(path, "r+b") as f:
        f.seek(start)
        f.write(bytes(length))


def flip(path: Path, position: int, mask: int = 0x01) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ mask]))


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def target(e: Entry) -> Target:
    return Target(e.topic, e.partition, e.offset)


# --- damage kinds -------------------------------------------------------------------------------------
# Each: (layout, copy root, pick) -> the Target whose read crosses the damage, or None.

Damage = Callable[[Layout, Path, Pick], "Target | None"]


def _part(layout: Layout, pick: Pick, *, live_tail: bool = False) -> str:
    parts = [p for p in layout.partitions if not live_tail or layout.segments(p)[-1]]
    return parts[pick(0, len(parts) - 1)]


def _segment(layout: Layout, part: str, pick: Pick, which: str) -> list[Entry]:
    segs = layout.segments(part)
    if which == "active":
        return segs[-1]
    if which == "older":
        return segs[pick(0, len(segs) - 2)]
    return [s for s in segs if s][pick(0, len([s for s in segs if s]) - 1)]


def torn_tail(layout: Layout, root: Path, pick: Pick) -> Target | None:
    """The active segment ends inside its last entry: cut there (the later entries never written).

    Kafka: a crash while appending -- no clean-shutdown marker, the recovery point at the active
    segment's base offset, the high watermark and producer snapshots no further than the entries
    on disk (nothing past the torn write was ever flushed or acknowledged)."""
    part = _part(layout, pick, live_tail=True)
    seg = _segment(layout, part, pick, "active")
    e = seg[-1]  # the last write torn (a cut at an earlier entry: see NOT_SEEN in the matrix)
    os.truncate(root / part / e.file, e.position + pick(1, e.size - 1))
    if layout.name == "kafka":
        _crashed_at(root, e, recovery_point=seg[0].offset, end=e.offset)
    return target(e)


def _set_checkpoint(root: Path, name: str, e: Entry, value: int) -> None:
    path = root / name
    lines = path.read_text().splitlines()
    key = [e.topic, str(e.partition)]
    path.write_text("\n".join(f"{e.topic} {e.partition} {min(value, int(line.split()[2]))}" if line.split()[:2] == key else line for line in lines) + "\n")


def _crashed_at(root: Path, e: Entry, *, recovery_point: int, end: int) -> None:
    (root / ".kafka_cleanshutdown").unlink(missing_ok=True)
    _set_checkpoint(root, cpf.RECOVERY_POINT_OFFSET_CHECKPOINT, e, recovery_point)
    _set_checkpoint(root, cpf.REPLICATION_OFFSET_CHECKPOINT, e, end)
    for snap in (root / e.part).glob("*.snapshot"):
        if int(snap.name.split(".")[0]) > end:
            snap.unlink()


def cut_older(layout: Layout, root: Path, pick: Pick) -> Target | None:
    """A segment before the last one cut inside an entry."""
    part = _part(layout, pick)
    seg = _segment(layout, part, pick, "older")
    e = seg[pick(0, len(seg) - 1)]
    os.truncate(root / part / e.file, e.position + pick(1, e.size - 1))
    return target(e)


def garbage(layout: Layout, root: Path, pick: Pick) -> Target | None:
    """Non-zero bytes appended to the active segment (after a run of zeros, maybe)."""
    part = _part(layout, pick, live_tail=True)
    seg = _segment(layout, part, pick, "active")
    gap = pick(0, 64)
    junk = bytes((pick(1, 255) if i == 0 else (i * 131 + 7) % 256) for i in range(pick(1, 300)))
    append(root / part / seg[-1].file, bytes(gap) + junk)
    return None  # after the last entry: no entry's read crosses it


def zeroed(layout: Layout, root: Path, pick: Pick) -> Target | None:
    """A run of zeros inside an entry of any segment."""
    part = _part(layout, pick)
    seg = _segment(layout, part, pick, "any")
    e = seg[pick(0, len(seg) - 1)]
    start = pick(e.crc_from, e.size - 1)  # from inside the part the checksum covers
    length = pick(1, min(400, e.size - start))
    data = (layout.fixture / part / e.file).read_bytes()[e.position : e.position + e.size]
    if not any(data[start : start + length]):  # zeros already: move to the next non-zero byte
        start = next(i for i in [*range(start, e.size), *range(e.crc_from, start)] if data[i])
        length = min(length, e.size - start)
    zero(root / part / e.file, e.position + start, length)
    return target(e)


def flipped(layout: Layout, root: Path, pick: Pick) -> Target | None:
    """One byte flipped inside the part of an entry its checksum covers."""
    part = _part(layout, pick)
    seg = _segment(layout, part, pick, "any")
    candidates = [e for e in seg if e.size > e.crc_from]
    e = candidates[pick(0, len(candidates) - 1)]
    flip(root / part / e.file, e.position + pick(e.crc_from, e.size - 1), 1 << pick(0, 7))
    return target(e)


def missing_middle(layout: Layout, root: Path, pick: Pick) -> Target | None:
    """A segment between the first and the last one deleted (with its index files)."""
    parts = [p for p in layout.partitions if len(layout.segments(p)) >= 3]
    part = parts[pick(0, len(parts) - 1)]
    segs = layout.segments(part)
    i = pick(1, len(segs) - 2)
    stem = segs[i][0].file.split(".")[0]
    for path in (root / part).iterdir():
        if path.name.split(".")[0] == stem and not path.name.endswith(".snapshot"):
            path.unlink()
    return target(segs[i][0])


def log_deleted(layout: Layout, root: Path, pick: Pick) -> Target | None:
    """Kafka: the last k segments' .log deleted (their indexes with them) while the recovery
    point, high watermark and producer snapshot still stand beyond them."""
    part = _part(layout, pick)
    segs = layout.segments(part)
    k = pick(1, len(segs))
    for seg in segs[len(segs) - k :]:
        stem = seg[0].file.split(".")[0]
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            (root / part / (stem + suffix)).unlink(missing_ok=True)
    return target(segs[len(segs) - k][0])


def behind_high_watermark(layout: Layout, root: Path, pick: Pick) -> Target | None:
    """Kafka: a replica whose log ends below its high watermark -- the active segment ends at an
    entry boundary (whole entries cut away, no torn write), the recovery point and producer
    snapshots at that end (what the replica flushed), replication-offset-checkpoint unchanged."""
    part = _part(layout, pick)
    seg = _segment(layout, part, pick, "active")
    i = pick(1, len(seg) - 1)
    e = seg[i]
    os.truncate(root / part / e.file, e.position)
    end = e.offset  # the new log end offset
    _set_checkpoint(root, cpf.RECOVERY_POINT_OFFSET_CHECKPOINT, e, end)
    for snap in (root / part).glob("*.snapshot"):
        if int(snap.name.split(".")[0]) > end:
            snap.unlink()
    for index in ("index", "timeindex"):  # what the broker's truncation leaves: entries up to the end
        (root / part / e.file.replace(".log", f".{index}")).unlink(missing_ok=True)
    return target(e)


COMMON: dict[str, Damage] = {
    "torn-tail-active": torn_tail,
    "cut-mid-entry-older": cut_older,
    "garbage-appended": garbage,
    "zeroed-region": zeroed,
    "flipped-crc-covered-byte": flipped,
    "missing-middle-segment": missing_middle,
}

KAFKA_ONLY: dict[str, Damage] = {
    "log-deleted-checkpoints-beyond": log_deleted,
    "replica-behind-high-watermark": behind_high_watermark,
}


def damages(layout: str) -> dict[str, Damage]:
    return {**COMMON, **KAFKA_ONLY} if layout == "kafka" else dict(COMMON)


# --- validate's verdict ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    code: str
    path: str
    position: int | None
    exit: int  # validate's: 1 on an error, 0 on a warning only

    @property
    def line(self) -> str:
        """How a command names the finding: ``CODE path:position:`` (``CODE path:`` without a position)."""
        where = self.path if self.position is None else f"{self.path}:{self.position}"
        return f"{self.code} {where}: "

    def in_document(self, findings: list[dict]) -> bool:
        return any((f["code"], f["path"], f["position"]) == (self.code, self.path, self.position) for f in findings)


#: the check families a reader of the log reads (``mqtool.ops.log_findings.LOG``; of ``files``
#: its errors).  Not the index family: only ``query`` and ``dump kafka-index`` read index files.
#: Known disagreement left (validator, not changed here): when a ``.index`` entry of the active
#: segment points at the torn last batch, validate says KAFKA-INDEX-OFFSET (error) although
#: recovery rebuilds that index -- where an entry past the valid end is KAFKA-INDEX-POSITION, a
#: warning.  The verdict is taken over the log families, so that case is a torn tail (exit 0).
FAMILIES = ("files", "log", "offsets")


def first_finding(root: Path, layout: str) -> Verdict | None:
    """validate's first error, else its first warning, in the families readers of the log read
    (None: none there)."""
    report = validate_path(root, ValidateOptions(jobs=1), layout)
    seen = [f for f in report.findings if f.family in FAMILIES and (f.family != "files" or f.level.value == "error")]
    errors = [f for f in seen if f.level.value == "error"]
    warnings = [f for f in seen if f.level.value == "warning"]
    if not errors and not warnings:
        return None
    first = (errors or warnings)[0]
    return Verdict(first.code, first.path, first.position, 1 if errors else 0)


def copy(pristine: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(pristine, dest, symlinks=True)
    return dest
