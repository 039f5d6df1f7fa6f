"""Damaged copies of the bundled RocketMQ fixture: one defect each, named after the validate
finding it must produce.  Every case is a function ``(root) -> None`` editing a copy in place."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from mqtool.formats.rocketmq.commitlog import PHYSICAL_OFFSET_POSITION, QUEUE_OFFSET_POSITION, RecordWalker, body_position
from mqtool.formats.rocketmq.consume_queue import CQ_UNIT_SIZE
from mqtool.formats.rocketmq.index_file import INDEX_HEADER_SIZE, decode_index_header, infer_index_geometry

from tests.conftest import FIXTURES

STORE = FIXTURES / "rocketmq-store"


def copy_store(dest: Path) -> Path:
    shutil.copytree(STORE, dest)
    return dest


def _commitlog(root: Path, index: int = 0) -> Path:
    return sorted((root / "commitlog").iterdir())[index]


def _record_positions(path: Path) -> list[tuple[int, object]]:
    return list(RecordWalker(path.read_bytes()))


def _patch(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def body_crc(root: Path) -> None:
    path = _commitlog(root, 1)
    pos, rec = next((p, r) for p, r in _record_positions(path)[5:] if r.body)
    at = pos + body_position(rec.sys_flag)
    raw = path.read_bytes()
    _patch(path, at, bytes([raw[at] ^ 0xFF]))


def phys_offset(root: Path) -> None:
    path = _commitlog(root, 2)
    pos, rec = _record_positions(path)[3]
    _patch(path, pos + PHYSICAL_OFFSET_POSITION, struct.pack(">q", rec.physical_offset + 4096))


def queue_offset(root: Path) -> None:
    path = _commitlog(root, 0)
    pos, rec = _record_positions(path)[7]
    _patch(path, pos + QUEUE_OFFSET_POSITION, struct.pack(">q", rec.queue_offset + 1000))


def broken_magic(root: Path) -> None:
    path = _commitlog(root, 3)
    pos, _ = _record_positions(path)[4]
    _patch(path, pos, b"\x00\x00\x00\x63\x12\x34\x56\x78")


def torn_tail(root: Path) -> None:
    path = sorted((root / "commitlog").iterdir())[-1]
    pos, rec = _record_positions(path)[-1]
    half = rec.total_size // 2
    _patch(path, pos + half, bytes(rec.total_size - half))


def _cq_file(root: Path, topic: str = "TopicTest", queue: int = 1) -> Path:
    return sorted((root / "consumequeue" / topic / str(queue)).iterdir())[0]


def _patch_unit(root: Path, number: int, offset=None, size=None, tags=None) -> None:
    path = _cq_file(root)
    raw = path.read_bytes()
    old = struct.unpack_from(">qiq", raw, number * CQ_UNIT_SIZE)
    new = (old[0] if offset is None else offset(old[0]), old[1] if size is None else size, old[2] if tags is None else tags)
    _patch(path, number * CQ_UNIT_SIZE, struct.pack(">qiq", *new))


def cq_mismatch(root: Path) -> None:
    _patch_unit(root, 3, size=77)


def cq_not_a_record(root: Path) -> None:
    _patch_unit(root, 5, offset=lambda o: o + 4)


def cq_tags(root: Path) -> None:
    _patch_unit(root, 6, tags=123456789)


def cq_past_end(root: Path) -> None:
    _patch_unit(root, 8, offset=lambda o: 10_000_000)


def _index_entry(root: Path, number: int) -> tuple[Path, int, bytes]:
    path = sorted((root / "index").iterdir())[0]
    raw = path.read_bytes()
    geo = infer_index_geometry(len(raw), decode_index_header(raw[:INDEX_HEADER_SIZE]))
    return path, geo.entry_position(number), raw


def idx_entry(root: Path) -> None:
    path, at, raw = _index_entry(root, 10)
    _, other, _ = _index_entry(root, 30)
    other_offset = struct.unpack_from(">q", raw, other + 4)[0]
    _patch(path, at + 4, struct.pack(">q", other_offset))


def idx_past_end(root: Path) -> None:
    path, at, _ = _index_entry(root, 12)
    _patch(path, at + 4, struct.pack(">q", 9_000_000))


CASES = {
    "RMQ-CL-BODY-CRC": body_crc,
    "RMQ-CL-PHYS-OFFSET": phys_offset,
    "RMQ-CL-QUEUE-OFFSET": queue_offset,
    "RMQ-CL-MAGIC": broken_magic,
    "RMQ-CL-TORN-TAIL": torn_tail,
    "RMQ-CQ-MISMATCH": cq_mismatch,
    "RMQ-CQ-NOT-A-RECORD": cq_not_a_record,
    "RMQ-CQ-TAGS": cq_tags,
    "RMQ-CQ-PAST-END": cq_past_end,
    "RMQ-IDX-ENTRY": idx_entry,
    "RMQ-IDX-PAST-END": idx_past_end,
}


def make_cases(base: Path) -> dict[str, Path]:
    roots = {}
    for code, damage in CASES.items():
        root = copy_store(base / code)
        damage(root)
        roots[code] = root
    return roots


# --- damage that both scan and validate must judge alike (tests/pipeline/test_agreement.py) ------


def truncated_last_file(root: Path) -> None:
    """The last CommitLog file cut (not zeroed) 100 bytes into its second-to-last record: a torn
    tail, the last record and what points at it past the end, and the file shorter than the
    CommitLog file size."""
    path = sorted((root / "commitlog").iterdir())[-1]
    pos, _ = _record_positions(path)[-2]
    with open(path, "r+b") as f:
        f.truncate(pos + 100)


def appended_garbage(root: Path) -> None:
    """Non-zero bytes written right after the last record of the last file."""
    path = sorted((root / "commitlog").iterdir())[-1]
    pos, rec = _record_positions(path)[-1]
    _patch(path, pos + rec.total_size, bytes(range(1, 201)))


def missing_middle_file(root: Path) -> None:
    """A CommitLog file in the middle removed: a gap of one file size in the commitlog offsets."""
    _commitlog(root, 2).unlink()


AGREEMENT_CASES = {
    "truncated-last-file": truncated_last_file,
    "torn-tail": torn_tail,
    "appended-garbage": appended_garbage,
    "flipped-body-byte": body_crc,
    "missing-middle-file": missing_middle_file,
}


def make_agreement_cases(base: Path) -> dict[str, Path]:
    roots = {}
    for name, damage in AGREEMENT_CASES.items():
        root = copy_store(base / name)
        damage(root)
        roots[name] = root
    return roots
