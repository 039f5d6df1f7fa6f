"""Kafka 0.7 log dirs, the ``kafka07`` dialect of the Jafka layout (issue 29, point 4), through the CLI.

The writer here builds Kafka 0.7.2's layout from its classes: ``<topic>-<partition>/`` directories
of ``<20-digit offset>.kafka`` segments (``kafka.log.Log.FileSuffix``, ``Log.nameFromOffset``),
each a concatenation of ``[LENGTH int32][MAGIC][ATTRIBUTES (magic 1 only)][CRC32 of the
payload][payload]`` (``kafka.message.Message``), gzip and snappy wrappers of inner message sets
(``CompressionCodec``, ``CompressionUtils``), and ``.kafka_cleanshutdown``
(``KafkaServer.CLEAN_SHUTDOWN_FILE``).  Kafka 0.7.2's own capture (its ``MagicByte0-0`` test log,
100 magic-0 messages) is read where it is present.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtool.formats import jafka as jf
from mqtool.formats.kafka import compression
from mqtool.store.jafka import KAFKA07, JafkaLogWriter
from tests.conftest import real_path, run_cli

CAPTURE = ("kafka", "apache-kafka", "642da2f28c", "core", "src", "test", "resources", "test-kafka-logs")


def _snappy_wrapper(messages: list[jf.Message]) -> jf.Message:
    """A Kafka 0.7 snappy wrapper: magic 1, codec 2, the inner set in snappy-java's stream."""
    inner = jf.encode_message_set(messages)
    return jf.Message(compression.compress(compression.SNAPPY, inner, magic=1), jf.MAGIC_V1, jf.CODEC_SNAPPY)


def kafka07_dir(root: Path, *, clean: bool = True) -> tuple[Path, int]:
    """A Kafka 0.7 log dir: ``events-0`` of two segments (magic 0 and magic 1 messages, a gzip and
    a snappy wrapper), ``events-1`` of one.  Returns the root and the number of dump rows."""
    rows = 0
    part = JafkaLogWriter(root / "events-0", log_file_size=600, dialect=KAFKA07)
    first = [jf.Message(b"m0-%d" % i * 20, jf.MAGIC_V0) for i in range(5)] + [jf.Message(b"m1-%d" % i * 20) for i in range(3)]
    part.append(first)
    rows += len(first)
    inner = [jf.Message(b"inner-%d" % i) for i in range(4)]
    part.append([jf.compress_messages(inner), _snappy_wrapper(inner)])
    rows += 2 * (1 + len(inner))
    part.append([jf.Message(b"after %d" % i, jf.MAGIC_V0) for i in range(3)])
    rows += 3
    other = JafkaLogWriter(root / "events-1", dialect=KAFKA07)
    other.append([jf.Message(b"one"), jf.Message(b"two", jf.MAGIC_V0)])
    rows += 2
    if clean:
        (root / ".kafka_cleanshutdown").touch()
    return root, rows


def _findings(out: str) -> list[dict]:
    return json.loads(out)["findings"]


def test_a_generated_kafka07_dir_is_read_as_kafka_0_7(tmp_path):
    root, rows = kafka07_dir(tmp_path / "logs")
    assert len(list((root / "events-0").glob("*.kafka"))) == 2
    code, out, err = run_cli("info", root, "--json")
    doc = json.loads(out)
    assert code == 0, err
    assert doc["layout"] == "jafka" and doc["variant"] == "kafka07" and doc["clean_shutdown_marker"] is True and not doc["errors"]
    code, out, _ = run_cli("info", root)
    assert code == 0 and "jafka (kafka07: Kafka 0.7) store" in out
    code, out, err = run_cli("validate", root, "--json", "-j", "1")
    assert code == 0, err
    assert not [f for f in _findings(out) if f["severity"] in ("error", "warning")]
    code, out, err = run_cli("dump", "jafka", root, "--jsonl")
    got = [json.loads(line) for line in out.splitlines()]
    assert code == 0, err
    assert len(got) == rows and {r["magic"] for r in got} == {0, 1} and all(r["crc_valid"] for r in got)
    assert [r["codec"] for r in got if r["kind"] == "wrapper"] == ["gzip", "snappy"]
    # --layout kafka07 names the dialect; it reads as the Jafka layout
    assert run_cli("validate", "--layout", "kafka07", root, "-j", "1")[0] == 0
    code, out, _ = run_cli("stats", root, "--json")
    assert code == 0 and json.loads(out)["totals"]["messages"] == rows - 2  # the two wrappers themselves are no message


def test_kafka07_recovery_rules(tmp_path):
    """Without the marker recovery runs (a warning); a magic byte other than 0 or 1 is what Kafka
    0.7's recovery throws on (``Message.crcOffset``), and a codec 3 is ``UnknownCodecException``."""
    root, _ = kafka07_dir(tmp_path / "logs", clean=False)
    code, out, _ = run_cli("validate", root, "--json", "-j", "1")
    assert code == 0 and [f["code"] for f in _findings(out) if f["severity"] == "warning"] == ["JAFKA-UNCLEAN-SHUTDOWN"]
    seg = root / "events-1" / "00000000000000000000.kafka"
    data = bytearray(seg.read_bytes())
    data[4] = 7  # the first message's MAGIC
    seg.write_bytes(bytes(data))
    code, out, _ = run_cli("validate", root, "--json", "-j", "1")
    found = {(f["code"], f["position"]) for f in _findings(out)}
    # the last segment, recovery running: validateMessage's isValid throws there (the broker does not start)
    assert code == 1 and {("JAFKA-MAGIC", 4), ("JAFKA-RECOVERY-CRASH", 4)} <= found
    magic = next(f for f in _findings(out) if f["code"] == "JAFKA-MAGIC")
    assert "expected magic 0 or 1" in magic["message"] and "Kafka 0.7 reads no other magic" in magic["message"]


def test_kafka07_codec_3_is_unknown(tmp_path):
    root = tmp_path / "logs"
    JafkaLogWriter(root / "t-0", dialect=KAFKA07).append([jf.Message(b"x", jf.MAGIC_V1, 3)])
    (root / ".kafka_cleanshutdown").touch()
    code, out, _ = run_cli("validate", root, "--json", "-j", "1")
    (codec,) = [f for f in _findings(out) if f["code"] == "JAFKA-CODEC"]
    assert code == 1 and codec["position"] == 5 and "UnknownCodecException" in codec["message"]


def _message_starts(path: Path) -> list[tuple[int, jf.Message]]:
    return list(jf.MessageWalker(path.read_bytes()))


@settings(max_examples=25)
@given(data=st.data())
def test_damage_anywhere_in_a_payload_is_found_at_its_message(tmp_path_factory, data):
    root, _ = kafka07_dir(tmp_path_factory.mktemp("k07") / "logs")
    seg = root / "events-0" / "00000000000000000000.kafka"
    starts = _message_starts(seg)
    pos, message = data.draw(st.sampled_from(starts))
    header = message.header_size
    byte = data.draw(st.integers(pos + jf.LOG_OVERHEAD + header, pos + message.serialized_size - 1))
    raw = bytearray(seg.read_bytes())
    raw[byte] ^= data.draw(st.integers(1, 255))
    seg.write_bytes(bytes(raw))
    code, out, _ = run_cli("validate", root, "--json", "-j", "1")
    crc = [f["position"] for f in _findings(out) if f["code"] == "JAFKA-CRC"]
    # the CRC field of the damaged message (the one before its payload)
    assert code == 1 and crc == [pos + jf.LOG_OVERHEAD + header - 4]
    code, out, err = run_cli("dump", "jafka", root, "--jsonl", "--shallow")
    got = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and f"JAFKA-CRC {seg}:{crc[0]}" in err
    assert [r["position"] for r in got if not r["crc_valid"]] == [pos]


# --- Kafka 0.7.2's own capture --------------------------------------------------------------------------


def test_the_kafka_0_7_capture(tmp_path):
    capture = real_path(*CAPTURE)
    code, out, err = run_cli("info", capture, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["variant"] == "kafka07" and doc["partitions"][0]["log_end_offset"] == 10900, err
    code, out, err = run_cli("validate", capture, "--json", "-j", "1")
    assert code == 0 and not [f for f in _findings(out) if f["severity"] == "error"], err
    code, out, err = run_cli("dump", "jafka", capture, "--jsonl")
    got = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(got) == 100 and {r["magic"] for r in got} == {0}, err
    assert all(r["crc_valid"] and r["length"] == 105 for r in got) and got[-1]["next_offset"] == 10900
    code, out, err = run_cli("dump", "jafka", capture, "--jsonl", "--limit", "5")
    assert code == 0 and len(out.splitlines()) == 5 and "JAFKA-" not in err
    code, out, _ = run_cli("recover", capture)
    assert code == 0 and "nothing to recover" in out


@pytest.mark.parametrize(
    ("message", "offset", "value", "code", "field"),
    [(50, 5, None, "JAFKA-CRC", 5), (10, 4, 5, "JAFKA-MAGIC", 4), (99, 60, None, "JAFKA-CRC", 5)],
)
def test_damaged_copies_of_the_capture(tmp_path, message, offset, value, code, field):
    """Each message of the capture is 109 bytes: damage in message ``message`` at byte ``offset``
    of it is found at that message (its CRC field, 5 bytes in; its MAGIC byte, 4 bytes in)."""
    root = tmp_path / "logs"
    shutil.copytree(real_path(*CAPTURE), root)
    seg = root / "MagicByte0-0" / "00000000000000000000.kafka"
    seg.chmod(0o644)
    raw = bytearray(seg.read_bytes())
    at = 109 * message + offset
    raw[at] = value if value is not None else raw[at] ^ 0x20
    seg.write_bytes(bytes(raw))
    status, out, _ = run_cli("validate", root, "--json", "-j", "1")
    found = [(f["code"], f["position"]) for f in _findings(out) if f["severity"] == "error"]
    assert status == 1 and (code, 109 * message + field) in found, found
    status, out, err = run_cli("dump", "jafka", root, "--jsonl")
    assert status == 1 and f"{code} {seg}:{109 * message + field}" in err
