"""Damaged copies of the bundled fixtures, one per layout and damage kind, for the browser tests
and ``scripts/report_screenshot.py``.

Kinds (each placed deterministically, so a screenshot shows the same thing every run):

* ``torn-tail``: the last write of the active file torn (RocketMQ: the last record's tail
  zeroed, as a crash leaves a pre-allocated CommitLog file; Kafka / Jafka / MetaQ: the active
  segment cut inside its last entry, as ``tests/matrix_logs_kit.py`` does);
* ``garbage``: non-zero bytes written after the valid end of the active file;
* ``missing-middle``: a file between the first and the last one deleted;
* ``unconsumed``: every file's mtime set far in the past, so that retention (``clean``) would
  delete the oldest files while a consumer group has not read all of them (RocketMQ and Kafka:
  the groups of the fixture; Jafka and MetaQ keep no consumer positions on disk).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mqtool.ops.dump.rocketmq import CommitLogDump, commitlog_files
from tests import matrix_logs_kit as kit
from tests.conftest import FIXTURES

LAYOUTS = {"rocketmq": "rocketmq-store", "kafka": "kafka-logs", "jafka": "jafka-data", "metaq": "metaq-data"}
KINDS = ("torn-tail", "garbage", "missing-middle", "unconsumed")
#: 2023-01-01T00:00:00Z: older than every layout's default retention
OLD_MTIME = 1672531200
#: the bytes written after the valid end (non-zero from the first byte on, so never a clean end)
JUNK = bytes(((i * 131 + 7) % 255) + 1 for i in range(300))


def copy_fixture(layout: str, dest: Path) -> Path:
    root = dest / LAYOUTS[layout]
    shutil.copytree(FIXTURES / LAYOUTS[layout], root, symlinks=True)
    return root


def _mid(lo: int, hi: int) -> int:
    return (lo + hi) // 2


def _age_all(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (OLD_MTIME, OLD_MTIME))


def _rocketmq(root: Path, kind: str) -> str:
    """Damage a RocketMQ copy; returns the path (relative to the root) of the damaged file."""
    names = sorted(p.name for p in (root / "commitlog").iterdir())
    last = [(loc.position, rec.total_size) for loc, rec in CommitLogDump(commitlog_files(root)) if loc.path.name == names[-1]][-1]
    active = root / "commitlog" / names[-1]
    if kind == "torn-tail":
        position, size = last
        keep = size // 2
        with open(active, "r+b") as f:
            f.seek(position + keep)
            f.write(bytes(size - keep))
        return f"commitlog/{names[-1]}"
    if kind == "garbage":
        with open(active, "r+b") as f:
            f.seek(sum(last))
            f.write(JUNK)
        return f"commitlog/{names[-1]}"
    if kind == "missing-middle":
        (root / "commitlog" / names[len(names) // 2]).unlink()
        return f"commitlog/{names[len(names) // 2]}"
    _age_all(root)
    return f"commitlog/{names[0]}"


def _logs(layout: str, root: Path, kind: str) -> str:
    kit_layout = {"kafka": kit.kafka, "jafka": kit.jafka, "metaq": kit.metaq}[layout]()
    live = [p for p in kit_layout.partitions if kit_layout.segments(p)[-1]]
    part = live[_mid(0, len(live) - 1)]  # the partition kit.torn_tail picks with _mid
    if kind == "torn-tail":
        kit.torn_tail(kit_layout, root, _mid)
        return f"{part}/{kit_layout.segments(part)[-1][-1].file}"
    if kind == "garbage":
        kit.append(root / part / kit_layout.segments(part)[-1][-1].file, bytes(16) + JUNK)
        return f"{part}/{kit_layout.segments(part)[-1][-1].file}"
    if kind == "missing-middle":
        parts = [p for p in kit_layout.partitions if len(kit_layout.segments(p)) >= 3]
        part = parts[_mid(0, len(parts) - 1)]
        segs = kit_layout.segments(part)
        name = segs[_mid(1, len(segs) - 2)][0].file
        kit.missing_middle(kit_layout, root, _mid)
        return f"{part}/{name}"
    _age_all(root)
    first = kit_layout.partitions[0]
    return f"{first}/{kit_layout.segments(first)[0][0].file}"


def damage(layout: str, root: Path, kind: str) -> str:
    """Damage the copy at ``root`` of ``layout``'s fixture by ``kind``; returns the damaged file's
    path relative to the root (``unconsumed``: the oldest file retention deletes)."""
    return _rocketmq(root, kind) if layout == "rocketmq" else _logs(layout, root, kind)


def damaged(layout: str, kind: str, dest: Path) -> tuple[Path, str]:
    """A copy of ``layout``'s fixture under ``dest`` damaged by ``kind``: (its root, the damaged
    file's path relative to the root)."""
    root = copy_fixture(layout, dest)
    return root, damage(layout, root, kind)
