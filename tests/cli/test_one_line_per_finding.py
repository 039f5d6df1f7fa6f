"""A dump states each damage once on stderr: the store model's finding (``CODE path:position:``),
not a second line of the dump's own walk about the same bytes (issue 30: the Kafka dump printed a
batch CRC mismatch twice, the MetaQ dump a message checksum mismatch twice)."""

from __future__ import annotations

import shutil
from pathlib import Path

from mqtool.cli.app import run
from tests.conftest import FIXTURES


def _mqtool(capsys, *args: object) -> tuple[int, str, str]:
    code = run([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _flip(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x5A
    path.write_bytes(bytes(data))


def test_a_kafka_batch_crc_mismatch_is_stated_once(tmp_path, capsys):
    root = tmp_path / "kafka"
    shutil.copytree(FIXTURES / "kafka-logs", root)
    log = root / "orders-0" / "00000000000000000000.log"
    _flip(log, 3244)  # inside the records of the batch at 3070
    code, out, err = _mqtool(capsys, "dump", "kafka-log", root, "--deep", "--jsonl")
    assert code == 1
    crc_lines = [line for line in err.splitlines() if "3087" in line]
    assert len(crc_lines) == 1 and "KAFKA-LOG-CRC" in crc_lines[0], err
    assert "explains the damage" in err
    assert '"position": 3070' in out  # the damaged batch is still listed, as kafka-dump-log lists it


def test_a_metaq_checksum_mismatch_is_stated_once(tmp_path, capsys):
    root = tmp_path / "metaq"
    shutil.copytree(FIXTURES / "metaq-data", root)
    segment = root / "trade-1" / "00000000000000000832.meta"
    _flip(segment, segment.stat().st_size - 5)  # the last message's data
    code, _out, err = _mqtool(capsys, "dump", "metaq", root, "--jsonl")
    assert code == 1
    lines = [line for line in err.splitlines() if ":214:" in line]
    assert len(lines) == 1 and "METAQ-CRC" in lines[0], err
    code, _out, err = _mqtool(capsys, "validate", root)
    assert code == 1 and "METAQ-CRC" in err + _out


def test_a_cut_older_segment_is_stated_once_by_stats_and_info(tmp_path, capsys):
    """stats and info read every segment's end themselves: a segment before the last cut inside a
    message is stated once, by the model's METAQ-SEGMENT-TAIL, not again in their own words."""
    root = tmp_path / "metaq"
    shutil.copytree(FIXTURES / "metaq-data", root)
    segment = root / "trade-1" / "00000000000000000000.meta"
    with open(segment, "r+b") as f:
        f.truncate(600)  # inside the message at 556
    for args in (("stats", root, "--json"), ("info", root), ("info", root, "--json")):
        code, _out, err = _mqtool(capsys, *args)
        lines = [line for line in err.splitlines() if f"{segment.name}:556" in line]
        assert code == 1 and len(lines) == 1 and "METAQ-SEGMENT-TAIL" in lines[0], (args, err)
