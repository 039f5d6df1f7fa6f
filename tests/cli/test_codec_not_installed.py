"""A Kafka batch whose codec is not installed is no damage: the readers go on after it.

Without the ``codecs`` extra, ``stats`` stopped counting a partition at its first snappy batch (the
records of every later batch of the segment went uncounted) and exited 1 under a "DAMAGED: 0
error(s)" headline.  Now the walk yields such a batch without its records
(``LogFileWalk.undecoded``): ``stats`` counts every other record, names each batch it could not
count with validate's KAFKA-LOG-UNSUPPORTED (a warning) and exits 0; ``dump kafka-log --deep``
lists every batch and exits 4 (unsupported, docs/exit-codes.md)."""

from __future__ import annotations

import json
import shutil

from mqtool.cli.app import run
from mqtool.errors import UnsupportedFormatError
from mqtool.formats.kafka import compression
from mqtool.formats.kafka.log import LogWalker
from tests.conftest import FIXTURES


def _mqtool(capsys, *args: object) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _no_codecs(monkeypatch) -> None:
    def missing(codec, *args, **kw):
        raise UnsupportedFormatError(f"{compression.CODEC_NAMES.get(codec, codec)} compression needs a package", expected="the codec", found="not installed")

    monkeypatch.setattr(compression, "decompress", missing)


def test_stats_counts_around_a_batch_it_cannot_decode(tmp_path, monkeypatch, capsys):
    root = tmp_path / "logs"
    shutil.copytree(FIXTURES / "kafka-logs", root)
    part = root / "events-0"  # v2 batches, some compressed
    log = part / "00000000000000000000.log"
    entries = list(LogWalker(log.read_bytes(), mode="header"))
    assert all(e.magic == 2 for p in part.glob("*.log") for e in LogWalker(p.read_bytes(), mode="header"))
    compressed = [(p, e) for p in sorted(part.glob("*.log")) for e in LogWalker(p.read_bytes(), mode="header") if e.header.compression_type != compression.NONE]
    first = next(e for p, e in compressed if p == log)
    assert first is not entries[-1] and first.position < entries[-1].position  # batches follow the first compressed one
    root = part
    _code, out, _err = _mqtool(capsys, "stats", root, "--json")
    total = json.loads(out)["totals"]["messages"]

    _no_codecs(monkeypatch)
    code, out, err = _mqtool(capsys, "stats", root, "--json")
    doc = json.loads(out)
    assert code == 0, err
    assert doc["totals"]["messages"] == total - sum(e.header.records_count for _p, e in compressed)
    assert doc["totals"]["damaged_messages"] == 0
    unsupported = sorted((f["path"], f["position"]) for f in doc["findings"] if f["code"] == "KAFKA-LOG-UNSUPPORTED")
    assert unsupported == sorted((str(p), e.position) for p, e in compressed)
    assert not doc["problems"]


def test_dump_lists_every_batch_and_exits_unsupported(tmp_path, monkeypatch, capsys):
    root = tmp_path / "logs"
    shutil.copytree(FIXTURES / "kafka-logs", root)
    part = root / "events-0"
    batches = sum(len(list(LogWalker(p.read_bytes(), mode="header"))) for p in part.glob("*.log"))
    _no_codecs(monkeypatch)
    code, out, err = _mqtool(capsys, "dump", "kafka-log", part, "--deep", "--jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 4, err
    assert len([r for r in rows if r["kind"] == "batch"]) == batches
    assert "records not decoded" in err and "explains the damage" not in err
