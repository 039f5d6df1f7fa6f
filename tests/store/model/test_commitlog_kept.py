"""``queue_offsets.shared_reading``: validate's reading of each healthy CommitLog file is kept and
``read_commitlog`` (recover's plan) takes it instead of reading the unchanged file again -- the
same queue offsets, end, records, last store time, tails and end findings ``read_file`` sees, the
columns of the two newest files -- so ``report`` reads the CommitLog once.  Of a damaged file what
the broker's recovery reads of it is kept (``KeptPrefix``), and the reading served from it is
``read_file``'s too, whatever the damage, wherever it is and whatever the piece size (the
property tests below); a file changed since is read again.  recover's plan inside report is the
plan alone."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtool.formats.rocketmq import commitlog as cl
from mqtool.ops.validate import ValidateOptions, validate_path
from mqtool.store import rocketmq as rmq
from mqtool.store.files import count_reads
from mqtool.store.model import queue_offsets
from mqtool.store.writer import StoreWriter, WriterConfig

FILE = 1 << 20


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    body = bytes(range(256)) * 2
    with StoreWriter(root, WriterConfig(commitlog_file_size=FILE, index_hash_slot_num=4096, index_num=16384)) as writer:
        end = n = 0
        while end < 3 * FILE + FILE // 3:  # three full files and part of a fourth
            res = writer.append(cl.MessageRecord(topic=f"T{n % 3}", queue_id=n % 2, body=body, properties={"KEYS": f"k{n}"}))
            end, n = res.commitlog_offset + res.size, n + 1
    return root


def _view(reading: queue_offsets.FileReading) -> tuple[object, ...]:
    return (reading.offsets, reading.end, reading.records, reading.last_store_timestamp, reading.tails, reading.bytes_read)


def _readings(root: Path) -> dict[str, queue_offsets.FileReading]:
    store = rmq.open_store(root)
    return {str(seg.path): reading for _i, seg, _f, reading in queue_offsets.read_commitlog(store, end_findings=True)}


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_kept_reading_is_what_read_file_sees(store: Path, jobs: int) -> None:
    fresh = _readings(store)
    with queue_offsets.shared_reading():
        validate_path(store, ValidateOptions(jobs=jobs), "rocketmq")
        with count_reads() as reads:
            kept = _readings(store)
    assert {p: _view(r) for p, r in kept.items()} == {p: _view(r) for p, r in fresh.items()}
    newest = sorted(kept)[-2:]
    assert [p for p, r in kept.items() if r.columns is not None] == newest
    for path in newest:
        assert kept[path].columns.columns.position.tolist() == fresh[path].columns.columns.position.tolist()
    assert sum(n for p, n in reads.items() if "/commitlog/" in p) <= 4096 * len(kept)  # a peek at each end, no file read again


def test_a_file_changed_since_is_read_again_a_damaged_one_is_not(store: Path) -> None:
    files = sorted((store / "commitlog").iterdir())
    with open(files[1], "r+b") as f:  # a broken record in the second file: validate keeps what the recovery reads of it
        f.seek(FILE // 2)
        f.write(b"\xff" * 16)
    with queue_offsets.shared_reading():
        validate_path(store, ValidateOptions(jobs=1), "rocketmq")
        os.utime(files[0], ns=(1, 1))  # the first changed since (its mtime)
        with count_reads() as reads:
            _readings(store)
    read = {Path(p).name: n for p, n in reads.items() if "/commitlog/" in p}
    assert read[files[0].name] >= FILE
    assert read.get(files[1].name, 0) <= 4096  # only the broken record's frames, to say how the file ends
    assert read.get(files[2].name, 0) <= 4096


def _damaged_view(reading: queue_offsets.FileReading) -> tuple[object, ...]:
    """What a consumer of a file that is not healthy takes from its reading (the caches ``tails``
    and ``nexts`` are compared where both hold a position)."""
    walk = reading.walk
    read = reading.records_read
    return (
        reading.offsets,
        reading.end,
        reading.records,
        reading.last_store_timestamp,
        reading.bytes_read,
        reading.record_findings,
        None if walk is None or walk.data_end is None else (_end(walk.data_end), walk.valid_end, walk.torn, walk.stale_claim, walk.record_findings),
        read is None,
    )


def _rows_are_the_dispatch_walks(path: str, reading: queue_offsets.FileReading) -> int | None:
    """The records a reading keeps for a dispatch scan are those the scan's walk of the file (body
    CRCs unchecked) yields before ``through``; returns ``through`` (-1: no records kept)."""
    from mqtool.store.files import ReadOnlyFile

    read = reading.records_read
    if read is None:
        return -1
    with ReadOnlyFile(path) as f:
        walked = [(pos, rec.queue_offset) for pos, rec in queue_offsets.file_records(f, check_crc=False) if read.through is None or pos < read.through]
    columns = read.columns()
    assert list(zip(columns.position.tolist(), columns.queue_offset.tolist(), strict=True)) == walked
    return read.through


def _report_rows() -> object:
    """What report's validate counts for stats as it reads (its reading then says which broken
    records the broker serves, ``commitlog_walk.Served``)."""
    from mqtool.ops.stats import StatsOptions
    from mqtool.ops.stats.rocketmq import record_count

    return record_count(StatsOptions())


def _end(end: object) -> tuple[object, ...]:
    """A ``DataEnd`` as compared: its located error by type and text (errors compare by identity)."""
    error = getattr(end, "error", None)
    return (getattr(end, "kind", None), getattr(end, "position", None), getattr(end, "length", None), getattr(end, "unit", None), type(error), str(error))


def _damage(store: Path, kind: str, at: int) -> None:
    files = sorted((store / "commitlog").iterdir())
    newest = files[-1]
    data = bytearray(newest.read_bytes() if kind.startswith("newest") else files[1].read_bytes())
    if kind == "flip":  # anywhere in the second file
        data[at % FILE] ^= 0x40
    elif kind == "magic":  # a record's MAGICCODE in the second file
        data[4:8] = b"\0\0\0\1"
    elif kind == "newest-torn":  # the newest record's last bytes zeros: a torn tail
        end = FILE // 3 + 1000
        pos = 0
        while pos < len(data) and int.from_bytes(data[pos : pos + 4], "big") > 0 and pos + int.from_bytes(data[pos : pos + 4], "big") < end:
            pos += int.from_bytes(data[pos : pos + 4], "big")
        last = pos - 0  # the first record reaching past ``end`` starts here
        size = int.from_bytes(data[last : last + 4], "big")
        data[last + size - 1 - at % 100 : last + size] = bytes(1 + at % 100)
        data[last + size :] = bytes(len(data) - last - size)
    elif kind == "newest-garbage":  # bytes in the zeros after the newest file's data
        data[FILE // 2 + at % 1000] = 0x5A
    elif kind == "newest-flip":  # a body byte of a record of the newest file
        data[(at % (FILE // 3 - 2000)) + 1000] ^= 0x01
    (newest if kind.startswith("newest") else files[1]).write_bytes(bytes(data))


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("kind", ["flip", "magic", "newest-torn", "newest-garbage", "newest-flip"])
def test_a_damaged_files_kept_reading_is_what_read_file_sees(store: Path, kind: str, jobs: int) -> None:
    """Validate keeps, of a file that is not healthy, what the broker's recovery reads of it
    (``KeptPrefix``): the reading served from it is the one ``read_file`` makes, and it reads no
    byte of the file before where the recovery stopped."""
    _damage(store, kind, 123_457)
    fresh = _readings(store)
    with queue_offsets.shared_reading():
        validate_path(store, ValidateOptions(jobs=jobs, rows=_report_rows()), "rocketmq")
        with count_reads() as reads:
            kept = _readings(store)
    assert {p: _damaged_view(r) for p, r in kept.items()} == {p: _damaged_view(r) for p, r in fresh.items()}
    for path, reading in kept.items():
        assert reading.offsets.end_findings == fresh[path].offsets.end_findings
        through, fresh_through = _rows_are_the_dispatch_walks(path, reading), _rows_are_the_dispatch_walks(path, fresh[path])
        assert through == fresh_through or through is None or (fresh_through is not None and through > fresh_through)
        if kind == "flip" and reading.walk is not None:  # a body CRC fails: the dispatch scan reads on past it, from validate's reading
            assert through is None and fresh_through is not None
        for cache in ("tails", "nexts"):
            mine, theirs = getattr(reading, cache), getattr(fresh[path], cache)
            assert {k: mine[k] for k in mine.keys() & theirs.keys()} == {k: theirs[k] for k in mine.keys() & theirs.keys()}
    damaged = [p for p, r in fresh.items() if r.walk is not None]
    assert damaged, kind  # the damage made a file that is not healthy
    for path in damaged:
        stopped = fresh[path].walk.valid_end  # type: ignore[union-attr]
        assert reads.get(path, 0) <= max(4096, FILE - stopped + 4096), (path, reads.get(path, 0))


def test_without_a_shared_reading_nothing_is_kept(store: Path) -> None:
    validate_path(store, ValidateOptions(jobs=1), "rocketmq")
    with count_reads() as reads:
        _readings(store)
    assert sum(n for p, n in reads.items() if "/commitlog/" in p) >= 3 * FILE


def test_kept_columns_stay_within_their_budget(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The columns kept are the newest files' within ``KEPT_COLUMN_ROWS`` records: a file with more
    keeps its offsets and end only (a dispatch scan walks it again)."""
    from mqtool.store.model import commitlog_check

    fresh = _readings(store)
    newest = sorted(fresh)[-1]
    budget = len(fresh[newest].columns.columns)  # the newest file's records: the one before it does not fit too
    monkeypatch.setattr(queue_offsets, "KEPT_COLUMN_ROWS", budget)
    monkeypatch.setattr(commitlog_check, "KEPT_COLUMN_ROWS", budget)
    with queue_offsets.shared_reading():
        validate_path(store, ValidateOptions(jobs=1), "rocketmq")
        kept = _readings(store)
    assert [p for p, r in kept.items() if r.columns is not None] == [newest]
    assert {p: _view(r) for p, r in kept.items()} == {p: _view(r) for p, r in fresh.items()}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["flip", "newest-flip", "newest-garbage", "newest-torn"]), at=st.integers(0, FILE))
def test_wherever_the_damage_a_kept_reading_is_what_read_file_sees(store: Path, tmp_path_factory: pytest.TempPathFactory, kind: str, at: int) -> None:
    import shutil

    copy = tmp_path_factory.mktemp("damaged") / "store"
    shutil.copytree(store, copy)
    _damage(copy, kind, at)
    fresh = _readings(copy)
    with queue_offsets.shared_reading():
        validate_path(copy, ValidateOptions(jobs=1, rows=_report_rows()), "rocketmq")
        kept = _readings(copy)
    assert {p: _damaged_view(r) for p, r in kept.items()} == {p: _damaged_view(r) for p, r in fresh.items()}
    assert {p: r.offsets.end_findings for p, r in kept.items()} == {p: r.offsets.end_findings for p, r in fresh.items()}
    for path, reading in kept.items():
        _rows_are_the_dispatch_walks(path, reading)


# --- trying to break the contract: damage of every kind, anywhere, read in pieces of any size ---

#: the pieces the readings are read in (``store.files.read_in_pieces``; 0: the default): the kept
#: reading and ``read_file``'s are read in the same one, as in ``report``
PIECES = (0, 4096, 1 << 16, 300_000)


def _records(path: Path) -> list[tuple[int, int]]:
    """(position, TOTALSIZE) of the records a dispatch scan's walk of the file yields."""
    from mqtool.store.files import ReadOnlyFile

    with ReadOnlyFile(path) as f:
        return [(pos, rec.total_size) for pos, rec in queue_offsets.file_records(f, check_crc=False)]


#: where a damage of each kind lands: a file (0 first, -1 the newest) and what it does to the bytes
DAMAGES = (
    "byte",
    "bodycrc",
    "bodycrc-then-frame",
    "totalsize",
    "huge-totalsize",
    "magic",
    "physical",
    "queueoffset",
    "zeros",
    "garbage",
    "cut",
    "torn",
    "stale-copy",
    "newest-garbage",
)


def _break(store: Path, kind: str, which: int, at: int) -> None:
    """Damage the CommitLog file ``which`` of ``store`` (``kind``, ``at`` picks the place)."""
    files = sorted((store / "commitlog").iterdir())
    path = files[which]
    data = bytearray(path.read_bytes())
    records = _records(path) or [(0, min(len(data), 300))]  # an earlier damage broke its first record
    if len(data) < 400:
        return  # cut short to nothing much already
    pos, size = records[at % len(records)]
    if kind == "byte":
        data[at % len(data)] ^= 1 << (at % 8)
    elif kind in ("bodycrc", "bodycrc-then-frame"):  # a body byte (the bodies are most of a record)
        data[pos + size // 3 + at % (size // 3)] ^= 0x10
        if kind == "bodycrc-then-frame" and pos + size + 8 <= len(data):
            data[pos + size + 4 + at % 4] ^= 0xFF  # the next record's MAGICCODE
    elif kind == "totalsize":
        data[pos : pos + 4] = (size + 1 + at % 50).to_bytes(4, "big")
    elif kind == "huge-totalsize":  # no record is that long (RMQ-CL-SIZE)
        data[pos : pos + 4] = b"\x7f\xff\xff\xff"
    elif kind == "magic":
        data[pos + 4 : pos + 8] = b"\0\0\0\1"
    elif kind == "physical":  # PHYSICALOFFSET not its address (in the newest file: stale data when nothing follows)
        data[pos + 28 : pos + 36] = (int.from_bytes(data[pos + 28 : pos + 36], "big") + 4096).to_bytes(8, "big")
    elif kind == "queueoffset":
        data[pos + 20 : pos + 28] = (int.from_bytes(data[pos + 20 : pos + 28], "big") + 2).to_bytes(8, "big")
    elif kind == "zeros":
        data[pos + at % size : pos + at % size + 2000] = bytes(len(data[pos + at % size : pos + at % size + 2000]))
    elif kind == "garbage":
        data[pos + at % size : pos + at % size + 300] = bytes((at + i) % 251 + 1 for i in range(300))[: len(data) - pos - at % size]
    elif kind == "cut":  # cut short (before the newest: RMQ-FILE-SIZE), inside or after a record
        data = data[: pos + (at % 3) * size // 2]
    elif kind == "torn":  # the newest file's last record's last bytes zeros
        pos, size = records[-1]
        data[pos + size - 1 - at % (size - 1) : pos + size] = bytes(1 + at % (size - 1))
    elif kind == "stale-copy":  # the first record of the file written again after the newest file's data
        end = records[-1][0] + records[-1][1]
        data[end : end + records[0][1]] = data[: records[0][1]]
    elif kind == "newest-garbage":
        end = records[-1][0] + records[-1][1]
        data[end + at % max(1, len(data) - end - 200)] = 0x5A
    path.write_bytes(bytes(data))


def _same_readings(store: Path, *, jobs: int = 1, piece: int = 0, rows: bool = True) -> None:
    """The contract: each file's reading served from validate's kept reading is ``read_file``'s."""
    from mqtool.store.files import read_in_pieces

    with read_in_pieces(piece) if piece else contextlib.nullcontext():
        fresh = _readings(store)
        with queue_offsets.shared_reading():
            validate_path(store, ValidateOptions(jobs=jobs, rows=_report_rows() if rows else None), "rocketmq")
            kept = _readings(store)
    view = (lambda r: _damaged_view(r)[:4] + _damaged_view(r)[5:]) if piece else _damaged_view  # bytes read: the piece's
    assert {p: view(r) for p, r in kept.items()} == {p: view(r) for p, r in fresh.items()}
    assert {p: r.offsets.end_findings for p, r in kept.items()} == {p: r.offsets.end_findings for p, r in fresh.items()}
    for path, reading in kept.items():
        through, fresh_through = _rows_are_the_dispatch_walks(path, reading), _rows_are_the_dispatch_walks(path, fresh[path])
        assert through == fresh_through or through is None or (fresh_through is not None and through > fresh_through)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    damages=st.lists(st.tuples(st.sampled_from(DAMAGES), st.sampled_from([0, 1, -1]), st.integers(0, 1 << 30)), min_size=1, max_size=3),
    piece=st.sampled_from(PIECES),
    rows=st.booleans(),
)
def test_any_damage_in_any_file_read_in_any_piece_keeps_read_files_reading(
    store: Path, tmp_path_factory: pytest.TempPathFactory, damages: list[tuple[str, int, int]], piece: int, rows: bool
) -> None:
    """Damage of every kind in the first, a middle and the newest file, up to three at once, the
    store read in pieces from 4 KiB to the default (records cross them): the reading served from
    what validate kept is ``read_file``'s, with validate counting rows for stats (report) or not."""
    import shutil

    copy = tmp_path_factory.mktemp("damaged") / "store"
    shutil.copytree(store, copy)
    for kind, which, at in damages:
        _break(copy, kind, -1 if kind in ("torn", "stale-copy", "newest-garbage") else which, at)
    _same_readings(copy, piece=piece, rows=rows)


def test_a_totalsize_no_record_has_inside_a_piece_ends_the_recovery_reading(store: Path) -> None:
    """A TOTALSIZE past the largest record in the middle of a piece with more of the file after
    it: the recovery's reading (``read_file``, recover's plan) stops at it as the broker does --
    it used to resynchronise past it (read in 64 KiB pieces, as a 1 GiB file is in 8 MiB ones),
    and the recover plan neither saw the damage nor cut there -- and validate's kept reading
    marks the same end."""
    from mqtool.store.files import read_in_pieces

    files = sorted((store / "commitlog").iterdir())
    pos = _records(files[1])[200][0]
    _break(store, "huge-totalsize", 1, 200)
    for piece in (0, 1 << 16):
        with read_in_pieces(piece) if piece else contextlib.nullcontext():
            reading = _readings(store)[str(files[1])]
        assert reading.walk is not None and reading.walk.valid_end == pos, piece
        assert [x.code for x in reading.offsets.end_findings] == ["RMQ-CL-SIZE"], piece
    _same_readings(store, piece=1 << 16)
    assert _plans(store, piece=1 << 16) == _plans(store)


def test_a_body_crc_past_the_end_without_rows_is_read_again_by_the_dispatch_scan(store: Path) -> None:
    """Validate without stats' rows (no ``Served`` events) cannot tell a record whose body CRC
    alone fails from one the dispatch scan's walk fails at too: the records it kept stop at the
    recovery's end, and the scan reads on from there (they used to claim no record follows)."""
    _break(store, "bodycrc", 1, 300)
    _same_readings(store, rows=False)
    _same_readings(store, rows=True)


def _plans(store: Path, *, jobs: int = 1, piece: int = 0) -> tuple[object, object]:
    """recover's plan alone, and inside report (after validate, in one judgement)."""
    from mqtool.ops.recover import recoverer
    from mqtool.ops.report import one_judgement, stats_rows
    from mqtool.store.files import read_in_pieces

    plan, _apply, options = recoverer("rocketmq")
    with read_in_pieces(piece) if piece else contextlib.nullcontext():
        alone = plan(str(store), options()).to_dict()
        with one_judgement("rocketmq"):
            validate_path(str(store), ValidateOptions(jobs=jobs, rows=stats_rows("rocketmq")), "rocketmq")
            inside = plan(str(store), options()).to_dict()
    return _scrub(alone), _scrub(inside)


def _scrub(value: object) -> object:
    """A plan as compared: its measured read speed aside."""
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in ("read_bytes_per_second", "estimated_seconds")}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


@pytest.mark.parametrize(
    ("damages", "jobs", "piece"),
    [
        ([("huge-totalsize", 1, 200)], 1, 1 << 16),
        ([("bodycrc-then-frame", 1, 77), ("magic", 2, 5)], 2, 0),
        ([("bodycrc", 0, 3), ("torn", -1, 40)], 1, 4096),
        ([("cut", 1, 1001), ("stale-copy", -1, 0)], 2, 0),
        ([("physical", 1, 9), ("queueoffset", 2, 11), ("newest-garbage", -1, 12345)], 1, 300_000),
    ],
)
def test_recovers_plan_inside_report_is_the_plan_alone(store: Path, damages: list[tuple[str, int, int]], jobs: int, piece: int) -> None:
    for kind, which, at in damages:
        _break(store, kind, which, at)
    alone, inside = _plans(store, jobs=jobs, piece=piece)
    assert inside == alone
    assert alone != _scrub({})  # a plan was made


@pytest.fixture
def big_files(tmp_path: Path) -> Path:
    """A store of 2 MiB CommitLog files: one cut short keeps more than ``COLUMN_WALK_MIN_SIZE``."""
    root = tmp_path / "store2"
    body = bytes(range(256)) * 3
    with StoreWriter(root, WriterConfig(commitlog_file_size=2 * FILE, index_hash_slot_num=4096, index_num=16384)) as writer:
        end = n = 0
        while end < 2 * (2 * FILE) + FILE // 2:
            res = writer.append(cl.MessageRecord(topic=f"T{n % 3}", queue_id=n % 2, body=body, properties={"KEYS": f"k{n}"}))
            end, n = res.commitlog_offset + res.size, n + 1
    return root


@pytest.mark.parametrize("inside", [False, True])
@pytest.mark.parametrize("which", [0, 1])
def test_a_file_cut_short_past_a_mebibyte_keeps_read_files_reading(big_files: Path, which: int, inside: bool) -> None:
    """A file before the newest cut short (RMQ-FILE-SIZE) at a record's end or inside a record,
    still large enough to be read as columns: validate's fold skips the bytes missing after the
    recovery's end (``FileQueueOffsets.skipped``), which the kept reading does not hold."""
    files = sorted((big_files / "commitlog").iterdir())
    records = [r for r in _records(files[which]) if r[0] > FILE + FILE // 4]
    pos, size = records[len(records) // 2]
    files[which].write_bytes(files[which].read_bytes()[: pos + (size // 2 if inside else size)])
    _same_readings(big_files)
    kept = _kept_prefixes(big_files)
    assert kept[str(files[which])].prefix.walked.kind == ("partial" if inside else "eof")  # type: ignore[union-attr]
    alone, report = _plans(big_files)
    assert report == alone


def _kept_prefixes(store: Path) -> dict[str, queue_offsets.KeptReading]:
    """What validate keeps of each file in a shared reading."""
    with queue_offsets.shared_reading():
        validate_path(store, ValidateOptions(jobs=1, rows=_report_rows()), "rocketmq")
        shared = queue_offsets._SHARED.get()
        assert shared is not None
        return dict(shared)


def test_records_after_a_served_record_stop_where_the_dispatch_scan_stops(store: Path) -> None:
    """A record whose body CRC alone fails (the broker serves it), then one whose MAGICCODE is
    broken, in a file before the newest: the records validate's reading keeps past the recovery's
    end are the served one only -- validate resynchronises past the broken frame, the dispatch
    scan's walk stops there (``through``: it reads on from there itself)."""
    files = sorted((store / "commitlog").iterdir())
    _break(store, "bodycrc-then-frame", 1, 40)
    walked = _records(files[1])
    assert len(walked) == 41  # the dispatch scan's walk reads the served record, then stops
    kept = _kept_prefixes(store)[str(files[1])].prefix
    assert kept is not None and kept.continued and kept.through == walked[-1][0] + walked[-1][1]
    _same_readings(store)


def test_a_reading_kept_for_another_file_size_is_not_served(store: Path) -> None:
    """Validate told another CommitLog file size (``--commitlog-file-size``) judges each file
    against it: what it keeps is not what a reading at the store's own size sees."""
    files = sorted((store / "commitlog").iterdir())
    _break(store, "magic", 1, 7)
    fresh = _readings(store)
    with queue_offsets.shared_reading():
        validate_path(store, ValidateOptions(jobs=1, rows=_report_rows(), commitlog_file_size=2 * FILE), "rocketmq")
        shared = queue_offsets._SHARED.get()
        assert shared is not None and shared[str(files[1])].prefix is not None  # kept, for 2 MiB files
        kept = _readings(store)
    assert {p: _damaged_view(r) for p, r in kept.items()} == {p: _damaged_view(r) for p, r in fresh.items()}
    assert {p: r.offsets.end_findings for p, r in kept.items()} == {p: r.offsets.end_findings for p, r in fresh.items()}
