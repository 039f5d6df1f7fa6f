"""The consistency matrix with files of several MiB (issue 27): records cross the walkers' own read pieces.

The matrices of ``tests/test_consistency_matrix.py`` (RocketMQ) and
``tests/test_consistency_matrix_logs.py`` (Kafka, Jafka, MetaQ) damage small fixtures and put
piece boundaries inside records by reading in small pieces (``store.files.read_in_pieces``).  Here
the stores are generated with files larger than the piece each walker reads by default -- 8 MiB
(``store.files.CHUNK_SIZE``) for CommitLog, Jafka and MetaQ files, 1 MiB
(``store.model.kafka.WALK_CHUNK``) for a Kafka ``.log`` -- so every command runs as a user runs it,
with no piece size set, and the records, batches and messages that the default piece boundaries
cut are where the damage goes: a run of zeros or a flipped bit inside an entry a boundary cuts,
or the newest file's last entry torn.  Every reader then names validate's first finding (code,
path, position) and exits as validate does, with the checks of the small matrices
(``_reader_disagrees`` / ``_recover_disagrees`` and ``_check``), and the pristine store compared
with its damaged copy by ``diff``.

Each store is generated once per session (RocketMQ: a 9 MiB CommitLog file and 8.5 MiB of the
next; Kafka: 8 MiB in 3 MiB segments; Jafka and MetaQ: a 9 MiB segment and 8.5 MiB of the next);
three damage kinds per layout, two examples each, keep the module to about a minute of CPU.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.formats.jafka import Message as JafkaMessage
from mqtool.formats.kafka import record_batch as rb
from mqtool.formats.rocketmq.commitlog import MessageRecord, body_position
from mqtool.ops.dump.rocketmq import CommitLogDump, commitlog_files
from mqtool.ops.validate import ValidateOptions, validate_path
from mqtool.store.files import CHUNK_SIZE
from mqtool.store.jafka import JafkaLogWriter
from mqtool.store.kafka_writer import LogDirWriter, PartitionConfig
from mqtool.store.model.kafka import WALK_CHUNK
from mqtool.store.writer import StoreWriter, WriterConfig
from tests import matrix_logs_kit as kit
from tests import test_consistency_matrix as small
from tests import test_consistency_matrix_logs as small_logs

MiB = 1 << 20
#: CommitLog file size: one default piece boundary (8 MiB) inside every file
CL_FILE_SIZE = 9 * MiB
#: Jafka / MetaQ roll size: one default piece boundary inside every full segment
LEGACY_SEGMENT = 9 * MiB
#: Kafka segment.bytes: three default piece boundaries (1 MiB) inside every full segment
KAFKA_SEGMENT = 3 * MiB

_BYTES = bytes(range(256)) * 16


def _body(i: int) -> bytes:
    """Record sizes vary (a few hundred bytes to 2 KiB) so boundaries fall at every part of a record."""
    return _BYTES[i % 256 : i % 256 + 200 + (i * 97) % 1800]


# --- the stores, generated once per session --------------------------------------------------------


def _rocketmq(root: Path) -> Path:
    config = WriterConfig(commitlog_file_size=CL_FILE_SIZE, cq_file_size=1024 * 20, index_hash_slot_num=4096, index_num=16384)
    with StoreWriter(root, config) as writer:
        i = end = 0
        while end < CL_FILE_SIZE + CHUNK_SIZE + MiB // 2:  # the newest file past its piece boundary
            props = {"KEYS": f"key-{i}", "TAGS": "TagA", "UNIQ_KEY": f"{i:032X}"}
            res = writer.append(MessageRecord(topic=f"Topic{i % 2}", queue_id=i % 4, body=_body(i), properties=props))
            end, i = res.commitlog_offset + res.size, i + 1
    return root


def _kafka(root: Path) -> Path:
    logdir = LogDirWriter(root)
    part = logdir.partition("orders", 0, PartitionConfig(segment_bytes=KAFKA_SEGMENT))
    offset = 0
    while part.log_end_offset < 1 or sum(p.stat().st_size for p in (root / "orders-0").glob("*.log")) < 2 * KAFKA_SEGMENT + 2 * MiB:
        count = 1 + offset % 13
        values = [_body(offset + k)[: 100 + (offset * 7 + k * 13) % 700] for k in range(count)]
        records = [rb.Record(offset_delta=k, timestamp_delta=k, key=b"key-%d" % (offset + k), value=v) for k, v in enumerate(values)]
        part.append(rb.build_batch(records, base_timestamp=1_700_000_000_000 + offset))
        offset += count
    logdir.close()
    return root


def _jafka(root: Path) -> Path:
    writer = JafkaLogWriter(root / "orders-0", log_file_size=LEGACY_SEGMENT)
    i = 0
    while writer.next_offset < LEGACY_SEGMENT + CHUNK_SIZE + MiB // 2:
        writer.append([JafkaMessage(_body(i + k)[: 50 + (i + k) * 31 % 600]) for k in range(200)])
        i += 200
    (root / ".jafka_cleanshutdown").touch()
    return root


def _metaq(root: Path) -> Path:
    """Segments as ``MetaqStoreWriter`` rolls them (at least ``LEGACY_SEGMENT`` bytes), written a
    segment at a time."""
    part = root / "trade-0"
    part.mkdir(parents=True)
    start = i = 0
    segment = bytearray()
    while start + len(segment) < LEGACY_SEGMENT + CHUNK_SIZE + MiB // 2:
        segment += mq.encode_message(mq.make_message(1000 + i, _body(i)[: 50 + i * 31 % 600], None))
        i += 1
        if len(segment) >= LEGACY_SEGMENT:
            (part / segnames.metaq_file_name(start)).write_bytes(segment)
            start, segment = start + len(segment), bytearray()
    (part / segnames.metaq_file_name(start)).write_bytes(segment)
    return root


BUILDERS: dict[str, Callable[[Path], Path]] = {"rocketmq": _rocketmq, "kafka": _kafka, "jafka": _jafka, "metaq": _metaq}


@pytest.fixture(scope="session")
def big_stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each layout's big store, generated once per session; validate finds nothing in it."""
    out = {}
    for layout, build in BUILDERS.items():
        root = build(tmp_path_factory.mktemp(f"big-{layout}") / "store")
        report = validate_path(root, ValidateOptions(jobs=1), layout)
        assert [f for f in report.findings if f.level.value in ("error", "warning") and f.family in ("files", "log", "offsets", "commitlog")] == [], layout
        out[layout] = root
    return out


# --- where the default pieces end -----------------------------------------------------------------


def _cut(spans: list[tuple[int, int]], piece: int) -> list[int]:
    """Indexes of the entries (``(position, size)`` in file order) that a walk reading ``piece``
    bytes at a time cuts: a piece ends inside one, the next piece starts at its start."""
    cut = []
    boundary = piece
    for i, (pos, size) in enumerate(spans):
        while boundary <= pos:
            boundary += piece
        if pos < boundary < pos + size:
            cut.append(i)
            boundary = pos + piece
    return cut


# --- RocketMQ ----------------------------------------------------------------------------------------


class _RocketMQ:
    def __init__(self, root: Path) -> None:
        names = [p.name for p in sorted((root / "commitlog").iterdir())]
        recs = [small.Rec(names.index(loc.path.name), loc.path.name, loc.position, rec.total_size, rec) for loc, rec in CommitLogDump(commitlog_files(root))]
        self.records = recs
        self.files = names
        self.active = len(names) - 1
        self.cut: dict[int, list[small.Rec]] = {}
        for i in range(len(names)):
            mine = [r for r in recs if r.file == i]
            self.cut[i] = [mine[j] for j in _cut([(r.position, r.size) for r in mine], CHUNK_SIZE)]
        assert all(self.cut[i] for i in range(len(names))), "every CommitLog file has a record its default piece cuts"


def _rmq_torn_tail(store: _RocketMQ, data: st.DataObject, root: Path) -> list[object]:
    rec = [r for r in store.records if r.file == store.active][-1]
    keep = data.draw(st.integers(8, rec.size - 1), label="bytes of the last record kept")
    small._zero(root / "commitlog" / rec.name, rec.position + keep, rec.size - keep)
    return small._queue_args(rec)


def _rmq_zeroed_cut_active(store: _RocketMQ, data: st.DataObject, root: Path) -> list[object]:
    rec = data.draw(st.sampled_from(store.cut[store.active]), label="record the piece boundary cuts")
    start = data.draw(st.integers(0, 12), label="first zeroed byte in the record")
    length = data.draw(st.integers(8, 300), label="zeroed bytes")
    small._zero(root / "commitlog" / rec.name, rec.position + start, length)
    return small._queue_args(rec)


def _rmq_body_flip_cut_older(store: _RocketMQ, data: st.DataObject, root: Path) -> list[object]:
    rec = data.draw(st.sampled_from([r for i in range(store.active) for r in store.cut[i]]), label="record the piece boundary cuts")
    first = rec.position + body_position(rec.record.sys_flag)
    at = first + data.draw(st.integers(0, len(rec.record.body) - 1), label="body byte")
    bit = data.draw(st.integers(0, 7), label="bit")
    with open(root / "commitlog" / rec.name, "r+b") as f:
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ (1 << bit)]))
    return small._queue_args(rec)


RMQ_DAMAGES: dict[str, Callable[[_RocketMQ, st.DataObject, Path], list[object]]] = {
    "torn-tail": _rmq_torn_tail,
    "zeroed-region-cut-record-active-file": _rmq_zeroed_cut_active,
    "body-flip-cut-record-older-file": _rmq_body_flip_cut_older,
}
#: (command, kind) -> why the command does not read the damaged bytes (as in the small matrix)
RMQ_OFF_PATH = {("info", "body-flip-cut-record-older-file"): small.OFF_PATH[("info", "body-flip-older-file")]}

BIG = settings(
    max_examples=2,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)


@pytest.fixture(scope="session")
def big_rocketmq(big_stores: dict[str, Path]) -> _RocketMQ:
    return _RocketMQ(big_stores["rocketmq"])


@pytest.mark.parametrize("kind", sorted(RMQ_DAMAGES))
@BIG
@given(data=st.data())
def test_rocketmq_every_command_names_validates_first_damage(kind: str, big_stores: dict[str, Path], big_rocketmq: _RocketMQ, data: st.DataObject) -> None:
    pristine = big_stores["rocketmq"]
    with tempfile.TemporaryDirectory() as where:
        root = Path(where) / "store"
        shutil.copytree(pristine, root)
        query = RMQ_DAMAGES[kind](big_rocketmq, data, root)
        report = validate_path(root, ValidateOptions(jobs=1), "rocketmq")
        errors = [f for f in report.findings if f.level.value == "error"]
        warnings = [f for f in report.findings if f.level.value == "warning" and f.family in ("files", "commitlog")]
        assert errors or warnings, f"{kind}: validate sees nothing"
        first = (errors or warnings)[0]
        case = small.Case(root, "commitlog", query, first, 1 if errors else 0)
        readers = [c for c in small.READERS if (c, kind) not in RMQ_OFF_PATH]
        problems = [p for c in readers if (p := small._reader_disagrees(c, case, pristine)) is not None]
        if (p := small._recover_disagrees(case)) is not None:
            problems.append(p)
        assert not problems, f"{kind}: validate's first: {first.code} {first.path}:{first.position}\n" + "\n".join(problems)


# --- Kafka, Jafka, MetaQ ----------------------------------------------------------------------------


def _entries(layout: str, root: Path) -> dict[str, list[list[kit.Entry]]]:
    if layout == "kafka":
        return {"orders-0": kit._kafka_entries(root, "orders-0")}
    part = "orders-0" if layout == "jafka" else "trade-0"
    return {part: kit._legacy_entries(root, part, kit._JAFKA if layout == "jafka" else kit._METAQ)}


def _layouts(layout: str, root: Path) -> tuple[kit.Layout, kit.Layout]:
    """The whole layout (for the torn tail: the newest segment's last entry) and the layout of
    only the entries a default piece cuts (for damage inside an entry)."""
    entries = _entries(layout, root)
    piece = WALK_CHUNK if layout == "kafka" else CHUNK_SIZE
    cut = {part: [[seg[i] for i in _cut([(e.position, e.size) for e in seg], piece)] for seg in segs] for part, segs in entries.items()}
    assert all(any(seg for seg in segs) for segs in cut.values()), f"{layout}: no entry a default piece cuts"
    parts = tuple(entries)
    return kit.Layout(layout, root, parts, entries), kit.Layout(layout, root, parts, cut)


LOG_DAMAGES: dict[str, tuple[bool, kit.Damage]] = {  # kind -> (on the cut entries only, damage)
    "torn-tail-active": (False, kit.torn_tail),
    "zeroed-region-cut-entry": (True, kit.zeroed),
    "flipped-crc-covered-byte-cut-entry": (True, kit.flipped),
}


@pytest.fixture(scope="session")
def big_log_layouts(big_stores: dict[str, Path]) -> dict[str, tuple[kit.Layout, kit.Layout]]:
    return {layout: _layouts(layout, big_stores[layout]) for layout in ("kafka", "jafka", "metaq")}


@pytest.mark.parametrize("kind", sorted(LOG_DAMAGES))
@pytest.mark.parametrize("layout", ["kafka", "jafka", "metaq"])
@BIG
@given(data=st.data())
def test_logs_every_reader_names_validates_first_finding(
    layout: str,
    kind: str,
    big_stores: dict[str, Path],
    big_log_layouts: dict[str, tuple[kit.Layout, kit.Layout]],
    capsys: pytest.CaptureFixture[str],
    data: st.DataObject,
) -> None:
    whole, cut = big_log_layouts[layout]
    only_cut, damage = LOG_DAMAGES[kind]
    with tempfile.TemporaryDirectory() as where:
        root = kit.copy(big_stores[layout], Path(where) / "store")
        target = damage(cut if only_cut else whole, root, lambda lo, hi: data.draw(st.integers(lo, hi)))
        verdict = kit.first_finding(root, layout)
        assert verdict is not None, f"{layout} {kind}: validate names nothing"
        for reader in small_logs.READERS:
            small_logs._check(reader, layout, kind, root, target, verdict, big_stores, capsys)
