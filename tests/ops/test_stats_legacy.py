"""stats of a Jafka or MetaQ store counts each segment with a fold of the store model's walk
(``ops.stats.legacy.SegmentCounter``): inside ``store.model.legacy.shared_reading(fold=counter)``
(``report``) validate's reading -- in-process or in its worker processes -- counts each live
segment, and stats then reads no log byte and gives the stats it gives alone, damage included
(a checksum that fails in a frame that holds, a Jafka wrapper that does not inflate, a torn tail,
MetaQ attributes as tags)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtool.formats import jafka as jf
from mqtool.formats import metaq as mq
from mqtool.formats import segment_names as segnames
from mqtool.ops.stats import StatsOptions, store_stats
from mqtool.ops.stats.legacy import counter
from mqtool.ops.validate import ValidateOptions
from mqtool.ops.validate.legacy import validate_jafka, validate_metaq
from mqtool.store.files import count_reads
from mqtool.store.model import legacy as lm

VALIDATE = {"jafka": validate_jafka, "metaq": validate_metaq}


def _no_disk(_path: Path) -> None:
    return None


def _messages(layout: str, partition: int, segment: int) -> list[bytes]:
    out = []
    for i in range(30):
        n = 1000 * partition + 100 * segment + i
        payload = b"payload %06d " % n * (1 + n % 7)
        if layout == "jafka":
            if i == 7:
                message = jf.compress_messages([jf.Message(payload), jf.Message(payload[:9])])
            elif i == 11:
                message = jf.Message(b"no gzip stream here", jf.MAGIC_V1, jf.CODEC_GZIP)  # its CRC holds
            else:
                message = jf.Message(payload)
            out.append(jf.encode_message(message))
        else:
            out.append(mq.encode_message(mq.make_message(n, payload, f"tag{n % 5}" if i % 3 else None)))
    return out


def _store(root: Path, layout: str) -> None:
    """Two partitions of three segments; a flipped payload byte in a middle segment (its frame
    holds), and the last segment of the first partition ends in a torn message."""
    name = segnames.jafka_file_name if layout == "jafka" else segnames.metaq_file_name
    for partition in range(2):
        part = root / f"orders-{partition}"
        part.mkdir(parents=True)
        start = 0
        for segment in range(3):
            messages = _messages(layout, partition, segment)
            blob = bytearray(b"".join(messages))
            if segment == 1:
                at = sum(len(m) for m in messages[:20]) + len(messages[20]) - 3
                blob[at] ^= 0xFF
            if partition == 0 and segment == 2:
                blob += messages[0][:25]
            (part / name(start)).write_bytes(bytes(blob))
            start += len(blob)


def _log_bytes(reads: dict[str, int]) -> int:
    return sum(n for path, n in reads.items() if path.endswith((".jafka", ".meta")))


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_stats_takes_validate_count_inside_the_shared_reading(tmp_path: Path, layout: str, jobs: int) -> None:
    root = tmp_path / "store"
    _store(root, layout)
    alone = store_stats(root, layout, probe=_no_disk).to_dict()
    with lm.shared_reading(fold=counter):
        VALIDATE[layout](root, ValidateOptions(jobs=jobs))
        with count_reads() as reads:
            shared = store_stats(root, layout, probe=_no_disk).to_dict()
    assert _log_bytes(reads) == 0, dict(reads)
    assert shared == alone
    totals = alone["totals"]
    assert totals["messages"] > 150 and totals["damaged_messages"] >= 1 and alone["findings"]
    if layout == "jafka":
        assert any("gzip stream" in p and not p.startswith("JAFKA-") for p in alone["problems"])  # stats' own: the wrapper
    else:
        assert all(u["tags_estimate"] == 5 for u in alone["units"])


@pytest.mark.parametrize("layout", ["jafka", "metaq"])
def test_another_top_reads_again(tmp_path: Path, layout: str) -> None:
    """A count made for another number of largest messages is not taken: stats reads the store."""
    root = tmp_path / "store"
    _store(root, layout)
    options = StatsOptions(top=3)
    alone = store_stats(root, layout, options, probe=_no_disk).to_dict()
    with lm.shared_reading(fold=counter):
        VALIDATE[layout](root, ValidateOptions(jobs=1))
        with count_reads() as reads:
            shared = store_stats(root, layout, options, probe=_no_disk).to_dict()
    assert _log_bytes(reads) >= sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert shared == alone and len(alone["largest"]) == 3
