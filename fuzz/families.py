"""Families of the Kafka, Jafka and MetaQ fixtures (registered into fuzz.harness.FAMILIES).

Kafka (``fixtures/kafka-logs``): v2 batches (``orders``: the active segment and a rolled one), a
follower's multi-batch appends (``orders-1``), compressed and transactional batches
(``events-0``), the v0/v1 message formats (``legacy-0``), the compacted ``__consumer_offsets``,
the ``.index``/``.timeindex``/``.txnindex`` files, producer ``.snapshot`` files and the offset /
leader-epoch checkpoints.  Every family runs ``info``, its ``dump kafka-*`` command, ``validate``,
``query`` (by offset and by timestamp) and the ``recover`` plan (``--json``: nothing is written).

Jafka (``fixtures/jafka-data``) and MetaQ (``fixtures/metaq-data``): ``info``, ``dump jafka|metaq``,
``validate`` and the ``recover`` plan.
"""

from __future__ import annotations

from fuzz.harness import Family, register

KAFKA = "kafka-logs"


def _kafka_commands(dump: tuple[str, ...], topic: str = "orders", partition: str = "0", offset: str = "50") -> tuple[tuple[str, ...], ...]:
    return (
        ("info", "{store}"),
        dump,
        ("validate", "{store}", "--jobs", "1", "--jsonl"),
        ("query", "{store}", "--topic", topic, "--partition", partition, "--offset", offset),
        ("query", "{store}", "--topic", topic, "--partition", partition, "--timestamp", "1700000001000"),
        ("recover", "{store}", "--json"),
        ("recover", "{store}", "--full", "--json"),
    )


def _log(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    return ("dump", "kafka-log", "{target}", "--deep-iteration", "--jsonl", *extra)


KAFKA_FAMILIES = (
    # v2 logs: the active segment (torn tails, the valid end) and a rolled one (later segments dropped)
    Family("kafka-v2-log", KAFKA, "orders-0/00000000000000000090.log", _kafka_commands(_log(), offset="100")),
    Family("kafka-v2-log-rolled", KAFKA, "orders-0/00000000000000000030.log", _kafka_commands(_log(), offset="40")),
    # a follower's appends: three batches per .index entry
    Family("kafka-v2-log-follower", KAFKA, "orders-1/00000000000000000072.log", _kafka_commands(_log(), partition="1", offset="80")),
    # compressed (gzip/snappy/lz4/zstd), idempotent and transactional batches, control markers
    Family("kafka-compressed", KAFKA, "events-0/00000000000000000000.log", _kafka_commands(_log(), topic="events", offset="30")),
    # message format v0/v1 (plain and gzip wrappers) followed by v2 batches
    Family("kafka-v0-v1-log", KAFKA, "legacy-0/00000000000000000000.log", _kafka_commands(_log(), topic="legacy", offset="5")),
    # compacted internal topic (offset gaps, a delete horizon)
    Family(
        "kafka-consumer-offsets",
        KAFKA,
        "__consumer_offsets-0/00000000000000000012.log",
        (
            *_kafka_commands(_log(), topic="__consumer_offsets", offset="15"),
            ("clean", "{store}", "--protect-unconsumed", "--json", "--now", "1700000000000"),
        ),
    ),
    Family("kafka-index", KAFKA, "orders-0/00000000000000000060.index", _kafka_commands(("dump", "kafka-index", "{target}", "--jsonl"), offset="70")),
    Family("kafka-index-active", KAFKA, "orders-1/00000000000000000072.index", _kafka_commands(("dump", "kafka-index", "{target}", "--jsonl"), partition="1", offset="90")),
    Family("kafka-timeindex", KAFKA, "orders-0/00000000000000000090.timeindex", _kafka_commands(("dump", "kafka-timeindex", "{target}", "--jsonl"), offset="95")),
    Family("kafka-txnindex", KAFKA, "events-0/00000000000000000000.txnindex", _kafka_commands(("dump", "kafka-txnindex", "{target}", "--jsonl"), topic="events", offset="40")),
    Family("kafka-snapshot", KAFKA, "events-0/00000000000000000053.snapshot", _kafka_commands(("dump", "kafka-snapshot", "{target}", "--jsonl"), topic="events", offset="60")),
    Family(
        "kafka-checkpoint",
        KAFKA,
        "recovery-point-offset-checkpoint",
        (*_kafka_commands(("dump", "kafka-checkpoint", "{target}", "--json")), ("clean", "{store}", "--json", "--now", "1700000000000")),
    ),
    Family(
        "kafka-log-start-checkpoint",
        KAFKA,
        "log-start-offset-checkpoint",
        (*_kafka_commands(("dump", "kafka-checkpoint", "{target}", "--json")), ("clean", "{store}", "--json", "--now", "1700000000000")),
    ),
    Family(
        "kafka-leader-epoch-checkpoint",
        KAFKA,
        "orders-0/leader-epoch-checkpoint",
        _kafka_commands(("dump", "kafka-checkpoint", "{target}", "--json")),
    ),
)

LEGACY_COMMANDS = {
    "jafka": lambda: (
        ("info", "{store}"),
        ("dump", "jafka", "{target}", "--jsonl"),
        ("validate", "{store}", "--jobs", "1", "--jsonl"),
        ("recover", "{store}", "--json"),
    ),
    "metaq": lambda: (
        ("info", "{store}"),
        ("dump", "metaq", "{target}", "--jsonl"),
        ("validate", "{store}", "--jobs", "1", "--jsonl"),
        ("recover", "{store}", "--json"),
    ),
}

LEGACY_FAMILIES = (
    Family("jafka-segment", "jafka-data", "orders-0/00000000000000002348.jafka", LEGACY_COMMANDS["jafka"]()),
    Family("jafka-segment-rolled", "jafka-data", "orders-0/00000000000000000771.jafka", LEGACY_COMMANDS["jafka"]()),
    Family("jafka-compressed", "jafka-data", "user-events-0/00000000000000000000.jafka", LEGACY_COMMANDS["jafka"]()),
    Family("metaq-segment", "metaq-data", "trade-0/00000000000000003162.meta", LEGACY_COMMANDS["metaq"]()),
    Family("metaq-segment-rolled", "metaq-data", "trade-1/00000000000000000000.meta", LEGACY_COMMANDS["metaq"]()),
    Family("metaq-attributes", "metaq-data", "meta-test-2/00000000002147483648.meta", LEGACY_COMMANDS["metaq"]()),
)

for _family in (*KAFKA_FAMILIES, *LEGACY_FAMILIES):
    register(_family)
