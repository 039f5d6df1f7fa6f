"""Segment file names of every layout (``mqtool.formats.segment_names``): vectors, round trips,
refusals, and the rule that no other module spells a 20-digit name by hand."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtool.errors import MqError, StoreLayoutError
from mqtool.formats import segment_names as segnames
from tests.conftest import real_path

OFFSETS = st.integers(0, 2**63 - 1)
PR6495_TS = 1679290200025
PACKAGE = Path(__file__).resolve().parents[2] / "mqtool"

# --- RocketMQ ------------------------------------------------------------------------------


def test_rocketmq_vectors():
    assert segnames.rocketmq_file_name(0) == "00000000000000000000"
    assert segnames.rocketmq_file_name(1073741824) == "00000000001073741824"
    assert segnames.parse_rocketmq_file_name("00000000001073741824") == 1073741824


@given(OFFSETS)
def test_rocketmq_round_trip(offset):
    name = segnames.rocketmq_file_name(offset)
    assert segnames.ROCKETMQ_FILE_NAME.match(name)
    assert segnames.parse_rocketmq_file_name(name) == offset


@pytest.mark.parametrize("name", ["", "0", "0000000000000000000", "000000000000000000000", "0000000000000000000x", "00000000000000000000.log"])
def test_rocketmq_wrong_digit_count(name):
    assert not segnames.ROCKETMQ_FILE_NAME.match(name)
    with pytest.raises(StoreLayoutError):
        segnames.parse_rocketmq_file_name(name)


def test_rocketmq_negative_offset():
    with pytest.raises(ValueError):
        segnames.rocketmq_file_name(-5)


def test_index_file_name_vectors():
    assert segnames.rocketmq_index_file_name(PR6495_TS, timezone.utc) == "20230320053000025"
    assert segnames.parse_rocketmq_index_file_name("20230320053000025", timezone.utc) == PR6495_TS
    cst = timezone(timedelta(hours=8))
    assert segnames.rocketmq_index_file_name(PR6495_TS, cst) == "20230320133000025"
    assert segnames.parse_rocketmq_index_file_name("20230320133000025", cst) == PR6495_TS
    assert segnames.parse_rocketmq_index_file_datetime("20230320133000025") == datetime(2023, 3, 20, 13, 30, 0, 25_000)


def test_index_file_name_local_time_round_trip():
    name = segnames.rocketmq_index_file_name(PR6495_TS)
    assert segnames.parse_rocketmq_index_file_name(name) == PR6495_TS


@pytest.mark.parametrize(
    "name", ["", "2023032005300002", "202303200530000250", "20231320053000025", "2023032005300002x", "１２３"]
)
def test_not_index_file_names(name):
    assert segnames.parse_rocketmq_index_file_name(name) is None


@given(st.integers(0, 253_000_000_000_000), st.integers(-14 * 60, 14 * 60))
def test_index_file_name_round_trip(ms, offset_minutes):
    tz = timezone(timedelta(minutes=offset_minutes))
    name = segnames.rocketmq_index_file_name(ms, tz)
    assert len(name) == 17
    assert segnames.parse_rocketmq_index_file_name(name, tz) == ms


def test_index_file_name_out_of_range():
    with pytest.raises(ValueError):
        segnames.rocketmq_index_file_name(10**18, timezone.utc)


# --- Kafka ---------------------------------------------------------------------------------


def test_kafka_vectors():
    assert segnames.kafka_offset_prefix(368769) == "00000000000000368769"
    assert segnames.kafka_file_name(0, "log") == "00000000000000000000.log"
    assert segnames.kafka_file_name(368769, "index") == "00000000000000368769.index"
    assert segnames.kafka_file_name(2**63 - 1, "snapshot") == "09223372036854775807.snapshot"
    assert segnames.parse_kafka_file_name("00000000000000368769.index") == segnames.KafkaFileName(368769, "index")
    parsed = segnames.parse_kafka_file_name("00000000000000000000.timeindex.deleted")
    assert parsed == segnames.KafkaFileName(0, "timeindex", "deleted")
    assert parsed.name == "00000000000000000000.timeindex.deleted"
    assert segnames.parse_kafka_file_name("00000000000000000012.log.swap").operation == "swap"
    assert segnames.parse_kafka_file_name("00000000000000000012.txnindex.cleaned").kind == "txnindex"
    assert segnames.parse_kafka_file_name("5.log") == segnames.KafkaFileName(5, "log")  # upstream parses any digits


@given(OFFSETS, st.sampled_from(segnames.KAFKA_FILE_KINDS), st.sampled_from((None,) + segnames.KAFKA_OPERATIONS))
def test_kafka_round_trip(offset, kind, operation):
    name = segnames.kafka_file_name(offset, kind, operation)
    assert segnames.parse_kafka_file_name(name) == segnames.KafkaFileName(offset, kind, operation)
    assert segnames.parse_kafka_file_name_or_none(name) == segnames.KafkaFileName(offset, kind, operation)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "00000000000000000000",
        "00000000000000000000.kafka",
        "00000000000000000000.log.tmp",
        "00000000000000000000.log.deleted.deleted",
        "-0000000000000000001.log",
        "+1.log",
        "09223372036854775808.log",
        "00000000000000000712-0000000001.checkpoint",
        "leader-epoch-checkpoint",
        "\u0661.log",
    ],
)
def test_bad_kafka_names(name):
    with pytest.raises(StoreLayoutError):
        segnames.parse_kafka_file_name(name)
    assert segnames.parse_kafka_file_name_or_none(name) is None


@pytest.mark.parametrize("offset", [-1, 2**63])
def test_kafka_offset_out_of_range(offset):
    with pytest.raises(ValueError):
        segnames.kafka_offset_prefix(offset)
    with pytest.raises(ValueError):
        segnames.kafka_file_name(offset, "log")


@pytest.mark.parametrize("kind,operation", [("kafka", None), ("records", None), ("log", "tmp"), ("log", "delete")])
def test_kafka_unknown_suffix(kind, operation):
    with pytest.raises(ValueError):
        segnames.kafka_file_name(0, kind, operation)


def test_kraft_snapshot_names():
    match = segnames.KAFKA_KRAFT_SNAPSHOT_NAME.match("00000000000000000712-0000000001.checkpoint")
    assert match and match.groups() == ("00000000000000000712", "0000000001", None)
    assert segnames.KAFKA_KRAFT_SNAPSHOT_NAME.match("00000000000000000712-0000000001.checkpoint.part").group(3) == ".part"
    assert not segnames.KAFKA_KRAFT_SNAPSHOT_NAME.match("712-1.checkpoint")
    assert not segnames.KAFKA_KRAFT_SNAPSHOT_NAME.match("00000000000000000712.log")


def test_every_real_kafka_segment_name_parses():
    for path in real_path("kafka").rglob("*"):
        if path.suffix in (".log", ".index", ".timeindex", ".snapshot", ".txnindex") and path.name[0].isdigit():
            assert segnames.parse_kafka_file_name(path.name).name == path.name


# --- Jafka ---------------------------------------------------------------------------------


def test_jafka_vectors():
    assert segnames.jafka_file_name(1073741830) == "00000000001073741830.jafka"
    assert segnames.parse_jafka_file_name("00000000001073741830.jafka") == 1073741830
    assert segnames.parse_jafka_file_name("5.jafka") == 5


@given(OFFSETS)
def test_jafka_round_trip(offset):
    assert segnames.parse_jafka_file_name(segnames.jafka_file_name(offset)) == offset


@pytest.mark.parametrize("name", ["", ".jafka", "1.kafka", "x.jafka", "-1.jafka", "99999999999999999999.jafka", "\u0661.jafka"])
def test_bad_jafka_names(name):
    with pytest.raises(StoreLayoutError):
        segnames.parse_jafka_file_name(name)


def test_jafka_negative_offset():
    with pytest.raises(ValueError):
        segnames.jafka_file_name(-1)


# --- MetaQ ---------------------------------------------------------------------------------


def test_metaq_vectors():
    assert segnames.metaq_file_name(1073741845) == "00000000001073741845.meta"
    assert segnames.parse_metaq_file_name("00000000000000000000.meta") == segnames.MetaqFileName(0)
    arc = segnames.parse_metaq_file_name("00000000001073741845.meta.arc")
    assert arc == segnames.MetaqFileName(1073741845, "arc") and arc.segment_name == "00000000001073741845.meta"
    assert segnames.parse_metaq_file_name("00000000000000000058.meta.zip").name == "00000000000000000058.meta.zip"
    assert segnames.metaq_archive_name("00000000000000000058.meta", compress=True) == "00000000000000000058.meta.zip"
    assert segnames.metaq_archive_name("00000000000000000058.meta", compress=False) == "00000000000000000058.meta.arc"
    with pytest.raises(StoreLayoutError):
        segnames.metaq_archive_name("00000000000000000058.meta.arc", compress=True)


@given(OFFSETS, st.sampled_from([None, "arc", "zip"]))
def test_metaq_round_trip(offset, archive):
    name = segnames.metaq_file_name(offset, archive)
    assert segnames.parse_metaq_file_name(name) == segnames.MetaqFileName(offset, archive)
    if archive is None:
        assert segnames.parse_metaq_file_name(segnames.metaq_archive_name(name, compress=True)) == segnames.MetaqFileName(offset, "zip")


@pytest.mark.parametrize(
    "name", ["", "meta", "1.meta.gz", "1.jafka", "x.meta", "1.meta.zip.arc", "99999999999999999999.meta", "\u0661.meta"]
)
def test_bad_metaq_names(name):
    with pytest.raises(StoreLayoutError):
        segnames.parse_metaq_file_name(name)


def test_metaq_refusals_when_naming():
    with pytest.raises(ValueError):
        segnames.metaq_file_name(-1)
    with pytest.raises(ValueError):
        segnames.metaq_file_name(0, "gz")


class _File:
    def __init__(self, name: str, start_offset: int, archive: str | None, named: bool = True) -> None:
        self.name, self.start_offset, self.archive, self.named = name, start_offset, archive, named


def test_metaq_zip_entry_and_live_names():
    zipped = _File("5.meta.zip", 5, "zip")
    assert segnames.metaq_zip_entry_name(zipped) == "5.meta"
    assert segnames.metaq_live_segment_name(zipped) == "00000000000000000005.meta"
    assert segnames.metaq_zip_entry_name(_File("00000000000000000005.meta.arc", 5, "arc")) is None
    loose = _File("carved.zip", 0, "zip", named=False)
    assert segnames.metaq_zip_entry_name(loose) is None
    assert segnames.metaq_live_segment_name(loose) == "carved.zip"


# --- any text ------------------------------------------------------------------------------


@given(st.text(max_size=80))
def test_arbitrary_names_raise_only_mq_errors(name):
    for parse in (segnames.parse_rocketmq_file_name, segnames.parse_kafka_file_name, segnames.parse_jafka_file_name, segnames.parse_metaq_file_name):
        try:
            parse(name)
        except MqError:
            pass
    segnames.parse_rocketmq_index_file_name(name)


# --- one place for the 20-digit spelling ---------------------------------------------------

ZERO_PADDED_20 = re.compile(r":020d")


def test_no_other_module_formats_a_20_digit_offset():
    """Every segment name is made by ``segment_names``; a hand-written ``:020d`` elsewhere in
    ``mqtool/`` is a second copy of a name format."""
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "formats" / "segment_names.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if ZERO_PADDED_20.search(line)
    ]
    assert not found, "20-digit offsets formatted outside mqtool/formats/segment_names.py:\n" + "\n".join(found)
