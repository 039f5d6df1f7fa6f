"""recover's RocketMQ plan, and info, read the CommitLog once (issue 27, point 3).

The plan takes its recovery window, its cuts, the queue offsets, the records its dispatch
steps count and the keyed records its IndexFile steps look for from one reading of each file (``queue_offsets.read_commitlog``): the records of the
newest healthy files are kept as columns (``DISPATCH_ROWS_KEPT`` of them) for the dispatch scan.
The plan is the same when none is kept (every file walked again, as before), on stores whose
CommitLog files are large enough for the column walk (1 MiB) and whose ConsumeQueues lack records.
info takes the newest file from the restart preview's reading when its scan reads it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.ops.recover import rocketmq as recover_rmq
from mqtool.ops.recover.rocketmq import RecoverOptions, plan_rocketmq
from mqtool.store import rocketmq as rmq
from mqtool.store.files import count_reads
from mqtool.store.writer import StoreWriter, WriterConfig

FILE_SIZE = 1 << 20
CQ_FILE_SIZE = 20 * 100
SPEED = ("read_bytes_per_second", "estimated_seconds")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """Three full 1 MiB CommitLog files and part of a fourth; two topics of four queues each."""
    root = tmp_path_factory.mktemp("one-reading") / "store"
    body = bytes(range(256)) * 4
    with StoreWriter(root, WriterConfig(commitlog_file_size=FILE_SIZE, cq_file_size=CQ_FILE_SIZE)) as writer:
        end = count = 0
        while end < 3 * FILE_SIZE + FILE_SIZE // 3:
            res = writer.append(cl.MessageRecord(topic=f"Topic{count % 2}", queue_id=count // 2 % 4, body=body, properties={"KEYS": f"key-{count}"}))
            end, count = res.commitlog_offset + res.size, count + 1
    return root


def _zero_units(qdir: Path, from_queue_offset: int) -> None:
    """Zero a queue's units from ``from_queue_offset`` on (dispatch lag)."""
    assert rmq.list_segments(qdir)
    for seg in rmq.list_segments(qdir):
        first = seg.base // 20
        start = max(from_queue_offset - first, 0) * 20
        if start < seg.size:
            with open(seg.path, "r+b") as f:
                f.seek(start)
                f.write(bytes(seg.size - start))


def _delete_files(qdir: Path, from_queue_offset: int) -> None:
    assert rmq.list_segments(qdir)
    for seg in rmq.list_segments(qdir):
        if seg.base // 20 >= from_queue_offset:
            seg.path.unlink()


DAMAGE = {
    "lag-in-newest-file": (lambda root: _zero_units(root / "consumequeue" / "Topic0" / "1", 300), RecoverOptions()),
    "lag-from-oldest-file": (lambda root: _zero_units(root / "consumequeue" / "Topic1" / "2", 20), RecoverOptions()),
    "last-cq-files-deleted": (lambda root: _delete_files(root / "consumequeue" / "Topic0" / "3", 200), RecoverOptions()),
    "queue-deleted": (lambda root: shutil.rmtree(root / "consumequeue" / "Topic1" / "0"), RecoverOptions()),
    "rebuild-cq": (lambda root: None, RecoverOptions(rebuild_cq=True)),
    "rebuild-one-queue": (lambda root: None, RecoverOptions(rebuild_cq=True, queues=("Topic1/3",))),
    "index-missing": (lambda root: shutil.rmtree(root / "index"), RecoverOptions()),
    "healthy": (lambda root: None, RecoverOptions()),
}


def _plan(root: Path, options: RecoverOptions) -> dict[str, Any]:
    doc = plan_rocketmq(root, options).to_dict()
    for key in SPEED:
        doc["facts"]["restart"].pop(key)
    return doc


@pytest.mark.parametrize("case", list(DAMAGE))
def test_the_dispatch_scan_from_the_reading_equals_walking_the_files_again(case: str, pristine: Path, tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "store"
    shutil.copytree(pristine, root)
    damage, options = DAMAGE[case]
    damage(root)
    total = sum(p.stat().st_size for p in (root / "commitlog").iterdir())
    with count_reads() as reads:
        from_reading = _plan(root, options)
    read = sum(n for path, n in reads.items() if "/commitlog/" in path)
    assert read <= 1.1 * total, f"the plan read {read / total:.2f}x the CommitLog bytes"
    monkeypatch.setattr(recover_rmq, "DISPATCH_ROWS_KEPT", 0)  # every file of the scan walked again
    walked = _plan(root, options)
    assert from_reading == walked
    dispatched = [s for s in from_reading["steps"] if s["action"] == "dispatch-cq"]
    assert bool(dispatched) == (case not in ("healthy", "index-missing"))
    # keyed records in no IndexFile: rebuilt, or named in a note where the broker never wrote one
    index_work = any(s["action"] == "rebuild-index" for s in from_reading["steps"]) or any("with keys are in no IndexFile" in n for n in from_reading["notes"])
    assert index_work == (case == "index-missing")
    if case == "lag-in-newest-file":
        assert [(s["details"]["topic"], s["details"]["queue_id"], s["details"]["from_queue_offset"]) for s in dispatched] == [("Topic0", 1, 300)]


def _cut_newest_record(root: Path) -> None:
    """A torn tail: the newest record's last 100 bytes zeroed."""
    newest = max((root / "commitlog").iterdir())
    data = newest.read_bytes()
    end = len(data.rstrip(b"\x00"))
    with open(newest, "r+b") as f:
        f.seek(end - 100)
        f.write(bytes(100))


def _flip_byte(root: Path, name: str, position: int) -> None:
    path = root / "commitlog" / name
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0xFF]))


def _garbage_after_end(root: Path) -> None:
    newest = max((root / "commitlog").iterdir())
    with open(newest, "r+b") as f:
        f.seek(FILE_SIZE - 4096)
        f.write(b"\x5a" * 100)


WINDOW = {
    "torn-tail": (_cut_newest_record, None),
    "garbage-after-the-end": (_garbage_after_end, None),
    "bad-body-in-the-window": (lambda root: _flip_byte(root, "00000000000002097152", 500_000), "4.9.7"),
    "bad-body-before-the-window": (lambda root: _flip_byte(root, "00000000000001048576", 500_000), None),
    "healthy-4.x": (lambda root: None, "4.9.7"),
}


@pytest.mark.parametrize("case", list(WINDOW))
def test_the_recovery_window_from_the_columns_equals_the_record_walk(case: str, pristine: Path, tmp_path: Path, monkeypatch) -> None:
    """A healthy file read as columns gives the window the same end as walking it record by record."""
    from mqtool.store.model import queue_offsets

    root = tmp_path / "store"
    shutil.copytree(pristine, root)
    damage, version = WINDOW[case]
    damage(root)
    options = RecoverOptions(broker_version=version)
    fast = _plan(root, options)
    monkeypatch.setattr(queue_offsets, "COLUMN_WALK_MIN_SIZE", 1 << 62)  # every file walked record by record
    assert fast == _plan(root, options)
    if case != "healthy-4.x":
        assert fast["steps"] or fast["unfixable"], case


@pytest.mark.parametrize("case", list(WINDOW))
def test_info_takes_the_newest_file_from_the_restart_preview_s_reading(case: str, pristine: Path, tmp_path: Path, monkeypatch) -> None:
    """info's facts of the newest CommitLog file are the same whether the restart preview's reading
    gives them or info walks the file itself, and no CommitLog file is read twice."""
    from mqtool.ops.info import rocketmq as info_rmq

    root = tmp_path / "store"
    shutil.copytree(pristine, root)
    damage, version = WINDOW[case]
    damage(root)

    def doc() -> dict[str, Any]:
        out = info_rmq.rocketmq_info(root, broker_version=version).to_dict()
        for key in SPEED:
            out["restart"].pop(key)
        return out

    with count_reads() as reads:
        shared = doc()
    # each file once; a cut's expectation reads the bytes it cuts for their CRC (``observe``)
    cut = {Path(c["file"]).name: c["length"] for c in shared["restart"]["drops"]["cut"]}
    assert all(n <= FILE_SIZE + 4096 + cut.get(Path(path).name, 0) for path, n in reads.items() if "/commitlog/" in path), reads
    real = recover_rmq.read_restart
    monkeypatch.setattr(info_rmq, "read_restart", lambda *a, **k: (real(a[0], a[1])[0], None))  # info walks the newest file itself
    assert shared == doc()
