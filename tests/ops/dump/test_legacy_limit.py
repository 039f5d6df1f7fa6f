"""``dump jafka`` and ``dump metaq`` consume the store model's reading as they print (issue 29,
point 4; issue 27, point 3): ``--limit`` bounds what is read and what is reported, counted with
``store.files.count_reads``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.store.files import count_reads, read_in_pieces
from mqtool.store.legacy import FIRST_PIECE
from tests.conftest import run_cli

#: each segment of the stores below holds this many bytes of messages, or a little more
SEGMENT = 1 << 20


def _segments(directory: Path, name, encoded: list[bytes]) -> list[Path]:
    directory.mkdir(parents=True)
    paths, start, blob = [], 0, bytearray()
    for raw in encoded:
        blob += raw
        if len(blob) >= SEGMENT:
            paths.append(directory / name(start))
            paths[-1].write_bytes(bytes(blob))
            start, blob = start + len(blob), bytearray()
    if blob:
        paths.append(directory / name(start))
        paths[-1].write_bytes(bytes(blob))
    return paths


def _jafka(root: Path) -> list[Path]:
    return _segments(root / "orders-0", segnames.jafka_file_name, [jf.encode_message(jf.Message(b"jafka %06d " % i * 30)) for i in range(9000)])


def _metaq(root: Path) -> list[Path]:
    return _segments(
        root / "trade-0", segnames.metaq_file_name, [mq.encode_message(mq.make_message(1 + i, b"metaq %06d " % i * 30, None)) for i in range(9000)]
    )


#: layout: (writer, where a message's checksum field starts, where its payload starts)
STORES = {"jafka": (_jafka, 6, 10), "metaq": (_metaq, 4, 20)}


@pytest.mark.parametrize("layout", list(STORES))
def test_limit_reads_only_what_it_prints(tmp_path, layout):
    make = STORES[layout][0]
    segments = make(tmp_path / "store")
    assert len(segments) >= 3
    root = tmp_path / "store"
    code, out, _ = run_cli("dump", layout, root, "--jsonl")
    every = out.splitlines()
    with count_reads() as reads:
        code, out, err = run_cli("dump", layout, root, "--jsonl", "--limit", "5")
    assert code == 0, err
    assert out.splitlines() == every[:5]
    read = {Path(p).name: n for p, n in reads.items() if n}
    # the first segment's first piece (a walk starts with 64 KiB and doubles), nothing of the others
    assert set(read) == {segments[0].name} and read[segments[0].name] <= FIRST_PIECE + 4096, read
    # in pieces of 4 KiB: one piece of the first file
    with count_reads() as reads, read_in_pieces(4 << 10):
        code, out, _ = run_cli("dump", layout, root, "--jsonl", "--limit", "5")
    assert code == 0 and out.splitlines() == every[:5]
    assert sum(reads.values()) <= (4 << 10) + 4096, dict(reads)


@pytest.mark.parametrize("layout", list(STORES))
def test_limit_reports_what_it_read(tmp_path, layout):
    """Damage past the messages ``--limit`` prints is not read, so not reported; damage among
    them is, with validate's code and position."""
    make, crc_at, payload_at = STORES[layout]
    segments = make(tmp_path / "store")
    root = tmp_path / "store"
    last = segments[-1]
    raw = bytearray(last.read_bytes())
    raw[-1] ^= 0x01  # the payload of the last message of the last segment
    last.write_bytes(bytes(raw))
    code, _, err = run_cli("dump", layout, root, "--jsonl")
    assert code == 1 and f"{layout.upper()}-CRC {last}:" in err
    code, out, err = run_cli("dump", layout, root, "--jsonl", "--limit", "5")
    assert code == 0 and len(out.splitlines()) == 5 and "-CRC" not in err
    first = segments[0]
    raw = bytearray(first.read_bytes())
    size = json.loads(run_cli("dump", layout, root, "--jsonl", "--limit", "1")[1])
    second = size["next_offset"]  # the second message's position (the first segment starts at 0)
    raw[second + payload_at + 3] ^= 0x01  # its payload
    first.write_bytes(bytes(raw))
    code, out, err = run_cli("dump", layout, root, "--jsonl", "--limit", "5")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and len(rows) == 5 and f"{layout.upper()}-CRC {first}:{second + crc_at}" in err, err
    assert rows[1]["finding"] == f"{layout.upper()}-CRC"
